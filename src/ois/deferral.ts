// What a failed API call means for its request, from the call's message alone: the one mark that crosses every hop
// of a result (a worker's output, the shard contract). A module without imports, so that the cycle's sending half can
// ask without loading the API client.

/**
 * How long a request whose API fails for now is left open and retried before it is failed on chain (seconds; the
 * engine's `--api-retry-window`, the OracleNode's spec.apiRetryWindowSeconds). 0: failed at once, as the reference.
 */
export const DEFAULT_API_RETRY_WINDOW_SECONDS = 300;

/** The mark of an API call that was not made (a rate budget or an API's pause, src/ois/budget.ts). */
export const DEFERRED_PREFIX = 'API call deferred: ';

/**
 * The class of a transient failure, as the request log and the metrics name it: the API asked to be called later
 * (429, or its pause by an earlier 429/503), it timed out the request (408), it failed on its side (5xx), or it never
 * answered (a timeout, a refused connection, a worker that gave no result).
 */
export type TransientClass = '429' | '408' | '5xx' | 'no response';

/**
 * A failed call, classed: `over budget`, never made for this node's own budget (never failed on chain: a later poll
 * makes it); `transient`, worth another attempt later (failed on chain only once the request is older than the retry
 * window); `permanent`, failed on chain at once (other 4xx, a value not at `_path`, processing or encoding errors).
 */
export type FailureClass =
  | { kind: 'over budget'; retryAfterMs?: number }
  | { kind: 'transient'; statusClass: TransientClass; status?: number; retryAfterMs?: number }
  | { kind: 'permanent' };

const STATUS = /^API call failed with status code (\d{3})$/;
const PAUSED = / answered (\d{3}) and is paused; retry after (\d+) s$/;
const RETRY_AFTER = /; retry after (\d+) s$/;
/** The messages of a call that got no answer: the API's silence, or a worker that died before it gave one. */
const NO_ANSWER = new Set(['API call failed with no response', 'API call failed: the worker gave no result']);

/** Whether a failed call's message says it was not made (a budget or a pause). */
export function isDeferredMessage(message: string): boolean {
  return message.startsWith(DEFERRED_PREFIX);
}

/**
 * A failed call's class from its message and, when the API named one (Retry-After, RateLimit-Reset), its wait.
 * A pause is the 429 or 503 that caused it: the same class, with the time left.
 */
export function classifyFailure(message: string, retryAfterMs?: number): FailureClass {
  const wait = retryAfterMs === undefined ? {} : { retryAfterMs };
  if (isDeferredMessage(message)) {
    const paused = PAUSED.exec(message);
    if (paused) {
      const status = Number(paused[1]);
      return {
        kind: 'transient',
        statusClass: status === 429 ? '429' : '5xx',
        status,
        retryAfterMs: retryAfterMs ?? Number(paused[2]) * 1000,
      };
    }
    const after = RETRY_AFTER.exec(message);
    return { kind: 'over budget', ...(after ? { retryAfterMs: Number(after[1]) * 1000 } : wait) };
  }
  if (NO_ANSWER.has(message)) return { kind: 'transient', statusClass: 'no response' };
  const code = STATUS.exec(message);
  if (!code) return { kind: 'permanent' };
  const status = Number(code[1]);
  if (status === 429) return { kind: 'transient', statusClass: '429', status, ...wait };
  if (status === 408) return { kind: 'transient', statusClass: '408', status, ...wait };
  if (status >= 500 && status <= 599) return { kind: 'transient', statusClass: '5xx', status, ...wait };
  return { kind: 'permanent' };
}

/**
 * The message a request is failed on chain with once its retry window is over: the API's own words, as the reference
 * words them (a pause names the status that caused it, never this node's deferral).
 */
export function failureMessageOnChain(message: string, failure: FailureClass): string {
  if (failure.kind === 'transient' && isDeferredMessage(message) && failure.status !== undefined)
    return `API call failed with status code ${failure.status}`;
  return message;
}
