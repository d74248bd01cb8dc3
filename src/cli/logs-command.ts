// `oracle-node logs NAME [-n NS]`: the logs of the latest coordinator Job's pod and of the worker pods of the
// latest cycle, while they exist (Jobs are cleaned up after a few minutes; status.cycles and the RequestFailed
// Events outlive them).
import type { V1Job, V1Pod } from '@kubernetes/client-node';
import { errorMessage } from '../common/errors.js';
import { JOB_NAME_LABEL, LABELS } from '../contract/pods.js';
import { KINDS } from '../operator/resource.js';
import { parseTarget, TARGET_OPTIONS_HELP } from './kube-target.js';
import type { Subcommand } from './subcommand.js';

const HELP = `Usage: oracle-node logs NAME [-n NAMESPACE] [--tail N]

Prints the logs of the latest coordinator pod of an OracleNode and of the worker pods of its latest cycle.
${TARGET_OPTIONS_HELP}
      --tail        only the last N lines of each pod's log
`;

// The API sends times as RFC 3339 strings (client-node's types say Date), which sort as the times they are.
const startedAt = (job: V1Job) => String(job.status?.startTime ?? job.metadata?.creationTimestamp ?? '');
const newestFirst = (a: V1Job, b: V1Job) => startedAt(b).localeCompare(startedAt(a));

/** The newest coordinator Job, and the worker Jobs created after it started (its cycle's). */
export function latestJobs(coordinators: V1Job[], workers: V1Job[]): { coordinator?: V1Job; workers: V1Job[] } {
  const coordinator = [...coordinators].sort(newestFirst)[0];
  if (!coordinator) return { workers: [] };
  const since = startedAt(coordinator);
  return {
    coordinator,
    workers: workers.filter((job) => String(job.metadata?.creationTimestamp ?? '') >= since).sort(newestFirst),
  };
}

export const logsCommand: Subcommand = {
  async run(argv) {
    const target = await parseTarget(argv, HELP, { tail: { type: 'string' } });
    if (typeof target === 'number') return target;
    const tail = target.values.tail === undefined ? undefined : Number(target.values.tail);
    if (tail !== undefined && (!Number.isInteger(tail) || tail < 1)) {
      process.stderr.write(`--tail must be a positive integer\n\n${HELP}`);
      return 2;
    }
    const { client, namespace, name } = target;
    const jobsOf = (component: string) =>
      client.list<V1Job>(KINDS.job, namespace, `${LABELS.name}=${name},${LABELS.component}=${component}`);
    let jobs: ReturnType<typeof latestJobs>;
    try {
      jobs = latestJobs(await jobsOf('coordinator'), await jobsOf('worker'));
    } catch (error) {
      process.stderr.write(`Cannot list the Jobs of ${namespace}/${name}: ${errorMessage(error)}\n`);
      return 1;
    }
    if (!jobs.coordinator) {
      process.stderr.write(
        `No coordinator Job of ${namespace}/${name} exists (finished Jobs are removed after a while)\n`,
      );
      return 1;
    }
    for (const job of [jobs.coordinator, ...jobs.workers]) {
      const jobName = job.metadata!.name!;
      let pods: V1Pod[];
      try {
        pods = await client.list<V1Pod>(KINDS.pod, namespace, `${JOB_NAME_LABEL}=${jobName}`);
      } catch (error) {
        process.stderr.write(`Cannot list the pods of Job ${jobName}: ${errorMessage(error)}\n`);
        return 1;
      }
      if (pods.length === 0) process.stdout.write(`==> Job ${jobName}: no pod left\n`);
      for (const pod of pods) {
        const podName = pod.metadata!.name!;
        process.stdout.write(`==> Job ${jobName}, pod ${podName} (${pod.status?.phase ?? 'Unknown'})\n`);
        try {
          const log = await client.podLog({ namespace, name: podName }, tail ? { tailLines: tail } : {});
          process.stdout.write(log.endsWith('\n') || log === '' ? log : `${log}\n`);
        } catch (error) {
          process.stdout.write(`(no log: ${errorMessage(error)})\n`);
        }
      }
    }
    return 0;
  },
};
