// `oracle-node cycle NAME [-n NS]`: one coordinator cycle now, as `kubectl create job --from=cronjob/...` does
// (a Job from the CronJob's jobTemplate, owned by the CronJob). With windows that hand over through the node's
// coordinator Lease (`concurrencyPolicy: Allow`), the new run waits for the Lease like the next scheduled one; with
// one cycle per tick (Forbid, no Lease) it is refused while a cycle runs: two coordinators at once would share
// sponsor-wallet nonces.
import type { V1CronJob, V1Job } from '@kubernetes/client-node';
import { errorMessage } from '../common/errors.js';
import { jobFinished, LABELS } from '../contract/pods.js';
import { KINDS } from '../operator/resource.js';
import { parseTarget, TARGET_OPTIONS_HELP } from './kube-target.js';
import type { Subcommand } from './subcommand.js';

const HELP = `Usage: oracle-node cycle NAME [-n NAMESPACE]

Runs one coordinator cycle of an OracleNode now: a Job from its coordinator CronJob (as
\`kubectl create job --from=cronjob/<name>-<stage>-coordinator\`). With windows (spec.coordinator.pollInterval
above 0) its window waits for the node's coordinator Lease, taking over when the running one ends; with one
cycle per tick it is refused while a cycle runs.
${TARGET_OPTIONS_HELP}
`;

/** The annotation kubectl puts on a Job it created from a CronJob. */
export const INSTANTIATE_ANNOTATION = 'cronjob.kubernetes.io/instantiate';

/** The Job `kubectl create job --from=cronjob/NAME` would create, with a name that fits 63 characters. */
export function jobFromCronJob(cronJob: V1CronJob, now: Date): V1Job {
  const namespace = cronJob.metadata?.namespace;
  const cronName = cronJob.metadata!.name!;
  const suffix = `-manual-${Math.floor(now.getTime() / 1000).toString(36)}`;
  const template = cronJob.spec!.jobTemplate;
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: `${cronName.slice(0, 63 - suffix.length)}${suffix}`,
      ...(namespace ? { namespace } : {}),
      labels: { ...template.metadata?.labels },
      annotations: { ...template.metadata?.annotations, [INSTANTIATE_ANNOTATION]: 'manual' },
      ownerReferences: [
        {
          apiVersion: 'batch/v1',
          kind: 'CronJob',
          name: cronName,
          uid: cronJob.metadata!.uid!,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: template.spec!,
  };
}

export const cycleCommand: Subcommand = {
  async run(argv) {
    const target = await parseTarget(argv, HELP);
    if (typeof target === 'number') return target;
    const { client, namespace, name } = target;
    const selector = `${LABELS.name}=${name},${LABELS.component}=coordinator`;
    try {
      const cronJobs = await client.list<V1CronJob>(KINDS.cronJob, namespace, selector);
      // During a stage rollout the old coordinator is suspended: the running one is the one to trigger.
      const cronJob = cronJobs.find((c) => c.spec?.suspend !== true);
      if (!cronJob) {
        process.stderr.write(
          cronJobs.length === 0
            ? `OracleNode ${namespace}/${name} has no coordinator CronJob (is the OracleNode there and valid?)\n`
            : `The coordinator of ${namespace}/${name} is suspended (spec.coordinator.suspend or a stage rollout)\n`,
        );
        return 1;
      }
      const running = (await client.list<V1Job>(KINDS.job, namespace, selector)).filter(
        (job) => jobFinished(job) === undefined,
      );
      // Windows hand over through the Lease: the new run waits its turn, never sending beside the running one.
      const handsOver = cronJob.spec?.concurrencyPolicy === 'Allow';
      if (running.length > 0 && !handsOver) {
        process.stderr.write(
          `A cycle is running (Job ${running.map((j) => j.metadata?.name).join(', ')}); try again when it finished\n`,
        );
        return 1;
      }
      const job = await client.create(KINDS.job, jobFromCronJob(cronJob, new Date()));
      process.stdout.write(`job.batch/${job.metadata?.name} created\n`);
      if (running.length > 0)
        process.stderr.write(
          `Its window starts when the running one (Job ${running.map((j) => j.metadata?.name).join(', ')}) hands over the coordinator Lease\n`,
        );
      return 0;
    } catch (error) {
      process.stderr.write(`Cannot start a cycle of ${namespace}/${name}: ${errorMessage(error)}\n`);
      return 1;
    }
  },
};
