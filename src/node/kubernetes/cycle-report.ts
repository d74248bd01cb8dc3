// The coordinator's cycle report: what the operator turns into status.lastCycle and metrics. Written into the
// `<name>-cycle` ConfigMap under the contract's key; the shape is the contract's CycleReport.

import { DEFAULT_TOP_SPONSORS, SponsorLabels } from '../../common/sponsor-labels.js';
import {
  CYCLE_REPORT_KEY,
  type CycleReport,
  type FailedRequestReport,
  type HeartbeatReport,
  MAX_REPORTED_FAILED_REQUESTS,
  MAX_REPORTED_LATENCIES,
} from '../../contract/pods.js';
import {
  type CycleRequestRecord,
  mergeRequestLog,
  parseRequestLog,
  REQUEST_LOG_KEY,
} from '../../contract/request-log.js';
import { redact } from '../../observability/index.js';
import type { CycleSummary } from '../cycle.js';
import {
  apiCallCounts,
  apiDeferralCounts,
  sponsorAnswers,
  sponsorFulfilmentCounts,
  sponsorVolumes,
} from '../usage-counts.js';
import type { WindowSummary } from '../window.js';
import { type ConfigMapStore, updateConfigMapData } from './config-map-store.js';

/** Counts of a cycle as flat integers (the operator's status.lastCycle.counts). */
export function cycleCounts(summary: CycleSummary): Record<string, number> {
  return {
    discovered: summary.requests.discovered,
    servable: summary.requests.servable,
    waitingForConfirmations: summary.requests.waitingForConfirmations,
    overChainLimit: summary.requests.overChainLimit,
    ...summary.transactions,
    shards: summary.shards.total,
    failedShards: summary.shards.failed,
    apiCalls: summary.apiCalls,
    cacheHits: summary.cacheHits,
    providersUp: summary.providers.filter((p) => p.ok).length,
    providersDown: summary.providers.filter((p) => !p.ok).length,
    gasPriceStrategyFailures: summary.gasPriceStrategyFailures.reduce((n, f) => n + f.count, 0),
    ...(isWindow(summary) ? { polls: summary.window.polls, idlePolls: summary.window.idlePolls } : {}),
    // A standby that sent: the primary left these requests open past the standby delay (the primary is down).
    ...(summary.role === 'standby'
      ? { standbyServed: summary.transactions.fulfilled + summary.transactions.failed }
      : {}),
  };
}

const isWindow = (summary: CycleSummary): summary is WindowSummary => 'window' in summary && 'latency' in summary;

/** A window's request latencies for the report (seconds by stage); undefined when it measured none. */
function latencySeconds(summary: CycleSummary): CycleReport['latencySeconds'] {
  if (!isWindow(summary)) return undefined;
  const stages = Object.entries(summary.latency).filter(([, seconds]) => seconds.length > 0);
  return stages.length > 0
    ? Object.fromEntries(stages.map(([stage, seconds]) => [stage, seconds.slice(0, MAX_REPORTED_LATENCIES)]))
    : undefined;
}

const MAX_REASON_LENGTH = 300;

/** The requests that failed or errored in the cycle (the first MAX_REPORTED_FAILED_REQUESTS), with their reason. */
export function failedRequests(summary: CycleSummary): FailedRequestReport[] {
  const failed: FailedRequestReport[] = [];
  for (const result of summary.results) {
    if (!result.ok) continue;
    for (const outcome of result.output.outcomes) {
      if (outcome.outcome !== 'failed' && outcome.outcome !== 'error') continue;
      if (failed.length >= MAX_REPORTED_FAILED_REQUESTS) return failed;
      // The operator turns each reason into an Event: a registered secret (a provider URL in a transport error)
      // must not get there.
      const reason = redact(outcome.reason ?? outcome.outcome);
      failed.push({
        chainId: result.output.chainId,
        requestId: outcome.id,
        reason: reason.length > MAX_REASON_LENGTH ? `${reason.slice(0, MAX_REASON_LENGTH - 3)}...` : reason,
      });
    }
  }
  return failed;
}

