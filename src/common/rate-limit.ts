// Rates as an API provider counts them: N calls within any one second (N/s) or within any 60 s (N/m), a sliding
// window, not buckets refilled on the clock's whole seconds (which let 2N through around a boundary). Written once
// for every budget of the engine: the gateway's callers (src/gateway/callers.ts) and the APIs' budgets.

export type Rate = { calls: number; windowMs: number };

const RATE = /^([1-9]\d{0,8})\/(s|m)$/;

/** "20/s" or "600/m" as a Rate; undefined for anything else (zero, a fraction, another unit). */
export function parseRate(text: string): Rate | undefined {
  const match = RATE.exec(text.trim());
  if (!match) return undefined;
  return { calls: Number(match[1]), windowMs: match[2] === 's' ? 1_000 : 60_000 };
}

export const formatRate = (rate: Rate): string => `${rate.calls}/${rate.windowMs === 1_000 ? 's' : 'm'}`;

/** The answer of a limiter: taken, or the milliseconds until the oldest start in the window leaves it. */
export type Acquired = { ok: true } | { ok: false; retryAfterMs: number };

/**
 * At most `rate.calls` starts within any `rate.windowMs`: the start times of the last `calls` starts in a ring, so a
 * start is admitted when the oldest of them is at least a window old. O(1) per call, `calls` numbers of memory.
 * `now` is a monotonic clock in milliseconds (performance.now()), so a step of the wall clock changes nothing.
 */
export class SlidingWindowLimiter {
  readonly #starts: Float64Array;
  #next = 0;

  constructor(
    readonly rate: Rate,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.#starts = new Float64Array(rate.calls).fill(Number.NEGATIVE_INFINITY);
  }

  tryAcquire(): Acquired {
    const wait = this.waitMs();
    if (wait > 0) return { ok: false, retryAfterMs: wait };
    this.take();
    return { ok: true };
  }

  /**
   * Milliseconds until a start would be admitted (0: now), taking nothing: with `take`, several limiters that must all
   * admit one call (an API's and its endpoint's) are asked first and charged only when every one of them admits it.
   */
  waitMs(now: number = this.now()): number {
    const wait = this.#starts[this.#next]! + this.rate.windowMs - now;
    return wait > 0 ? Math.ceil(wait) : 0;
  }

  /**
   * Records a start; only after `waitMs()` answered 0 in the same turn of the event loop. `now`: the reading that
   * `waitMs` was given, when the caller reads the clock once for several limiters.
   */
  take(now: number = this.now()): void {
    this.#starts[this.#next] = now;
    this.#next = (this.#next + 1) % this.#starts.length;
  }
}
