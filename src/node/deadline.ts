// When a coordinator run stops starting and sending work (docs/chain-cycle.md, "The window"): the window's hard end
// (its end plus HARD_END_MARGIN_MS), or SIGTERM, whichever comes first. After it nothing new is signed or sent: a
// request whose API answer or worker comes later stays open for the next window, never fail()ed for lateness.
// The window's loop, the executors, the worker Jobs and the in-process API calls read the same deadline.
import { monotonicNow } from '../common/time.js';

/**
 * How long after the window's end the work already started may still run (the last poll's cycle: its API calls, a
 * worker Job, the sends). The operator's Job deadline leaves room for it and the pod's start-up
 * (src/operator/builders/coordinator.ts); after it the run reports and exits.
 */
export const HARD_END_MARGIN_MS = 5_000;
/**
 * How long a cycle in flight is given, once the deadline has passed, to settle what it already did (nothing new is
 * started or sent by then) before the run reports without it.
 */
export const SETTLE_AFTER_STOP_MS = 1_000;

/** The longest delay setTimeout honours (about 24.8 days); a hard end further away is a mistake of units. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class WorkDeadline {
  private readonly controller = new AbortController();
  private readonly timer: ReturnType<typeof setTimeout> | undefined;
  private requirement: { holds: () => boolean; reason: string } | undefined;

  /**
   * `hardEndAt`: the reading of `now` (the monotonic clock, so a stepped wall clock neither ends the work early nor
   * lets it run late) after which nothing new starts or is sent; undefined: only `stop()` ends the work.
   */
  constructor(
    readonly hardEndAt: number | undefined,
    private readonly now: () => number = monotonicNow,
  ) {
    if (hardEndAt !== undefined) {
      const delay = Math.max(0, hardEndAt - now());
      if (delay > MAX_TIMER_MS) throw new RangeError(`a hard end ${delay} ms away: not a reading of the work's clock`);
      this.timer = setTimeout(() => this.stop("the window's hard end"), delay);
      // The deadline never keeps the process alive by itself.
      this.timer.unref?.();
    }
  }

  /** A deadline `ms` from now (undefined: only `stop()` ends the work). */
  static after(ms: number | undefined, now: () => number = monotonicNow): WorkDeadline {
    return new WorkDeadline(ms === undefined ? undefined : now() + ms, now);
  }

  /** Aborted once the deadline has passed (its reason says which). */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get stopped(): boolean {
    if (!this.controller.signal.aborted && this.requirement && !this.requirement.holds()) {
      this.stop(this.requirement.reason);
    }
    return this.controller.signal.aborted || (this.hardEndAt !== undefined && this.now() >= this.hardEndAt);
  }

  /**
   * The work goes on only while `holds()` (the hand-over Lease is still this run's): asked at every check of the
   * deadline, which stops with `reason` the first time it fails, without waiting for a timer to notice.
   */
  stopUnless(holds: () => boolean, reason: string): void {
    this.requirement = { holds, reason };
  }

  /** Why the work stopped, for the outcomes and logs; undefined while it runs. */
  get reason(): string | undefined {
    if (!this.stopped) return undefined;
    return this.controller.signal.aborted ? String(this.controller.signal.reason) : "the window's hard end";
  }

  /** Milliseconds until the hard end (Infinity without one; 0 once stopped). */
  timeLeftMs(): number {
    if (this.stopped) return 0;
    return this.hardEndAt === undefined ? Number.POSITIVE_INFINITY : this.hardEndAt - this.now();
  }

  /** The work is done: the hard end and the requirement (stopUnless) no longer apply (a later `stop()` still does). */
  finish(): void {
    if (this.timer) clearTimeout(this.timer);
    this.requirement = undefined;
  }

  /** Ends the work now (SIGTERM): what is in flight settles, nothing new starts. */
  stop(reason: string): void {
    if (this.timer) clearTimeout(this.timer);
    if (!this.controller.signal.aborted) this.controller.abort(reason);
  }
}

/**
 * `work`'s value, or `fallback()` when the deadline passes first and `work` has not settled `settleMs` later. What
 * `work` does after that is not waited for; it starts and sends nothing new (it reads the same deadline).
 */
export async function settleBy<T>(
  work: Promise<T>,
  deadline: WorkDeadline | undefined,
  fallback: () => T,
  settleMs = SETTLE_AFTER_STOP_MS,
): Promise<T> {
  if (!deadline) return work;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onStop: (() => void) | undefined;
  const givenUp = new Promise<{ givenUp: true }>((resolve) => {
    const giveUp = () => {
      timer = setTimeout(() => resolve({ givenUp: true }), settleMs);
    };
    if (deadline.signal.aborted) giveUp();
    else {
      onStop = giveUp;
      deadline.signal.addEventListener('abort', onStop, { once: true });
    }
  });
  try {
    const first = await Promise.race([work.then((value) => ({ value })), givenUp]);
    if ('givenUp' in first) {
      work.catch(() => undefined);
      return fallback();
    }
    return first.value;
  } finally {
    if (timer) clearTimeout(timer);
    if (onStop) deadline.signal.removeEventListener('abort', onStop);
  }
}

/** Resolves when the deadline passes (never without one); for racing a wait that has no signal of its own. */
export function whenStopped(deadline: WorkDeadline | undefined): Promise<void> {
  const signal = deadline?.signal;
  if (!signal) return new Promise(() => undefined);
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}
