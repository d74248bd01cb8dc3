// What a cycle did for the API provider's bill, from its summary: each API call's outcome class, the requests
// answered on chain (fulfilled or failed, the fulfilments per sponsor count these), and the counts of the cycle
// that the heartbeat may carry (`--heartbeat-usage`, docs/gateways.md "Heartbeat").
import { isDeferredMessage } from '../ois/deferral.js';
import type { CycleSummary } from './cycle-summary.js';
import type { ShardOutcome } from './shard-types.js';

/** The outcome classes of an API call that was made, or kept back (`deferred`), as the metrics and heartbeat name them. */
export const API_CALL_OUTCOMES = ['2xx', '3xx', '4xx', '5xx', 'no_response', 'failed', 'deferred'] as const;
export type ApiCallOutcome = (typeof API_CALL_OUTCOMES)[number];

/**
 * The outcome class of a request's API call: its status class (`no response` as `no_response`; `failed`: processing
 * or encoding), `deferred` for a call the rate budget or the API's pause kept back; undefined for a call not made
 * (cached, not called) and for a withdrawal.
 */
export function apiCallOutcome(outcome: ShardOutcome): ApiCallOutcome | undefined {
  if (!outcome.api) return undefined;
  if (isDeferred(outcome)) return 'deferred';
  if (outcome.api.outcome === 'cached' || outcome.api.outcome === 'not called') return undefined;
  return outcome.api.outcome === 'no response' ? 'no_response' : outcome.api.outcome;
}

/** A request left open because its API call was kept back (src/ois/deferral.ts): skipped, never failed. */
function isDeferred(outcome: ShardOutcome): boolean {
  return outcome.outcome === 'skipped' && outcome.reason !== undefined && isDeferredMessage(outcome.reason);
}

/** A request answered on chain in this cycle: fulfilled or failed, a replacement of a stuck transaction excluded. */
export function answeredOnChain(outcome: ShardOutcome): outcome is ShardOutcome & { outcome: 'fulfilled' | 'failed' } {
  return (
    outcome.kind === 'api' &&
    outcome.replacement !== true &&
    (outcome.outcome === 'fulfilled' || outcome.outcome === 'failed')
  );
}

/** The heartbeat's `last_cycle`: its keys are a contract with whoever reads the heartbeat (docs/gateways.md). */
export type LastCycleCounts = {
  duration_ms: number;
  requests: { fulfilled: number; failed: number; deferred: number; skipped: number; errors: number };
  api_calls: Record<ApiCallOutcome, number>;
};

/** The counts of one cycle (a window's polls added up) for the heartbeat; `skipped` excludes the deferred. */
export function lastCycleCounts(summary: CycleSummary, durationMs: number): LastCycleCounts {
  const apiCalls = Object.fromEntries(API_CALL_OUTCOMES.map((outcome) => [outcome, 0])) as Record<
    ApiCallOutcome,
    number
  >;
  let deferred = 0;
  for (const result of summary.results) {
    if (!result.ok) continue;
    for (const outcome of result.output.outcomes) {
      const api = apiCallOutcome(outcome);
      if (api !== undefined) apiCalls[api]++;
      if (outcome.kind === 'api' && isDeferred(outcome)) deferred++;
    }
  }
  const { fulfilled, failed, skipped, errors } = summary.transactions;
  return {
    duration_ms: Math.max(0, Math.round(durationMs)),
    requests: { fulfilled, failed, deferred, skipped: Math.max(0, skipped - deferred), errors },
    api_calls: apiCalls,
  };
}
