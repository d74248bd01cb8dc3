// A list+watch informer for one kind in one namespace (or all) with an optional label selector, written instead of
// client-node's makeInformer (which stops on errors and never asks for bookmarks):
//   list (paginated) -> watch from the list's resourceVersion with bookmarks and a jittered server-side timeout
//   -> on a clean close, watch again from the last resourceVersion; on 410 Gone, relist; on any other error,
//   reconnect after a jittered, capped exponential backoff; every `relistIntervalMs`, relist as a safety net.
// A relist diffs against the cache and emits events only for real differences (by resourceVersion). The time of
// the last sign of life (list, event, bookmark, clean close) feeds /readyz.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { errorMessage } from '../common/errors.js';
import { Backoff, jitter } from './backoff.js';
import type { RuntimeClient } from './client.js';
import { type Clock, systemClock } from './clock.js';
import { ApiError, isGone } from './errors.js';
import type { RuntimeMetrics } from './metrics.js';
import { apiVersionOf, collectionPath, keyOf, keyString, resourceName } from './paths.js';
import { PARTIAL_METADATA, PARTIAL_METADATA_LIST, type RestClient } from './rest.js';
import type { ResourceKind } from './types.js';

export type InformerEventType = 'add' | 'update' | 'delete';
export type InformerHandler = (type: InformerEventType, object: KubernetesObject, old?: KubernetesObject) => void;

export type InformerTuning = {
  /** Server-side watch timeout, picked uniformly in [min, max] per watch so replicas do not reconnect in step. */
  watchTimeoutMinSeconds?: number;
  watchTimeoutMaxSeconds?: number;
  /** Client-side abort when a watch delivers nothing for this long beyond its server-side timeout. */
  watchInactivityGraceMs?: number;
  /** Full relist as a safety net; 0 disables. */
  relistIntervalMs?: number;
  reconnectInitialMs?: number;
  reconnectMaxMs?: number;
};

export type InformerOptions = InformerTuning & {
  kind: ResourceKind;
  namespace?: string; // undefined: all namespaces
  labelSelector?: string;
  /** Cache metadata only (PartialObjectMetadata): for objects whose contents must not sit in memory (Secrets). */
  metadataOnly?: boolean;
  /** What the cache keeps of each object (before managedFields are dropped), e.g. projectToFieldManager. */
  transform?: (object: KubernetesObject) => KubernetesObject;
  client: RuntimeClient;
  rest: RestClient;
  logger: Logger;
  metrics?: RuntimeMetrics;
  clock?: Clock;
};

type WatchOutcome = 'closed' | 'relist';

export class Informer {
  readonly kind: ResourceKind;
  readonly namespace: string | undefined;
  readonly labelSelector: string | undefined;
  private readonly store = new Map<string, KubernetesObject>();
  private readonly handlers: InformerHandler[] = [];
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly resource: string;
  private resourceVersion: string | undefined;
  private synced = false;
  private lastActivity: number;
  private stopController = new AbortController();
  private watchController: AbortController | undefined;
  private relistDue = false;
  private relistTimer: { cancel(): void } | undefined;
  private loop: Promise<void> | undefined;
  private syncWaiters: (() => void)[] = [];

  constructor(private readonly options: InformerOptions) {
    this.kind = options.kind;
    this.namespace = options.namespace || undefined;
    this.labelSelector = options.labelSelector || undefined;
    this.clock = options.clock ?? systemClock;
    this.resource = resourceName(options.kind);
    this.logger = options.logger.child({ resource: this.resource, watchNamespace: this.namespace ?? '*' });
    this.lastActivity = this.clock.monotonic();
    options.metrics?.onCollect(() =>
      options.metrics?.watchSilenceSeconds.set(
        { resource: this.resource, namespace: this.namespace ?? '' },
        this.silentForMs() / 1000,
      ),
    );
  }

  on(handler: InformerHandler): void {
    this.handlers.push(handler);
  }

  start(): void {
    if (this.loop) return;
    this.stopController = new AbortController();
    this.loop = this.run();
    this.scheduleRelist();
  }

