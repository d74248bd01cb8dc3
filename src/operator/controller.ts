// The OracleNode controller: validates the config with its Secret, applies the current stage's children with
// server-side apply, runs stage rollouts blue/green with the two coordinators never active together, and keeps
// status current. Every write is skipped when the cluster already matches, so a no-op resync writes nothing.

import type { KubernetesObject, V1ConfigMap, V1CronJob, V1Deployment, V1Job, V1Secret } from '@kubernetes/client-node';
import { deriveNodeAddress } from '../chain/wallet.js';
import { registerSecrets } from '../observability/index.js';
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
} from './builders/index.js';
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
  isPaused,
  KINDS,
  LABELS,
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
  type ConditionInput,
  cronJobHasActiveJobs,
  deploymentAvailable,
  deploymentReady,
  jobActive,
  lastCycle,
  mergeConditions,
  parseCycleReport,
  statusEqual,
} from './status.js';

export type OracleNodeReconcilerOptions = {
  settings?: Partial<OperatorSettings>;
  /** Full config validation; defaults to the config model (or the built-in check until it is present). */
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
  owned: [...CHILD_KINDS, KINDS.job].map((kind) => ({ kind, labelSelector: MANAGED_SELECTOR })),
  // The user's Secrets are theirs (unlabelled): watched as metadata only, so no secret value sits in the cache,
  // and a rotation reaches the pods at once. The values are read live when a node is reconciled.
  referenced: [{ kind: KINDS.secret, map: nodesReferencingSecret }],
};

type SecretRead =
  | { ok: true; values: Record<string, string>; hash: string; name?: string }
  | { ok: false; reason: 'SecretNotFound'; message: string };

const nodeAddressCache = new Map<string, string>();

