// The worker Job template: computed by the operator, handed to the coordinator in an environment variable, and
// completed by the coordinator each cycle (the contract's buildWorkerJob: completions, parallelism, shard input).
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { CONFIG_FILE } from '../../contract/pods.js';
import { SHARD_DIR, SHARD_VOLUME, shardKey, WORKER_CONTAINER, type WorkerTemplate } from '../../contract/shard.js';
import { apiLimitArgs, nodeApiLimitShares } from './api-limits.js';
import {
  type BuildInput,
  basePodSpec,
  childNames,
  engineContainer,
  labels,
  ownerReference,
  podTemplateMetadata,
} from './common.js';
import { gatewayMaxReplicas } from './gateway.js';
import { inheritedMetadata } from './pod-overrides.js';
import { NODE_SECRETS_AS_ENV, scannerSkips } from './scanner-skips.js';

export const DEFAULT_WORKER_DEADLINE_SECONDS = 50;
export const DEFAULT_WORKER_TTL_SECONDS = 300;

export function buildWorkerTemplate(input: BuildInput): WorkerTemplate {
  const stage = input.config.nodeSettings.stage;
  const names = childNames(input.node.metadata.name, stage);
  // The Jobs the coordinator makes carry the node's inherited labels too (cost labels reach every object).
  const workerLabels = inheritedMetadata(input.node, { labels: labels(input.node, stage, 'worker') }).labels!;
  // $(JOB_COMPLETION_INDEX) is expanded by the kubelet: the Job controller sets it in each Indexed Job pod.
  // Each worker pod's share of the APIs' budgets (a window's Job keeps them: the contract's buildWindowWorkerJob).
  const budgets = apiLimitArgs(nodeApiLimitShares(input.node, input.config, gatewayMaxReplicas(input)), 'worker');
  const args = [
    'worker',
    '--shard',
    `${SHARD_DIR}/${shardKey('$(JOB_COMPLETION_INDEX)')}`,
    '-c',
    CONFIG_FILE,
    ...budgets,
  ];
  const container = engineContainer(input, WORKER_CONTAINER, args, 'worker');
  container.volumeMounts = [
    ...(container.volumeMounts ?? []),
    { name: SHARD_VOLUME, mountPath: SHARD_DIR, readOnly: true },
  ];
  // The worker calls no Kubernetes API: its shard is a mounted file, its results go to its log. So: no token.
  const spec = basePodSpec(input, [container], {
    workload: 'worker',
    serviceAccountName: names.worker,
    apiToken: false,
  });
  spec.restartPolicy = 'Never';
  const metadata: V1ObjectMeta = podTemplateMetadata(input, 'worker', workerLabels);
  return {
    namePrefix: names.worker,
    labels: workerLabels,
    annotations: scannerSkips(spec, { secretsAsEnv: NODE_SECRETS_AS_ENV }),
    ownerReferences: [{ ...ownerReference(input.node), blockOwnerDeletion: false }],
    activeDeadlineSeconds: input.node.spec.worker?.activeDeadlineSeconds ?? DEFAULT_WORKER_DEADLINE_SECONDS,
    ttlSecondsAfterFinished: input.node.spec.worker?.ttlSecondsAfterFinished ?? DEFAULT_WORKER_TTL_SECONDS,
    template: { metadata, spec },
  };
}
