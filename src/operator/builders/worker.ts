// The worker Job template: computed by the operator, handed to the coordinator in an environment variable, and
// completed by the coordinator's KubernetesJobExecutor each cycle (completions, parallelism, the shard input).
import type { V1ObjectMeta, V1OwnerReference, V1PodTemplateSpec } from '@kubernetes/client-node';
import {
  type BuildInput,
  basePodSpec,
  childNames,
  engineContainer,
  labels,
  ownerReference,
  podAnnotations,
} from './common.js';

export const WORKER_TEMPLATE_ENV = 'ORACLE_NODE_WORKER_TEMPLATE';
export const SHARD_DIR = '/etc/oracle-node/shards';
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
  const container = engineContainer(input, 'worker', ['worker'], input.node.spec.worker?.resources, [
    {
      name: 'JOB_NAME',
      valueFrom: { fieldRef: { fieldPath: "metadata.labels['batch.kubernetes.io/job-name']" } },
    },
    {
      name: 'JOB_UID',
      valueFrom: { fieldRef: { fieldPath: "metadata.labels['batch.kubernetes.io/controller-uid']" } },
    },
  ]);
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
