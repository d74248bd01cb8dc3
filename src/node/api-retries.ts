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
import { monotonicNow } from '../common/time.js';
import { classifyFailure, failureMessageOnChain, type TransientClass } from '../ois/deferral.js';

export { DEFAULT_API_RETRY_WINDOW_SECONDS } from '../ois/deferral.js';
/** The first back-off after a transient failure; it doubles with each failure of the same request, up to the max. */
export const FIRST_RETRY_DELAY_MS = 5_000;
export const MAX_RETRY_DELAY_MS = 60_000;
/** Requests (and block timestamps) remembered at most: the oldest are forgotten first. */
const MAX_TRACKED = 10_000;

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
};

export type ApiRetriesClock = { monotonic: () => number; epochMs: () => number };

const iso = (epochMs: number) => new Date(epochMs).toISOString().replace(/\.\d{3}Z$/, 'Z');

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

  /** `windowSeconds` 0: a transient failure fails its request at once, as the reference does. */
  constructor(windowSeconds: number, clock: ApiRetriesClock = { monotonic: monotonicNow, epochMs: Date.now }) {
    this.windowMs = Math.max(0, windowSeconds) * 1000;
    this.#clock = clock;
  }

  /** Whether a request's API may be called now (its back-off or its OIS's pause), or its window is over. */
  gate(chainId: string, call: { id: string; oisTitle: string }): RetryGate {
    const tracked = this.#requests.get(keyOf(chainId, call.id));
    if (tracked && this.#pastWindow(tracked.madeAtSeconds)) return { kind: 'fail', message: tracked.lastError };
    const now = this.#clock.monotonic();
    let hold: { shown: string; retryAtEpochMs: number } | undefined =
      tracked && tracked.notBefore > now ? tracked : undefined;
    const paused = this.#paused.get(call.oisTitle);
    if (paused && paused.until <= now) this.#paused.delete(call.oisTitle);
    else if (paused && (!hold || paused.retryAtEpochMs > hold.retryAtEpochMs)) hold = paused;
    if (!hold) return { kind: 'call' };
    return { kind: 'wait', reason: `deferred: ${hold.shown}, retry at ${iso(hold.retryAtEpochMs)}` };
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
    if (this.#pastWindow(madeAtSeconds)) {
      this.#requests.delete(key);
      return { kind: 'fail', message: onChain };
    }
    const failures = (tracked?.failures ?? 0) + 1;
    const backoff = Math.min(MAX_RETRY_DELAY_MS, FIRST_RETRY_DELAY_MS * 2 ** (failures - 1));
    const waitMs = Math.max(backoff, failure.retryAfterMs ?? 0);
    const now = this.#clock.monotonic();
    const retryAtEpochMs = this.#clock.epochMs() + waitMs;
    const shown = String(failure.status ?? failure.statusClass);
    if (failure.retryAfterMs !== undefined) {
      // The API named when to come back: no request of this OIS reaches it sooner from this process.
      const until = now + failure.retryAfterMs;
      if ((this.#paused.get(call.oisTitle)?.until ?? 0) < until)
        this.#paused.set(call.oisTitle, {
          until,
          shown,
          retryAtEpochMs: this.#clock.epochMs() + failure.retryAfterMs,
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
    });
    const failsAt = iso(madeAtSeconds * 1000 + this.windowMs);
    return {
      kind: 'defer',
      reason: `deferred: ${shown}, retry at ${iso(retryAtEpochMs)} (failed on chain after ${failsAt} if the API still fails)`,
      deferral: { oisTitle: call.oisTitle, statusClass: failure.statusClass, retryAtEpochMs },
    };
  }

  /** The request was answered or failed on chain: nothing more to retry. */
  settled(chainId: string, requestId: string): void {
    this.#requests.delete(keyOf(chainId, requestId));
  }

  #pastWindow(madeAtSeconds: number): boolean {
    return this.#clock.epochMs() - madeAtSeconds * 1000 >= this.windowMs;
  }

  /** The request's block timestamp; when no provider gives it, now (the window then counts from the first failure). */
  async #madeAt(chainId: string, block: number, client: RpcClient): Promise<number> {
    const key = `${chainId}:${block}`;
    const known = this.#blockTimes.get(key);
    if (known !== undefined) return known;
    try {
      const timestamp = await fetchBlockTimestamp(client, block);
      remember(this.#blockTimes, key, timestamp);
      return timestamp;
    } catch {
      return Math.floor(this.#clock.epochMs() / 1000);
    }
  }
}

const keyOf = (chainId: string, requestId: string) => `${chainId}:${requestId.toLowerCase()}`;
