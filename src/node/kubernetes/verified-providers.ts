// The verified provider chain ids in the `<name>-cycle` ConfigMap (key VERIFIED_CHAIN_IDS_KEY), which outlives each
// coordinator Job: read before a cycle, written back beside the cycle report and request log, never over them.
import { VERIFIED_CHAIN_IDS_KEY } from '../../contract/pods.js';
import type { VerifiedProvidersStore } from '../verified-providers.js';
import { type ConfigMapStore, updateConfigMapData } from './config-map-store.js';

export function configMapVerifiedProvidersStore(store: ConfigMapStore): VerifiedProvidersStore {
  return configMapTextStore(store, VERIFIED_CHAIN_IDS_KEY);
}

/** A text a coordinator run leaves for the next one, under `key` of the cycle ConfigMap, beside the others. */
export function configMapTextStore(store: ConfigMapStore, key: string): VerifiedProvidersStore {
  return {
    load: async () => (await store.read())?.data?.[key],
    save: async (text) => {
      await updateConfigMapData(store, (data) => ({ ...data, [key]: text }), 'the cycle ConfigMap');
    },
  };
}
