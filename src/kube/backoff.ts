// Rate limiters and backoff, after client-go's workqueue: a per-item exponential failure limiter, a token bucket
// (used both as the queue's global retry limit and as the REST client's QPS/burst limit) and a jittered backoff.
import { type Clock, systemClock } from './clock.js';

/** Exponential backoff per item: base * 2^failures, capped. `forget` resets an item after a success. */
export class ItemExponentialBackoff<K> {
  private readonly failures = new Map<K, number>();

  constructor(
    readonly baseMs = 5,
    readonly maxMs = 1_000_000,
  ) {}

  /** The delay for this failure, counting it. */
  next(item: K): number {
    const count = this.failures.get(item) ?? 0;
    this.failures.set(item, count + 1);
    // 2^count overflows to Infinity past ~1023; Math.min caps it either way.
    return Math.min(this.baseMs * 2 ** count, this.maxMs);
  }

  retries(item: K): number {
    return this.failures.get(item) ?? 0;
  }

  forget(item: K): void {
    this.failures.delete(item);
  }
}

/**
 * A token bucket: `burst` tokens, refilled at `ratePerSecond`. `reserve()` takes a token now or books a future one
 * and returns how long to wait for it, so callers are served in order and a burst of callers never busy-waits.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    readonly ratePerSecond: number,
    readonly burst: number,
    private readonly clock: Clock = systemClock,
  ) {
    if (!(ratePerSecond > 0)) throw new Error(`token bucket rate must be > 0, got ${ratePerSecond}`);
    if (!(burst >= 1)) throw new Error(`token bucket burst must be >= 1, got ${burst}`);
    this.tokens = burst;
    this.last = clock.monotonic();
  }

  private refill(): void {
    const now = this.clock.monotonic();
    const elapsed = Math.max(0, now - this.last);
    this.last = now;
    this.tokens = Math.min(this.burst, this.tokens + (elapsed / 1000) * this.ratePerSecond);
  }

  /** Takes one token (possibly going into debt) and returns the wait in ms before it may be used. */
  reserve(): number {
    this.refill();
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.ratePerSecond) * 1000);
  }

  /** Waits for a token. A reservation abandoned by an abort is returned to the bucket. */
  async take(signal?: AbortSignal): Promise<void> {
    const wait = this.reserve();
    if (wait <= 0) return;
    await this.clock.sleep(wait, signal);
    if (signal?.aborted) this.tokens = Math.min(this.burst, this.tokens + 1);
  }

  available(): number {
    this.refill();
    return this.tokens;
  }
}

export type BackoffOptions = { initialMs: number; maxMs: number; factor?: number; jitter?: number };

/** Jittered exponential backoff for reconnects and retries: initial * factor^attempt, capped, ±jitter. */
export class Backoff {
  private attempt = 0;

  constructor(
    private readonly options: BackoffOptions,
    private readonly random: () => number = Math.random,
  ) {}

  next(): number {
    const { initialMs, maxMs, factor = 2, jitter = 0.2 } = this.options;
    const base = Math.min(maxMs, initialMs * factor ** this.attempt);
    this.attempt++;
    const spread = base * jitter * (this.random() * 2 - 1);
    return Math.max(0, Math.round(Math.min(maxMs, base + spread)));
  }

  reset(): void {
    this.attempt = 0;
  }

  attempts(): number {
    return this.attempt;
  }
}

/** A value uniformly spread between value and value*(1+factor), like client-go's wait.Jitter. */
export function jitter(value: number, factor: number, random: () => number = Math.random): number {
  return value + value * factor * random();
}
