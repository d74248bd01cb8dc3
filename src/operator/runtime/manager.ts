// The Manager wires the runtime together, like controller-runtime's manager: informers over the primary kind and
// the labelled children (per namespace, or cluster-wide), a rate-limited work queue, `workers` concurrent workers
// that only run while this replica leads, /metrics and /healthz + /readyz, Kubernetes Events, and a graceful stop
// (no new work, in-flight reconciles finish within a bound, the lease is released).

import { randomUUID } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import { errorMessage } from '../../common/errors.js';
import { type ObservabilityServer, startObservabilityServer } from '../../observability/http.js';
import { InformerCache } from './cache.js';
import { RuntimeClient } from './client.js';
import { type Clock, systemClock } from './clock.js';
import { KubeEventRecorder } from './events.js';
import { Informer, type InformerTuning } from './informer.js';
import { LeaderElector, RestLeaseStore } from './leader.js';
import { RuntimeMetrics } from './metrics.js';
import { keyOf, keyString, parseKey, resourceName } from './paths.js';
import { WorkQueue } from './queue.js';
import { RestClient } from './rest.js';
import type { Manager, ManagerOptions, ObjectKey, ReconcileResult, Reconciler, ResourceKind } from './types.js';

/** Optional knobs beyond ManagerOptions; every one has a production default. */
export type RuntimeTuning = InformerTuning & {
  clock?: Clock;
  registry?: Registry;
  /** Lease timings, client-go's defaults: 15 s / 10 s / 2 s. */
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /** /readyz fails when a watch has delivered nothing (event, bookmark, list, clean close) for this long. */
  watchStaleAfterMs?: number;
  /** How long stop() waits for in-flight reconciles before giving up on them. */
  shutdownTimeoutMs?: number;
  itemBaseDelayMs?: number;
  itemMaxDelayMs?: number;
  retryQps?: number;
  retryBurst?: number;
  /** REST retries on 429/5xx/connection errors. */
  maxRetries?: number;
  retryInitialMs?: number;
  retryMaxMs?: number;
  requestTimeoutMs?: number;
  /** A child without an ownerReference to the primary kind maps to the owner named by this label, if set. */
  ownerNameLabel?: string;
  /** Address the metrics and health servers bind to. */
  listenHost?: string;
  /** Component name on Events. */
  eventComponent?: string;
};

export type RuntimeManagerOptions = ManagerOptions & { tuning?: RuntimeTuning };

export type Readiness = { ready: boolean; reason?: string };

export class RuntimeManager implements Manager {
  readonly metrics: RuntimeMetrics;
  readonly registry: Registry;
  readonly rest: RestClient;
  readonly client: RuntimeClient;
  readonly cache = new InformerCache();
  readonly events: KubeEventRecorder;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly tuning: RuntimeTuning;
  private queue: WorkQueue<string> | undefined;
  private elector: LeaderElector | undefined;
  private reconciler: Reconciler | undefined;
  private leading = false;
  private workSignal: AbortController | undefined;
  private workers: Promise<void>[] = [];
  private servers: ObservabilityServer[] = [];
  private boundPorts: { metrics?: number; health?: number } = {};
  private stopping: Promise<void> | undefined;
  private resolveRun: (() => void) | undefined;
  private started = false;
  private synced = false;

  constructor(private readonly options: RuntimeManagerOptions) {
    this.tuning = options.tuning ?? {};
    this.clock = this.tuning.clock ?? systemClock;
    this.registry = this.tuning.registry ?? new Registry();
    this.metrics = new RuntimeMetrics(this.registry);
    this.logger = options.logger;
    this.rest = new RestClient(options.kubeConfig, {
      qps: options.qps,
      burst: options.burst,
      metrics: this.metrics,
      logger: this.logger,
      clock: this.clock,
      userAgent: `oracle-node-operator/${options.fieldManager}`,
      maxRetries: this.tuning.maxRetries,
      retryInitialMs: this.tuning.retryInitialMs,
      retryMaxMs: this.tuning.retryMaxMs,
      requestTimeoutMs: this.tuning.requestTimeoutMs,
    });
    this.client = new RuntimeClient(this.rest, options.fieldManager);
    this.events = new KubeEventRecorder(this.rest, {
      component: this.tuning.eventComponent ?? options.fieldManager,
      instance: options.leaderElection.identity,
      logger: this.logger,
      metrics: this.metrics,
      clock: this.clock,
    });
  }

