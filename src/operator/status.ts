// Status computation, kept pure: conditions keep their lastTransitionTime unless their status flips, and two
// statuses are compared as canonical JSON so an unchanged status is never written.
import type { V1CronJob, V1Deployment, V1Job } from '@kubernetes/client-node';
import { canonicalJson } from './builders/common.js';
import type {
  Condition,
  ConditionType,
  CycleStatus,
  OracleNodeStatus,
  ProviderHealth,
  SponsorWalletBalance,
} from './resource.js';

export type ConditionInput = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>;

/** Sets a condition, keeping lastTransitionTime when the status did not change. */
export function setCondition(
  previous: Condition[] | undefined,
  next: ConditionInput,
  now: string,
  generation?: number,
): Condition {
  const existing = previous?.find((c) => c.type === next.type);
  const lastTransitionTime = existing && existing.status === next.status ? existing.lastTransitionTime : now;
  const condition: Condition = { ...next, lastTransitionTime };
  if (generation !== undefined) condition.observedGeneration = generation;
  return condition;
}

const CONDITION_ORDER: ConditionType[] = ['Ready', 'ConfigValid', 'Progressing', 'Degraded'];

export function mergeConditions(
  previous: Condition[] | undefined,
  updates: ConditionInput[],
  now: string,
  generation?: number,
): Condition[] {
  const byType = new Map<ConditionType, Condition>();
  for (const c of previous ?? []) byType.set(c.type, c);
  for (const update of updates) byType.set(update.type, setCondition(previous, update, now, generation));
  return CONDITION_ORDER.filter((t) => byType.has(t)).map((t) => byType.get(t)!);
}

export function statusEqual(a: OracleNodeStatus | undefined, b: OracleNodeStatus | undefined): boolean {
  return canonicalJson(a ?? {}) === canonicalJson(b ?? {});
}

export function jobFinished(job: V1Job): 'Succeeded' | 'Failed' | undefined {
  for (const condition of job.status?.conditions ?? []) {
    if (condition.status !== 'True') continue;
    if (condition.type === 'Complete' || condition.type === 'SuccessCriteriaMet') return 'Succeeded';
    if (condition.type === 'Failed' || condition.type === 'FailureTarget') return 'Failed';
  }
  return undefined;
}

export function jobActive(job: V1Job): boolean {
  return jobFinished(job) === undefined;
}

export function cronJobHasActiveJobs(cronJob: V1CronJob): boolean {
  return (cronJob.status?.active?.length ?? 0) > 0;
}

/** A Deployment whose current generation is rolled out with every replica available. */
export function deploymentReady(deployment: V1Deployment | undefined): boolean {
  if (!deployment) return false;
  const wanted = deployment.spec?.replicas ?? 1;
  const status = deployment.status ?? {};
  if ((status.observedGeneration ?? 0) < (deployment.metadata?.generation ?? 0)) return false;
  if (wanted === 0) return true;
  return (status.updatedReplicas ?? 0) >= wanted && (status.availableReplicas ?? 0) >= wanted;
}

/** RFC 3339 in whole seconds, as the apiserver writes it, whether the client gave a Date or a string. */
/** Every wanted replica available, whichever revision: the gateway serves (e.g. during a rolling update). */
export function deploymentAvailable(deployment: V1Deployment | undefined): boolean {
  if (!deployment) return false;
  const wanted = deployment.spec?.replicas ?? 1;
  return wanted === 0 || (deployment.status?.availableReplicas ?? 0) >= wanted;
}

const toIso = (value: Date | string | undefined): string | undefined => {
  if (value === undefined) return undefined;
  const date = value instanceof Date ? value : new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : date.toISOString().replace(/\.\d{3}Z$/, 'Z');
};

/** The cycle report the coordinator writes into the `<name>-cycle` ConfigMap (key `cycle.json`). */
export type ProviderReport = { chainId: string; provider: string; ok: boolean; currentBlock?: number };
export type CycleReport = {
  job?: string;
  outcome?: string;
  counts?: Record<string, number>;
  providers?: ProviderReport[];
  sponsorWallets?: SponsorWalletBalance[];
};

const WEI = /^[0-9]{1,78}$/;

/** Balances reported by the coordinator, checked (the ConfigMap is writable by the coordinator's identity). */
export function sponsorBalances(reports: SponsorWalletBalance[] | undefined): SponsorWalletBalance[] | undefined {
  if (!Array.isArray(reports)) return undefined;
  const valid = reports
    .filter(
      (r) =>
        r &&
        typeof r.chainId === 'string' &&
        typeof r.sponsorWallet === 'string' &&
        /^0x[0-9a-fA-F]{40}$/.test(r.sponsorWallet) &&
        typeof r.balanceWei === 'string' &&
        WEI.test(r.balanceWei),
    )
    .map(({ chainId, sponsorWallet, balanceWei }) => ({ chainId, sponsorWallet, balanceWei }));
  return valid.length > 0 ? valid : undefined;
}

/** Provider health for the status: up or not, and how many blocks behind the best provider of its chain. */
export function providerHealth(reports: ProviderReport[] | undefined): ProviderHealth[] | undefined {
  if (!Array.isArray(reports) || reports.length === 0) return undefined;
  const valid = reports.filter(
    (r) => r && typeof r.chainId === 'string' && typeof r.provider === 'string' && typeof r.ok === 'boolean',
  );
  const best = new Map<string, number>();
  for (const r of valid) {
    if (r.ok && Number.isInteger(r.currentBlock))
      best.set(r.chainId, Math.max(best.get(r.chainId) ?? 0, r.currentBlock as number));
  }
  return valid.map((r) => {
    const top = best.get(r.chainId);
    const health: ProviderHealth = { chainId: r.chainId, provider: r.provider, up: r.ok };
    if (r.ok && top !== undefined && Number.isInteger(r.currentBlock))
      health.blockLag = top - (r.currentBlock as number);
    return health;
  });
}
export const CYCLE_REPORT_KEY = 'cycle.json';

export function parseCycleReport(data: Record<string, string> | undefined): CycleReport | undefined {
  const raw = data?.[CYCLE_REPORT_KEY];
  if (!raw) return undefined;
  try {
    const parsed = JSON.parse(raw) as CycleReport;
    return typeof parsed === 'object' && parsed !== null ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** The most recent coordinator Job, with the counts of the report when the report is about that Job. */
export function lastCycle(coordinatorJobs: V1Job[], report: CycleReport | undefined): CycleStatus | undefined {
  const started = (job: V1Job) => toIso(job.status?.startTime ?? job.metadata?.creationTimestamp) ?? '';
  const latest = [...coordinatorJobs].sort((a, b) => started(b).localeCompare(started(a)))[0];
  if (!latest?.metadata?.name) return undefined;
  const cycle: CycleStatus = { job: latest.metadata.name, outcome: jobFinished(latest) ?? 'Running' };
  const startTime = toIso(latest.status?.startTime);
  const completionTime = toIso(latest.status?.completionTime);
  if (startTime) cycle.startTime = startTime;
  if (completionTime) cycle.completionTime = completionTime;
  if (report?.counts && (report.job === undefined || report.job === latest.metadata.name)) {
    const counts = Object.fromEntries(
      Object.entries(report.counts).filter(([, v]) => typeof v === 'number' && Number.isInteger(v)),
    );
    if (Object.keys(counts).length > 0) cycle.counts = counts;
    const providers = providerHealth(report.providers);
    if (providers) cycle.providers = providers;
    const balances = sponsorBalances(report.sponsorWallets);
    if (balances) cycle.sponsorWallets = balances;
  }
  return cycle;
}
