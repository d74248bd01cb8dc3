// The OracleNode controller: validates the config with its Secret, applies the current stage's children with
// server-side apply, runs stage rollouts blue/green with the two coordinators never active together, and keeps
// status current. Every write is skipped when the cluster already matches, so a no-op resync writes nothing.

import type {
  KubernetesObject,
  V1ConfigMap,
  V1CronJob,
  V1Deployment,
  V1Job,
  V1Secret,
  V1Service,
} from '@kubernetes/client-node';
import { errorMessage } from '../common/errors.js';
import { type CycleReport, LABELS, parseCycleReport } from '../contract/pods.js';
import { registerSecrets } from '../observability/index.js';
// node-key.ts, not wallet.ts: the operator never loads ethers.
import { deriveNodeAddress } from '../protocol/node-key.js';
import {
  type BuildInput,
  buildChildren,
  type Child,
  childNames,
  DEFAULT_SETTINGS,
  gatewayEnabled,
  gatewayUrls,
  hashOf,
  type OperatorSettings,
  publicGatewayUrl,
} from './builders/index.js';
import { childCacheTransform } from './child-cache.js';
import {
  type ConfigValidator,
  formatIssues,
  isMissingSecretIssue,
  type NodeConfig,
  validateNodeConfig,
} from './config.js';
import { needsApply, withAppliedHash } from './diff.js';
import type { OracleNodeMetrics } from './metrics.js';
import {
  CHILD_KINDS,
  CONTROLLER_NAME,
  type CycleRecord,
  isPaused,
  KINDS,
  MANAGED_SELECTOR,
  type OracleNode,
  type OracleNodeStatus,
} from './resource.js';
import type {
  ObjectCache,
  ObjectKey,
  ReconcileContext,
  ReconcileResult,
  Reconciler,
  ResourceKind,
  WatchSpec,
} from './runtime/types.js';
import {
  applyFailedCondition,
  cronJobHasActiveJobs,
  cycleHistory,
  deploymentAvailable,
  deploymentReady,
  invalidConfigConditions,
  jobActive,
  lastCycle,
  mergeConditions,
  nodeConditions,
  PAUSED_CONDITION,
  statusEqual,
  type WorkloadObservation,
} from './status.js';

export type OracleNodeReconcilerOptions = {
  settings?: Partial<OperatorSettings>;
  /** Full config validation; defaults to the config model (validateNodeConfig). */
  validateConfig?: ConfigValidator;
  /** Periodic reconcile of a settled node, a safety net beside the watches (Secrets included). */
  resyncMs?: number;
  /** How soon to look again while waiting (missing Secret, stage rollout, gateway not ready). */
  waitPollMs?: number;
  /** Clock, for tests. */
  now?: () => Date;
  /** The oracle's own per-node metrics (oracle_node_*), published from each computed status. */
  metrics?: OracleNodeMetrics;
};

/** The OracleNodes of a Secret's namespace whose spec.secretRef names it. */
export function nodesReferencingSecret(secret: KubernetesObject, cache: ObjectCache): ObjectKey[] {
  const { namespace, name } = secret.metadata ?? {};
  if (!namespace || !name) return [];
  return cache
    .list<OracleNode>(KINDS.oracleNode, namespace)
    .filter((node) => node.spec?.secretRef?.name === name)
    .map((node) => ({ namespace, name: node.metadata.name }));
}

export const WATCHES: WatchSpec = {
  primary: KINDS.oracleNode,
  owned: [...CHILD_KINDS, KINDS.job].map((kind) => ({
    kind,
    labelSelector: MANAGED_SELECTOR,
    transform: childCacheTransform,
  })),
  // The user's Secrets are theirs (unlabelled): watched as metadata only, so no secret value sits in the cache,
  // and a rotation reaches the pods at once. The values are read live when a node is reconciled.
  referenced: [{ kind: KINDS.secret, map: nodesReferencingSecret }],
};