  isLeader(): boolean {
    return this.leading;
  }

  ports(): { metrics?: number; health?: number } {
    return { ...this.boundPorts };
  }

  /** Adds a key by hand (tests, and controllers that need an extra trigger). */
  enqueue(key: ObjectKey): void {
    this.queue?.add(keyString(key));
  }

  queueLength(): number {
    return this.queue?.length() ?? 0;
  }

  readiness(): Readiness {
    if (this.stopping) return { ready: false, reason: 'shutting down' };
    const informers = this.cache.informers();
    if (!this.synced || informers.some((informer) => !informer.hasSynced()))
      return { ready: false, reason: 'caches not synced' };
    const staleAfter = this.tuning.watchStaleAfterMs ?? 15 * 60_000;
    for (const informer of informers) {
      const silent = informer.silentForMs();
      if (silent > staleAfter) {
        return {
          ready: false,
          reason: `watch ${resourceName(informer.kind)} in ${informer.namespace ?? 'all namespaces'} silent for ${Math.round(silent / 1000)} s`,
        };
      }
    }
    return { ready: true };
  }

  async run(reconciler: Reconciler): Promise<void> {
    if (this.started) throw new Error('the manager runs once');
    this.started = true;
    this.reconciler = reconciler;
    const done = new Promise<void>((resolve) => {
      this.resolveRun = resolve;
    });
    const queue = new WorkQueue<string>({
      name: reconciler.name,
      clock: this.clock,
      metrics: this.metrics,
      itemBaseDelayMs: this.tuning.itemBaseDelayMs,
      itemMaxDelayMs: this.tuning.itemMaxDelayMs,
      retryQps: this.tuning.retryQps,
      retryBurst: this.tuning.retryBurst,
    });
    this.queue = queue;
    this.metrics.maxConcurrentReconciles.set({ controller: reconciler.name }, this.options.workers);
    this.metrics.activeWorkers.set({ controller: reconciler.name }, 0);
    this.metrics.leaderStatus.set({ name: this.options.leaderElection.leaseName }, 0);

    const { primary, owned, referenced = [] } = reconciler.watches;
    for (const namespace of this.namespacesFor(primary)) {
      const informer = this.informer(primary, namespace, undefined);
      informer.on((_type, object) => queue.add(keyString(keyOf(object))));
    }
    for (const child of owned) {
      for (const namespace of this.namespacesFor(child.kind)) {
        const informer = this.informer(child.kind, namespace, child.labelSelector, false, child.transform);
        informer.on((_type, object) => {
          const owner = this.ownerKey(primary, object);
          if (owner) queue.add(keyString(owner));
        });
      }
    }
    for (const reference of referenced) {
      for (const namespace of this.namespacesFor(reference.kind)) {
        const informer = this.informer(reference.kind, namespace, undefined, true);
        informer.on((_type, object) => {
          for (const key of reference.map(object, this.cache)) queue.add(keyString(key));
        });
      }
    }
    await this.startServers();
    this.logger.info(
      {
        controller: reconciler.name,
        namespaces: this.options.namespaces.length ? this.options.namespaces : ['*'],
        workers: this.options.workers,
        leaderElection: this.options.leaderElection.enabled,
        identity: this.options.leaderElection.identity,
        ports: this.boundPorts,
      },
      'manager starting',
    );
    for (const informer of this.cache.informers()) informer.start();
    await Promise.race([Promise.all(this.cache.informers().map((informer) => informer.waitForSync())), done]);
    if (!this.stopping) {
      this.synced = true;
      this.logger.info({ informers: this.cache.informers().length }, 'caches synced');
      if (this.options.leaderElection.enabled) {
        const { namespace, leaseName, identity } = this.options.leaderElection;
        this.elector = new LeaderElector(
          new RestLeaseStore(this.rest),
          {
            namespace,
            name: leaseName,
            identity,
            leaseDurationMs: this.tuning.leaseDurationMs,
            renewDeadlineMs: this.tuning.renewDeadlineMs,
            retryPeriodMs: this.tuning.retryPeriodMs,
            releaseOnCancel: true,
          },
          {
            onStartedLeading: (signal) => this.startLeading(signal),
            onStoppedLeading: () => this.stopLeading(),
            onNewLeader: (holder) => this.logger.info({ leader: holder }, 'observed leader'),
          },
          this.logger.child({ subsystem: 'leader-election' }),
          this.clock,
        );
        this.elector.start();
      } else {
        this.startLeading(new AbortController().signal);
      }
    }
    await done;
  }

