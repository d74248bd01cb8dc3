// The OracleNode controller: validates the config with its Secret, applies the current stage's children with
// server-side apply, runs stage rollouts blue/green with the two coordinators never active together, and keeps
// status current. Every write is skipped when the cluster already matches, so a no-op resync writes nothing.
// reconcile() is the list of steps; each step lives in reconcile/: inputs.ts, apply.ts, rollout.ts, status.ts.

import type { KubernetesObject } from '@kubernetes/client-node';
import { errorMessage } from '../common/errors.js';
import {
  isInvalid,
  type ObjectCache,
  type ObjectKey,
  type ReconcileContext,
  type ReconcileResult,
  type Reconciler,
  TerminalError,
  type WatchSpec,
} from '../kube/index.js';
import { redact } from '../observability/index.js';
import { buildChildren, coordinatorHandoverLease, DEFAULT_SETTINGS, type OperatorSettings } from './builders/index.js';
import { childCacheTransform } from './child-cache.js';
import { type ConfigValidator, validateNodeConfig } from './config.js';
import { type OracleNodeMetrics, usageBounds } from './metrics.js';
import { foreignMessage, foreignObjects } from './ownership.js';
import { applyChildren, pruneUnwanted } from './reconcile/apply.js';
import { deployedNodeAddress, holdCoordinator, nodeAddressChange } from './reconcile/identity.js';
import { type ConfigRejection, loadInputs } from './reconcile/inputs.js';
import {
  executeRollout,
  gatewayServiceStage,
  holdNewCoordinator,
  observeOldStages,
  observeRollout,
  otherStages,
  planRollout,
} from './reconcile/rollout.js';
import {
  appliedStatus,
  applyFailedStatus,
  hasWorkloads,
  NodeAddresses,
  observeWorkloads,
  pausedStatus,
  recordCycleEvents,
  rejectedStatus,
  statusEqual,
  writeStatus,
} from './reconcile/status.js';
import {
  API_VERSION,
  CHILD_KINDS,
  CONTROLLER_NAME,
  isPaused,
  KIND,
  KINDS,
  MANAGED_SELECTOR,
  type OracleNode,
} from './resource.js';

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

/**
 * The OracleNodes of a Secret's namespace whose spec.secretRef names it, and the one that owns it (the derived node
 * key of its gateway: an edit or deletion of it is put right).
 */
export function nodesReferencingSecret(secret: KubernetesObject, cache: ObjectCache): ObjectKey[] {
  const { namespace, name } = secret.metadata ?? {};
  if (!namespace || !name) return [];
  const owner = secret.metadata?.ownerReferences?.find(
    (ref) => ref.controller === true && ref.kind === KIND && ref.apiVersion === API_VERSION,
  );
  return cache
    .list<OracleNode>(KINDS.oracleNode, namespace)
    .filter((node) => node.spec?.secretRef?.name === name || (owner !== undefined && node.metadata.uid === owner.uid))
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
      await writeStatus(node, pausedStatus(node, now), context, this.metrics);
      return undefined;
    }
    const inputs = await loadInputs(node, context, { validate: this.validate, settings: this.settings });
    if (!inputs.ok) return this.rejectConfig(node, inputs, context, now);
    const stage = inputs.input.config.nodeSettings.stage;
    const nodeAddress = this.nodeAddresses.of(inputs.input.config.nodeSettings.nodeWalletMnemonic);
    const identityChange = nodeAddressChange(stage, deployedNodeAddress(node, stage, context.cache), nodeAddress);
    if (identityChange) {
      await holdCoordinator(node, stage, context);
      return this.rejectConfig(node, identityChange, context, now);
    }
    const input = nodeAddress ? { ...inputs.input, nodeAddress } : inputs.input;

    const oldStages = otherStages(node, stage, context.cache);
    const holdForRollout = holdNewCoordinator(
      observeOldStages(node, oldStages, context.cache),
      coordinatorHandoverLease(input),
    );
    const serviceStage = gatewayServiceStage(node, stage, context.cache);
    const children = buildChildren(input, { holdForRollout, gatewayServiceStage: serviceStage });
    const owner = { uid: node.metadata.uid, namespace: node.metadata.namespace };
    const foreign = await foreignObjects(owner, children, context).catch((error: unknown) =>
      this.applyFailed(node, error, context, now),
    );
    if (foreign.length > 0)
      return this.rejectConfig(node, { reason: 'NameConflict', message: foreignMessage(foreign) }, context, now);
    await applyChildren(node, children, context).catch((error: unknown) => this.applyFailed(node, error, context, now));
    await pruneUnwanted(node, stage, children, context);
    const rollout = planRollout(observeRollout({ node, stage, oldStages, children, cache: context.cache }));
    await executeRollout(rollout, node, context);

    const observed = observeWorkloads(input, context.cache);
    const { status, added } = appliedStatus({ input, observed, warnings: inputs.warnings, rollout, nodeAddress, now });
    await writeStatus(node, status, context, this.metrics);
    this.metrics?.observeCycleReport(key, observed.report, usageBounds(node, input.config));
    if (added && observed.report) recordCycleEvents(node, added, observed.report, context.events);
    const waiting = rollout.phase !== 'Settled' || !observed.gateway.ready;
    return { requeueAfterMs: waiting ? this.waitPollMs : this.resyncMs };
  }

  /**
   * Invalid config, missing Secret, a name taken by an object not the node's, or a mnemonic rotated without a new
   * stage: say so, and leave every child as it is (the last good state; a rotation has held the coordinator).
   */
  private async rejectConfig(
    node: OracleNode,
    rejection: ConfigRejection,
    context: ReconcileContext,
    now: string,
  ): Promise<ReconcileResult> {
    const status = rejectedStatus(node, rejection, hasWorkloads(node, context.cache), now);
    if (!statusEqual(status, node.status)) context.events.record(node, 'Warning', rejection.reason, rejection.message);
    await writeStatus(node, status, context, this.metrics);
    // The Secret watch wakes the node when its Secret appears; the poll is the safety net, and the only way to see a
    // taken name freed (the object is not the node's: no watch maps it here). An invalid config waits for a spec
    // edit, a rotated mnemonic for a spec or Secret edit, which the watches deliver.
    const polled = rejection.reason === 'SecretNotFound' || rejection.reason === 'NameConflict';
    return { requeueAfterMs: polled ? this.waitPollMs : this.resyncMs };
  }

  /**
   * An apply failed: reported as Degraded (status and a Warning Event) and thrown, so the queue retries with
   * backoff; a child the apiserver refuses as invalid (422) would be refused again for the same spec, so that is a
   * TerminalError, and the next edit of the node wakes it.
   */
  private async applyFailed(node: OracleNode, error: unknown, context: ReconcileContext, now: string): Promise<never> {
    // An apiserver's message may quote what was sent (the node key's Secret among the children): scrubbed of every
    // secret the operator read or derived before it reaches status and Events.
    const message = redact(errorMessage(error)).slice(0, 500);
    await writeStatus(node, applyFailedStatus(node, message, now), context, this.metrics).catch(() => undefined);
    context.events.record(node, 'Warning', 'ApplyFailed', message);
    if (isInvalid(error)) throw new TerminalError(message, { cause: error });
    throw error;
  }
}

export function createOracleNodeReconciler(options: OracleNodeReconcilerOptions = {}): OracleNodeReconciler {
  return new OracleNodeReconciler(options);
}
