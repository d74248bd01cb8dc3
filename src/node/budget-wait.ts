// How long a cycle's API call may wait for its turn in the API's rate budget (src/ois/budget.ts, --api-rate-limit):
// until the run that made it must be done with it, never past that. A coordinator run in process (`oracle-node
// coordinator` by hand, `oracle-node start`) waits until its window's end, leaving the margin after it for the call and
// its transaction; a `--shard` worker until its Job's deadline, less the margin for its answer to reach the
// coordinator. A call whose turn comes later is not made: it is deferred, and the cycle leaves its request open for
// the next poll or run (src/node/shard-send.ts), never fail()s it. The wait is given per call (`budget` of the OIS
// engine's call), so a gateway in the same process (`start`) keeps the process's default: no wait, 429 at once.
import { monotonicNow } from '../common/time.js';
import { type BudgetWait, MAX_BUDGET_WAIT_MS } from '../ois/index.js';
import { type CallEndpointInput, type CallEndpointResult, callEndpoint } from './ois-adapter.js';

/**
 * What a `--shard` worker keeps of its Job's time after the last wait for a turn: the call it then makes, its output
 * and exit, and the pod's end reaching the Job controller, before the Job's deadline kills the pod (and with it the
 * answers of the shard's other calls).
 */
export const WORKER_ANSWER_MARGIN_MS = 5_000;

/**
 * The wait a call is allowed: the time left (`timeLeftMs()`, read at each call) up to MAX_BUDGET_WAIT_MS, none once
 * it is gone; `signal` ends a wait already begun (SIGTERM, a lost hand-over Lease).
 */
export function budgetWaitWithin(timeLeftMs: () => number, signal?: AbortSignal): () => BudgetWait {
  return () => ({
    maxWaitMs: Math.max(0, Math.min(MAX_BUDGET_WAIT_MS, Math.floor(timeLeftMs()))),
    ...(signal ? { signal } : {}),
  });
}

/** The OIS engine's endpoint call, each call allowed the wait `wait()` gives at its start. */
export function callEndpointWaiting(
  wait: () => BudgetWait,
  call: (input: CallEndpointInput) => Promise<CallEndpointResult> = callEndpoint,
): (input: CallEndpointInput) => Promise<CallEndpointResult> {
  return (input) => call({ ...input, budget: wait() });
}

/**
 * A `--shard` worker's time left, from the instant its Job's deadline ends (epoch milliseconds, the coordinator's
 * wall clock: the one clock the two pods share, as the Job controller's deadline is counted on a wall clock too). The
 * wall clock is read once, here; from then on the time left runs on this process's monotonic clock, so a step of the
 * wall clock does not move it. Undefined for a value that is not such an instant (no cap but MAX_BUDGET_WAIT_MS).
 */
export function workerTimeLeft(
  deadlineAtEpochMs: string | undefined,
  nowEpochMs: number = Date.now(),
  now: () => number = monotonicNow,
): (() => number) | undefined {
  if (deadlineAtEpochMs === undefined || !/^\d{1,15}$/.test(deadlineAtEpochMs.trim())) return undefined;
  const answerBy = now() + (Number(deadlineAtEpochMs) - nowEpochMs) - WORKER_ANSWER_MARGIN_MS;
  return () => answerBy - now();
}
