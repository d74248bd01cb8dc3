// The worker Job template: computed by the operator, handed to the coordinator in an environment variable, and
// completed by the coordinator's KubernetesJobExecutor each cycle (completions, parallelism, the shard input).
import type { V1ObjectMeta, V1OwnerReference, V1PodTemplateSpec } from '@kubernetes/client-node';
import {
  type BuildInput,
  basePodSpec,
  CONFIG_FILE,
  childNames,
  engineContainer,
  labels,
  ownerReference,
  podAnnotations,
} from './common.js';

export const WORKER_TEMPLATE_ENV = 'ORACLE_NODE_WORKER_TEMPLATE';
/** Not under the config mount: volumes cannot nest inside a ConfigMap volume. */
export const SHARD_DIR = '/var/run/oracle-node/shards';
export const SHARD_VOLUME = 'shards';
export const DEFAULT_WORKER_DEADLINE_SECONDS = 50;
export const DEFAULT_WORKER_TTL_SECONDS = 300;

export type WorkerTemplate = {
  namePrefix: string;
  labels: Record<string, string>;
  ownerReferences: V1OwnerReference[];
  activeDeadlineSeconds: number;
  ttlSecondsAfterFinished: number;
  /** The pod template; the executor adds the shard-input volume and the Job-specific labels. */
  template: V1PodTemplateSpec;
};

export function buildWorkerTemplate(input: BuildInput): WorkerTemplate {
  const stage = input.config.nodeSettings.stage;
  const names = childNames(input.node.metadata.name, stage);
  const workerLabels = labels(input.node, stage, 'worker');
  // $(JOB_COMPLETION_INDEX) is expanded by the kubelet: the Job controller sets it in each Indexed Job pod.
  const args = ['worker', '--shard', `${SHARD_DIR}/shard-$(JOB_COMPLETION_INDEX).json`, '-c', CONFIG_FILE];
  const container = engineContainer(input, 'worker', args, input.node.spec.worker?.resources);
  container.volumeMounts = [
    ...(container.volumeMounts ?? []),
    { name: SHARD_VOLUME, mountPath: SHARD_DIR, readOnly: true },
  ];
  const spec = basePodSpec(input, [container], names.worker);
  spec.restartPolicy = 'Never';
  const metadata: V1ObjectMeta = { labels: workerLabels, annotations: podAnnotations(input) };
  return {
    namePrefix: names.worker,
    labels: workerLabels,
    ownerReferences: [{ ...ownerReference(input.node), blockOwnerDeletion: false }],
    activeDeadlineSeconds: input.node.spec.worker?.activeDeadlineSeconds ?? DEFAULT_WORKER_DEADLINE_SECONDS,
    ttlSecondsAfterFinished: input.node.spec.worker?.ttlSecondsAfterFinished ?? DEFAULT_WORKER_TTL_SECONDS,
    template: { metadata, spec },
  };
}