type SecretRead =
  | { ok: true; values: Record<string, string>; hash: string; name?: string }
  | { ok: false; reason: 'SecretNotFound'; message: string };

type ConfigRejection = {
  reason: 'SecretNotFound' | 'SecretKeyMissing' | 'ValidationFailed';
  message: string;
  requeueAfterMs: number;
};
type LoadedConfig = { ok: true; input: BuildInput; warnings: string | undefined } | ({ ok: false } & ConfigRejection);

/** Node addresses by the mnemonic's hash: deriving one costs a few ms of PBKDF2. Bounded. */
class NodeAddresses {
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

function decodeSecret(secret: V1Secret): Record<string, string> {
  const values: Record<string, string> = {};
  for (const [key, value] of Object.entries(secret.data ?? {}))
    values[key] = Buffer.from(value, 'base64').toString('utf8');
  for (const [key, value] of Object.entries(secret.stringData ?? {})) values[key] = value;
  return values;
}

/** A cached child reduced to what we apply: used to re-apply an old stage's CronJob with suspend set. */
function reapplyable<T extends Child>(cached: T): T {
  const { name, namespace, labels, annotations, ownerReferences } = cached.metadata as T['metadata'] & {
    annotations?: Record<string, string>;
    ownerReferences?: unknown[];
  };
  const { status: _status, metadata: _metadata, ...rest } = cached as T & { status?: unknown };
  return { ...rest, metadata: { name, namespace, labels, annotations, ownerReferences } } as unknown as T;
}

/** The child's controller is this OracleNode (by uid, so a re-created namesake does not count). */
function controlledBy(child: KubernetesObject, node: OracleNode): boolean {
  return (child.metadata?.ownerReferences ?? []).some(
    (ref) => ref.controller === true && ref.uid === node.metadata.uid,
  );
}

export class OracleNodeReconciler implements Reconciler {
  readonly name = CONTROLLER_NAME;
  readonly watches = WATCHES;
  private readonly settings: OperatorSettings;
  private readonly validate: ConfigValidator;
  private readonly resyncMs: number;
  private readonly waitPollMs: number;
  private readonly now: () => Date;
  private readonly metrics: OracleNodeMetrics | undefined;
  private readonly nodeAddresses = new NodeAddresses();

  constructor(options: OracleNodeReconcilerOptions = {}) {
    this.settings = { ...DEFAULT_SETTINGS, ...options.settings };
    this.validate = options.validateConfig ?? validateNodeConfig;
    this.resyncMs = options.resyncMs ?? 10 * 60_000;
    this.waitPollMs = options.waitPollMs ?? 5_000;
    this.now = options.now ?? (() => new Date());
    this.metrics = options.metrics;
  }

  /**
   * One pass over a node: load and validate its config, apply the current stage's children in order, move a stage
   * rollout on, observe the workloads, and write the status they add up to.
   */
  async reconcile(key: ObjectKey, context: ReconcileContext): Promise<ReconcileResult> {
    const node = context.cache.get<OracleNode>(KINDS.oracleNode, key);
    // Deleted: the children go with it through their owner references.
    if (!node || node.metadata.deletionTimestamp) {
      this.metrics?.forget(key);
      return undefined;
    }
    const now = this.now().toISOString();
    if (isPaused(node)) {
      const conditions = mergeConditions(node.status?.conditions, [PAUSED_CONDITION], now);
      await this.writeStatus(node, { ...structuredClone(node.status ?? {}), conditions }, context);
      return undefined;
    }
    const loaded = await this.loadConfig(node, context);
    if (!loaded.ok) return this.rejectConfig({ node, context, now, rejection: loaded });
    const { input } = loaded;

    const rollout = this.rolloutState(node, input.config, context);
    const children = buildChildren(input, { holdForRollout: rollout.oldStages.length > 0 });
    await this.applyChildren({ node, children, context, now });
    await this.pruneUnwanted(node, rollout.stage, children, context);
    const rolloutMessage = await this.advanceRollout(node, rollout, children, context);

    const observed = this.observeWorkloads(input, context);
    const history = cycleHistory(node.status, observed.report);
    const status = this.computeStatus({ input, observed, warnings: loaded.warnings, rollout, rolloutMessage, now });
    if (history.cycles.length > 0) status.cycles = history.cycles;
    if (history.recentFailedRequests.length > 0) status.recentFailedRequests = history.recentFailedRequests;
    await this.writeStatus(node, status, context);
    if (history.added && observed.report) this.recordCycleEvents(node, history.added, observed.report, context);
    const waiting = rolloutMessage !== undefined || !observed.gateway.ready;
    return { requeueAfterMs: waiting ? this.waitPollMs : this.resyncMs };
  }