/** Deriving the address costs a few ms of PBKDF2: memoised by the mnemonic's hash. */
function nodeAddressOf(mnemonic: string): string | undefined {
  const key = hashOf(mnemonic);
  let address = nodeAddressCache.get(key);
  if (!address) {
    try {
      address = deriveNodeAddress(mnemonic);
    } catch {
      return undefined;
    }
    if (nodeAddressCache.size > 10_000) nodeAddressCache.clear();
    nodeAddressCache.set(key, address);
  }
  return address;
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

  constructor(options: OracleNodeReconcilerOptions = {}) {
    this.settings = { ...DEFAULT_SETTINGS, ...options.settings };
    this.validate = options.validateConfig ?? validateNodeConfig;
    this.resyncMs = options.resyncMs ?? 10 * 60_000;
    this.waitPollMs = options.waitPollMs ?? 5_000;
    this.now = options.now ?? (() => new Date());
    this.metrics = options.metrics;
  }

  async reconcile(key: ObjectKey, context: ReconcileContext): Promise<ReconcileResult> {
    const node = context.cache.get<OracleNode>(KINDS.oracleNode, key);
    // Deleted: the children go with it through their owner references.
    if (!node || node.metadata.deletionTimestamp) {
      this.metrics?.forget(key);
      return undefined;
    }
    const generation = node.metadata.generation;
    const now = this.now().toISOString();
    const status: OracleNodeStatus = structuredClone(node.status ?? {});

    if (isPaused(node)) {
      status.conditions = mergeConditions(
        status.conditions,
        [
          {
            type: 'Progressing',
            status: 'False',
            reason: 'Paused',
            message: 'Reconciliation is paused by the annotation oracle-node.io/paused="true"',
          },
        ],
        now,
      );
      await this.writeStatus(node, status, context);
      return undefined;
    }

    const secret = await this.readSecret(node, context);
    if (!secret.ok) {
      return this.rejectConfig(node, status, context, now, 'SecretNotFound', secret.message, this.waitPollMs);
    }
    const rawConfig = (node.spec?.config ?? {}) as Record<string, unknown>;
    const validation = this.validate(rawConfig, secret.values);
    if (!validation.ok) {
      const reason = validation.errors.some(isMissingSecretIssue) ? 'SecretKeyMissing' : 'ValidationFailed';
      return this.rejectConfig(node, status, context, now, reason, formatIssues(validation.errors), this.resyncMs);
    }
    const config = validation.config;
    const input: BuildInput = {
      node,
      config,
      rawConfig,
      secretHash: secret.hash,
      settings: this.settings,
      ...(secret.name ? { secretName: secret.name } : {}),
    };

    const rollout = this.rolloutState(node, config, context);
    const children = buildChildren(input, { holdForRollout: rollout.oldStages.length > 0 });
    try {
      const pending = children
        .map(({ kind, object }) => ({ kind, desired: withAppliedHash(object) }))
        .filter(({ kind, desired }) =>
          needsApply(
            desired,
            context.cache.get<Child>(kind, { namespace: key.namespace, name: desired.metadata.name }),
          ),
        );
      // Everything the coordinator needs goes first, together; the CronJob last, so it never starts a cycle
      // without its config, RBAC or cache in place.
      const [first, last] = [
        pending.filter((c) => c.kind !== KINDS.cronJob),
        pending.filter((c) => c.kind === KINDS.cronJob),
      ];
      for (const batch of [first, last]) {
        await Promise.all(
          batch.map(({ kind, desired }) => {
            context.logger.debug({ kind: kind.kind, child: desired.metadata.name }, 'applying child');
            return context.client.apply(kind, desired, { force: true });
          }),
        );
      }
    } catch (error) {
      status.conditions = mergeConditions(
        status.conditions,
        [{ type: 'Degraded', status: 'True', reason: 'ApplyFailed', message: (error as Error).message.slice(0, 500) }],
        now,
        generation,
      );
      await this.writeStatus(node, status, context).catch(() => undefined);
      context.events.record(node, 'Warning', 'ApplyFailed', (error as Error).message.slice(0, 500));
      throw error;
    }

    await this.pruneUnwanted(node, config.nodeSettings.stage, children, context);
    const rolloutMessage = await this.advanceRollout(node, rollout, children, context);
    const stage = config.nodeSettings.stage;
    const names = childNames(node.metadata.name, stage);
    const gatewayWanted = gatewayEnabled(input);
    const gateway = gatewayWanted
      ? context.cache.get<V1Deployment>(KINDS.deployment, { namespace: key.namespace, name: names.gateway })
      : undefined;
    const gatewayIsReady = !gatewayWanted || deploymentReady(gateway);
    const cycle = lastCycle(
      context.cache
        .list<V1Job>(KINDS.job, key.namespace, { [LABELS.name]: node.metadata.name, [LABELS.component]: 'coordinator' })
        .filter((job) => job.metadata?.labels?.[LABELS.stage] === stage),
      parseCycleReport(
        context.cache.get<V1ConfigMap>(KINDS.configMap, { namespace: key.namespace, name: names.cycle })?.data,
      ),
    );

    const conditions: ConditionInput[] = [
      {
        type: 'ConfigValid',
        status: 'True',
        reason: 'Valid',
        message:
          validation.warnings.length > 0
            ? `warnings: ${formatIssues(validation.warnings)}`
            : 'The config passed full validation',
      },
    ];
    if (rolloutMessage) {
      conditions.push({ type: 'Progressing', status: 'True', reason: 'StageRollout', message: rolloutMessage });
      conditions.push({ type: 'Ready', status: 'False', reason: 'StageRollout', message: rolloutMessage });
    } else if (!gatewayIsReady) {
      const message = `Gateway Deployment ${names.gateway} is rolling out`;
      conditions.push({ type: 'Progressing', status: 'True', reason: 'GatewayRollingOut', message });
      // A rolling update keeps every replica available (maxUnavailable 0): still serving, so still Ready.
      conditions.push(
        deploymentAvailable(gateway)
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

    const next: OracleNodeStatus = {
      conditions: mergeConditions(status.conditions, conditions, now, generation),
      stage,
      chains: config.chains.length,
      chainIds: config.chains.map((chain) => String(chain.id)),
    };
    if (generation !== undefined) next.observedGeneration = generation;
    const address = nodeAddressOf(config.nodeSettings.nodeWalletMnemonic);
    if (address) next.nodeAddress = address;
    if (rollout.oldStages.length > 0 && rolloutMessage) next.previousStage = rollout.oldStages.join(',');
    const urls = gatewayUrls(input);
    if (Object.keys(urls).length > 0) next.gatewayUrls = urls;
    if (cycle) next.lastCycle = cycle;
    await this.writeStatus(node, next, context);

    const waiting = rolloutMessage !== undefined || !gatewayIsReady;
    return { requeueAfterMs: waiting ? this.waitPollMs : this.resyncMs };
  }

  /** Invalid config or missing Secret: say so, and leave every child exactly as it is (the last good state). */
  private async rejectConfig(
    node: OracleNode,
    status: OracleNodeStatus,
    context: ReconcileContext,
    now: string,
    reason: string,
    message: string,
    requeueAfterMs: number,
  ): Promise<ReconcileResult> {
    const hasWorkloads =
      context.cache.list(KINDS.cronJob, node.metadata.namespace, { [LABELS.name]: node.metadata.name }).length > 0;
    const next: OracleNodeStatus = { ...status };
    if (node.metadata.generation !== undefined) next.observedGeneration = node.metadata.generation;
    next.conditions = mergeConditions(
      status.conditions,
      [
        { type: 'ConfigValid', status: 'False', reason, message },
        { type: 'Ready', status: 'False', reason: 'ConfigInvalid', message: `The spec cannot be applied: ${message}` },
        {
          type: 'Degraded',
          status: 'True',
          reason: 'ConfigInvalid',
          message: hasWorkloads ? 'The last valid configuration keeps running unchanged' : 'Nothing is running yet',
        },
        { type: 'Progressing', status: 'False', reason: 'ConfigInvalid', message: 'Waiting for a valid config' },
      ],
      now,
      node.metadata.generation,
    );
    if (!statusEqual(next, node.status)) context.events.record(node, 'Warning', reason, message);
    await this.writeStatus(node, next, context);
    return { requeueAfterMs };
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
