// Transient API failures (docs/chain-cycle.md, "When the API fails for a while"). A request whose API call ended in
// 429, 408, 5xx or no answer is left open and called again at a later poll or cycle, after a back-off that doubles per
// failure and is never shorter than the wait the API named (Retry-After, RateLimit-Reset); a named wait holds back
// every request of that OIS in this process, so no call reaches the API sooner. Only once the request is older than
// the retry window (by its block's timestamp) is it failed on chain, with the API's last error; a request past its
// window while held back is failed without another call. Calls this node's own budget did not let out are never
// failed (they were never made). Permanent failures fail at once, as before. The state is this process's: a new
// coordinator run starts it afresh (its cadence is then the back-off), and the chain's answer decides the rest.
import { fetchBlockTimestamp } from '../chain/logs.js';
import type { RpcClient } from '../chain/rpc.js';
import { isCount, isRecord, parseJsonText } from '../common/json.js';
import { monotonicNow, wholeSecondsIso } from '../common/time.js';
import { MAX_PAUSE_MS } from '../ois/budget.js';
import { classifyFailure, failureMessageOnChain, isDeferredMessage, type TransientClass } from '../ois/deferral.js';

export { DEFAULT_API_RETRY_WINDOW_SECONDS } from '../ois/deferral.js';
/** The first back-off after a transient failure; it doubles with each failure of the same request, up to the max. */
export const FIRST_RETRY_DELAY_MS = 5_000;
export const MAX_RETRY_DELAY_MS = 60_000;
/** Requests (and block timestamps) remembered at most: the oldest are forgotten first. */
const MAX_TRACKED = 10_000;
/** Requests and pauses handed to the next run at most: a Lease annotation (or ConfigMap key) of about 64 KiB at most. */
export const MAX_HANDED_OVER_RETRIES = 200;
const HAND_OVER_VERSION = 1;
const MAX_HAND_OVER_BYTES = 96 * 1024;
const MAX_TEXT = 200;

/** What a deferral is counted and shown as: a transient class, or this node's own rate budget. */
export type DeferralClass = TransientClass | 'budget';

/** Why a request's failed call is not failed on chain now, for the request log and the metrics. */
export type Deferral = { oisTitle: string; statusClass: DeferralClass; retryAtEpochMs?: number };

/** What to do with a failed API call's request: fail it on chain with `message`, or leave it open. */
export type RetryDecision = { kind: 'fail'; message: string } | { kind: 'defer'; reason: string; deferral: Deferral };

/** Before a request's API is called: call it, hold it back (not due), or fail it without a call (window over). */
export type RetryGate = { kind: 'call' } | { kind: 'wait'; reason: string } | { kind: 'fail'; message: string };

type Tracked = {
  oisTitle: string;
  failures: number;
  /** Monotonic time before which the request's API is not called again. */
  notBefore: number;
  retryAtEpochMs: number;
  shown: string;
  lastError: string;
  /** The request's block timestamp (seconds), else when this process first saw it fail. */
  madeAtSeconds: number;
  /** Monotonic time of its first failure here: the window is over by this clock too, whatever the wall clock does. */
  firstFailedAt: number;
};

export type ApiRetriesClock = { monotonic: () => number; epochMs: () => number };

function remember<K, V>(map: Map<K, V>, key: K, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > MAX_TRACKED) map.delete(map.keys().next().value as K);
}

export class ApiRetries {
  readonly windowMs: number;
  readonly #clock: ApiRetriesClock;
  readonly #requests = new Map<string, Tracked>();
  /** By OIS title: monotonic time until which its API asked not to be called, and the status that asked. */
  readonly #paused = new Map<string, { until: number; shown: string; retryAtEpochMs: number }>();
  readonly #blockTimes = new Map<string, number>();
  /** By chain id: when a due retry last made a window's poll run a cycle without a new block (monotonic). */
  readonly #dueCycleAt = new Map<string, number>();

  /** `windowSeconds` 0: a transient failure fails its request at once, as the reference does. */
  constructor(windowSeconds: number, clock: ApiRetriesClock = { monotonic: monotonicNow, epochMs: Date.now }) {
    this.windowMs = Math.max(0, windowSeconds) * 1000;
    this.#clock = clock;
  }

