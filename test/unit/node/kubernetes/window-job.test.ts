// The window's workers on Kubernetes (src/node/kubernetes/window-job.ts), against a fake API: one worker Job created
// at the window's start with the coordinator's URL and credential, per-poll Jobs until a worker asks for work, and
// the workers told the window is over at its end.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { V1Job } from '@kubernetes/client-node';
import { expect } from 'chai';
import { validateConfig } from '../../../../src/config/index.js';
import {
  type ApiShardInput,
  SHARD_FORMAT,
  WINDOW_COORDINATOR_URL_ENV,
  WINDOW_CREDENTIAL_ENV,
  WINDOW_PATHS,
  type WorkerTemplate,
} from '../../../../src/contract/shard.js';
import { WorkDeadline } from '../../../../src/node/deadline.js';
import type { ApiShardResult, ApiWorkers } from '../../../../src/node/executor.js';
import type { WorkerJobApi } from '../../../../src/node/kubernetes/job-executor.js';
import {
  KubernetesWindowWorkers,
  MAX_WINDOW_WORKERS,
  windowWorkerParallelism,
} from '../../../../src/node/kubernetes/window-job.js';
import { silentLogger } from '../../../../src/node/logger.js';
import { buildConfigJson } from '../../../support/harness.js';
import { waitFor } from '../../../support/wait.js';

const template: WorkerTemplate = {
  namePrefix: 'n-dev-worker',
  labels: { 'oracle-node.io/name': 'n' },
  ownerReferences: [],
  activeDeadlineSeconds: 50,
  ttlSecondsAfterFinished: 300,
  template: {
    metadata: { labels: {} },
    spec: {
      automountServiceAccountToken: false,
      containers: [{ name: 'worker', image: 'i', args: ['worker', '--shard', '/s/shard-0.json', '-c', '/c.json'] }],
    },
  },
};

const shard: ApiShardInput = { format: SHARD_FORMAT, chainId: '31337', requests: [] };

function config(maxConcurrencies: number[]) {
  const deployment = { chainId: 31337, AirnodeRrpV0: `0x${'1'.repeat(40)}`, AirnodeRrpV0DryRun: `0x${'2'.repeat(40)}` };
  const built = buildConfigJson({
    providers: { p: 'http://127.0.0.1:1' },
    deployment: deployment as never,
    apiUrl: 'http://127.0.0.1:2',
  });
  const chains = built.config['chains'] as Record<string, unknown>[];
  built.config['chains'] = maxConcurrencies.map((maxConcurrency, i) => ({
    ...chains[0],
    id: String(i + 1),
    maxConcurrency,
  }));
  const validated = validateConfig(built.config, built.secrets);
  if (!validated.ok || !validated.config) throw new Error(JSON.stringify(validated.errors));
  return validated.config;
}

function fakeApi() {
  const jobs: V1Job[] = [];
  const api = {
    async createJob(job: V1Job) {
      jobs.push(job);
      return job;
    },
  } as unknown as WorkerJobApi;
  return { api, jobs };
}

class PerPoll implements ApiWorkers {
  runs = 0;
  async run(shards: ApiShardInput[]): Promise<ApiShardResult[]> {
    this.runs++;
    return shards.map(() => ({ ok: false, error: 'per-poll' }));
  }
}

