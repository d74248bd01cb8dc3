// All of the status: what a pass observed of the workloads, the conditions it adds up to, the status of each way a
// pass ends (paused, config rejected, apply failed, applied), and the one place it is written. The rules are pure:
// conditions keep their lastTransitionTime unless their status flips, and two statuses are compared as canonical
// JSON so an unchanged status is never written.
import type { V1ConfigMap, V1CronJob, V1Deployment, V1Job } from '@kubernetes/client-node';
import { wholeSecondsIso } from '../../common/time.js';
import { type CycleReport, jobFinished, LABELS, type ProviderReport, parseCycleReport } from '../../contract/pods.js';
import type { EventRecorder, ObjectCache, ReconcileContext } from '../../kube/index.js';
// node-key.ts, not wallet.ts: the operator never loads ethers.
import { deriveNodeAddress } from '../../protocol/node-key.js';
import {
  type BuildInput,
  canonicalJson,
  childNames,
  gatewayEnabled,
  gatewayUrls,
  hashOf,
  lowBalanceThresholds,
} from '../builders/index.js';
import type { OracleNodeMetrics } from '../metrics.js';
import {
  type Condition,
  type ConditionReason,
  type ConditionType,
  type CycleRecord,
  type CycleStatus,
  KINDS,
  MAX_CYCLE_HISTORY,
  MAX_RECENT_FAILED_REQUESTS,
  type OracleNode,
  type OracleNodeStatus,
  type ProviderHealth,
} from '../resource.js';
import type { ConfigRejection } from './inputs.js';

/** A condition as the operator sets it: its reason is one of CONDITION_REASONS. */
export type ConditionInput = Omit<Condition, 'lastTransitionTime' | 'observedGeneration' | 'reason'> & {
  reason: ConditionReason;
};

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

const CONDITION_ORDER: ConditionType[] = ['Ready', 'ConfigValid', 'Progressing', 'Degraded', 'Reconciling', 'Stalled'];

/**
 * Why a config is refused that only an edit of the spec or of the Secret's values can fix (or, for a name taken,
 * the removal of the object that holds it).
 */
const STALLING_REASONS: ReadonlySet<string> = new Set([
  'ValidationFailed',
  'SecretKeyMissing',
  'NameConflict',
  'NodeAddressChanged',
]);

/**
 * The kstatus conditions (sigs.k8s.io/cli-utils kstatus, what Flux and other GitOps tools read), derived from the
 * operator's own, each with the condition it comes from (whose observedGeneration it shares). Abnormal-true: each
 * is present only while True.
 * - Stalled: the config or the Secret's values cannot be applied as written; retrying will not help (kstatus Failed).
 * - Reconciling: the operator is working towards the spec: a stage or gateway rollout, a Secret it waits for, or
 *   an apply it retries with backoff (kstatus InProgress). Paused is neither: the operator does nothing then.
 * Without either, kstatus reads Ready and observedGeneration (Current once the generation is observed and Ready).
 */
export function kstatusConditions(conditions: Condition[]): { condition: ConditionInput; from: Condition }[] {
  const byType = new Map(conditions.map((c) => [c.type, c]));
  const derive = (type: 'Reconciling' | 'Stalled', from: Condition) => ({
    condition: { type, status: 'True' as const, reason: from.reason as ConditionReason, message: from.message },
    from,
  });
  const configValid = byType.get('ConfigValid');
  if (configValid?.status === 'False' && STALLING_REASONS.has(configValid.reason))
    return [derive('Stalled', configValid)];
  const progressing = byType.get('Progressing');
  if (progressing?.status === 'True') return [derive('Reconciling', progressing)];
  if (configValid?.status === 'False' && configValid.reason === 'SecretNotFound')
    return [derive('Reconciling', configValid)];
  const degraded = byType.get('Degraded');
  if (degraded?.status === 'True' && degraded.reason === 'ApplyFailed') return [derive('Reconciling', degraded)];
  return [];
}