/** What the coordinator knows about its cycle beyond the summary. */
export type CycleContext = {
  jobName?: string | undefined;
  startTime?: Date;
  durationMs?: number;
  heartbeat?: HeartbeatReport;
  /** Writes of the response cache ConfigMap that failed in the cycle (counted only when some did). */
  responseCacheWriteFailures?: number;
  /** How many sponsors of the run the report names (`--metrics-top-sponsors`), the biggest; the rest are `other`. */
  topSponsors?: number;
};

/**
 * The run's requests answered per sponsor for the report: its biggest `topSponsors` sponsors by address, the rest
 * as `other` (the operator then keeps its own top N across runs, src/operator/metrics.ts).
 */
function reportedSponsorFulfilments(summary: CycleSummary, topSponsors: number) {
  const answers = sponsorAnswers(summary);
  const labels = new SponsorLabels(topSponsors);
  labels.observe(sponsorVolumes(answers));
  return sponsorFulfilmentCounts(answers, (chainId, sponsor) => labels.labelOf(chainId, sponsor));
}

/** The report of one cycle, naming the coordinator Job it ran in (so the operator pairs them). */
export function cycleReport(summary: CycleSummary, context: CycleContext = {}): CycleReport {
  const { jobName, startTime, durationMs, heartbeat, responseCacheWriteFailures } = context;
  const failed = failedRequests(summary);
  const latencies = latencySeconds(summary);
  const apiCalls = apiCallCounts(summary);
  const apiDeferrals = apiDeferralCounts(summary);
  const sponsorFulfilments = reportedSponsorFulfilments(summary, context.topSponsors ?? DEFAULT_TOP_SPONSORS);
  return {
    ...(jobName ? { job: jobName } : {}),
    outcome: summary.shards.failed > 0 ? 'PartiallyFailed' : 'Completed',
    ...(startTime ? { startTime: startTime.toISOString() } : {}),
    ...(durationMs !== undefined ? { durationMs: Math.max(0, Math.round(durationMs)) } : {}),
    ...(heartbeat ? { heartbeat } : {}),
    ...(summary.role ? { role: summary.role } : {}),
    ...(failed.length > 0 ? { failedRequests: failed } : {}),
    counts: {
      ...cycleCounts(summary),
      ...(responseCacheWriteFailures ? { responseCacheWriteFailures } : {}),
    },
    providers: summary.providers.map(({ chainId, provider, ok, fault, currentBlock }) => ({
      chainId,
      provider,
      ok,
      ...(fault === undefined ? {} : { fault }),
      ...(currentBlock === undefined ? {} : { currentBlock }),
    })),
    sponsorWallets: summary.sponsorWallets,
    ...(summary.gasPrices.length > 0 ? { gasPrices: summary.gasPrices } : {}),
    ...(latencies ? { latencySeconds: latencies } : {}),
    ...(apiCalls.length > 0 ? { apiCalls } : {}),
    ...(sponsorFulfilments.length > 0 ? { sponsorFulfilments } : {}),
    ...(apiDeferrals.length > 0 ? { apiDeferrals } : {}),
  };
}

/**
 * Writes the report into the cycle ConfigMap, and this cycle's requests into its request log (merged with what it
 * held, bounded); nothing happens when the ConfigMap does not exist.
 */
export async function writeCycleReport(
  store: ConfigMapStore,
  report: CycleReport,
  requests: readonly CycleRequestRecord[] = [],
): Promise<void> {
  await updateConfigMapData(
    store,
    (data) => ({
      ...data,
      [CYCLE_REPORT_KEY]: JSON.stringify(report),
      [REQUEST_LOG_KEY]: JSON.stringify(mergeRequestLog(parseRequestLog(data[REQUEST_LOG_KEY]), requests)),
    }),
    'the cycle ConfigMap',
  );
}
