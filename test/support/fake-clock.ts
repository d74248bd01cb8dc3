// A clock for unit tests of the runtime: time moves only when the test says so, and due timers fire in order.
import type { Clock } from '../../src/kube/clock.js';

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
}

/** Lets queued microtasks and immediate callbacks run. */
async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
