// What a cycle did for the API provider's bill, from its summary: each API call's outcome class and the calls per
// OIS and endpoint, the requests answered on chain per sponsor, and the counts of the cycle that the heartbeat may
// carry (`--heartbeat-usage`, docs/gateways.md "Heartbeat"). The engine's metrics, the cycle report (and so the
// operator's metrics) and the heartbeat all count from here.
import { sponsorKey } from '../common/sponsor-labels.js';
import {
  API_CALL_OUTCOMES,
  type ApiCallReport,
  type ApiDeferralReport,
  type SponsorFulfilmentReport,
} from '../contract/pods.js';
import type { CycleSummary } from './cycle-summary.js';
import type { ShardOutcome } from './shard-types.js';

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

/**
 * A request left open because its API call was kept back by the rate budget or the API's pause (src/ois/deferral.ts):
 * deferred without a call going out. A deferral after a call the API failed (429, 5xx, ...) counts that call's class.
 */
function isDeferred(outcome: ShardOutcome): boolean {
  return outcome.outcome === 'deferred' && outcome.api?.outcome === 'not called';
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

/** The counts of one cycle (a window's polls added up) for the heartbeat. */
export function lastCycleCounts(summary: CycleSummary, durationMs: number): LastCycleCounts {
  const apiCalls = Object.fromEntries(API_CALL_OUTCOMES.map((outcome) => [outcome, 0])) as Record<
    ApiCallOutcome,
    number
  >;
  for (const result of summary.results) {
    if (!result.ok) continue;
    for (const outcome of result.output.outcomes) {
      const api = apiCallOutcome(outcome);
      if (api !== undefined) apiCalls[api]++;
    }
  }
  const { fulfilled, failed, deferred, skipped, errors } = summary.transactions;
  return {
    duration_ms: Math.max(0, Math.round(durationMs)),
    requests: { fulfilled, failed, deferred, skipped, errors },
    api_calls: apiCalls,
  };
}

/** The cycle's API calls by OIS title, endpoint name and outcome class (calls not made are not counted). */
export function apiCallCounts(summary: CycleSummary): ApiCallReport[] {
  const counts = new Map<string, ApiCallReport>();
  for (const result of summary.results) {
    if (!result.ok) continue;
    for (const outcome of result.output.outcomes) {
      const api = apiCallOutcome(outcome);
      if (api === undefined || outcome.oisTitle === undefined || outcome.endpointName === undefined) continue;
      const key = JSON.stringify([outcome.oisTitle, outcome.endpointName, api]);
      const counted = counts.get(key);
      if (counted) counted.count++;
      else counts.set(key, { ois: outcome.oisTitle, endpoint: outcome.endpointName, outcome: api, count: 1 });
    }
  }
  return [...counts.values()];
}

/** The cycle's deferred requests by OIS title and class (the metrics' and the cycle report's). */
export function apiDeferralCounts(summary: CycleSummary): ApiDeferralReport[] {
  const counts = new Map<string, ApiDeferralReport>();
  for (const result of summary.results) {
    if (!result.ok) continue;
    for (const { deferral } of result.output.outcomes) {
      if (!deferral) continue;
      const key = JSON.stringify([deferral.oisTitle, deferral.statusClass]);
      const counted = counts.get(key);
      if (counted) counted.count++;
      else counts.set(key, { ois: deferral.oisTitle, statusClass: deferral.statusClass, count: 1 });
    }
  }
  return [...counts.values()];
}

/** A sponsor's requests answered on chain in a cycle; `sponsor` in lowercase. */
export type SponsorAnswers = { chainId: string; sponsor: string; fulfilled: number; failed: number };

/** The cycle's requests answered on chain per sponsor and chain, by sponsorKey. */
export function sponsorAnswers(summary: CycleSummary): Map<string, SponsorAnswers> {
  const answers = new Map<string, SponsorAnswers>();
  for (const result of summary.results) {
    if (!result.ok || result.output.sponsor === undefined) continue;
    const { chainId } = result.output;
    const sponsor = result.output.sponsor.toLowerCase();
    const key = sponsorKey(chainId, sponsor);
    const counted = answers.get(key) ?? { chainId, sponsor, fulfilled: 0, failed: 0 };
    for (const outcome of result.output.outcomes) if (answeredOnChain(outcome)) counted[outcome.outcome]++;
    answers.set(key, counted);
  }
  return answers;
}

/** The volume each sponsor's label is given out by (src/common/sponsor-labels.ts): its requests answered. */
export function sponsorVolumes(answers: ReadonlyMap<string, SponsorAnswers>): Map<string, number> {
  return new Map([...answers].map(([key, counted]) => [key, counted.fulfilled + counted.failed]));
}

/**
 * The cycle's requests answered per sponsor under the label `labelOf` gives it (an address or `other`), added up
 * per label: the cycle report's entries.
 */
export function sponsorFulfilmentCounts(
  answers: ReadonlyMap<string, SponsorAnswers>,
  labelOf: (chainId: string, sponsor: string) => string,
): SponsorFulfilmentReport[] {
  const counts = new Map<string, SponsorFulfilmentReport>();
  for (const counted of answers.values()) {
    const sponsor = labelOf(counted.chainId, counted.sponsor);
    for (const outcome of ['fulfilled', 'failed'] as const) {
      if (counted[outcome] === 0) continue;
      const key = JSON.stringify([counted.chainId, sponsor, outcome]);
      const entry = counts.get(key);
      if (entry) entry.count += counted[outcome];
      else counts.set(key, { chainId: counted.chainId, sponsor, outcome, count: counted[outcome] });
    }
  }
  return [...counts.values()];
}