  /** The node's config validated with its Secret's values, or why it cannot be applied. */
  private async loadConfig(node: OracleNode, context: ReconcileContext): Promise<LoadedConfig> {
    const secret = await this.readSecret(node, context);
    if (!secret.ok)
      return { ok: false, reason: secret.reason, message: secret.message, requeueAfterMs: this.waitPollMs };
    const rawConfig = (node.spec?.config ?? {}) as Record<string, unknown>;
    const validation = this.validate(rawConfig, secret.values);
    if (!validation.ok) {
      const reason = validation.errors.some(isMissingSecretIssue) ? 'SecretKeyMissing' : 'ValidationFailed';
      return { ok: false, reason, message: formatIssues(validation.errors), requeueAfterMs: this.resyncMs };
    }
    const base: BuildInput = {
      node,
      config: validation.config,
      rawConfig,
      secretHash: secret.hash,
      settings: this.settings,
      ...(secret.name ? { secretName: secret.name } : {}),
    };
    const service = context.cache.get<V1Service>(KINDS.service, {
      namespace: node.metadata.namespace,
      name: childNames(node.metadata.name, validation.config.nodeSettings.stage).gateway,
    });
    const publicUrl = gatewayEnabled(base) ? publicGatewayUrl(base, service) : undefined;
    const input: BuildInput = publicUrl ? { ...base, publicGatewayUrl: publicUrl } : base;
    const warnings = validation.warnings.length > 0 ? formatIssues(validation.warnings) : undefined;
    return { ok: true, input, warnings };
  }

  /**
   * Applies the children that differ from the cluster: everything the coordinator needs first, together, and the
   * CronJob last, so it never starts a cycle without its config, RBAC or cache in place. A failure is reported as
   * Degraded (status and a Warning Event) and thrown, so the work queue retries with backoff.
   */
  private async applyChildren(step: {
    node: OracleNode;
    children: { kind: ResourceKind; object: Child }[];
    context: ReconcileContext;
    now: string;
  }): Promise<void> {
    const { node, children, context, now } = step;
    const pending = children
      .map(({ kind, object }) => ({ kind, desired: withAppliedHash(object) }))
      .filter(({ kind, desired }) =>
        needsApply(
          desired,
          context.cache.get<Child>(kind, { namespace: node.metadata.namespace, name: desired.metadata.name }),
        ),
      );
    const batches = [pending.filter((c) => c.kind !== KINDS.cronJob), pending.filter((c) => c.kind === KINDS.cronJob)];
    try {
      for (const batch of batches) {
        await Promise.all(
          batch.map(({ kind, desired }) => {
            context.logger.debug({ kind: kind.kind, child: desired.metadata.name }, 'applying child');
            return context.client.apply(kind, desired, { force: true });
          }),
        );
      }
    } catch (error) {
      const message = errorMessage(error).slice(0, 500);
      const status: OracleNodeStatus = structuredClone(node.status ?? {});
      status.conditions = mergeConditions(
        status.conditions,
        [applyFailedCondition(message)],
        now,
        node.metadata.generation,
      );
      await this.writeStatus(node, status, context).catch(() => undefined);
      context.events.record(node, 'Warning', 'ApplyFailed', message);
      throw error;
    }
  }

