// A rate-limited work queue with client-go's semantics: an item is queued at most once (dirty set), is handed
// to at most one worker at a time (processing set), and an item added while it is being processed is handed
// out again after `done`. Failures back off per item (exponential) and globally (token bucket); `addAfter`
// schedules delayed requeues, keeping only the earliest per item.
import { ItemExponentialBackoff, TokenBucket } from './backoff.js';
import { type Clock, systemClock } from './clock.js';
import type { RuntimeMetrics } from './metrics.js';

export type WorkQueueOptions = {
  name: string;
  clock?: Clock;
  metrics?: RuntimeMetrics;
  /** Per-item failure backoff, client-go's defaults: 5 ms doubling up to 1000 s. */
  itemBaseDelayMs?: number;
  itemMaxDelayMs?: number;
  /** Global limit on rate-limited re-adds, client-go's defaults: 10 per second, burst 100. */
  retryQps?: number;
  retryBurst?: number;
};

export class WorkQueue<T> {
  readonly name: string;
  private readonly clock: Clock;
  private readonly metrics: RuntimeMetrics | undefined;
  private readonly queue: T[] = [];
  private readonly dirty = new Set<T>();
  private readonly processing = new Map<T, number>(); // item -> start time
  private readonly addedAt = new Map<T, number>(); // item -> first add time while waiting
  private readonly delayed = new Map<T, { due: number; cancel(): void }>();
  private readonly waiters: ((item: T | undefined) => void)[] = [];
  private readonly itemBackoff: ItemExponentialBackoff<T>;
  private readonly bucket: TokenBucket;
  private shuttingDown = false;

  constructor(options: WorkQueueOptions) {
    this.name = options.name;
    this.clock = options.clock ?? systemClock;
    this.metrics = options.metrics;
    this.itemBackoff = new ItemExponentialBackoff<T>(options.itemBaseDelayMs ?? 5, options.itemMaxDelayMs ?? 1_000_000);
    this.bucket = new TokenBucket(options.retryQps ?? 10, options.retryBurst ?? 100, this.clock);
    this.metrics?.onCollect(() => this.collect());
    this.metrics?.workqueueDepth.set({ name: this.name }, 0);
  }

  add(item: T): void {
    if (this.shuttingDown || this.dirty.has(item)) return;
    this.metrics?.workqueueAdds.inc({ name: this.name });
    this.dirty.add(item);
    if (this.processing.has(item)) return; // handed out again by done()
    this.enqueue(item);
  }

  private enqueue(item: T): void {
    this.addedAt.set(item, this.clock.monotonic());
    const waiter = this.waiters.shift();
    if (waiter) {
      this.handOut(item);
      waiter(item);
      return;
    }
    this.queue.push(item);
    this.updateDepth();
  }

  private handOut(item: T): void {
    const now = this.clock.monotonic();
    const added = this.addedAt.get(item);
    if (added !== undefined) this.metrics?.workqueueQueueDuration.observe({ name: this.name }, (now - added) / 1000);
    this.addedAt.delete(item);
    this.dirty.delete(item);
    this.processing.set(item, now);
  }

  /** The next item, waiting for one; undefined once the queue is shut down. */
  get(): Promise<T | undefined> {
    if (this.shuttingDown) return Promise.resolve(undefined);
    const item = this.queue.shift();
    if (item !== undefined) {
      this.updateDepth();
      this.handOut(item);
      return Promise.resolve(item);
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Cancels a pending get() (a worker stopping while the queue is empty). */
  cancelWaiters(): void {
    for (const waiter of this.waiters.splice(0)) waiter(undefined);
  }

  done(item: T): void {
    const started = this.processing.get(item);
    if (started === undefined) return;
    this.processing.delete(item);
    this.metrics?.workqueueWorkDuration.observe({ name: this.name }, (this.clock.monotonic() - started) / 1000);
    if (this.dirty.has(item) && !this.shuttingDown) this.enqueue(item);
  }

  /** Adds the item after ms; an earlier pending schedule for the same item wins. */
  addAfter(item: T, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) {
      this.add(item);
      return;
    }
    const due = this.clock.monotonic() + ms;
    const pending = this.delayed.get(item);
    if (pending && pending.due <= due) return;
    pending?.cancel();
    const handle = this.clock.setTimeout(() => {
      this.delayed.delete(item);
      this.add(item);
    }, ms);
    this.delayed.set(item, { due, cancel: handle.cancel });
  }

  /** Re-adds a failed item after max(per-item exponential backoff, global token-bucket delay). */
  addRateLimited(item: T): number {
    this.metrics?.workqueueRetries.inc({ name: this.name });
    const delay = Math.max(this.itemBackoff.next(item), this.bucket.reserve());
    this.addAfter(item, delay);
    return delay;
  }

  /** Resets the per-item backoff after a success. */
  forget(item: T): void {
    this.itemBackoff.forget(item);
  }

  retries(item: T): number {
    return this.itemBackoff.retries(item);
  }

  length(): number {
    return this.queue.length;
  }

  inFlight(): number {
    return this.processing.size;
  }

  pendingDelayed(): number {
    return this.delayed.size;
  }

  isProcessing(item: T): boolean {
    return this.processing.has(item);
  }

  /** Stops handing out work; pending waiters get undefined. Items in flight may still call done(). */
  shutDown(): void {
    this.shuttingDown = true;
    for (const { cancel } of this.delayed.values()) cancel();
    this.delayed.clear();
    this.cancelWaiters();
  }

  private updateDepth(): void {
    this.metrics?.workqueueDepth.set({ name: this.name }, this.queue.length);
  }

  private collect(): void {
    if (!this.metrics) return;
    const now = this.clock.monotonic();
    let total = 0;
    let longest = 0;
    for (const started of this.processing.values()) {
      const seconds = (now - started) / 1000;
      total += seconds;
      longest = Math.max(longest, seconds);
    }
    this.metrics.workqueueUnfinishedWork.set({ name: this.name }, total);
    this.metrics.workqueueLongestRunning.set({ name: this.name }, longest);
  }
}
