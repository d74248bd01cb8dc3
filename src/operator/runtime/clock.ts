// Time as a dependency, so the queue, the backoff and the leader election can be driven by a fake clock in tests.

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after ms, or early (without rejecting) when the signal aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  setTimeout(callback: () => void, ms: number): { cancel(): void };
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep(ms, signal) {
    return new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const timer = setTimeout(done, Math.max(0, ms));
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      }
      signal?.addEventListener('abort', done, { once: true });
    });
  },
  setTimeout(callback, ms) {
    const timer = setTimeout(callback, Math.max(0, ms));
    timer.unref?.();
    return { cancel: () => clearTimeout(timer) };
  },
};

/** A clock that only moves when told to; timers fire in order of their due time. */
export class FakeClock implements Clock {
  private current: number;
  private timers: { due: number; seq: number; callback: () => void }[] = [];
  private seq = 0;

  constructor(start = 1_700_000_000_000) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(callback: () => void, ms: number): { cancel(): void } {
    const timer = { due: this.current + Math.max(0, ms), seq: this.seq++, callback };
    this.timers.push(timer);
    return {
      cancel: () => {
        this.timers = this.timers.filter((other) => other !== timer);
      },
    };
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const handle = this.setTimeout(done, ms);
      function done() {
        handle.cancel();
        signal?.removeEventListener('abort', done);
        resolve();
      }
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /** Moves time forward by ms, firing due timers one by one and letting promise chains settle between them. */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      await settle();
      this.timers.sort((a, b) => a.due - b.due || a.seq - b.seq);
      const next = this.timers[0];
      if (!next || next.due > target) break;
      this.timers.shift();
      this.current = Math.max(this.current, next.due);
      next.callback();
    }
    this.current = target;
    await settle();
  }

  pendingTimers(): number {
    return this.timers.length;
  }
}

/** Lets queued microtasks and immediate callbacks run. */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
