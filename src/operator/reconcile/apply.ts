// The current stage's children in the cluster: applied (server-side apply, one field manager, forced) only where the
// cache differs from the desired object, and deleted when the spec no longer asks for them. Both steps read the
// cache, so a pass with nothing changed writes nothing.
import type { KubernetesObject } from '@kubernetes/client-node';
import { LABELS } from '../../contract/pods.js';
import type { ReconcileContext, ResourceKind } from '../../kube/index.js';
import type { Child, DesiredChild } from '../builders/index.js';
import { needsApply, withAppliedHash } from '../diff.js';
import { CHILD_KINDS, KINDS, type OracleNode } from '../resource.js';

/** The child's controller is this OracleNode (by uid, so a re-created namesake does not count). */
export function controlledBy(child: KubernetesObject, node: OracleNode): boolean {
  return (child.metadata?.ownerReferences ?? []).some(
    (ref) => ref.controller === true && ref.uid === node.metadata.uid,
  );
}

/**
 * Applies the children that differ from the cluster: the gateway's node key first, so that no gateway pod of a new
 * template starts with the previous key (it reads it once, at start); then everything the coordinator needs,
 * together; and the CronJob last, so it never starts a cycle without its config, RBAC or cache in place. Throws the
 * first failure, before the next batch.
 */
export async function applyChildren(node: OracleNode, children: DesiredChild[], context: ReconcileContext) {
  const pending = children
    .map(({ kind, object }) => ({ kind, desired: withAppliedHash(object) }))
    .filter(({ kind, desired }) =>
      needsApply(
        desired,
        context.cache.get<Child>(kind, { namespace: node.metadata.namespace, name: desired.metadata.name }),
        // Secrets are watched as metadata only (controller.ts WATCHES).
        { metadataOnly: kind === KINDS.secret },
      ),
    );
  const first = (kind: ResourceKind) => kind === KINDS.secret;
  const last = (kind: ResourceKind) => kind === KINDS.cronJob;
  const batches = [
    pending.filter((c) => first(c.kind)),
    pending.filter((c) => !first(c.kind) && !last(c.kind)),
    pending.filter((c) => last(c.kind)),
  ];
  for (const batch of batches) {
    await Promise.all(
      batch.map(({ kind, desired }) => {
        context.logger.debug({ kind: kind.kind, child: desired.metadata.name }, 'applying child');
        return context.client.apply(kind, desired, { force: true });
      }),
    );
  }
}

/**
 * Deletes children of the current stage, and of the node as a whole (its gateway Service), that the spec no longer
 * asks for (gateways disabled, PDB at one replica), and the derived node key once no signing gateway reads it.
 * Another stage's children are the rollout's.
 */
export async function pruneUnwanted(
  node: OracleNode,
  stage: string,
  children: DesiredChild[],
  context: ReconcileContext,
): Promise<void> {
  const namespace = node.metadata.namespace;
  const wanted = new Set(children.map(({ kind, object }) => `${kind.plural}/${object.metadata.name}`));
  for (const kind of CHILD_KINDS)
    for (const child of context.cache.list(kind, namespace, { [LABELS.name]: node.metadata.name })) {
      const name = child.metadata!.name!;
      const childStage = child.metadata?.labels?.[LABELS.stage];
      if (childStage !== undefined && childStage !== stage) continue;
      // Only what the operator made: a worker Job's input ConfigMap carries the labels but is the Job's.
      if (wanted.has(`${kind.plural}/${name}`) || !controlledBy(child, node)) continue;
      context.logger.info({ kind: kind.kind, child: name }, 'deleting a child the spec no longer asks for');
      await context.client.delete(kind, { namespace, name }, { propagationPolicy: 'Background' });
    }
  // Not stage-qualified, and Secrets are not among CHILD_KINDS (their informer is the metadata-only one).
  const selector = { [LABELS.name]: node.metadata.name, [LABELS.component]: 'signing-key' };
  for (const secret of context.cache.list(KINDS.secret, namespace, selector)) {
    const name = secret.metadata!.name!;
    if (wanted.has(`${KINDS.secret.plural}/${name}`) || !controlledBy(secret, node)) continue;
    context.logger.info({ kind: KINDS.secret.kind, child: name }, 'deleting the node key: no signing gateway reads it');
    await context.client.delete(KINDS.secret, { namespace, name }, { propagationPolicy: 'Background' });
  }
}
