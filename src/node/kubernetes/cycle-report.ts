// The coordinator's cycle report: what the operator turns into status.lastCycle and metrics. Written into the
// `<name>-cycle` ConfigMap under the contract's key; the shape is the contract's CycleReport.
import { CYCLE_REPORT_KEY, type CycleReport } from '../../contract/pods.js';
import type { CycleSummary } from '../cycle.js';
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
  };
}

/** The report of one cycle, naming the coordinator Job it ran in (so the operator pairs them). */
export function cycleReport(summary: CycleSummary, jobName: string | undefined): CycleReport {
  return {
    ...(jobName ? { job: jobName } : {}),
    outcome: summary.shards.failed > 0 ? 'PartiallyFailed' : 'Completed',
    counts: cycleCounts(summary),
    providers: summary.providers.map(({ chainId, provider, ok, currentBlock }) => ({
      chainId,
      provider,
      ok,
      ...(currentBlock === undefined ? {} : { currentBlock }),
    })),
    sponsorWallets: summary.sponsorWallets,
  };
}

/** Writes the report into the cycle ConfigMap; nothing happens when the ConfigMap does not exist. */
export async function writeCycleReport(store: ConfigMapStore, report: CycleReport): Promise<void> {
  await updateConfigMapData(
    store,
    (data) => ({ ...data, [CYCLE_REPORT_KEY]: JSON.stringify(report) }),
    'the cycle ConfigMap',
  );
}