  /**
   * Events of a cycle seen for the first time: a Warning per failed request (its id and reason, so "why did
   * request 0xabc fail?" is answered after the coordinator's pod is gone) and one when its heartbeat failed.
   * The recorder rate-limits them per reason.
   */
  private recordCycleEvents(
    node: OracleNode,
    record: CycleRecord,
    report: CycleReport,
    context: ReconcileContext,
  ): void {
    for (const failed of report.failedRequests ?? [])
      context.events.record(
        node,
        'Warning',
        'RequestFailed',
        `Request ${failed.requestId} on chain ${failed.chainId} failed in cycle ${record.job}: ${failed.reason}`,
      );
    if (report.heartbeat === 'Failed')
      context.events.record(
        node,
        'Warning',
        'HeartbeatFailed',
        `The heartbeat after cycle ${record.job} was not accepted (see the coordinator's log)`,
      );
  }

  /** What the status reports about the running workloads: the gateway Deployment and the last cycle. */
  private observeWorkloads(
    input: BuildInput,
    context: ReconcileContext,
  ): WorkloadObservation & {
    report: CycleReport | undefined;
  } {
    const { node } = input;
    const namespace = node.metadata.namespace;
    const stage = input.config.nodeSettings.stage;
    const names = childNames(node.metadata.name, stage);
    const wanted = gatewayEnabled(input);
    const deployment = wanted
      ? context.cache.get<V1Deployment>(KINDS.deployment, { namespace, name: names.gateway })
      : undefined;
    const coordinatorJobs = context.cache
      .list<V1Job>(KINDS.job, namespace, { [LABELS.name]: node.metadata.name, [LABELS.component]: 'coordinator' })
      .filter((job) => job.metadata?.labels?.[LABELS.stage] === stage);
    const report = parseCycleReport(
      context.cache.get<V1ConfigMap>(KINDS.configMap, { namespace, name: names.cycle })?.data,
    );
    return {
      stage,
      gateway: {
        name: names.gateway,
        wanted,
        ready: !wanted || deploymentReady(deployment),
        available: deploymentAvailable(deployment),
      },
      cycle: lastCycle(coordinatorJobs, report),
      report,
    };
  }

  private computeStatus(step: {
    input: BuildInput;
    observed: WorkloadObservation;
    warnings: string | undefined;
    rollout: { oldStages: string[] };
    rolloutMessage: string | undefined;
    now: string;
  }): OracleNodeStatus {
    const { input, observed, warnings, rollout, rolloutMessage, now } = step;
    const { node, config } = input;
    const generation = node.metadata.generation;
    const conditions = nodeConditions({ observed, configWarnings: warnings, rolloutMessage });
    const next: OracleNodeStatus = {
      conditions: mergeConditions(node.status?.conditions, conditions, now, generation),
      stage: observed.stage,
      chains: config.chains.length,
      chainIds: config.chains.map((chain) => String(chain.id)),
    };
    if (generation !== undefined) next.observedGeneration = generation;
    const address = this.nodeAddresses.of(config.nodeSettings.nodeWalletMnemonic);
    if (address) next.nodeAddress = address;
    if (rollout.oldStages.length > 0 && rolloutMessage) next.previousStage = rollout.oldStages.join(',');
    const urls = gatewayUrls(input);
    if (Object.keys(urls).length > 0) next.gatewayUrls = urls;
    if (input.publicGatewayUrl) next.publicGatewayUrl = input.publicGatewayUrl;
    const ready = next.conditions?.find((c) => c.type === 'Ready');
    if (ready && ready.status !== 'True') next.notReadyReason = ready.reason;
    if (observed.cycle) next.lastCycle = observed.cycle;
    return next;
  }

