// The rate budget of each API, one per process, consulted before every attempt of every API call (api-client.ts via
// index.ts), so the gateway, a worker, an in-process coordinator and a feed in one process share it. An API provider
// counts calls per key in sliding windows (N within any second or minute): a budget is a SlidingWindowLimiter per OIS
// title and, optionally, per endpoint of it; an endpoint's own limit applies together with its OIS's. A call over
// budget waits for its turn up to the wait its caller allows (a cycle: the window's time left; a gateway: none), else
// it is not made and the caller gets a deferral ("over budget, retry after T"), never an API failure. A 429 from the
// API that names a time (Retry-After, RateLimit, RateLimit-Reset) pauses every call of that OIS in the process for it.
import { sleepUnlessAborted } from '../common/concurrency.js';
import { type Rate, SlidingWindowLimiter } from '../common/rate-limit.js';
import { Counter, Gauge, type Registry } from '../observability/index.js';

/**
 * One limit: at most `rate` call starts to the OIS (or to one endpoint of it, when `endpoint` is set). A rate of 0
 * calls (a pod whose share of the node's budget is below one call) closes the API to this process.
 */
export type ApiLimit = { ois: string; endpoint?: string; rate: Rate };

/** Why a call was not made, and when it may be: what a cycle keeps open and a gateway answers 429 with. */
export type ApiDeferral = {
  reason: 'over budget' | 'paused';
  retryAfterMs: number;
  /** A pause's cause: the status the API answered with a wait (429 or 503). */
  status?: number;
};
export type BudgetAnswer = { ok: true } | ({ ok: false } & ApiDeferral);
/** How long a call may wait for its turn (0: not at all), and what ends the wait sooner (a run's deadline). */
export type BudgetWait = { maxWaitMs?: number; signal?: AbortSignal };

/**
 * The longest a cycle's call waits for its turn when nothing ends its run sooner: a window's length (the operator's
 * windows are about a minute); a run's deadline cuts it shorter (src/node/budget-wait.ts).
 */
export const MAX_BUDGET_WAIT_MS = 60_000;
/** The longest pause a 429 can impose: an API that names an hour (or a date years away) is asked again after this. */
export const MAX_PAUSE_MS = 10 * 60_000;
/** OIS titles counted by name in the metrics; more are counted as `other` (titles come from config, but stay bounded). */
const MAX_LABELLED_TITLES = 64;

type Header = string | string[] | undefined;
type Headers = Record<string, Header>;

const first = (value: Header): string | undefined => (Array.isArray(value) ? value[0] : value)?.trim() || undefined;

/** Seconds as a number (delta-seconds, a fraction allowed), or undefined. */
function seconds(text: string): number | undefined {
  if (!/^\d+(\.\d+)?$/.test(text)) return undefined;
  return Number(text);
}

/**
 * A reset given as seconds: small values are a delay (the IETF drafts), values past 10^9 a Unix time (what GitHub's
 * and others' X-RateLimit-Reset send): a delay that long would be 31 years.
 */
function resetMs(text: string, nowEpochMs: number): number | undefined {
  const value = seconds(text);
  if (value === undefined) return undefined;
  return value > 1e9 ? value * 1000 - nowEpochMs : value * 1000;
}

/** `t=30` of the IETF draft's structured RateLimit (`"default";r=0;t=30`), or `reset=30` of its earlier form. */
function rateLimitFieldMs(text: string): number | undefined {
  const match = /(?:^|[;,\s])(?:t|reset)=(\d+(?:\.\d+)?)(?:$|[;,\s])/.exec(text);
  return match ? Number(match[1]) * 1000 : undefined;
}

/**
 * How long a 429 answer asks the client to wait, in milliseconds, from its headers (lower-case names, as both HTTP
 * clients give them): Retry-After in seconds or as an HTTP date, else the RateLimit header's reset, else
 * RateLimit-Reset or X-RateLimit-Reset (a delay, or a Unix time when large). Undefined when none names a time; capped
 * at `maxMs`. A date is read against the wall clock once, here; the pause itself then runs on the monotonic clock.
 */
export function rateLimitWaitMs(
  headers: Headers,
  nowEpochMs: number = Date.now(),
  maxMs: number = MAX_PAUSE_MS,
): number | undefined {
  let wait: number | undefined;
  const retryAfter = first(headers['retry-after']);
  if (retryAfter !== undefined) {
    const delay = seconds(retryAfter);
    if (delay !== undefined) wait = delay * 1000;
    else if (/[a-z]/i.test(retryAfter)) {
      const date = Date.parse(retryAfter);
      if (!Number.isNaN(date)) wait = date - nowEpochMs;
    }
  }
  if (wait === undefined) {
    const field = first(headers['ratelimit']);
    if (field !== undefined) wait = rateLimitFieldMs(field);
  }
  for (const name of ['ratelimit-reset', 'x-ratelimit-reset']) {
    if (wait !== undefined) break;
    const text = first(headers[name]);
    if (text !== undefined) wait = resetMs(text, nowEpochMs);
  }
  if (wait === undefined || !Number.isFinite(wait)) return undefined;
  return Math.min(maxMs, Math.max(0, Math.ceil(wait)));
}

