// The controller loop, like controller-runtime's controller: it turns informer events into keys on a rate-limited
// work queue (primaries by their own key, owned children by their owner's, referenced objects through the
// reconciler's map function) and runs `workers` workers that reconcile one key at a time with backoff on failure.
// Workers only run during a leadership term: the manager starts a term when this replica starts leading and ends
// it when the lease is lost. The manager owns the informers, the lease, the servers and the shutdown order.

import { randomUUID } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { errorMessage } from '../common/errors.js';
import type { Clock } from './clock.js';
import type { Informer } from './informer.js';
import type { RuntimeMetrics } from './metrics.js';
import { keyOf, keyString, parseKey } from './paths.js';
import { WorkQueue } from './queue.js';
import {
  type EventRecorder,
  type KubeWriter,
  type ObjectCache,
  type ObjectKey,
  type ReconcileResult,
  type Reconciler,
  type ResourceKind,
  TerminalError,
} from './types.js';

/** Informers the manager creates for a kind, one per watched namespace (or one cluster-wide), in its cache. */
export type InformerSource = (
  kind: ResourceKind,
  options: {
    labelSelector?: string;
    metadataOnly?: boolean;
    transform?: ((object: KubernetesObject) => KubernetesObject) | undefined;
  },
) => Informer[];

export type ControllerOptions = {
  reconciler: Reconciler;
  workers: number;
  cache: ObjectCache;
  client: KubeWriter;
  events: EventRecorder;
  metrics: RuntimeMetrics;
  logger: Logger;
  clock: Clock;
  /** Per-item failure backoff and the global bucket on re-adds (client-go's defaults when unset). */
  itemBaseDelayMs?: number;
  itemMaxDelayMs?: number;
  retryQps?: number;
  retryBurst?: number;
  /** A child without an ownerReference to the primary kind maps to the owner named by this label, if set. */
  ownerNameLabel?: string;
};

