// The ObjectCache over the informers: reads never hit the API server.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Informer } from './informer.js';
import { matchesLabels, resourceName } from './paths.js';
import type { ObjectCache, ObjectKey, ResourceKind } from './types.js';

export class InformerCache implements ObjectCache {
  private readonly byResource = new Map<string, Informer[]>();

  add(informer: Informer): void {
    const resource = resourceName(informer.kind);
    const list = this.byResource.get(resource) ?? [];
    list.push(informer);
    this.byResource.set(resource, list);
  }

  informers(kind?: ResourceKind): Informer[] {
    if (kind) return this.byResource.get(resourceName(kind)) ?? [];
    return [...this.byResource.values()].flat();
  }

  private covering(kind: ResourceKind, namespace: string | undefined): Informer[] {
    return this.informers(kind).filter(
      (informer) => informer.namespace === undefined || namespace === undefined || informer.namespace === namespace,
    );
  }

  /**
   * Whether the cache holds every object of `kind` in `namespace`: true once each informer covering it has synced,
   * false before, undefined when no informer covers it (a read there would say "absent" without knowing).
   */
  synced(kind: ResourceKind, namespace: string): boolean | undefined {
    const covering = this.covering(kind, namespace || undefined);
    if (covering.length === 0) return undefined;
    return covering.every((informer) => informer.hasSynced());
  }

  get<T extends KubernetesObject>(kind: ResourceKind, key: ObjectKey): T | undefined {
    for (const informer of this.covering(kind, key.namespace || undefined)) {
      const found = informer.get(kind.namespaced ? key.namespace : '', key.name);
      if (found) return found as T;
    }
    return undefined;
  }

  list<T extends KubernetesObject>(kind: ResourceKind, namespace?: string, labels?: Record<string, string>): T[] {
    const seen = new Set<string>();
    const result: T[] = [];
    for (const informer of this.covering(kind, namespace || undefined)) {
      for (const object of informer.list()) {
        const meta = object.metadata ?? {};
        if (namespace && meta.namespace !== namespace) continue;
        if (!matchesLabels(object, labels)) continue;
        const id = `${meta.namespace ?? ''}/${meta.name ?? ''}`;
        if (seen.has(id)) continue;
        seen.add(id);
        result.push(object as T);
      }
    }
    return result;
  }
}
