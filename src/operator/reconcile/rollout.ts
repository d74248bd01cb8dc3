// Stage rollouts, blue/green. A new stage's children come up beside the old ones with the new coordinator held
// suspended; the old coordinators are suspended and their Jobs (coordinator and workers) must finish; the new
// gateway must be Ready; then the old stage's children are deleted, and the next pass releases the new coordinator
// once the deletions reach the cache. Two coordinators never run together: they would share sponsor-wallet nonces.
//
// As CloudNativePG's cluster_upgrade.go puts a pure predicate beside the function that acts on it: observeRollout
// reads the cache, planRollout decides (pure: the phase, what it waits for, what to do), executeRollout acts.
import type { KubernetesObject, V1CronJob, V1Deployment, V1Job } from '@kubernetes/client-node';
import { LABELS } from '../../contract/pods.js';
import type { EventType, ObjectCache, ReconcileContext, ResourceKind } from '../../kube/index.js';
import { type Child, childNames, type DesiredChild } from '../builders/index.js';
import { CHILD_KINDS, KINDS, type OracleNode } from '../resource.js';
import { controlledBy } from './apply.js';
import { cronJobHasActiveJobs, deploymentReady, jobActive } from './status.js';

/**
 * Where a rollout stands. Several waits can hold at once (a coordinator still scheduling and the new gateway not
 * Ready); the phase is the earliest step not yet done.
 */
export type RolloutPhase =
  /** No other stage's children: nothing to roll out. */
  | 'Settled'
  /** An old stage's CronJob still schedules cycles: it is being suspended. */
  | 'SuspendingOldCoordinators'
  /** An old stage's coordinator or worker Jobs still run. */
  | 'DrainingOldJobs'
  /** The new stage's gateway is not Ready yet. */
  | 'WaitingForGateway'
  /** Nothing left to wait for: the old stage's children are being deleted. */
  | 'RemovingOldStage';

/** What the cache shows of one old stage. */
export type OldStageObservation = {
  stage: string;
  /** Its coordinator CronJobs, as cached (whoever controls them: a running one must be suspended). */
  cronJobs: (V1CronJob & Child)[];
  /** Names of its Jobs (coordinator and workers) still running. */
  runningJobs: string[];
  /** Its children this node controls: what the rollout removes at the end. */
  children: { kind: ResourceKind; name: string }[];
};

export type RolloutObservation = {
  /** The stage the spec asks for. */
  stage: string;
  /** The other stages this node still has children of, sorted. */
  oldStages: OldStageObservation[];
  /** The new stage's gateway, when the spec asks for one. */
  gateway: { name: string; wanted: boolean; ready: boolean };
};

export type RolloutAction =
  | { type: 'SuspendCronJob'; cronJob: V1CronJob & Child }
  | { type: 'Delete'; kind: ResourceKind; name: string };

export type RolloutPlan = {
  phase: RolloutPhase;
  /** What the rollout waits for, in the words of the Event and the conditions. */
  waits: string[];
  /** What to do now, in order. */
  actions: RolloutAction[];
  /** The Progressing/Ready message while a rollout is under way; undefined when Settled. */
  message?: string;
  /** The old stages being replaced (status.previousStage); undefined when Settled. */
  previousStage?: string;
  event?: { type: EventType; reason: string; message: string };
};

/** The other stages this node controls children of: a rollout is under way while there are any. */
export function otherStages(node: OracleNode, stage: string, cache: ObjectCache): string[] {
  const stages = new Set<string>();
  for (const kind of CHILD_KINDS)
    for (const child of cache.list(kind, node.metadata.namespace, { [LABELS.name]: node.metadata.name })) {
      // Only the node's own children make a stage "old": those are what the rollout removes. Objects owned by
      // something else (a worker Job's shard ConfigMap) go with their owner at its TTL and must not hold the
      // rollout; old-stage Jobs that still run are waited for through runningJobs.
      if (!controlledBy(child, node)) continue;
      const childStage = child.metadata?.labels?.[LABELS.stage];
      if (childStage && childStage !== stage) stages.add(childStage);
    }
  return [...stages].sort();
}