type Counts = { overBudget: number; paused: number; waited: number; rateLimited: number };

export type ApiBudgetsOptions = {
  /** Monotonic milliseconds (performance.now()). */
  now?: () => number;
  /** Waits for a turn; resolves early when the signal aborts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** The wait a call is allowed when its caller names none: 0 for a gateway or a feed, the window for a worker. */
  defaultMaxWaitMs?: number;
  maxPauseMs?: number;
};

const OK: BudgetAnswer = { ok: true };

type Limiter = Pick<SlidingWindowLimiter, 'waitMs' | 'take'>;

/** A share of nothing: every call is over it, asked to come back after a window (the share may grow by then). */
const closed = (windowMs: number): Limiter => ({ waitMs: () => windowMs, take: () => undefined });

export class ApiBudgets {
  readonly limits: readonly ApiLimit[];
  /** By OIS title: its own limiters, and those of each endpoint of it that has its own (no key built per call). */
  readonly #limiters = new Map<string, { own: Limiter[]; endpoints: Map<string, Limiter[]> }>();
  /** Monotonic time until which each OIS is paused by its API's 429 (or 503), and that status. */
  readonly #pausedUntil = new Map<string, { until: number; status: number }>();
  readonly #counts = new Map<string, Counts>();
  readonly #now: () => number;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly #defaultMaxWaitMs: number;
  readonly #maxPauseMs: number;