  async stop(): Promise<void> {
    this.stopController.abort();
    this.watchController?.abort();
    this.relistTimer?.cancel();
    await this.loop;
    this.loop = undefined;
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** Resolves after the first successful list (or when stopped). */
  waitForSync(): Promise<void> {
    if (this.synced || this.stopController.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  silentForMs(): number {
    return this.clock.monotonic() - this.lastActivity;
  }

  get(namespace: string, name: string): KubernetesObject | undefined {
    return this.store.get(keyString({ namespace, name }));
  }

  list(): KubernetesObject[] {
    return [...this.store.values()];
  }

  size(): number {
    return this.store.size;
  }

  /** Forces a relist at the next opportunity (tests, and the periodic safety net). */
  requestRelist(): void {
    this.relistDue = true;
    this.watchController?.abort();
  }

  private scheduleRelist(): void {
    const interval = this.options.relistIntervalMs ?? 600_000;
    if (interval <= 0 || this.stopController.signal.aborted) return;
    this.relistTimer = this.clock.setTimeout(
      () => {
        this.requestRelist();
        this.scheduleRelist();
      },
      jitter(interval, 0.1),
    );
  }

  private touch(): void {
    this.lastActivity = this.clock.monotonic();
  }

  private emit(type: InformerEventType, object: KubernetesObject, old?: KubernetesObject): void {
    for (const handler of this.handlers) {
      try {
        handler(type, object, old);
      } catch (error) {
        this.logger.error({ err: errorMessage(error) }, 'informer handler failed');
      }
    }
  }

  /** Cache form: apiVersion/kind filled in (list items lack them), the transform applied, managedFields dropped. */
  private normalize(raw: KubernetesObject): KubernetesObject {
    raw.apiVersion ??= apiVersionOf(this.kind);
    raw.kind ??= this.kind.kind;
    const object = this.options.transform ? this.options.transform(raw) : raw;
    if (object.metadata) delete object.metadata.managedFields;
    return object;
  }

  private async run(): Promise<void> {
    const signal = this.stopController.signal;
    const backoff = new Backoff({
      initialMs: this.options.reconnectInitialMs ?? 800,
      maxMs: this.options.reconnectMaxMs ?? 30_000,
    });
    let relistReason = 'initial';
    let goneInARow = 0;
    while (!signal.aborted) {
      try {
        if (this.resourceVersion === undefined || this.relistDue) {
          await this.relist(relistReason);
          backoff.reset();
        }
        const started = this.clock.monotonic();
        const { outcome, events } = await this.watchOnce();
        if (outcome === 'relist') {
          relistReason = 'periodic';
          this.options.metrics?.watchRestarts.inc({ resource: this.resource, reason: 'relist' });
          continue;
        }
        this.options.metrics?.watchRestarts.inc({ resource: this.resource, reason: 'timeout' });
        goneInARow = 0;
        // A watch closing at once with nothing delivered is a broken server or proxy: back off, never spin.
        if (events === 0 && this.clock.monotonic() - started < 1000) {
          await this.clock.sleep(backoff.next(), signal);
        } else {
          backoff.reset();
        }
      } catch (error) {
        if (signal.aborted) break;
        if (isGone(error)) {
          this.logger.info({ resourceVersion: this.resourceVersion }, 'watch expired (410 Gone): relisting');
          this.options.metrics?.watchRestarts.inc({ resource: this.resource, reason: 'gone' });
          this.resourceVersion = undefined;
          relistReason = 'gone';
          // A relist right away is what client-go does; 410 again straight after a relist backs off instead.
          if (++goneInARow > 1) await this.clock.sleep(backoff.next(), signal);
          continue;
        }
        const delay = backoff.next();
        this.options.metrics?.watchRestarts.inc({ resource: this.resource, reason: 'error' });
        this.logger.warn(
          {
            err: errorMessage(error),
            retryInMs: delay,
            attempt: backoff.attempts(),
          },
          'list/watch failed: reconnecting after backoff',
        );
        if (error instanceof ApiError && error.status !== 0 && error.status !== 429 && error.status < 500) {
          // 4xx other than 410/429 (e.g. RBAC): the resourceVersion may be the problem; start over with a list.
          this.resourceVersion = undefined;
          relistReason = 'error';
        }
        await this.clock.sleep(Math.max(delay, error instanceof ApiError ? (error.retryAfterMs ?? 0) : 0), signal);
      }
    }
    for (const resolve of this.syncWaiters.splice(0)) resolve();
  }

  private async relist(reason: string): Promise<void> {
    this.options.metrics?.relists.inc({ resource: this.resource, reason });
    const { items, resourceVersion } = await this.options.client.listPaged(
      this.kind,
      this.namespace,
      this.labelSelector,
      this.stopController.signal,
      this.options.metadataOnly ? PARTIAL_METADATA_LIST : undefined,
      (raw) => this.normalize(raw),
    );
    this.touch();
    const seen = new Set<string>();
    let changes = 0;
    for (const object of items) {
      const key = keyString(keyOf(object));
      seen.add(key);
      const old = this.store.get(key);
      this.store.set(key, object);
      if (!old) {
        changes++;
        this.emit('add', object);
      } else if (old.metadata?.resourceVersion !== object.metadata?.resourceVersion) {
        changes++;
        this.emit('update', object, old);
      }
    }
    for (const [key, old] of this.store) {
      if (seen.has(key)) continue;
      this.store.delete(key);
      changes++;
      this.emit('delete', old);
    }
    this.resourceVersion = resourceVersion;
    this.relistDue = false; // only now: a failed relist is retried, not replaced by a watch from the old version
    this.logger.debug({ reason, items: items.length, changes, resourceVersion }, 'listed');
    if (!this.synced) {
      this.synced = true;
      for (const resolve of this.syncWaiters.splice(0)) resolve();
    }
  }

  private async watchOnce(): Promise<{ outcome: WatchOutcome; events: number }> {
    const minSeconds = this.options.watchTimeoutMinSeconds ?? 300;
    const maxSeconds = Math.max(minSeconds, this.options.watchTimeoutMaxSeconds ?? 600);
    const timeoutSeconds = Math.round(minSeconds + Math.random() * (maxSeconds - minSeconds));
    const controller = new AbortController();
    this.watchController = controller;
    const onStop = () => controller.abort();
    // A listener added to an already-aborted signal never fires: check first.
    if (this.stopController.signal.aborted) return { outcome: 'closed', events: 0 };
    this.stopController.signal.addEventListener('abort', onStop, { once: true });
    let events = 0;
    try {
      const stream = this.options.rest.watch({
        path: collectionPath(this.kind, this.namespace),
        query: {
          resourceVersion: this.resourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds,
          labelSelector: this.labelSelector,
        },
        signal: controller.signal,
        inactivityTimeoutMs: timeoutSeconds * 1000 + (this.options.watchInactivityGraceMs ?? 60_000),
        ...(this.options.metadataOnly ? { accept: PARTIAL_METADATA } : {}),
      });
      for await (const event of stream) {
        this.touch();
        events++;
        this.options.metrics?.watchEvents.inc({ resource: this.resource, type: event.type });
        if (event.type === 'ERROR') {
          const status = event.object as { code?: number; message?: string; reason?: string };
          throw new ApiError(`watch error: ${status.message ?? 'unknown'}`, status.code ?? 500, status.reason);
        }
        const object = event.object as KubernetesObject;
        const resourceVersion = object.metadata?.resourceVersion;
        if (event.type !== 'BOOKMARK') this.apply(event.type, this.normalize(object));
        if (resourceVersion) this.resourceVersion = resourceVersion;
      }
      if (this.relistDue && !this.stopController.signal.aborted) return { outcome: 'relist', events };
      this.touch(); // a clean close at the server-side timeout is a sign of life too
      return { outcome: 'closed', events };
    } catch (error) {
      if (this.relistDue && !this.stopController.signal.aborted) return { outcome: 'relist', events };
      throw error;
    } finally {
      this.stopController.signal.removeEventListener('abort', onStop);
      if (this.watchController === controller) this.watchController = undefined;
    }
  }

  private apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: KubernetesObject): void {
    const key = keyString(keyOf(object));
    const old = this.store.get(key);
    if (type === 'DELETED') {
      this.store.delete(key);
      this.emit('delete', old ?? object);
      return;
    }
    this.store.set(key, object);
    if (!old) this.emit('add', object);
    else if (old.metadata?.resourceVersion !== object.metadata?.resourceVersion) this.emit('update', object, old);
  }
}
