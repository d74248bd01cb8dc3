// REST paths for a ResourceKind, and object keys.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ObjectKey, ResourceKind } from './types.js';

export function apiVersionOf(kind: ResourceKind): string {
  return kind.group ? `${kind.group}/${kind.version}` : kind.version;
}

/** The collection path; namespace undefined (or '') lists across all namespaces. */
export function collectionPath(kind: ResourceKind, namespace?: string): string {
  const prefix = kind.group ? `/apis/${kind.group}/${kind.version}` : `/api/${kind.version}`;
  if (kind.namespaced && namespace) return `${prefix}/namespaces/${encodeURIComponent(namespace)}/${kind.plural}`;
  return `${prefix}/${kind.plural}`;
}

export function objectPath(kind: ResourceKind, key: ObjectKey): string {
  return `${collectionPath(kind, kind.namespaced ? key.namespace : undefined)}/${encodeURIComponent(key.name)}`;
}

export function resourceName(kind: ResourceKind): string {
  return kind.group ? `${kind.plural}.${kind.group}` : kind.plural;
}

/** "namespace/name" (or "name" for cluster-scoped objects), as client-go's MetaNamespaceKeyFunc. */
export function keyString(key: ObjectKey): string {
  return key.namespace ? `${key.namespace}/${key.name}` : key.name;
}

export function parseKey(key: string): ObjectKey {
  const slash = key.indexOf('/');
  return slash < 0 ? { namespace: '', name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

export function keyOf(object: KubernetesObject): ObjectKey {
  return { namespace: object.metadata?.namespace ?? '', name: object.metadata?.name ?? '' };
}

/** Parses "a=b,c=d" (equality terms only) for matching cached objects; set-based terms are left to the server. */
export function matchesLabels(object: KubernetesObject, labels: Record<string, string> | undefined): boolean {
  if (!labels) return true;
  const own = object.metadata?.labels ?? {};
  return Object.entries(labels).every(([key, value]) => own[key] === value);
}