describe("the window's workers on Kubernetes", () => {
  it("the window Job's pods: the largest maxConcurrency of the chains, at most MAX_WINDOW_WORKERS", () => {
    expect(windowWorkerParallelism(config([1, 3, 2]))).to.equal(3);
    expect(windowWorkerParallelism(config([3, 100, 2]))).to.equal(MAX_WINDOW_WORKERS);
  });

  it('creates one worker Job at the start, serves over HTTP with its credential, and tells the workers when it ends', async () => {
    const { api, jobs } = fakeApi();
    const perPoll = new PerPoll();
    const workers = new KubernetesWindowWorkers({ api, template, podIp: '127.0.0.1', port: 0, perPoll });
    const deadline = WorkDeadline.after(30_000);
    // Before the window starts, and before any worker asks: the per-poll Jobs.
    expect(await workers.run([shard], { concurrency: 1 })).to.deep.equal([{ ok: false, error: 'per-poll' }]);
    await workers.start({ config: config([3]), deadline, logger: silentLogger });
    expect(jobs).to.have.length(1);
    const job = jobs[0]!;
    expect(job.metadata!.name).to.equal(workers.job);
    expect(job.spec!.parallelism).to.equal(3);
    expect(job.spec!.activeDeadlineSeconds).to.be.within(28, 30);
    expect(job.spec!.template.spec!.automountServiceAccountToken).to.equal(false);
    const env = Object.fromEntries(job.spec!.template.spec!.containers[0]!.env!.map((e) => [e.name, e.value]));
    const url = env[WINDOW_COORDINATOR_URL_ENV]!;
    const credential = env[WINDOW_CREDENTIAL_ENV]!;
    expect(url).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(credential).to.match(/^[A-Za-z0-9_-]{43}$/);
    // No workers yet: a run still goes to a per-poll Job.
    await workers.run([shard], { concurrency: 1 });
    expect(perPoll.runs).to.equal(2);
    // Without the credential, nothing; with it, a worker waits for work, and the window's end tells it to exit.
    expect((await fetch(`${url}${WINDOW_PATHS.next}`)).status).to.equal(401);
    const wrong = await fetch(`${url}${WINDOW_PATHS.next}`, { headers: { authorization: `Bearer ${'x'.repeat(43)}` } });
    expect(wrong.status).to.equal(401);
    const ask = () => fetch(`${url}${WINDOW_PATHS.next}`, { headers: { authorization: `Bearer ${credential}` } });
    const first = ask();
    await waitFor(() => workers.ready, 5_000, 'a worker asks for work');
    // A run now goes to the waiting worker, not to a per-poll Job.
    const running = workers.run([shard], { concurrency: 1 });
    const given = await first;
    expect(given.status).to.equal(200);
    expect(((await given.json()) as { shard: unknown }).shard).to.deep.equal(shard);
    expect(perPoll.runs).to.equal(2);
    const second = ask();
    await waitFor(() => workers.waitingWorkers === 1, 5_000, 'the worker asks again');
    // The window's end: the task not answered fails (nothing is sent for it), the waiting worker is told to exit.
    await workers.stop();
    expect(await running).to.deep.equal([{ ok: false, error: "the window's workers stopped" }]);
    expect((await second).status).to.equal(410);
    deadline.stop('done');
  });

  it('a Job that cannot be created leaves every poll on per-poll Jobs', async () => {
    const api = {
      async createJob() {
        throw new Error('forbidden');
      },
    } as unknown as WorkerJobApi;
    const perPoll = new PerPoll();
    const workers = new KubernetesWindowWorkers({ api, template, podIp: '127.0.0.1', port: 0, perPoll });
    const deadline = WorkDeadline.after(30_000);
    await workers.start({ config: config([2]), deadline, logger: silentLogger });
    expect(workers.job).to.equal(undefined);
    await workers.run([shard], { concurrency: 1 });
    expect(perPoll.runs).to.equal(1);
    await workers.stop();
    deadline.stop('done');
  });

  it('a port that cannot be listened on: no window Job, every poll on per-poll Jobs', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    const { api, jobs } = fakeApi();
    const perPoll = new PerPoll();
    const workers = new KubernetesWindowWorkers({ api, template, podIp: '127.0.0.1', port, perPoll });
    const deadline = WorkDeadline.after(30_000);
    try {
      await workers.start({ config: config([2]), deadline, logger: silentLogger });
      expect(jobs).to.have.length(0);
      await workers.run([shard], { concurrency: 1 });
      expect(perPoll.runs).to.equal(1);
      await workers.stop();
    } finally {
      deadline.stop('done');
      taken.close();
    }
  });
});