/** What planRollout needs, read from the cache once the current stage's children are applied. */
export function observeRollout(step: {
  node: OracleNode;
  stage: string;
  oldStages: string[];
  children: DesiredChild[];
  cache: ObjectCache;
}): RolloutObservation {
  const { node, stage, oldStages, children, cache } = step;
  const namespace = node.metadata.namespace;
  const gatewayName = childNames(node.metadata.name, stage).gateway;
  const wanted = children.some((c) => c.object.kind === 'Deployment');
  return {
    stage,
    oldStages: oldStages.map((oldStage) => {
      const selector = { [LABELS.name]: node.metadata.name, [LABELS.stage]: oldStage };
      return {
        stage: oldStage,
        cronJobs: cache.list<V1CronJob & Child>(KINDS.cronJob, namespace, selector),
        runningJobs: cache
          .list<V1Job>(KINDS.job, namespace, selector)
          .filter(jobActive)
          .map((job) => job.metadata?.name ?? ''),
        children: CHILD_KINDS.flatMap((kind) =>
          cache
            .list<KubernetesObject>(kind, namespace, selector)
            .filter((child) => controlledBy(child, node))
            .map((child) => ({ kind, name: child.metadata!.name! })),
        ),
      };
    }),
    gateway: {
      name: gatewayName,
      wanted,
      ready: wanted && deploymentReady(cache.get<V1Deployment>(KINDS.deployment, { namespace, name: gatewayName })),
    },
  };
}

/** The next step of a rollout, from what is observed. Pure. */
export function planRollout(observed: RolloutObservation): RolloutPlan {
  const { stage, oldStages, gateway } = observed;
  if (oldStages.length === 0) return { phase: 'Settled', waits: [], actions: [] };
  const from = oldStages.map((old) => old.stage).join(',');
  const waits: string[] = [];
  const actions: RolloutAction[] = [];
  let suspending = false;
  let draining = false;
  for (const old of oldStages) {
    for (const cronJob of old.cronJobs) {
      if (cronJob.spec?.suspend !== true) {
        actions.push({ type: 'SuspendCronJob', cronJob });
        waits.push(`suspending coordinator ${cronJob.metadata.name}`);
        suspending = true;
      } else if (cronJobHasActiveJobs(cronJob)) {
        waits.push(`waiting for the active Jobs of ${cronJob.metadata.name}`);
        draining = true;
      }
    }
    if (old.runningJobs.length > 0) {
      waits.push(
        `waiting for ${old.runningJobs.length} Job(s) of stage ${old.stage} to finish (${old.runningJobs.join(', ')})`,
      );
      draining = true;
    }
  }
  const gatewayPending = gateway.wanted && !gateway.ready;
  if (gatewayPending) waits.push(`waiting for gateway ${gateway.name} to be Ready`);
  if (waits.length > 0) {
    const phase = suspending ? 'SuspendingOldCoordinators' : draining ? 'DrainingOldJobs' : 'WaitingForGateway';
    return {
      phase,
      waits,
      actions,
      message: `Stage ${from} -> ${stage}: ${waits.join('; ')}`,
      previousStage: from,
      event: { type: 'Normal', reason: 'StageRollout', message: `Rolling out stage ${stage}: ${waits.join('; ')}` },
    };
  }
  return {
    phase: 'RemovingOldStage',
    waits,
    actions: oldStages.flatMap((old) =>
      old.children.map(({ kind, name }): RolloutAction => ({ type: 'Delete', kind, name })),
    ),
    // The new coordinator is released on the next pass, once the deletions reach the cache.
    message: `Stage ${from} -> ${stage}: removing the old stage`,
    previousStage: from,
    event: { type: 'Normal', reason: 'StageRolledOut', message: `Stage ${stage} replaced ${from}` },
  };
}

/** Carries out a plan's actions in order, then records its Event. */
export async function executeRollout(plan: RolloutPlan, node: OracleNode, context: ReconcileContext): Promise<void> {
  const namespace = node.metadata.namespace;
  for (const action of plan.actions) {
    if (action.type === 'SuspendCronJob') {
      const suspended = reapplyable(action.cronJob);
      suspended.spec = { ...suspended.spec!, suspend: true };
      await context.client.apply(KINDS.cronJob, suspended, { force: true });
    } else {
      await context.client.delete(action.kind, { namespace, name: action.name }, { propagationPolicy: 'Background' });
    }
  }
  if (plan.event) context.events.record(node, plan.event.type, plan.event.reason, plan.event.message);
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
