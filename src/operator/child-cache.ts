// What the operator's informers keep of its children (and of the Jobs and ConfigMaps its pods create): the fields
// the operator applies (its server-side apply field manager), metadata and status, and the two things it reads
// that others write: a Deployment's replica count (an HPA's, with autoscaling), the cycle report ConfigMap and a
// feed's report ConfigMap.
// Everything else (apiserver defaults, the response cache's entries, worker Jobs' pod templates and shard inputs)
// never reaches the cache.
import type { KubernetesObject } from '@kubernetes/client-node';
import { FEED_REPORT_COMPONENT } from '../contract/feed-report.js';
import { LABELS } from '../contract/pods.js';
import { projectToFieldManager } from '../kube/index.js';
import { FIELD_MANAGER } from './resource.js';

const REPLICAS = [['spec', 'replicas']];
const DATA = [['data']];

function keptPaths(object: KubernetesObject): string[][] {
  if (object.kind === 'Deployment') return REPLICAS;
  const component = object.metadata?.labels?.[LABELS.component];
  if (object.kind === 'ConfigMap' && (component === 'cycle' || component === FEED_REPORT_COMPONENT)) return DATA;
  return [];
}

export function childCacheTransform(object: KubernetesObject): KubernetesObject {
  return projectToFieldManager(object, { manager: FIELD_MANAGER, keep: keptPaths });
}
