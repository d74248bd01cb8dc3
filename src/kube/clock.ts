// Time as a dependency, so the queue, the backoff and the leader election can be driven by a fake clock in tests
// (test/support/fake-clock.ts). Two readings, as client-go's time.Time carries both: the wall clock for timestamps
// written out (a Lease's renewTime, an Event's time), and a monotonic clock for every duration, deadline and expiry,
// because the wall clock steps (an NTP correction, a VM resumed) and a step must never shorten or stretch a wait.
import { monotonicNow } from '../common/time.js';

export interface Clock {
  /** Wall time, milliseconds since the epoch: only for timestamps written out, never for a duration. */
  now(): number;
  /** Milliseconds on a clock that never steps; only differences between two readings mean anything. */
  monotonic(): number;
  /** Resolves after ms, or early (without rejecting) when the signal aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  setTimeout(callback: () => void, ms: number): { cancel(): void };
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: monotonicNow,
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
