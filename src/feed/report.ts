// The feed's report of its last push per Signed API, for the operator's status.signedApis: the engine tells it each
// push's outcome (FeedEngineOptions.onPush), it keeps the latest per Signed API and hands it to a writer (in a pod,
// the `<name>-feed-report` ConfigMap, src/node/kubernetes) at most once per interval, at once when a Signed API's
// outcome flips between ok and failed (or is first known). A write runs one at a time, off the push path: a failed or slow one delays
// only the next report (retried with backoff), never a push, and is logged once per failing spell.
import { errorMessage } from '../common/errors.js';
import { type Logger, redact } from '../observability/index.js';

/** One push (a POST of one batch) as the engine saw it. */
export type PushEvent = { signedApi: string; ok: boolean; atMs: number; accepted?: number; error?: string };

/** The report's shape (the contract's FeedReport, src/contract/feed-report.ts, which this layer does not import). */
export type SignedApiPushReport = {
  name: string;
  lastPushTime?: string;
  lastPushOutcome?: 'ok' | 'failed';
  lastSuccessTime?: string;
  lastError?: string;
  pushesOk: number;
  pushesFailed: number;
  valuesAccepted: number;
};
export type FeedPushReport = { time: string; signedApis: SignedApiPushReport[] };

export const REPORT_INTERVAL_MS = 15_000;
export const REPORT_BACKOFF = { baseMs: 1_000, maxMs: 60_000 };
const MAX_ERROR_LENGTH = 300;

/** An error as it may go into status: registered secrets redacted, URL credentials removed, short. */
export function reportableError(message: string): string {
  const clean = redact(message).replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi, '$1');
  return clean.length > MAX_ERROR_LENGTH ? `${clean.slice(0, MAX_ERROR_LENGTH - 3)}...` : clean;
}

/**
 * When the next write may start, in ms from now (0: at once), or undefined when there is nothing new to write.
 * After a failed write its backoff holds; else a flip of outcome (or the first report) goes at once, any other change
 * at most once per interval.
 */
export function reportDelayMs(state: {
  nowMs: number;
  changed: boolean;
  outcomeFlipped: boolean;
  lastWriteMs: number | undefined;
  retryAtMs: number | undefined;
  intervalMs: number;
}): number | undefined {
  if (!state.changed) return undefined;
  if (state.retryAtMs !== undefined) return Math.max(0, state.retryAtMs - state.nowMs);
  if (state.outcomeFlipped || state.lastWriteMs === undefined) return 0;
  return Math.max(0, state.lastWriteMs + state.intervalMs - state.nowMs);
}

/** The delay before the next attempt after `failures` failed writes in a row: doubling, capped. */
export function reportRetryDelayMs(failures: number, backoff = REPORT_BACKOFF): number {
  return Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.max(0, failures - 1));
}

export type FeedReporterOptions = {
  signedApis: readonly string[];
  /** Writes the report; rejects when it could not. */
  write: (report: FeedPushReport) => Promise<void>;
  logger: Logger;
  intervalMs?: number;
  backoff?: { baseMs: number; maxMs: number };
};

export class FeedReporter {
  private readonly entries = new Map<string, SignedApiPushReport>();
  private readonly intervalMs: number;
  private readonly backoff: { baseMs: number; maxMs: number };
  private changed = true;
  private outcomeFlipped = false;
  private lastWriteMs: number | undefined;
  private retryAtMs: number | undefined;
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;
  private timerDueMs = 0;
  private writing: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly options: FeedReporterOptions) {
    this.intervalMs = options.intervalMs ?? REPORT_INTERVAL_MS;
    this.backoff = options.backoff ?? REPORT_BACKOFF;
    for (const name of options.signedApis)
      this.entries.set(name, { name, pushesOk: 0, pushesFailed: 0, valuesAccepted: 0 });
    this.schedule();
  }

  /** The engine's onPush: never throws, never waits. */
  record(event: PushEvent): void {
    const entry = this.entries.get(event.signedApi);
    if (!entry) return;
    const time = new Date(event.atMs).toISOString();
    const outcome = event.ok ? 'ok' : 'failed';
    // The first outcome counts as a flip: status goes from unknown to known at once.
    if (entry.lastPushOutcome !== outcome) this.outcomeFlipped = true;
    entry.lastPushTime = time;
    entry.lastPushOutcome = outcome;
    if (event.ok) {
      entry.lastSuccessTime = time;
      entry.pushesOk++;
      entry.valuesAccepted += event.accepted ?? 0;
    } else {
      entry.pushesFailed++;
      entry.lastError = reportableError(event.error ?? 'push failed');
    }
    this.changed = true;
    this.schedule();
  }

  report(nowMs = Date.now()): FeedPushReport {
    return {
      time: new Date(nowMs).toISOString(),
      signedApis: [...this.entries.values()].map((entry) => ({ ...entry })),
    };
  }

  /** Stops the timer and writes what changed once more (one attempt). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.writing;
    if (this.changed) await this.writeOnce();
  }

  private schedule(): void {
    if (this.stopped || this.writing) return;
    const nowMs = Date.now();
    const delay = reportDelayMs({
      nowMs,
      changed: this.changed,
      outcomeFlipped: this.outcomeFlipped,
      lastWriteMs: this.lastWriteMs,
      retryAtMs: this.retryAtMs,
      intervalMs: this.intervalMs,
    });
    if (delay === undefined) return;
    // A write already due sooner stays; a flip brings a throttled one forward.
    if (this.timer && this.timerDueMs <= nowMs + delay) return;
    clearTimeout(this.timer);
    this.timerDueMs = nowMs + delay;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.writing = this.writeOnce().finally(() => {
        this.writing = undefined;
        this.schedule();
      });
    }, delay);
    this.timer.unref();
  }

  private async writeOnce(): Promise<void> {
    const nowMs = Date.now();
    this.changed = false;
    this.outcomeFlipped = false;
    try {
      await this.options.write(this.report(nowMs));
      this.lastWriteMs = nowMs;
      this.retryAtMs = undefined;
      if (this.failures > 0) this.options.logger.info({ failures: this.failures }, 'feed report written again');
      this.failures = 0;
    } catch (error) {
      this.changed = true;
      this.failures++;
      this.retryAtMs = Date.now() + reportRetryDelayMs(this.failures, this.backoff);
      // Once per failing spell: a cluster that refuses every write would otherwise log every few seconds.
      if (this.failures === 1)
        this.options.logger.warn({ error: redact(errorMessage(error)) }, 'cannot write the feed report; retrying');
    }
  }
}