/**
 * The conditions after `updates`, each keeping its lastTransitionTime unless its status flips; Reconciling and
 * Stalled are then derived from the result (kstatusConditions), so every path that writes status keeps them true.
 */
export function mergeConditions(
  previous: Condition[] | undefined,
  updates: ConditionInput[],
  now: string,
  generation?: number,
): Condition[] {
  const byType = new Map<ConditionType, Condition>();
  for (const c of previous ?? []) if (c.type !== 'Reconciling' && c.type !== 'Stalled') byType.set(c.type, c);
  for (const update of updates) byType.set(update.type, setCondition(previous, update, now, generation));
  for (const { condition, from } of kstatusConditions([...byType.values()]))
    byType.set(condition.type, setCondition(previous, condition, now, from.observedGeneration));
  return CONDITION_ORDER.filter((t) => byType.has(t)).map((t) => byType.get(t)!);
}

export function statusEqual(a: OracleNodeStatus | undefined, b: OracleNodeStatus | undefined): boolean {
  return canonicalJson(a ?? {}) === canonicalJson(b ?? {});
}

/**
 * Whether a Job may still have a pod running. Only a terminal condition (Complete, Failed) with no pod active or
 * terminating ends it: FailureTarget and SuccessCriteriaMet come first, while the Job controller is still ending
 * the pods, and a coordinator pod past its deadline may still be sending (a stage rollout waits for it).
 */