  private namespacesFor(kind: ResourceKind): (string | undefined)[] {
    if (!kind.namespaced || this.options.namespaces.length === 0) return [undefined];
    return this.options.namespaces;
  }

  private informer(
    kind: ResourceKind,
    namespace: string | undefined,
    labelSelector: string | undefined,
    metadataOnly = false,
    transform?: (object: KubernetesObject) => KubernetesObject,
  ): Informer {
    const informer = new Informer({
      ...this.tuning,
      kind,
      namespace,
      labelSelector,
      metadataOnly,
      ...(transform ? { transform } : {}),
      client: this.client,
      rest: this.rest,
      logger: this.logger,
      metrics: this.metrics,
      clock: this.clock,
    });
    this.cache.add(informer);
    return informer;
  }

  /** A child's owner: an ownerReference of the primary kind, else the owner-name label when configured. */
  private ownerKey(primary: ResourceKind, child: KubernetesObject): ObjectKey | undefined {
    const namespace = primary.namespaced ? (child.metadata?.namespace ?? '') : '';
    for (const reference of child.metadata?.ownerReferences ?? []) {
      const group = reference.apiVersion.includes('/') ? reference.apiVersion.split('/')[0] : '';
      if (reference.kind === primary.kind && group === primary.group) return { namespace, name: reference.name };
    }
    const label = this.tuning.ownerNameLabel;
    const name = label ? child.metadata?.labels?.[label] : undefined;
    return name ? { namespace, name } : undefined;
  }

  private startLeading(leadership: AbortSignal): void {
    const reconciler = this.reconciler!;
    const queue = this.queue!;
    const work = new AbortController();
    const onLost = () => work.abort(leadership.reason ?? new Error('leadership lost'));
    leadership.addEventListener('abort', onLost, { once: true });
    this.workSignal = work;
    this.leading = true;
    this.metrics.leaderStatus.set({ name: this.options.leaderElection.leaseName }, 1);
    // Everything in the cache gets a reconcile on taking over, as a new controller-runtime leader does.
    for (const informer of this.cache.informers(reconciler.watches.primary)) {
      for (const object of informer.list()) queue.add(keyString(keyOf(object)));
    }
    for (let worker = 0; worker < this.options.workers; worker++) this.workers.push(this.worker(work.signal));
    this.logger.info({ controller: reconciler.name, workers: this.options.workers }, 'reconciling');
  }

  private stopLeading(): void {
    this.leading = false;
    this.metrics.leaderStatus.set({ name: this.options.leaderElection.leaseName }, 0);
    this.workSignal?.abort(new Error('leadership lost'));
    this.queue?.cancelWaiters();
    if (!this.stopping) this.logger.warn('stopped reconciling: leadership lost');
  }

