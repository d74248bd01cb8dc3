// Clocks for tests: a fake one for unit tests of the runtime (time moves only when the test says so, and due timers
// fire in order), and the system's with a wall clock that a test can step, for tests against real servers. Both
// step the wall clock alone, as NTP or a resumed VM does: timers and the monotonic clock go on undisturbed.
import { type Clock, systemClock } from '../../src/kube/clock.js';

/** A clock that only moves when told to; timers fire in order of their due time. */
export class FakeClock implements Clock {
  private current: number;
  private wallOffset = 0;
  private timers: { due: number; seq: number; callback: () => void }[] = [];
  private seq = 0;

  constructor(start = 1_700_000_000_000) {
    this.current = start;
  }

  now(): number {
    return this.current + this.wallOffset;
  }

  monotonic(): number {
    return this.current;
  }

  /** Steps the wall clock by ms (negative: back); timers and the monotonic clock do not move. */
  stepWall(ms: number): void {
    this.wallOffset += ms;
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

/** The system's clock (real timers, real monotonic time) whose wall clock a test steps. */
export class SteppedWallClock implements Clock {
  private wallOffset = 0;

  now(): number {
    return systemClock.now() + this.wallOffset;
  }

  monotonic(): number {
    return systemClock.monotonic();
  }

  /** Steps the wall clock by ms (negative: back). */
  stepWall(ms: number): void {
    this.wallOffset += ms;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return systemClock.sleep(ms, signal);
  }

  setTimeout(callback: () => void, ms: number): { cancel(): void } {
    return systemClock.setTimeout(callback, ms);
  }
}

/**
 * This process's wall clock (Date.now) made steppable, as NTP or a resumed VM steps it: Node's timers and
 * performance.now() do not move. Installed before the code under test reads Date.now (some keep a reference to it).
 */
export function steppableProcessWallClock(): { step(ms: number): void; restore(): void } {
  const real = Date.now;
  let offset = 0;
  Date.now = () => real() + offset;
  return {
    step: (ms) => {
      offset += ms;
    },
    restore: () => {
      Date.now = real;
    },
  };
}
