// The coordinator CronJob: one cycle per schedule tick, never two at once, each finished inside the minute.
import type { V1CronJob } from '@kubernetes/client-node';
import { CONFIG_FILE, ENV, JOB_NAME_LABEL } from '../../contract/pods.js';
import { DEFAULT_SCHEDULE } from '../resource.js';
import {
  type BuildInput,
  basePodSpec,
  canonicalJson,
  childNames,
  engineContainer,
  labels,
  metadata,
  podAnnotations,
} from './common.js';
import { gatewayEnabled } from './gateway.js';
import { buildWorkerTemplate } from './worker.js';

/** A cycle that has not started 20 s after its tick is skipped: the next tick is near. */
export const STARTING_DEADLINE_SECONDS = 20;
/** A cycle is cut off before the next minute's tick. */
export const COORDINATOR_DEADLINE_SECONDS = 55;

export type CoordinatorOptions = {
  /** Forced suspension (stage rollout: the new stage waits until the old one's Jobs are done). */
  holdForRollout?: boolean;
};

export function buildCoordinatorCronJob(
  input: BuildInput,
  options: CoordinatorOptions = {},
): V1CronJob & { metadata: { name: string } } {
  const stage = input.config.nodeSettings.stage;
  const names = childNames(input.node.metadata.name, stage);
  const container = engineContainer(input, 'coordinator', ['coordinator', '-c', CONFIG_FILE], 'coordinator', [
    { name: ENV.workerTemplate, value: canonicalJson(buildWorkerTemplate(input)) },
    // The cycle report names its Job, so status.lastCycle pairs the counts with the right cycle.
    { name: ENV.jobName, valueFrom: { fieldRef: { fieldPath: `metadata.labels['${JOB_NAME_LABEL}']` } } },
    // The heartbeat reports the gateways where callers reach them; without a public URL, none.
    ...(input.publicGatewayUrl && gatewayEnabled(input)
      ? [{ name: ENV.gatewayUrl, value: input.publicGatewayUrl }]
      : []),
  ]);
  // The coordinator creates the cycle's worker Jobs and writes its cache and cycle report.
  const podSpec = basePodSpec(input, [container], { serviceAccountName: names.coordinator, apiToken: true });
  podSpec.restartPolicy = 'Never';
  const podLabels = labels(input.node, stage, 'coordinator');
  return {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: metadata(input, names.coordinator, 'coordinator'),
    spec: {
      schedule: input.node.spec.coordinator?.schedule ?? DEFAULT_SCHEDULE,
      suspend: options.holdForRollout === true || input.node.spec.coordinator?.suspend === true,
      concurrencyPolicy: 'Forbid',
      startingDeadlineSeconds: STARTING_DEADLINE_SECONDS,
      successfulJobsHistoryLimit: 3,
      failedJobsHistoryLimit: 3,
      jobTemplate: {
        metadata: { labels: podLabels },
        spec: {
          activeDeadlineSeconds: COORDINATOR_DEADLINE_SECONDS,
          backoffLimit: 0,
          template: {
            metadata: { labels: podLabels, annotations: podAnnotations(input, 'coordinator') },
            spec: podSpec,
          },
        },
      },
    },
  };
}
