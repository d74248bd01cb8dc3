// Stage rollouts, blue/green. A new stage's children come up beside the old ones; the old coordinators are suspended
// and their Jobs (coordinator and workers) must finish; the new gateway must be Ready, and the node's gateway Service
// (`<node>-gateway`, the one callers use) is then switched to it; then the old stage's children are deleted. Two coordinators never send together: they would share sponsor-wallet nonces. When the old and the
// new coordinators take turns through the node's one coordinator Lease (windows, docs/chain-cycle.md "The
// hand-over"), only the Lease's holder sends, so the new coordinator is released as soon as the old CronJobs are
// suspended: its next run waits for the old window to hand the Lease back, and polls go on through the rollout. Without
// that Lease (one cycle per tick, or an old stage from before it), the new coordinator is held suspended until the old
// Jobs are done and the next pass releases it once the deletions reach the cache.
//
// As CloudNativePG's cluster_upgrade.go puts a pure predicate beside the function that acts on it: observeRollout
// reads the cache, planRollout decides (pure: the phase, what it waits for, what to do), executeRollout acts.
import type { KubernetesObject, V1CronJob, V1Deployment, V1Job, V1Service } from '@kubernetes/client-node';
import { LABELS } from '../../contract/pods.js';
import type { EventType, ObjectCache, ReconcileContext, ResourceKind } from '../../kube/index.js';
import { type Child, childNames, type DesiredChild, handoverLeaseOf, servedStageOf } from '../builders/index.js';
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
  /**
   * The Lease each of its coordinators sends under (`--handover-lease`): its CronJobs' and each coordinator Job's
   * still running; undefined for one without a Lease.
   */
  coordinatorLeases: (string | undefined)[];
  /** Its children this node controls: what the rollout removes at the end. */
  children: { kind: ResourceKind; name: string }[];
};

export type RolloutObservation = {
  /** The stage the spec asks for. */
  stage: string;
  /** The other stages this node still has children of, sorted. */
  oldStages: OldStageObservation[];
  /**
   * The new stage's gateway, when the spec asks for one; `serving` once the node's gateway Service (the one callers
   * use) selects it.
   */
  gateway: { name: string; wanted: boolean; ready: boolean; serving: boolean; service: string };
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

/** What the cache shows of the node's old stages. */
export function observeOldStages(node: OracleNode, oldStages: string[], cache: ObjectCache): OldStageObservation[] {
  const namespace = node.metadata.namespace;
  return oldStages.map((oldStage) => {
    const selector = { [LABELS.name]: node.metadata.name, [LABELS.stage]: oldStage };
    const cronJobs = cache.list<V1CronJob & Child>(KINDS.cronJob, namespace, selector);
    const running = cache.list<V1Job>(KINDS.job, namespace, selector).filter(jobActive);
    const runningCoordinators = running.filter((job) => job.metadata?.labels?.[LABELS.component] === 'coordinator');
    return {
      stage: oldStage,
      cronJobs,
      runningJobs: running.map((job) => job.metadata?.name ?? ''),
      coordinatorLeases: [
        ...cronJobs.map((cronJob) => handoverLeaseOf(cronJob.spec?.jobTemplate.spec?.template.spec)),
        ...runningCoordinators.map((job) => handoverLeaseOf(job.spec?.template.spec)),
      ],
      children: CHILD_KINDS.flatMap((kind) =>
        cache
          .list<KubernetesObject>(kind, namespace, selector)
          .filter((child) => controlledBy(child, node))
          .map((child) => ({ kind, name: child.metadata!.name! })),
      ),
    };
  });
}

/**
 * Whether the new stage's coordinator is held suspended. Not when every old coordinator CronJob is suspended and
 * every old coordinator (those CronJobs and each coordinator Job still running) sends under the same Lease as the
 * new one (`newLease`): then only the Lease's holder sends, and the new stage's runs take over when the old window
 * hands it back. Pure.
 */
export function holdNewCoordinator(oldStages: OldStageObservation[], newLease: string | undefined): boolean {
  if (oldStages.length === 0) return false;
  if (newLease === undefined) return true;
  return !oldStages.every(
    (old) =>
      old.cronJobs.every((cronJob) => cronJob.spec?.suspend === true) &&
      old.coordinatorLeases.every((lease) => lease === newLease),
  );
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
  const names = childNames(node.metadata.name, stage);
  const wanted = children.some((c) => c.object.kind === 'Deployment');
  // As applied in this pass: the desired object, not the cache, which may not have seen the write yet.
  const service = children.find((c) => c.kind === KINDS.service && c.object.metadata.name === names.service);
  return {
    stage,
    oldStages: observeOldStages(node, oldStages, cache),
    gateway: {
      name: names.gateway,
      wanted,
      ready: wanted && deploymentReady(cache.get<V1Deployment>(KINDS.deployment, { namespace, name: names.gateway })),
      serving: servedStageOf(service?.object as V1Service | undefined) === stage,
      service: names.service,
    },
  };
}

/**
 * The stage the node's gateway Service is to select: the new stage once its gateway Deployment is Ready, until then
 * the stage it selects now while that stage's gateway still runs, so callers are never sent to pods not ready to
 * serve. Read before the children are built, from the cache.
 */
export function gatewayServiceStage(node: OracleNode, stage: string, cache: ObjectCache): string {
  const namespace = node.metadata.namespace;
  const gateway = (name: string) => cache.get<V1Deployment>(KINDS.deployment, { namespace, name });
  const service = cache.get<V1Service>(KINDS.service, {
    namespace,
    name: childNames(node.metadata.name, stage).service,
  });
  const serving = service && controlledBy(service, node) ? servedStageOf(service) : undefined;
  if (!serving || serving === stage) return stage;
  if (deploymentReady(gateway(childNames(node.metadata.name, stage).gateway))) return stage;
  const old = gateway(childNames(node.metadata.name, serving).gateway);
  return old && controlledBy(old, node) ? serving : stage;
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
  if (gateway.wanted && !gateway.ready) waits.push(`waiting for gateway ${gateway.name} to be Ready`);
  else if (gateway.wanted && !gateway.serving)
    waits.push(`switching Service ${gateway.service} to gateway ${gateway.name}`);
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
    // A held new coordinator is released on the next pass, once the deletions reach the cache.
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
      await suspendCronJob(action.cronJob, context);
    } else {
      await context.client.delete(action.kind, { namespace, name: action.name }, { propagationPolicy: 'Background' });
    }
  }
  if (plan.event) context.events.record(node, plan.event.type, plan.event.reason, plan.event.message);
}

/**
 * Re-applies a cached CronJob with suspend set, nothing else changed. Its applied hash stays the unsuspended
 * desired one's, so the next apply of the desired CronJob (suspend false) sees the difference and releases it.
 */
export async function suspendCronJob(cronJob: V1CronJob & Child, context: ReconcileContext): Promise<void> {
  const suspended = reapplyable(cronJob);
  suspended.spec = { ...suspended.spec!, suspend: true };
  await context.client.apply(KINDS.cronJob, suspended, { force: true });
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
