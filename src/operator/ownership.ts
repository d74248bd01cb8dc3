// The operator applies a child only over an object it created for the same resource: an object of that name that
// another controller (another OracleNode, an AirnodeFeed) or nobody (the user's own Secret or Service) controls is
// never adopted, rewritten or deleted. Server-side apply with force would take any of them over, with an owner
// reference that garbage-collects it with the resource, so each desired child is checked first: against the cache,
// and, when the cache does not hold it (it holds only labelled objects), against the live object.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ReconcileContext, ResourceKind } from '../kube/index.js';

/** A desired child whose name is taken by an object the resource does not control, and whose that object is. */
export type ForeignObject = { kind: string; name: string; owner: string };

/** The object's controller is the resource of `uid` (by uid, so a re-created namesake does not count). */
export function controlledByUid(object: KubernetesObject, uid: string | undefined): boolean {
  return (object.metadata?.ownerReferences ?? []).some((ref) => ref.controller === true && ref.uid === uid);
}

/** Whose an object is, in words: `controlled by OracleNode a`, or that no resource controls it. */
export function controllerOf(object: KubernetesObject): string {
  const ref = object.metadata?.ownerReferences?.find((owner) => owner.controller === true);
  return ref ? `controlled by ${ref.kind} ${ref.name}` : 'no controller: not created by the operator';
}

/**
 * The desired children whose names are taken by objects `owner` does not control. Reads the cache, and the API only
 * for a child the cache does not hold (about to be created), so a pass with nothing changed makes no call.
 */
export async function foreignObjects(
  owner: { uid: string | undefined; namespace: string },
  children: { kind: ResourceKind; object: { metadata: { name: string } } }[],
  context: ReconcileContext,
): Promise<ForeignObject[]> {
  const found: ForeignObject[] = [];
  for (const { kind, object } of children) {
    const key = { namespace: owner.namespace, name: object.metadata.name };
    const existing = context.cache.get(kind, key) ?? (await context.client.get(kind, key));
    if (existing && !controlledByUid(existing, owner.uid))
      found.push({ kind: kind.kind, name: key.name, owner: controllerOf(existing) });
  }
  return found;
}

/** The condition's and the Event's message for taken names. */
export function foreignMessage(found: ForeignObject[]): string {
  const list = found.map((object) => `${object.kind} ${object.name} (${object.owner})`).join('; ');
  return (
    `${found.length} object(s) this resource would create already exist and are not its own: ${list}. Nothing is ` +
    'applied until they are gone or the resource (or its stage) is renamed'
  );
}