export class Controller {
  readonly name: string;
  private readonly queue: WorkQueue<string>;
  private readonly reconciler: Reconciler;
  /** The current leadership term's work signal: aborted when the term ends or shutdown begins. */
  private term: AbortController | undefined;
  /** Worker loops still running, of this term and of ended terms whose last reconcile has not returned yet. */
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly options: ControllerOptions) {
    this.reconciler = options.reconciler;
    this.name = options.reconciler.name;
    this.queue = new WorkQueue<string>({
      name: this.name,
      clock: options.clock,
      metrics: options.metrics,
      itemBaseDelayMs: options.itemBaseDelayMs,
      itemMaxDelayMs: options.itemMaxDelayMs,
      retryQps: options.retryQps,
      retryBurst: options.retryBurst,
    });
    options.metrics.maxConcurrentReconciles.set({ controller: this.name }, options.workers);
    options.metrics.activeWorkers.set({ controller: this.name }, 0);
  }

  /** Event handlers on the informers of every watched kind: each change enqueues the primary keys it concerns. */
  watch(informers: InformerSource): void {
    const { primary, owned, referenced = [] } = this.reconciler.watches;
    for (const informer of informers(primary, {})) {
      informer.on((_type, object) => this.queue.add(keyString(keyOf(object))));
    }
    for (const child of owned) {
      for (const informer of informers(child.kind, {
        labelSelector: child.labelSelector,
        transform: child.transform,
      })) {
        informer.on((_type, object) => {
          const owner = this.ownerKey(primary, object);
          if (owner) this.queue.add(keyString(owner));
        });
      }
    }
    for (const reference of referenced) {
      for (const informer of informers(reference.kind, { metadataOnly: true })) {
        informer.on((_type, object) => {
          for (const key of reference.map(object, this.options.cache)) this.queue.add(keyString(key));
        });
      }
    }
  }

  /** A child's owner: an ownerReference of the primary kind, else the owner-name label when configured. */
  private ownerKey(primary: ResourceKind, child: KubernetesObject): ObjectKey | undefined {
    const namespace = primary.namespaced ? (child.metadata?.namespace ?? '') : '';
    for (const reference of child.metadata?.ownerReferences ?? []) {
      const group = reference.apiVersion.includes('/') ? reference.apiVersion.split('/')[0] : '';
      if (reference.kind === primary.kind && group === primary.group) return { namespace, name: reference.name };
    }
    const label = this.options.ownerNameLabel;
    const name = label ? child.metadata?.labels?.[label] : undefined;
    return name ? { namespace, name } : undefined;
  }

  /** Starts a leadership term: every cached primary gets a reconcile, as a new controller-runtime leader does. */
  startTerm(leadership: AbortSignal): void {
    const work = new AbortController();
    leadership.addEventListener('abort', () => work.abort(leadership.reason ?? new Error('leadership lost')), {
      once: true,
    });
    this.term = work;
    for (const object of this.options.cache.list(this.reconciler.watches.primary))
      this.queue.add(keyString(keyOf(object)));
    for (let worker = 0; worker < this.options.workers; worker++) {
      const loop: Promise<void> = this.worker(work.signal).finally(() => this.running.delete(loop));
      this.running.add(loop);
    }
    this.options.logger.info({ controller: this.name, workers: this.options.workers }, 'reconciling');
  }

  /** Ends the term: in-flight reconciles see their signal abort, idle workers stop waiting for work. */
  endTerm(reason = new Error('leadership lost')): void {
    this.term?.abort(reason);
    this.queue.cancelWaiters();
  }

  /** No new work from now on; in-flight reconciles see their signal abort. Wait for them with `drained()`. */
  shutDown(): void {
    this.queue.shutDown();
    this.term?.abort(new Error('shutting down'));
  }

  /** Resolves when every worker loop has returned. */
  async drained(): Promise<void> {
    await Promise.all([...this.running]);
  }

  enqueue(key: ObjectKey): void {
    this.queue.add(keyString(key));
  }

  inFlight(): number {
    return this.queue.inFlight();
  }

  /** Worker loops not yet returned: at most `workers` once the previous terms' last reconciles have returned. */
  workerLoops(): number {
    return this.running.size;
  }

  private async worker(signal: AbortSignal): Promise<void> {
    const queue = this.queue;
    const { metrics } = this.options;
    const labels = { controller: this.name };
    while (!signal.aborted) {
      const item = await queue.get();
      if (item === undefined) break;
      if (signal.aborted) {
        queue.done(item);
        queue.add(item); // not ours to process any more; the next leader (maybe us) will
        break;
      }
      const key = parseKey(item);
      const logger = this.options.logger.child({
        controller: this.name,
        namespace: key.namespace,
        name: key.name,
        reconcileID: randomUUID(),
      });
      metrics.activeWorkers.inc(labels);
      const started = process.hrtime.bigint();
      let result: ReconcileResult;
      try {
        result = await this.reconciler.reconcile(key, {
          logger,
          cache: this.options.cache,
          client: this.options.client,
          events: this.options.events,
          signal,
        });
        if (result && 'requeue' in result) {
          queue.addRateLimited(item);
          metrics.reconcileTotal.inc({ ...labels, result: 'requeue' });
        } else if (result) {
          queue.forget(item);
          queue.addAfter(item, result.requeueAfterMs);
          metrics.reconcileTotal.inc({ ...labels, result: 'requeue_after' });
        } else {
          queue.forget(item);
          metrics.reconcileTotal.inc({ ...labels, result: 'success' });
        }
      } catch (error) {
        if (signal.aborted) {
          queue.add(item);
          logger.info({ err: errorMessage(error) }, 'reconcile interrupted: leadership lost or shutting down');
        } else if (error instanceof TerminalError) {
          queue.forget(item);
          metrics.reconcileTotal.inc({ ...labels, result: 'error' });
          metrics.reconcileErrors.inc(labels);
          metrics.terminalReconcileErrors.inc(labels);
          logger.error({ err: errorMessage(error) }, 'reconcile failed for good: not retried until the object changes');
        } else {
          const delay = queue.addRateLimited(item);
          metrics.reconcileTotal.inc({ ...labels, result: 'error' });
          metrics.reconcileErrors.inc(labels);
          logger.error(
            { err: errorMessage(error), retryInMs: delay, retries: queue.retries(item) },
            'reconcile failed',
          );
        }
      } finally {
        metrics.reconcileTime.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
        metrics.activeWorkers.dec(labels);
        queue.done(item);
      }
    }
  }
}
