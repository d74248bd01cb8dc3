// One ConfigMap read and replaced with optimistic concurrency: what the response cache and the cycle report
// need from the API (the pods' ServiceAccounts may read and update only their named ConfigMaps).
import type { V1ConfigMap } from '@kubernetes/client-node';
import { BUILTIN_KINDS, isConflict, type RuntimeClient } from '../../kube/api.js';

/** The API calls on one ConfigMap: one implementation over the API client, one in the unit tests. */
export interface ConfigMapStore {
  read(): Promise<V1ConfigMap | undefined>;
  /** Replaces the ConfigMap; rejects with a 409 conflict when resourceVersion is stale. */
  replace(configMap: V1ConfigMap): Promise<V1ConfigMap>;
}

export function kubeConfigMapStore(client: RuntimeClient, namespace: string, name: string): ConfigMapStore {
  return {
    read: () => client.get<V1ConfigMap>(BUILTIN_KINDS.configMap, { namespace, name }),
    replace: (configMap) =>
      client.replace(BUILTIN_KINDS.configMap, { ...configMap, metadata: { ...configMap.metadata, namespace, name } }),
  };
}

/**
 * Reads the ConfigMap, changes its data and writes it back, again from a fresh read on a conflict (at most
 * `attempts` times). Returns false when the ConfigMap does not exist.
 */
export async function updateConfigMapData(
  store: ConfigMapStore,
  change: (data: Record<string, string>) => Record<string, string>,
  what = 'the ConfigMap',
  attempts = 5,
): Promise<boolean> {
  for (let attempt = 0; attempt < attempts; attempt++) {
    const configMap = await store.read();
    if (!configMap) return false;
    try {
      await store.replace({ ...configMap, data: change({ ...(configMap.data ?? {}) }) });
      return true;
    } catch (error) {
      if (!isConflict(error)) throw error;
    }
  }
  throw new Error(`${what} kept changing (${attempts} conflicts)`);
}
