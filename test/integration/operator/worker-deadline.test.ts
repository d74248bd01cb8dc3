// The worker Job of a coordinator window gets the time left to the window's hard end (issue 34, item 5), not the
// template's fixed deadline: the coordinator's Kubernetes executor, run as a process with the environment of the
// operator's live CronJob, against the real apiserver and Job controller (kwok completes the pods).
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { BatchV1Api, type V1CronJob, type V1Job } from '@kubernetes/client-node';
import { expect } from 'chai';
import { ENV } from '../../../src/contract/pods.js';
import { parseWorkerTemplate } from '../../../src/contract/shard.js';
import { api, apply, kubeconfigPath, useNamespace, waitFor } from '../support/cluster.js';
import { installCrd, type RunningOperator, read, sampleDocs, startOperator } from './support.js';

const run = promisify(execFile);

describe('the worker Job deadline of a coordinator window (integration)', function () {
  this.timeout(180_000);
  const namespace = useNamespace('onode-worker-deadline');
  let operator: RunningOperator;
  before(async () => {
    await installCrd();
    operator = startOperator(namespace.name);
  });
  after(async () => {
    await operator?.stop();
  });
  const ns = () => namespace.name;

  it("a worker Job's activeDeadlineSeconds is the time left to the window's hard end, at most the template's", async () => {
    const { node, secret } = sampleDocs('minimal', ns());
    await apply(secret);
    await apply(node);
    const cronJob = await waitFor(
      async () => read<V1CronJob>('batch/v1', 'CronJob', ns(), 'minimal-dev-coordinator'),
      60_000,
      { description: 'the coordinator CronJob', intervalMs: 300 },
    );
    const env = cronJob.spec!.jobTemplate.spec!.template.spec!.containers[0]!.env ?? [];
    const parsed = parseWorkerTemplate(env.find((v) => v.name === ENV.workerTemplate)!.value!);
    if (!('template' in parsed)) throw new Error(parsed.error);
    const hardEndSeconds = 20;
    expect(parsed.template.activeDeadlineSeconds).to.be.greaterThan(hardEndSeconds);
    const { stdout } = await run(
      process.execPath,
      [
        '--import',
        'tsx',
        fileURLToPath(new URL('./run-executor.ts', import.meta.url)),
        ns(),
        'minimal-dev-coordinator',
        '1',
        '1',
        '-',
        String(hardEndSeconds),
      ],
      { env: { ...process.env, KUBECONFIG: kubeconfigPath }, timeout: 150_000 },
    );
    const { jobs } = JSON.parse(stdout.trim().split('\n').pop()!) as { jobs: string[] };
    const job: V1Job = await api(BatchV1Api).readNamespacedJob({ name: jobs[0]!, namespace: ns() });
    // The seconds left when the Job was created: at most the hard end, never the template's 50.
    expect(job.spec!.activeDeadlineSeconds).to.be.within(1, hardEndSeconds);
  });
});