  /** Invalid config or missing Secret: say so, and leave every child exactly as it is (the last good state). */
  private async rejectConfig(step: {
    node: OracleNode;
    context: ReconcileContext;
    now: string;
    rejection: ConfigRejection;
  }): Promise<ReconcileResult> {
    const { node, context, now, rejection } = step;
    const hasWorkloads =
      context.cache.list(KINDS.cronJob, node.metadata.namespace, { [LABELS.name]: node.metadata.name }).length > 0;
    const next: OracleNodeStatus = structuredClone(node.status ?? {});
    if (node.metadata.generation !== undefined) next.observedGeneration = node.metadata.generation;
    next.conditions = mergeConditions(
      node.status?.conditions,
      invalidConfigConditions(rejection.reason, rejection.message, hasWorkloads),
      now,
      node.metadata.generation,
    );
    next.notReadyReason = 'ConfigInvalid';
    if (!statusEqual(next, node.status)) context.events.record(node, 'Warning', rejection.reason, rejection.message);
    await this.writeStatus(node, next, context);
    return { requeueAfterMs: rejection.requeueAfterMs };
  }

  private async readSecret(node: OracleNode, context: ReconcileContext): Promise<SecretRead> {
    const name = node.spec?.secretRef?.name;
    if (!name) return { ok: true, values: {}, hash: hashOf({}) };
    const secret = await context.client.get<V1Secret>(KINDS.secret, { namespace: node.metadata.namespace, name });
    if (!secret) {
      return {
        ok: false,
        reason: 'SecretNotFound',
        message: `spec.secretRef.name: Secret ${node.metadata.namespace}/${name} not found`,
      };
    }
    const values = decodeSecret(secret);
    // The operator's logs and events are scrubbed of every value it has read from a Secret.
    registerSecrets(values);
    return { ok: true, values, hash: hashOf(secret.data ?? {}), name };
  }

  /** Children of the current stage that the spec no longer asks for (gateways disabled, PDB at one replica). */
  private async pruneUnwanted(
    node: OracleNode,
    stage: string,
    children: { kind: ResourceKind; object: Child }[],
    context: ReconcileContext,
  ): Promise<void> {
    const namespace = node.metadata.namespace;
    const wanted = new Set(children.map(({ kind, object }) => `${kind.plural}/${object.metadata.name}`));
    for (const kind of CHILD_KINDS)
      for (const child of context.cache.list(kind, namespace, {
        [LABELS.name]: node.metadata.name,
        [LABELS.stage]: stage,
      })) {
        const name = child.metadata!.name!;
        // Only what the operator made: a worker Job's input ConfigMap carries the labels but is the Job's.
        if (wanted.has(`${kind.plural}/${name}`) || !controlledBy(child, node)) continue;
        context.logger.info({ kind: kind.kind, child: name }, 'deleting a child the spec no longer asks for');
        await context.client.delete(kind, { namespace, name }, { propagationPolicy: 'Background' });
      }
  }

  private rolloutState(node: OracleNode, config: NodeConfig, context: ReconcileContext) {
    const stage = config.nodeSettings.stage;
    const selector = { [LABELS.name]: node.metadata.name };
    const oldStages = new Set<string>();
    for (const kind of CHILD_KINDS)
      for (const child of context.cache.list(kind, node.metadata.namespace, selector)) {
        // Only the node's own children make a stage "old": those are what the rollout removes. Objects owned by
        // something else (a worker Job's shard ConfigMap) go with their owner at its TTL and must not hold the
        // rollout; old-stage Jobs that still run are waited for in advanceRollout.
        if (!controlledBy(child, node)) continue;
        const childStage = child.metadata?.labels?.[LABELS.stage];
        if (childStage && childStage !== stage) oldStages.add(childStage);
      }
    return { stage, oldStages: [...oldStages].sort() };
  }