export function jobActive(job: V1Job): boolean {
  const terminal = (job.status?.conditions ?? []).some(
    (condition) => condition.status === 'True' && (condition.type === 'Complete' || condition.type === 'Failed'),
  );
  return !terminal || (job.status?.active ?? 0) > 0 || (job.status?.terminating ?? 0) > 0;
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

/** Every wanted replica available, whichever revision: the gateway serves (e.g. during a rolling update). */
export function deploymentAvailable(deployment: V1Deployment | undefined): boolean {
  if (!deployment) return false;
  const wanted = deployment.spec?.replicas ?? 1;
  return wanted === 0 || (deployment.status?.availableReplicas ?? 0) >= wanted;
}

/** A time of a Kubernetes object (client-node gives a Date, a raw watch a string) in whole seconds. */
const toIso = (value: Date | string | undefined): string | undefined =>
  value === undefined ? undefined : (wholeSecondsIso(value) ?? String(value));

/** Provider health for the status: up or not, and how many blocks behind the best provider of its chain. */
export function providerHealth(reports: ProviderReport[] | undefined): ProviderHealth[] | undefined {
  if (!reports || reports.length === 0) return undefined;
  const best = new Map<string, number>();
  for (const r of reports) {
    if (r.ok && r.currentBlock !== undefined) best.set(r.chainId, Math.max(best.get(r.chainId) ?? 0, r.currentBlock));
  }
  return reports.map((r) => {
    const top = best.get(r.chainId);
    const health: ProviderHealth = { chainId: r.chainId, provider: r.provider, up: r.ok };
    if (r.fault) health.fault = r.fault;
    // A provider left out for lagging still has its lag shown; the best head is taken among the providers in use.
    if (top !== undefined && r.currentBlock !== undefined) health.blockLag = Math.max(0, top - r.currentBlock);
    return health;
  });
}

/**
 * The most recent coordinator Job, with the counts of the report when the report is about that Job. The report
 * comes from the contract's parseCycleReport, which keeps only well-formed fields and entries.
 */
export function lastCycle(
  coordinatorJobs: V1Job[],
  report: CycleReport | undefined,
  lowBalances: ReadonlyMap<string, bigint> = new Map(),
): CycleStatus | undefined {
  const started = (job: V1Job) => toIso(job.status?.startTime ?? job.metadata?.creationTimestamp) ?? '';
  // The last cycle is the newest one that finished, else the newest running one: with window hand-overs the next run
  // starts before the previous one ends, so the newest Job is nearly always running (and its report not written yet).
  const byStart = [...coordinatorJobs].sort((a, b) => started(b).localeCompare(started(a)));
  const latest = byStart.find((job) => jobFinished(job) !== undefined) ?? byStart[0];
  if (!latest?.metadata?.name) return undefined;
  const cycle: CycleStatus = { job: latest.metadata.name, outcome: jobFinished(latest) ?? 'Running' };
  const startTime = toIso(latest.status?.startTime);
  const completionTime = toIso(latest.status?.completionTime);
  if (startTime) cycle.startTime = startTime;
  if (completionTime) cycle.completionTime = completionTime;
  if (report?.counts && (report.job === undefined || report.job === latest.metadata.name)) {
    cycle.counts = report.counts;
    const providers = providerHealth(report.providers);
    if (providers) cycle.providers = providers;
    if (report.sponsorWallets)
      cycle.sponsorWallets = report.sponsorWallets.map((wallet) => {
        const threshold = lowBalances.get(wallet.chainId);
        return threshold === undefined ? wallet : { ...wallet, belowThreshold: BigInt(wallet.balanceWei) < threshold };
      });
    if (report.heartbeat) cycle.heartbeat = report.heartbeat;
    if (report.gasPrices) cycle.gasPrices = report.gasPrices;
    if (report.role) cycle.role = report.role;
  }
  return cycle;
}

/** A cycle report as one entry of status.cycles; undefined when it names neither its Job nor its start. */
export function cycleRecord(report: CycleReport): CycleRecord | undefined {
  const job = report.job ?? report.startTime;
  if (!job) return undefined;
  const counts = report.counts ?? {};
  const record: CycleRecord = {
    job,
    fulfilled: counts['fulfilled'] ?? 0,
    failed: counts['failed'] ?? 0,
    dropped: counts['overChainLimit'] ?? 0,
  };
  if (report.startTime) record.startTime = toIso(report.startTime)!;
  if (report.durationMs !== undefined) record.durationSeconds = Math.round(report.durationMs / 100) / 10;
  if (report.outcome) record.outcome = report.outcome;
  const errors = Object.entries({
    providersDown: counts['providersDown'] ?? 0,
    failedShards: counts['failedShards'] ?? 0,
    transactionErrors: counts['errors'] ?? 0,
    heartbeat: report.heartbeat === 'Failed' ? 1 : 0,
  }).filter(([, count]) => count > 0);
  if (errors.length > 0) record.errors = Object.fromEntries(errors);
  const blocks = (report.providers ?? []).flatMap((p) =>
    p.ok && p.currentBlock !== undefined ? [{ chainId: p.chainId, provider: p.provider, block: p.currentBlock }] : [],
  );
  if (blocks.length > 0) record.blocks = blocks;
  if (report.heartbeat) record.heartbeat = report.heartbeat;
  return record;
}

/**
 * status.cycles with the report's cycle first (newest first, at most MAX_CYCLE_HISTORY), and that cycle when it
 * is new: the controller emits its Events once, when it first appears.
 */
export function cycleHistory(
  previous: Pick<OracleNodeStatus, 'cycles' | 'recentFailedRequests'> | undefined,
  report: CycleReport | undefined,
): Required<Pick<OracleNodeStatus, 'cycles' | 'recentFailedRequests'>> & { added?: CycleRecord } {
  const cycles = previous?.cycles ?? [];
  const failed = previous?.recentFailedRequests ?? [];
  const record = report ? cycleRecord(report) : undefined;
  if (!record || cycles.some((c) => c.job === record.job)) return { cycles, recentFailedRequests: failed };
  const newlyFailed = (report?.failedRequests ?? []).map((f) => ({ ...f, job: record.job }));
  return {
    cycles: [record, ...cycles].slice(0, MAX_CYCLE_HISTORY),
    recentFailedRequests: [...newlyFailed, ...failed].slice(0, MAX_RECENT_FAILED_REQUESTS),
    added: record,
  };
}

/** What the controller saw of the current stage's workloads: the inputs of the Ready/Progressing/Degraded rules. */
export type WorkloadObservation = {
  stage: string;
  gateway: {
    name: string;
    /** A gateway is enabled in the config. */
    wanted: boolean;
    /** Not wanted, or its current generation rolled out with every replica available. */
    ready: boolean;
    /** Every wanted replica available, whichever revision. */
    available: boolean;
  };
  cycle: CycleStatus | undefined;
};

export const PAUSED_CONDITION: ConditionInput = {
  type: 'Progressing',
  status: 'False',
  reason: 'Paused',
  message: 'Reconciliation is paused by the annotation oracle-node.io/paused="true"',
};

export function applyFailedCondition(message: string): ConditionInput {
  return { type: 'Degraded', status: 'True', reason: 'ApplyFailed', message };
}

/** The conditions of a config that cannot be applied (invalid, or its Secret is missing): nothing is changed. */
export function invalidConfigConditions(
  reason: ConditionReason,
  message: string,
  hasWorkloads: boolean,
): ConditionInput[] {
  return [
    { type: 'ConfigValid', status: 'False', reason, message },
    { type: 'Ready', status: 'False', reason: 'ConfigInvalid', message: `The spec cannot be applied: ${message}` },
    {
      type: 'Degraded',
      status: 'True',
      reason: 'ConfigInvalid',
      message: hasWorkloads ? 'The last valid configuration keeps running unchanged' : 'Nothing is running yet',
    },
    { type: 'Progressing', status: 'False', reason: 'ConfigInvalid', message: 'Waiting for a valid config' },
  ];
}

/**
 * The conditions of a node whose config was applied, in one place:
 * - ConfigValid: True (with the validator's warnings, if any).
 * - Progressing/Ready: a stage rollout is Progressing and not Ready; a gateway rolling out is Progressing and
 *   stays Ready while every replica is available (maxUnavailable 0), else NotReady; otherwise Ready.
 * - Degraded: the last coordinator Job failed.
 */
export function nodeConditions(input: {
  observed: WorkloadObservation;
  configWarnings: string | undefined;
  rolloutMessage: string | undefined;
}): ConditionInput[] {
  const { observed, configWarnings, rolloutMessage } = input;
  const { stage, gateway, cycle } = observed;
  const conditions: ConditionInput[] = [
    {
      type: 'ConfigValid',
      status: 'True',
      reason: 'Valid',
      message: configWarnings ? `warnings: ${configWarnings}` : 'The config passed full validation',
    },
  ];
  if (rolloutMessage) {
    conditions.push({ type: 'Progressing', status: 'True', reason: 'StageRollout', message: rolloutMessage });
    conditions.push({ type: 'Ready', status: 'False', reason: 'StageRollout', message: rolloutMessage });
  } else if (!gateway.ready) {
    const message = `Gateway Deployment ${gateway.name} is rolling out`;
    conditions.push({ type: 'Progressing', status: 'True', reason: 'GatewayRollingOut', message });
    conditions.push(
      gateway.available
        ? { type: 'Ready', status: 'True', reason: 'Ready', message: `Stage ${stage} is serving; ${message}` }
        : { type: 'Ready', status: 'False', reason: 'GatewayNotReady', message },
    );
  } else {
    conditions.push({
      type: 'Progressing',
      status: 'False',
      reason: 'Reconciled',
      message: 'All children match the spec',
    });
    conditions.push({ type: 'Ready', status: 'True', reason: 'Ready', message: `Stage ${stage} is serving` });
  }
  conditions.push(
    cycle?.outcome === 'Failed'
      ? { type: 'Degraded', status: 'True', reason: 'CycleFailed', message: `Coordinator Job ${cycle.job} failed` }
      : { type: 'Degraded', status: 'False', reason: 'AsExpected', message: 'No failure observed' },
  );
  return conditions;
}

// ---------------------------------------------------------------------------------------------------------------
// Observation: what a pass reads of the running workloads.

/** What the status reports about the running workloads, and the last cycle report as read. */
export type Observed = WorkloadObservation & { report: CycleReport | undefined };

/** The current stage's gateway Deployment, its coordinator Jobs and the last cycle report, from the cache. */
export function observeWorkloads(input: BuildInput, cache: ObjectCache): Observed {
  const { node } = input;
  const namespace = node.metadata.namespace;
  const stage = input.config.nodeSettings.stage;
  const names = childNames(node.metadata.name, stage);
  const wanted = gatewayEnabled(input);
  const deployment = wanted ? cache.get<V1Deployment>(KINDS.deployment, { namespace, name: names.gateway }) : undefined;
  const coordinatorJobs = cache
    .list<V1Job>(KINDS.job, namespace, { [LABELS.name]: node.metadata.name, [LABELS.component]: 'coordinator' })
    .filter((job) => job.metadata?.labels?.[LABELS.stage] === stage);
  const report = parseCycleReport(cache.get<V1ConfigMap>(KINDS.configMap, { namespace, name: names.cycle })?.data);
  return {
    stage,
    gateway: {
      name: names.gateway,
      wanted,
      ready: !wanted || deploymentReady(deployment),
      available: deploymentAvailable(deployment),
    },
    cycle: lastCycle(coordinatorJobs, report, lowBalanceThresholds(node)),
    report,
  };
}

/** The node has a coordinator CronJob of any stage: something runs, whatever this pass decides. */
export function hasWorkloads(node: OracleNode, cache: ObjectCache): boolean {
  return cache.list(KINDS.cronJob, node.metadata.namespace, { [LABELS.name]: node.metadata.name }).length > 0;
}

/** Node addresses by the mnemonic's hash: deriving one costs a few ms of PBKDF2. Bounded. */
export class NodeAddresses {
  private readonly byMnemonicHash = new Map<string, string>();

  of(mnemonic: string): string | undefined {
    const key = hashOf(mnemonic);
    let address = this.byMnemonicHash.get(key);
    if (!address) {
      try {
        address = deriveNodeAddress(mnemonic);
      } catch {
        return undefined;
      }
      if (this.byMnemonicHash.size > 10_000) this.byMnemonicHash.clear();
      this.byMnemonicHash.set(key, address);
    }
    return address;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The status of each way a pass ends.

/** Paused: the status as it was, with Progressing=False/Paused. */
export function pausedStatus(node: OracleNode, now: string): OracleNodeStatus {
  const conditions = mergeConditions(node.status?.conditions, [PAUSED_CONDITION], now);
  return { ...structuredClone(node.status ?? {}), conditions };
}

/** Invalid config or missing Secret: the status as it was, with the conditions that say why. */
export function rejectedStatus(
  node: OracleNode,
  rejection: ConfigRejection,
  workloads: boolean,
  now: string,
): OracleNodeStatus {
  const next: OracleNodeStatus = structuredClone(node.status ?? {});
  if (node.metadata.generation !== undefined) next.observedGeneration = node.metadata.generation;
  next.conditions = mergeConditions(
    node.status?.conditions,
    invalidConfigConditions(rejection.reason, rejection.message, workloads),
    now,
    node.metadata.generation,
  );
  next.notReadyReason = 'ConfigInvalid';
  return next;
}

/** An apply failed: the status as it was, Degraded=True/ApplyFailed with the error. */
export function applyFailedStatus(node: OracleNode, message: string, now: string): OracleNodeStatus {
  const status: OracleNodeStatus = structuredClone(node.status ?? {});
  status.conditions = mergeConditions(
    status.conditions,
    [applyFailedCondition(message)],
    now,
    node.metadata.generation,
  );
  return status;
}

/**
 * The status of a node whose children were applied: its conditions, identity, gateways, the last cycle, and the
 * cycle history with the cycle the report adds (`added`, whose Events are recorded once).
 */
export function appliedStatus(step: {
  input: BuildInput;
  observed: Observed;
  warnings: string | undefined;
  rollout: { message?: string; previousStage?: string };
  nodeAddress: string | undefined;
  now: string;
}): { status: OracleNodeStatus; added: CycleRecord | undefined } {
  const { input, observed, warnings, rollout, nodeAddress, now } = step;
  const { node, config } = input;
  const generation = node.metadata.generation;
  const conditions = nodeConditions({ observed, configWarnings: warnings, rolloutMessage: rollout.message });
  const next: OracleNodeStatus = {
    conditions: mergeConditions(node.status?.conditions, conditions, now, generation),
    stage: observed.stage,
    chains: config.chains.length,
    chainIds: config.chains.map((chain) => String(chain.id)),
  };
  if (generation !== undefined) next.observedGeneration = generation;
  if (nodeAddress) next.nodeAddress = nodeAddress;
  if (rollout.previousStage && rollout.message) next.previousStage = rollout.previousStage;
  const urls = gatewayUrls(input);
  if (Object.keys(urls).length > 0) next.gatewayUrls = urls;
  if (input.publicGatewayUrl) next.publicGatewayUrl = input.publicGatewayUrl;
  const ready = next.conditions?.find((c) => c.type === 'Ready');
  if (ready && ready.status !== 'True') next.notReadyReason = ready.reason;
  if (observed.cycle) next.lastCycle = observed.cycle;
  const history = cycleHistory(node.status, observed.report);
  if (history.cycles.length > 0) next.cycles = history.cycles;
  if (history.recentFailedRequests.length > 0) next.recentFailedRequests = history.recentFailedRequests;
  return { status: next, added: history.added };
}

// ---------------------------------------------------------------------------------------------------------------
// Writing it.

/**
 * Publishes the status as metrics and writes it when it changed, with an Event on every Ready transition so
 * `kubectl describe` tells the node's story.
 */
export async function writeStatus(
  node: OracleNode,
  status: OracleNodeStatus,
  context: ReconcileContext,
  metrics: OracleNodeMetrics | undefined,
): Promise<void> {
  metrics?.observe({ namespace: node.metadata.namespace ?? '', name: node.metadata.name }, status);
  if (statusEqual(status, node.status)) return;
  await context.client.applyStatus(KINDS.oracleNode, {
    apiVersion: node.apiVersion,
    kind: node.kind,
    metadata: { name: node.metadata.name, namespace: node.metadata.namespace },
    status,
  });
  const wasReady = node.status?.conditions?.find((c) => c.type === 'Ready');
  const ready = status.conditions?.find((c) => c.type === 'Ready');
  if (ready && ready.status !== wasReady?.status) {
    const type = ready.status === 'True' ? 'Normal' : 'Warning';
    context.events.record(
      node,
      type,
      ready.status === 'True' ? 'Ready' : 'NotReady',
      `${ready.reason}: ${ready.message}`,
    );
  }
}

/**
 * Events of a cycle seen for the first time: a Warning per failed request (its id and reason, so "why did
 * request 0xabc fail?" is answered after the coordinator's pod is gone) and one when its heartbeat failed.
 * The recorder rate-limits them per reason.
 */
export function recordCycleEvents(
  node: OracleNode,
  record: CycleRecord,
  report: CycleReport,
  events: EventRecorder,
): void {
  for (const failed of report.failedRequests ?? [])
    events.record(
      node,
      'Warning',
      'RequestFailed',
      `Request ${failed.requestId} on chain ${failed.chainId} failed in cycle ${record.job}: ${failed.reason}`,
    );
  if (report.heartbeat === 'Failed')
    events.record(
      node,
      'Warning',
      'HeartbeatFailed',
      `The heartbeat after cycle ${record.job} was not accepted (see the coordinator's log)`,
    );
}