  constructor(limits: readonly ApiLimit[] = [], options: ApiBudgetsOptions = {}) {
    this.limits = limits;
    this.#now = options.now ?? (() => performance.now());
    this.#sleep = options.sleep ?? sleepUnlessAborted;
    this.#defaultMaxWaitMs = options.defaultMaxWaitMs ?? 0;
    this.#maxPauseMs = options.maxPauseMs ?? MAX_PAUSE_MS;
    for (const limit of limits) {
      let entry = this.#limiters.get(limit.ois);
      if (!entry) {
        entry = { own: [], endpoints: new Map() };
        this.#limiters.set(limit.ois, entry);
      }
      let list = entry.own;
      if (limit.endpoint !== undefined) {
        list = entry.endpoints.get(limit.endpoint) ?? [];
        entry.endpoints.set(limit.endpoint, list);
      }
      list.push(limit.rate.calls > 0 ? new SlidingWindowLimiter(limit.rate, this.#now) : closed(limit.rate.windowMs));
    }
  }

  /**
   * Whether a call to the endpoint may start now; when it may, it is counted against every limit that applies to it
   * (all or none). A paused API answers "paused" for the rest of its pause, whatever its budget.
   */
  check(ois: string, endpoint: string): BudgetAnswer {
    // The common case, a process with no budget and no API pausing it, costs two size checks.
    if (this.#limiters.size === 0 && this.#pausedUntil.size === 0) return OK;
    const now = this.#now();
    const paused = this.#pausedUntil.get(ois);
    if (paused !== undefined) {
      if (paused.until > now)
        return { ok: false, reason: 'paused', retryAfterMs: Math.ceil(paused.until - now), status: paused.status };
      this.#pausedUntil.delete(ois);
    }
    if (this.#limiters.size === 0) return OK;
    const entry = this.#limiters.get(ois);
    if (!entry) return OK;
    const own = entry.own;
    const endpoints = entry.endpoints.size === 0 ? undefined : entry.endpoints.get(endpoint);
    let wait = 0;
    // One reading of the clock for every limiter: a call is admitted and charged at one instant.
    for (const limiter of own) wait = Math.max(wait, limiter.waitMs(now));
    for (const limiter of endpoints ?? []) wait = Math.max(wait, limiter.waitMs(now));
    if (wait > 0) return { ok: false, reason: 'over budget', retryAfterMs: wait };
    for (const limiter of own) limiter.take(now);
    for (const limiter of endpoints ?? []) limiter.take(now);
    return OK;
  }

  /**
   * `check`, waiting for the turn while it comes within the wait allowed (the caller's, else the process default).
   * Synchronous when the answer is immediate: the gateway's hot path awaits no promise it need not.
   */
  acquire(ois: string, endpoint: string, wait: BudgetWait = {}): BudgetAnswer | Promise<BudgetAnswer> {
    const answer = this.check(ois, endpoint);
    if (answer.ok) return answer;
    const maxWaitMs = wait.maxWaitMs ?? this.#defaultMaxWaitMs;
    if (!(maxWaitMs > 0) || answer.retryAfterMs > maxWaitMs || wait.signal?.aborted) return this.#deferred(ois, answer);
    return this.#waitForTurn(ois, endpoint, answer, this.#now() + maxWaitMs, wait.signal);
  }

  async #waitForTurn(
    ois: string,
    endpoint: string,
    refused: Extract<BudgetAnswer, { ok: false }>,
    until: number,
    signal: AbortSignal | undefined,
  ): Promise<BudgetAnswer> {
    let answer: BudgetAnswer = refused;
    while (!answer.ok) {
      // Several calls may wait for one freed turn: each one that loses it sleeps again until the next.
      if (signal?.aborted || this.#now() + answer.retryAfterMs > until) return this.#deferred(ois, answer);
      await this.#sleep(answer.retryAfterMs, signal);
      answer = this.check(ois, endpoint);
    }
    this.#count(ois).waited++;
    return answer;
  }

  #deferred(ois: string, answer: Extract<BudgetAnswer, { ok: false }>): BudgetAnswer {
    const counts = this.#count(ois);
    if (answer.reason === 'paused') counts.paused++;
    else counts.overBudget++;
    return answer;
  }

  /**
   * The API of `ois` answered 429 (or 503) naming a wait: no call of it starts in this process until it has passed.
   */
  pause(ois: string, waitMs: number, status = 429): void {
    const wait = Math.min(this.#maxPauseMs, Math.max(0, waitMs));
    this.#count(ois).rateLimited++;
    if (wait <= 0) return;
    const until = this.#now() + wait;
    // A shorter pause named later never cuts a longer one short.
    if ((this.#pausedUntil.get(ois)?.until ?? 0) < until) this.#pausedUntil.set(ois, { until, status });
  }

  /** Milliseconds left of the OIS's pause (0 when it is not paused). */
  pausedForMs(ois: string): number {
    const until = this.#pausedUntil.get(ois)?.until;
    return until === undefined ? 0 : Math.max(0, Math.ceil(until - this.#now()));
  }

  /** Calls deferred (by reason), calls that waited and 429s that paused, by OIS title; for the metrics. */
  counts(): ReadonlyMap<string, Readonly<Counts>> {
    return this.#counts;
  }

  #count(ois: string): Counts {
    let counts = this.#counts.get(ois);
    if (!counts) {
      const label = this.#counts.size < MAX_LABELLED_TITLES ? ois : 'other';
      counts = this.#counts.get(label);
      if (!counts) {
        counts = { overBudget: 0, paused: 0, waited: 0, rateLimited: 0 };
        this.#counts.set(label, counts);
      }
    }
    return counts;
  }
}

let current = new ApiBudgets();

/** The process's budgets: none until `setApiBudgets` (429 pauses apply all the same). */
export function apiBudgets(): ApiBudgets {
  return current;
}

/** Sets the process's budgets, once at start-up (from --api-rate-limit). Pauses and counts start afresh. */
export function setApiBudgets(limits: readonly ApiLimit[], options: ApiBudgetsOptions = {}): ApiBudgets {
  current = new ApiBudgets(limits, options);
  return current;
}

/**
 * The budgets' metrics on a registry, read from the process's budgets at each scrape: calls not made (deferred in a
 * cycle, refused at a gateway, skipped by a feed) by OIS and reason, calls that waited for their turn, the API's 429s
 * that named a wait, and the seconds left of each pause. Labels: OIS titles of the config (at most 64, then `other`).
 */
export function registerApiBudgetMetrics(registry: Registry): void {
  if (registry.getSingleMetric('api_budget_deferred_calls_total')) return;
  const each = (read: (counts: Counts) => number, set: (ois: string, value: number) => void) => {
    for (const [ois, counts] of apiBudgets().counts()) set(ois, read(counts));
  };
  new Counter({
    name: 'api_budget_deferred_calls_total',
    help: 'API calls not made: over the rate budget (--api-rate-limit) or the API paused by its 429, by OIS',
    labelNames: ['ois', 'reason'] as const,
    registers: [registry],
    collect() {
      this.reset();
      each(
        (counts) => counts.overBudget,
        (ois, value) => value && this.inc({ ois, reason: 'over_budget' }, value),
      );
      each(
        (counts) => counts.paused,
        (ois, value) => value && this.inc({ ois, reason: 'paused' }, value),
      );
    },
  });
  new Counter({
    name: 'api_budget_waits_total',
    help: 'API calls that waited for their turn in the rate budget, then were made, by OIS',
    labelNames: ['ois'] as const,
    registers: [registry],
    collect() {
      this.reset();
      each(
        (counts) => counts.waited,
        (ois, value) => value && this.inc({ ois }, value),
      );
    },
  });
  new Counter({
    name: 'api_rate_limited_total',
    help: 'Answers 429 of an API that named a wait (Retry-After, RateLimit): each pauses its OIS in the process',
    labelNames: ['ois'] as const,
    registers: [registry],
    collect() {
      this.reset();
      each(
        (counts) => counts.rateLimited,
        (ois, value) => value && this.inc({ ois }, value),
      );
    },
  });
  new Gauge({
    name: 'api_paused_seconds',
    help: "Seconds left of an OIS's pause after its API answered 429",
    labelNames: ['ois'] as const,
    registers: [registry],
    collect() {
      this.reset();
      const budgets = apiBudgets();
      for (const ois of budgets.counts().keys()) this.set({ ois }, budgets.pausedForMs(ois) / 1000);
    },
  });
}