  /**
   * Moves a stage rollout one step: suspend the old coordinators, wait for their Jobs (and workers) to finish and
   * for the new gateway to be Ready, then delete the old stage's children. The new coordinator stays suspended
   * (holdForRollout) until the old one is gone, so the two never run together. Returns what it waits for.
   */
  private async advanceRollout(
    node: OracleNode,
    rollout: { stage: string; oldStages: string[] },
    children: { object: Child }[],
    context: ReconcileContext,
  ): Promise<string | undefined> {
    if (rollout.oldStages.length === 0) return undefined;
    const namespace = node.metadata.namespace;
    const waits: string[] = [];
    for (const oldStage of rollout.oldStages) {
      const selector = { [LABELS.name]: node.metadata.name, [LABELS.stage]: oldStage };
      for (const cronJob of context.cache.list<V1CronJob & Child>(KINDS.cronJob, namespace, selector)) {
        if (cronJob.spec?.suspend !== true) {
          const suspended = reapplyable(cronJob);
          suspended.spec = { ...suspended.spec!, suspend: true };
          await context.client.apply(KINDS.cronJob, suspended, { force: true });
          waits.push(`suspending coordinator ${cronJob.metadata.name}`);
        } else if (cronJobHasActiveJobs(cronJob)) {
          waits.push(`waiting for the active Jobs of ${cronJob.metadata.name}`);
        }
      }
      const running = context.cache.list<V1Job>(KINDS.job, namespace, selector).filter(jobActive);
      if (running.length > 0)
        waits.push(
          `waiting for ${running.length} Job(s) of stage ${oldStage} to finish (${running.map((j) => j.metadata?.name).join(', ')})`,
        );
    }
    const names = childNames(node.metadata.name, rollout.stage);
    const wantsGateway = children.some((c) => c.object.kind === 'Deployment');
    if (
      wantsGateway &&
      !deploymentReady(context.cache.get<V1Deployment>(KINDS.deployment, { namespace, name: names.gateway }))
    )
      waits.push(`waiting for gateway ${names.gateway} to be Ready`);
    if (waits.length > 0) {
      context.events.record(node, 'Normal', 'StageRollout', `Rolling out stage ${rollout.stage}: ${waits.join('; ')}`);
      return `Stage ${rollout.oldStages.join(',')} -> ${rollout.stage}: ${waits.join('; ')}`;
    }
    for (const oldStage of rollout.oldStages) {
      const selector = { [LABELS.name]: node.metadata.name, [LABELS.stage]: oldStage };
      for (const kind of CHILD_KINDS)
        for (const child of context.cache.list<KubernetesObject>(kind, namespace, selector))
          if (controlledBy(child, node))
            await context.client.delete(
              kind,
              { namespace, name: child.metadata!.name! },
              { propagationPolicy: 'Background' },
            );
    }
    context.events.record(
      node,
      'Normal',
      'StageRolledOut',
      `Stage ${rollout.stage} replaced ${rollout.oldStages.join(',')}`,
    );
    // The new coordinator is released on the next reconcile, once the deletions reach the cache.
    return `Stage ${rollout.oldStages.join(',')} -> ${rollout.stage}: removing the old stage`;
  }

  private async writeStatus(node: OracleNode, status: OracleNodeStatus, context: ReconcileContext): Promise<void> {
    this.metrics?.observe({ namespace: node.metadata.namespace ?? '', name: node.metadata.name }, status);
    if (statusEqual(status, node.status)) return;
    await context.client.applyStatus(KINDS.oracleNode, {
      apiVersion: node.apiVersion,
      kind: node.kind,
      metadata: { name: node.metadata.name, namespace: node.metadata.namespace },
      status,
    });
    // An Event on every Ready transition, so `kubectl describe` tells the node's story.
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
}

export function createOracleNodeReconciler(options: OracleNodeReconcilerOptions = {}): OracleNodeReconciler {
  return new OracleNodeReconciler(options);
}
