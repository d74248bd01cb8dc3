// What the operator's informers keep of its children (and of the Jobs and ConfigMaps its pods create): the fields
// the operator applies (its server-side apply field manager), metadata and status, and the two things it reads
// that others write: a Deployment's replica count (an HPA's, with autoscaling) and the cycle report ConfigMap.
// Everything else (apiserver defaults, the response cache's entries, worker Jobs' pod templates and shard inputs)
// never reaches the cache.
import type { KubernetesObject } from '@kubernetes/client-node';
import { LABELS } from '../contract/pods.js';
import { projectToFieldManager } from '../kube/index.js';
import { FIELD_MANAGER } from './resource.js';

const REPLICAS = [['spec', 'replicas']];
const DATA = [['data']];

function keptPaths(object: KubernetesObject): string[][] {
  if (object.kind === 'Deployment') return REPLICAS;
  if (object.kind === 'ConfigMap' && object.metadata?.labels?.[LABELS.component] === 'cycle') return DATA;
  return [];
}

export function childCacheTransform(object: KubernetesObject): KubernetesObject {
  return projectToFieldManager(object, { manager: FIELD_MANAGER, keep: keptPaths });
}
