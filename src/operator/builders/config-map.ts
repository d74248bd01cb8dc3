// The ConfigMap holding config.json as written (with `${NAME}` placeholders: secrets never leave the Secret),
// plus the two operator-created, engine-written ConfigMaps (response cache, last cycle report).
import type { V1ConfigMap } from '@kubernetes/client-node';
import { ANNOTATIONS } from '../resource.js';
import { type BuildInput, childNames, metadata } from './common.js';

export const CONFIG_KEY = 'config.json';

export function buildConfigMap(input: BuildInput): V1ConfigMap & { metadata: { name: string } } {
  const names = childNames(input.node.metadata.name, input.config.nodeSettings.stage);
  const meta = metadata(input, names.config, 'config');
  // The identity the stage was deployed with: a mnemonic rotated in place is told from a new stage by it.
  if (input.nodeAddress) meta.annotations = { ...meta.annotations, [ANNOTATIONS.nodeAddress]: input.nodeAddress };
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: meta,
    data: { [CONFIG_KEY]: `${JSON.stringify(input.rawConfig, null, 2)}\n` },
  };
}

/**
 * The response cache and the cycle report: the operator creates them empty (owned, so they are garbage-collected
 * with the OracleNode) and never applies `data`, which the coordinator writes; they are not stage-qualified so
 * they survive a stage rollout.
 */
export function buildStateConfigMaps(input: BuildInput): (V1ConfigMap & { metadata: { name: string } })[] {
  const names = childNames(input.node.metadata.name, input.config.nodeSettings.stage);
  const stateless = (name: string, component: 'cache' | 'cycle') => {
    const meta = metadata(input, name, component);
    // The stage label would move these between stages; they belong to the node as a whole.
    const { 'oracle-node.io/stage': _stage, ...labels } = meta.labels;
    return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { ...meta, labels } };
  };
  return [stateless(names.cache, 'cache'), stateless(names.cycle, 'cycle')];
}