  private async worker(signal: AbortSignal): Promise<void> {
    const reconciler = this.reconciler!;
    const queue = this.queue!;
    const labels = { controller: reconciler.name };
    while (!signal.aborted) {
      const item = await queue.get();
      if (item === undefined) break;
      if (signal.aborted) {
        queue.done(item);
        queue.add(item); // not ours to process any more; the next leader (maybe us) will
        break;
      }
      const key = parseKey(item);
      const reconcileID = randomUUID();
      const logger = this.logger.child({
        controller: reconciler.name,
        namespace: key.namespace,
        name: key.name,
        reconcileID,
      });
      this.metrics.activeWorkers.inc(labels);
      const started = process.hrtime.bigint();
      let result: ReconcileResult;
      try {
        result = await reconciler.reconcile(key, {
          logger,
          cache: this.cache,
          client: this.client,
          events: this.events,
          signal,
        });
        const after = result?.requeueAfterMs;
        queue.forget(item);
        if (after !== undefined && after > 0) {
          queue.addAfter(item, after);
          this.metrics.reconcileTotal.inc({ ...labels, result: 'requeue_after' });
        } else if (after === 0) {
          queue.addRateLimited(item);
          this.metrics.reconcileTotal.inc({ ...labels, result: 'requeue' });
        } else {
          this.metrics.reconcileTotal.inc({ ...labels, result: 'success' });
        }
      } catch (error) {
        if (signal.aborted) {
          queue.add(item);
          logger.info({ err: errorMessage(error) }, 'reconcile interrupted: leadership lost or shutting down');
        } else {
          const delay = queue.addRateLimited(item);
          this.metrics.reconcileTotal.inc({ ...labels, result: 'error' });
          this.metrics.reconcileErrors.inc(labels);
          logger.error(
            { err: errorMessage(error), retryInMs: delay, retries: queue.retries(item) },
            'reconcile failed',
          );
        }
      } finally {
        this.metrics.reconcileTime.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
        this.metrics.activeWorkers.dec(labels);
        queue.done(item);
      }
    }
  }

  /** /metrics on metricsPort; /healthz and /readyz on healthPort (the shared observability handler). */
  private async startServers(): Promise<void> {
    const host = this.tuning.listenHost ?? '0.0.0.0';
    if (this.options.metricsPort > 0) {
      const server = await startObservabilityServer({ registry: this.registry, port: this.options.metricsPort, host });
      this.servers.push(server);
      this.boundPorts.metrics = server.port;
    }
    if (this.options.healthPort > 0) {
      const server = await startObservabilityServer({
        registry: this.registry,
        port: this.options.healthPort,
        host,
        ready: () => this.readiness(),
      });
      this.servers.push(server);
      this.boundPorts.health = server.port;
    }
  }

  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    this.logger.info('manager stopping: no new work');
    const queue = this.queue;
    queue?.shutDown();
    // In-flight reconciles see their signal abort and get shutdownTimeoutMs to finish.
    this.workSignal?.abort(new Error('shutting down'));
    const workers = Promise.all(this.workers);
    // 20 s leaves time to release the Lease within the default 30 s terminationGracePeriodSeconds.
    const timeoutMs = this.tuning.shutdownTimeoutMs ?? 20_000;
    const timer = new AbortController(); // cancels the bound's timer so it does not keep the process alive
    const finished = await Promise.race([
      workers.then(() => true),
      this.clock.sleep(timeoutMs, timer.signal).then(() => false),
    ]);
    timer.abort();
    if (!finished)
      this.logger.warn({ inFlight: queue?.inFlight(), timeoutMs }, 'in-flight reconciles did not finish in time');
    // Only now release the lease, so the next leader never overlaps with our last reconciles.
    if (this.elector) await this.elector.stop();
    else if (this.leading) this.stopLeading();
    await Promise.all(this.cache.informers().map((informer) => informer.stop()));
    await this.events.stop();
    await Promise.all(this.servers.map((server) => server.close()));
    this.rest.close();
    this.logger.info('manager stopped');
    this.resolveRun?.();
  }
}

export function createManager(options: RuntimeManagerOptions): RuntimeManager {
  return new RuntimeManager(options);
}
