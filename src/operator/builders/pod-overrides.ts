// What a platform adds to the node's objects and pods (spec's pod overrides, for all workloads, and each workload's
// own under spec.coordinator/gateway/worker): merged over what the operator builds, never in place of it. The
// operator's labels, annotations, environment, probes, security contexts and volumes always win or stand beside the
// additions; the CRD already refuses the keys, volume names and mount paths that would collide, and the volume types
// that would break restricted Pod Security or the Secret's scoping (api/v1alpha1.ts, podOverrides). The coordinator
// fence admits the worker Jobs that carry spec's and spec.worker's (builders/admission.ts). Pure functions of the
// OracleNode.
import type { V1Container, V1LocalObjectReference, V1ObjectMeta, V1PodSpec } from '@kubernetes/client-node';
import type { Workload } from '../../common/workloads.js';
import type { OracleNode } from '../resource.js';

type Metadata = { labels?: Record<string, string>; annotations?: Record<string, string> };

const workloadSpec = (node: OracleNode, workload: Workload) => node.spec[workload];

/** Keys of `own` win over the additions, which are laid in order (later over earlier). */
function over(own: Record<string, string> | undefined, ...additions: (Record<string, string> | undefined)[]) {
  const merged: Record<string, string> = Object.assign({}, ...additions, own);
  return Object.keys(merged).length > 0 ? merged : undefined;
}

/** spec.inheritedMetadata under the operator's own labels and annotations: every object made for the node. */
export function inheritedMetadata(node: OracleNode, own: Metadata): Metadata {
  const inherited = node.spec.inheritedMetadata;
  const labels = over(own.labels, inherited?.labels);
  const annotations = over(own.annotations, inherited?.annotations);
  return { ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) };
}

/** A workload's pod metadata: spec.inheritedMetadata, then the workload's podMetadata, then the operator's own. */
export function podMetadata(node: OracleNode, workload: Workload, own: Metadata): V1ObjectMeta {
  const inherited = node.spec.inheritedMetadata;
  const pod = workloadSpec(node, workload)?.podMetadata;
  const labels = over(own.labels, inherited?.labels, pod?.labels);
  const annotations = over(own.annotations, inherited?.annotations, pod?.annotations);
  return { ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) };
}

/** A workload's ServiceAccount metadata: inherited, then spec's serviceAccountTemplate, then the workload's. */
export function serviceAccountMetadata(node: OracleNode, workload: Workload, own: Metadata): Metadata {
  const inherited = node.spec.inheritedMetadata;
  const all = node.spec.serviceAccountTemplate?.metadata;
  const own_ = workloadSpec(node, workload)?.serviceAccountTemplate?.metadata;
  const labels = over(own.labels, inherited?.labels, all?.labels, own_?.labels);
  const annotations = over(own.annotations, inherited?.annotations, all?.annotations, own_?.annotations);
  return { ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) };
}

const byName = (references: V1LocalObjectReference[]) => [
  ...new Map(references.map((reference) => [reference.name, reference])).values(),
];

/**
 * Lays spec's and the workload's pod overrides onto a pod spec the operator built: scheduling (node selectors
 * merged, tolerations added, affinity and priority class replaced by the workload's), image pull secrets, volumes
 * after the engine's own, and on the engine container (the first) volume mounts and environment from ConfigMaps
 * (`envFrom`, which Kubernetes ranks below the container's own `env`, so the contract's variables win).
 */
export function applyPodOverrides(node: OracleNode, workload: Workload, spec: V1PodSpec): void {
  const all = node.spec;
  const own = workloadSpec(node, workload);
  const nodeSelector = { ...all.nodeSelector, ...own?.nodeSelector };
  if (Object.keys(nodeSelector).length > 0) spec.nodeSelector = nodeSelector;
  const tolerations = [...(all.tolerations ?? []), ...(own?.tolerations ?? [])];
  if (tolerations.length > 0) spec.tolerations = tolerations;
  const affinity = own?.affinity ?? all.affinity;
  if (affinity && Object.keys(affinity).length > 0) spec.affinity = affinity;
  const priorityClassName = own?.priorityClassName ?? all.priorityClassName;
  if (priorityClassName) spec.priorityClassName = priorityClassName;
  const pullSecrets = byName([...(all.imagePullSecrets ?? []), ...(own?.imagePullSecrets ?? [])]);
  if (pullSecrets.length > 0) spec.imagePullSecrets = pullSecrets;
  const volumes = [...(all.volumes ?? []), ...(own?.volumes ?? [])];
  if (volumes.length > 0) spec.volumes = [...(spec.volumes ?? []), ...structuredClone(volumes)];
  const engine: V1Container | undefined = spec.containers[0];
  if (!engine) return;
  const mounts = [...(all.volumeMounts ?? []), ...(own?.volumeMounts ?? [])];
  if (mounts.length > 0) engine.volumeMounts = [...(engine.volumeMounts ?? []), ...structuredClone(mounts)];
  const envFrom = [...(all.envFrom ?? []), ...(own?.envFrom ?? [])];
  if (envFrom.length > 0) engine.envFrom = [...(engine.envFrom ?? []), ...structuredClone(envFrom)];
}