  /** Whether a request's API may be called now (its back-off or its OIS's pause), or its window is over. */
  gate(chainId: string, call: { id: string; oisTitle: string }): RetryGate {
    const tracked = this.#requests.get(keyOf(chainId, call.id));
    if (tracked && this.#pastWindow(tracked)) return { kind: 'fail', message: tracked.lastError };
    const now = this.#clock.monotonic();
    let hold: { shown: string; retryAtEpochMs: number } | undefined =
      tracked && tracked.notBefore > now ? tracked : undefined;
    const paused = this.#paused.get(call.oisTitle);
    if (paused && paused.until <= now) this.#paused.delete(call.oisTitle);
    else if (paused && (!hold || paused.retryAtEpochMs > hold.retryAtEpochMs)) hold = paused;
    if (!hold) return { kind: 'call' };
    return { kind: 'wait', reason: `deferred: ${hold.shown}, retry at ${wholeSecondsIso(hold.retryAtEpochMs)}` };
  }

  /**
   * Whether a request of the chain waits for a retry that is now due (its back-off and its OIS's pause are over, or
   * its window is, so it is to be failed): a window's poll then runs a cycle even without a new block, so a chain
   * whose blocks come seldom does not hold the retry until its next one.
   */
  dueOn(chainId: string): boolean {
    const prefix = `${chainId}:`;
    const now = this.#clock.monotonic();
    // At most one such cycle per first back-off and chain: a due request whose send waits (a pending transaction of
    // its wallet) does not make every poll a cycle.
    if (now - (this.#dueCycleAt.get(chainId) ?? Number.NEGATIVE_INFINITY) < FIRST_RETRY_DELAY_MS) return false;
    for (const [key, tracked] of this.#requests) {
      if (!key.startsWith(prefix)) continue;
      const pausedUntil = this.#paused.get(tracked.oisTitle)?.until ?? 0;
      if (this.#pastWindow(tracked) || (tracked.notBefore <= now && pausedUntil <= now)) {
        this.#dueCycleAt.set(chainId, now);
        return true;
      }
    }
    return false;
  }

  /**
   * Forgets the chain's requests that are no longer open (`open`: the ids a cycle discovered open): answered by
   * another run or node, or out of the history window. Nothing is then retried, nor due, for them.
   */
  keepOpen(chainId: string, open: ReadonlySet<string>): void {
    const prefix = `${chainId}:`;
    for (const key of [...this.#requests.keys()])
      if (key.startsWith(prefix) && !open.has(key.slice(prefix.length))) this.#requests.delete(key);
  }

  /**
   * A failed call's request: failed on chain (a permanent failure, retries off, or its window over), or left open
   * until its back-off has passed. Reads the request's block timestamp once (cached) through `client`.
   */
  async decide(
    chainId: string,
    call: { id: string; oisTitle: string; blockNumber: number },
    response: { errorMessage: string; retryAfterMs?: number },
    client: RpcClient,
  ): Promise<RetryDecision> {
    const failure = classifyFailure(response.errorMessage, response.retryAfterMs);
    if (failure.kind === 'over budget') {
      // Never made: no fail() for what a later poll can serve, whatever the window.
      const retryAtEpochMs = this.#clock.epochMs() + (failure.retryAfterMs ?? 0);
      return {
        kind: 'defer',
        reason: `${response.errorMessage}; left open for a later poll`,
        deferral: { oisTitle: call.oisTitle, statusClass: 'budget', retryAtEpochMs },
      };
    }
    const onChain = failureMessageOnChain(response.errorMessage, failure);
    const key = keyOf(chainId, call.id);
    if (failure.kind === 'permanent' || this.windowMs === 0) {
      this.#requests.delete(key);
      return { kind: 'fail', message: onChain };
    }
    const tracked = this.#requests.get(key);
    const madeAtSeconds = tracked?.madeAtSeconds ?? (await this.#madeAt(chainId, call.blockNumber, client));
    const firstFailedAt = tracked?.firstFailedAt ?? this.#clock.monotonic();
    if (this.#pastWindow({ madeAtSeconds, firstFailedAt })) {
      this.#requests.delete(key);
      return { kind: 'fail', message: onChain };
    }
    const failures = (tracked?.failures ?? 0) + 1;
    const backoff = Math.min(MAX_RETRY_DELAY_MS, FIRST_RETRY_DELAY_MS * 2 ** (failures - 1));
    const waitMs = Math.max(backoff, failure.retryAfterMs ?? 0);
    const now = this.#clock.monotonic();
    const epoch = this.#clock.epochMs();
    const retryAtEpochMs = epoch + waitMs;
    const shown = String(failure.status ?? failure.statusClass);
    if (failure.retryAfterMs !== undefined) {
      // The API named when to come back: no request of this OIS reaches it sooner from this process.
      const until = now + failure.retryAfterMs;
      if ((this.#paused.get(call.oisTitle)?.until ?? 0) < until)
        this.#paused.set(call.oisTitle, {
          until,
          shown,
          retryAtEpochMs: epoch + failure.retryAfterMs,
        });
    }
    remember(this.#requests, key, {
      oisTitle: call.oisTitle,
      failures,
      notBefore: now + waitMs,
      retryAtEpochMs,
      shown,
      lastError: onChain,
      madeAtSeconds,
      firstFailedAt,
    });
    const failsAt = wholeSecondsIso(madeAtSeconds * 1000 + this.windowMs);
    return {
      kind: 'defer',
      reason: `deferred: ${shown}, retry at ${wholeSecondsIso(retryAtEpochMs)} (failed on chain after ${failsAt} if the API still fails)`,
      deferral: { oisTitle: call.oisTitle, statusClass: failure.statusClass, retryAtEpochMs },
    };
  }

  /**
   * What the next run takes over (takeOver): the pauses still running and the requests still held back, by wall-clock
   * time (the only clock two processes share), at most MAX_HANDED_OVER_RETRIES of each, the soonest due first.
   * Undefined when there is nothing to hand over. So a new coordinator run calls no API sooner than it asked.
   */
  toHandOver(): string | undefined {
    const now = this.#clock.monotonic();
    const epoch = this.#clock.epochMs();
    const pauses = [...this.#paused]
      .filter(([, paused]) => paused.until > now)
      .slice(0, MAX_HANDED_OVER_RETRIES)
      .map(([ois, paused]) => [ois, epoch + Math.ceil(paused.until - now), paused.shown]);
    const requests = [...this.#requests]
      .filter(([, tracked]) => !this.#pastWindow(tracked))
      .sort(([, a], [, b]) => a.notBefore - b.notBefore)
      .slice(0, MAX_HANDED_OVER_RETRIES)
      .map(([key, t]) => [
        key,
        t.oisTitle,
        t.failures,
        epoch + Math.max(0, Math.ceil(t.notBefore - now)),
        t.madeAtSeconds,
        t.shown,
        t.lastError,
      ]);
    if (pauses.length === 0 && requests.length === 0) return undefined;
    return JSON.stringify({ version: HAND_OVER_VERSION, pauses, requests });
  }

  /**
   * Takes over what the run before handed over (toHandOver), read back as untrusted input: what is not an entry of
   * the right shape is left out, never thrown, and what this process knows itself is kept. Answers how many were taken.
   */
  takeOver(handedOver: string | undefined): number {
    const parsed = parseHandOver(handedOver);
    if (!parsed) return 0;
    const now = this.#clock.monotonic();
    const epoch = this.#clock.epochMs();
    // A wait handed over is never longer than the longest a pause may be (a clock far ahead in the last run).
    const until = (epochMs: number) => now + Math.min(MAX_PAUSE_MS, Math.max(0, epochMs - epoch));
    let taken = 0;
    for (const [ois, untilEpochMs, shown] of parsed.pauses) {
      if (this.#paused.has(ois) || untilEpochMs <= epoch) continue;
      this.#paused.set(ois, { until: until(untilEpochMs), shown, retryAtEpochMs: untilEpochMs });
      taken++;
    }
    for (const [key, oisTitle, failures, retryAtEpochMs, madeAtSeconds, shown, lastError] of parsed.requests) {
      if (this.#requests.has(key)) continue;
      remember(this.#requests, key, {
        oisTitle,
        failures,
        notBefore: until(retryAtEpochMs),
        retryAtEpochMs,
        shown,
        lastError,
        madeAtSeconds,
        firstFailedAt: now,
      });
      taken++;
    }
    return taken;
  }

  /** The request was answered or failed on chain: nothing more to retry. */
  settled(chainId: string, requestId: string): void {
    this.#requests.delete(keyOf(chainId, requestId));
  }

  /**
   * Older than the window by the wall clock from the request's block, or by the monotonic clock from its first failure
   * here: a wall clock stepped back never keeps a request open (and its API called) past the window.
   */
  #pastWindow(request: { madeAtSeconds: number; firstFailedAt: number }): boolean {
    return (
      this.#clock.epochMs() - request.madeAtSeconds * 1000 >= this.windowMs ||
      this.#clock.monotonic() - request.firstFailedAt >= this.windowMs
    );
  }

  /** The request's block timestamp; when no provider gives it, now (the window then counts from the first failure). */
  async #madeAt(chainId: string, block: number, client: RpcClient): Promise<number> {
    const key = `${chainId}:${block}`;
    const known = this.#blockTimes.get(key);
    if (known !== undefined) return known;
    try {
      // No block is from the future: a provider's wrong timestamp never keeps a request open past its window.
      const timestamp = Math.min(await fetchBlockTimestamp(client, block), Math.floor(this.#clock.epochMs() / 1000));
      remember(this.#blockTimes, key, timestamp);
      return timestamp;
    } catch {
      return Math.floor(this.#clock.epochMs() / 1000);
    }
  }
}

const keyOf = (chainId: string, requestId: string) => `${chainId}:${requestId.toLowerCase()}`;

type HandOver = {
  pauses: [ois: string, untilEpochMs: number, shown: string][];
  requests: [
    key: string,
    oisTitle: string,
    failures: number,
    retryAtEpochMs: number,
    madeAtSeconds: number,
    shown: string,
    lastError: string,
  ][];
};

const isText = (value: unknown): value is string => typeof value === 'string' && value.length <= MAX_TEXT;
/** A request's key as keyOf makes it: a chain id and a request id, nothing else. */
const REQUEST_KEY = /^[0-9]{1,20}:0x[0-9a-f]{64}$/;
/** What the request log shows of a failure: a status or a class, nothing an attacker could write into a reason. */
const SHOWN = /^(?:[1-5][0-9]{2}|429|408|5xx|no response)$/;

/** A message the node fails a request with after its window: the API's own failure, in the reference's words. */
function isApiFailureOnChain(message: string): boolean {
  const failure = classifyFailure(message);
  return (
    failure.kind === 'transient' && failureMessageOnChain(message, failure) === message && !isDeferredMessage(message)
  );
}

/** The hand-over's entries of the right shape (ApiRetries.toHandOver); undefined when it is not one. */
function parseHandOver(handedOver: string | undefined): HandOver | undefined {
  if (handedOver === undefined || handedOver.length > MAX_HAND_OVER_BYTES) return undefined;
  const parsed = parseJsonText(handedOver);
  if (!isRecord(parsed)) return undefined;
  const { version, pauses, requests } = parsed;
  if (version !== HAND_OVER_VERSION || !Array.isArray(pauses) || !Array.isArray(requests)) return undefined;
  const result: HandOver = { pauses: [], requests: [] };
  for (const entry of pauses.slice(0, MAX_HANDED_OVER_RETRIES)) {
    if (!Array.isArray(entry) || entry.length !== 3) continue;
    const [ois, until, shown] = entry as unknown[];
    if (isText(ois) && isCount(until) && isText(shown) && SHOWN.test(shown)) result.pauses.push([ois, until, shown]);
  }
  for (const entry of requests.slice(0, MAX_HANDED_OVER_RETRIES)) {
    if (!Array.isArray(entry) || entry.length !== 7) continue;
    const [key, ois, failures, retryAt, madeAt, shown, lastError] = entry as unknown[];
    if (
      isText(key) &&
      REQUEST_KEY.test(key) &&
      isText(ois) &&
      isCount(failures) &&
      failures <= 64 &&
      isCount(retryAt) &&
      isCount(madeAt) &&
      isText(shown) &&
      SHOWN.test(shown) &&
      isText(lastError) &&
      isApiFailureOnChain(lastError)
    )
      result.requests.push([key, ois, failures, retryAt, madeAt, shown, lastError]);
  }
  return result;
}
