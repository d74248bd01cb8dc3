// Kubernetes Events (core/v1), as client-go's event recorder does them: record() never blocks (a bounded queue
// drained by one background sender), a per-(object, reason) token bucket drops spam, and a repeat of the same
// (object, type, reason, message) within the aggregation window patches the existing Event's count and
// lastTimestamp instead of creating another object.
import { hostname } from 'node:os';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { errorMessage } from '../common/errors.js';
import { wholeSecondsIso } from '../common/time.js';
import { TokenBucket } from './backoff.js';
import { type Clock, systemClock } from './clock.js';
import { isNotFound } from './errors.js';
import type { RuntimeMetrics } from './metrics.js';
import type { RestClient } from './rest.js';
import type { EventRecorder, EventType } from './types.js';

export type EventRecorderOptions = {
  component: string;
  instance?: string;
  logger: Logger;
  metrics?: RuntimeMetrics;
  clock?: Clock;
  /** Per (object, reason): burst, then one every refillEveryMs (client-go: 25, then 1 per 5 min). */
  burst?: number;
  refillEveryMs?: number;
  maxQueued?: number;
  /** A repeat within this window increments the existing Event's count. */
  aggregationWindowMs?: number;
  maxCachedEvents?: number;
};

/** `at`: wall time, written into the Event; `seenAt`: monotonic, for the aggregation window. */
type Pending = {
  object: KubernetesObject;
  type: EventType;
  reason: string;
  message: string;
  at: number;
  seenAt: number;
};
type Sent = { namespace: string; name: string; count: number; lastSeenAt: number };

/** core/v1 Time has second precision. */
const eventTime = (ms: number): string => wholeSecondsIso(ms)!;

export class KubeEventRecorder implements EventRecorder {
  private readonly clock: Clock;
  private readonly queue: Pending[] = [];
  private readonly spam = new Map<string, TokenBucket>();
  private readonly sent = new Map<string, Sent>();
  private draining: Promise<void> | undefined;
  private stopped = false;
  private sequence = 0;

  constructor(
    private readonly rest: RestClient,
    private readonly options: EventRecorderOptions,
  ) {
    this.clock = options.clock ?? systemClock;
  }

  record(object: KubernetesObject, type: EventType, reason: string, message: string): void {
    if (this.stopped) return;
    const meta = object.metadata ?? {};
    const source = `${meta.uid ?? ''}|${meta.namespace ?? ''}|${meta.name ?? ''}|${object.kind ?? ''}|${reason}`;
    let bucket = this.spam.get(source);
    if (!bucket) {
      bucket = new TokenBucket(1000 / (this.options.refillEveryMs ?? 300_000), this.options.burst ?? 25, this.clock);
      if (this.spam.size >= (this.options.maxCachedEvents ?? 4096)) this.spam.delete(this.spam.keys().next().value!);
      this.spam.set(source, bucket);
    }
    if (bucket.available() < 1) {
      this.options.metrics?.eventsDropped.inc({ reason: 'rate_limited' });
      return;
    }
    bucket.reserve();
    if (this.queue.length >= (this.options.maxQueued ?? 1000)) {
      this.options.metrics?.eventsDropped.inc({ reason: 'queue_full' });
      return;
    }
    this.queue.push({
      object,
      type,
      reason,
      message: message.slice(0, 1024),
      at: this.clock.now(),
      seenAt: this.clock.monotonic(),
    });
    this.draining ??= this.drain().finally(() => {
      this.draining = undefined;
    });
  }

  /** Sends what is queued (bounded by timeoutMs), then drops the rest. */
  async stop(timeoutMs = 2000): Promise<void> {
    this.stopped = true;
    if (this.draining) {
      const timer = new AbortController();
      await Promise.race([this.draining, this.clock.sleep(timeoutMs, timer.signal)]);
      timer.abort();
    }
    this.queue.length = 0;
  }

  private async drain(): Promise<void> {
    for (let next = this.queue.shift(); next; next = this.queue.shift()) {
      try {
        await this.send(next);
      } catch (error) {
        this.options.metrics?.eventsDropped.inc({ reason: 'error' });
        this.options.logger.debug({ err: errorMessage(error), reason: next.reason }, 'could not send an Event');
      }
    }
  }

  private async send({ object, type, reason, message, at, seenAt }: Pending): Promise<void> {
    const meta = object.metadata ?? {};
    const namespace = meta.namespace || 'default';
    const key = `${meta.uid ?? ''}|${namespace}|${meta.name ?? ''}|${object.kind ?? ''}|${type}|${reason}|${message}`;
    const previous = this.sent.get(key);
    const windowMs = this.options.aggregationWindowMs ?? 600_000;
    if (previous && seenAt - previous.lastSeenAt < windowMs) {
      try {
        await this.rest.request({
          method: 'PATCH',
          path: `/api/v1/namespaces/${encodeURIComponent(previous.namespace)}/events/${encodeURIComponent(previous.name)}`,
          body: { count: previous.count + 1, lastTimestamp: eventTime(at) },
          contentType: 'application/merge-patch+json',
          retry: false,
        });
        previous.count++;
        previous.lastSeenAt = seenAt;
        this.remember(key, previous);
        return;
      } catch (error) {
        if (!isNotFound(error)) throw error;
        // The Event expired (default TTL 1 h) or was deleted: create a new one.
      }
    }
    const name = `${meta.name ?? 'object'}.${(at * 1000 + (this.sequence++ % 1000)).toString(16)}`;
    await this.rest.request({
      method: 'POST',
      path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`,
      body: {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name, namespace },
        involvedObject: {
          apiVersion: object.apiVersion,
          kind: object.kind,
          name: meta.name,
          namespace: meta.namespace,
          uid: meta.uid,
          resourceVersion: meta.resourceVersion,
        },
        type,
        reason,
        message,
        count: 1,
        firstTimestamp: eventTime(at),
        lastTimestamp: eventTime(at),
        source: { component: this.options.component, host: hostname() },
        reportingComponent: this.options.component,
        reportingInstance: this.options.instance ?? hostname(),
      },
      retry: false,
    });
    this.remember(key, { namespace, name, count: 1, lastSeenAt: seenAt });
  }

  private remember(key: string, entry: Sent): void {
    this.sent.delete(key);
    if (this.sent.size >= (this.options.maxCachedEvents ?? 4096)) this.sent.delete(this.sent.keys().next().value!);
    this.sent.set(key, entry);
  }
}
