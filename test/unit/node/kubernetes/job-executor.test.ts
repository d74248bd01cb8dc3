import type { V1ConfigMap, V1Job, V1Pod } from '@kubernetes/client-node';
import { expect } from 'chai';
import { type ApiShardInput, SHARD_FORMAT, type WorkerTemplate } from '../../../../src/contract/shard.js';
import { WorkDeadline } from '../../../../src/node/deadline.js';
import { KubernetesJobExecutor, type WorkerJobApi } from '../../../../src/node/kubernetes/job-executor.js';

const template: WorkerTemplate = {
  namePrefix: 'n-dev-worker',
  labels: { 'oracle-node.io/name': 'n' },
  ownerReferences: [],
  activeDeadlineSeconds: 50,
  ttlSecondsAfterFinished: 300,
  template: { metadata: { labels: {} }, spec: { containers: [{ name: 'worker', image: 'i' }] } },
};

const shard = (i: number): ApiShardInput => ({
  format: SHARD_FORMAT,
  chainId: '31337',
  requests: [
    {
      id: `0x${String(i).padStart(64, '0')}`,
      endpointId: `0x${'c'.repeat(64)}`,
      oisTitle: 'o',
      endpointName: 'e',
      parameters: {},
      requester: `0x${'4'.repeat(40)}`,
      sponsor: `0x${'1'.repeat(40)}`,
      sponsorWallet: `0x${'2'.repeat(40)}`,
    },
  ],
});

/** Plays the Job controller: the Job completes; pods exist for each index; some print an output. */
function fakeApi(outputs: (string | undefined)[]) {
  const calls: string[] = [];
  let job: V1Job | undefined;
  const configMaps: V1ConfigMap[] = [];
  const api: WorkerJobApi = {
    async createJob(body) {
      calls.push('createJob');
      job = { ...body, metadata: { ...body.metadata, uid: 'job-uid' } };
      return job;
    },
    async unsuspendJob() {
      calls.push('unsuspendJob');
      job!.status = { conditions: [{ type: 'Complete', status: 'True' }] };
    },
    async readJob() {
      return job;
    },
    async createConfigMap(body) {
      calls.push('createConfigMap');
      configMaps.push(body);
    },
    async listJobPods(): Promise<V1Pod[]> {
      return outputs.map((output, index) => ({
        metadata: { name: `pod-${index}`, annotations: { 'batch.kubernetes.io/job-completion-index': String(index) } },
        status: { phase: output === undefined ? 'Failed' : 'Succeeded' },
      }));
    },
    async readPodLog(name) {
      return outputs[Number(name.split('-')[1])];
    },
  };
  return { api, calls, configMaps, job: () => job };
}

describe('KubernetesJobExecutor', () => {
  it('creates one suspended Indexed Job, its owned input, releases it, and maps outputs back by index', async () => {
    const output = (i: number) =>
      `log line\n${JSON.stringify({ format: SHARD_FORMAT, results: [{ id: shard(i).requests[0]!.id, result: { success: false, errorMessage: 'down' }, api: { outcome: '5xx', durationMs: 1 } }], apiMs: i })}\n`;
    const fake = fakeApi([output(0), undefined, output(2)]);
    const executor = new KubernetesJobExecutor({ api: fake.api, template, sleep: async () => {} });
    const results = await executor.run([shard(0), shard(1), shard(2)], { concurrency: 2 });
    expect(fake.calls).to.deep.equal(['createJob', 'createConfigMap', 'unsuspendJob']);
    expect(fake.job()!.spec).to.include({ completions: 3, parallelism: 2, completionMode: 'Indexed' });
    expect(Object.keys(fake.configMaps[0]!.data!)).to.deep.equal(['shard-0.json', 'shard-1.json', 'shard-2.json']);
    expect(fake.configMaps[0]!.metadata!.ownerReferences![0]).to.include({ kind: 'Job', uid: 'job-uid' });
    expect(results.map((r) => r.ok)).to.deep.equal([true, false, true]);
    expect(results[1]).to.deep.equal({
      ok: false,
      error: `shard 1 of Job ${fake.job()!.metadata!.name} did not succeed`,
    });
    expect(results[2]).to.have.nested.property('output.apiMs', 2);
  });

  it('no shards, no Job', async () => {
    const fake = fakeApi([]);
    expect(await new KubernetesJobExecutor({ api: fake.api, template }).run([], { concurrency: 3 })).to.deep.equal([]);
    expect(fake.calls).to.deep.equal([]);
  });

  it('a Job that never finishes fails its shards after the deadline', async () => {
    const fake = fakeApi([undefined]);
    fake.api.unsuspendJob = async () => {};
    let now = 0;
    const executor = new KubernetesJobExecutor({
      api: fake.api,
      template,
      now: () => now,
      sleep: async (ms) => {
        now += ms;
      },
    });
    const [result] = await executor.run([shard(0)], { concurrency: 1 });
    expect(result).to.include({ ok: false });
    expect((result as { error: string }).error).to.contain('did not finish');
  });

  it("gives the worker Job the whole seconds left to the run's hard end, never more than the template's deadline", async () => {
    const deadlineOf = async (hardEndInMs: number) => {
      const fake = fakeApi([undefined]);
      const now = () => 1_000_000;
      const deadline = new WorkDeadline(now() + hardEndInMs, now);
      await new KubernetesJobExecutor({ api: fake.api, template, now, sleep: async () => {} }).run([shard(0)], {
        concurrency: 1,
        deadline,
      });
      deadline.stop('test over');
      return fake.job()!.spec!.activeDeadlineSeconds;
    };
    expect(await deadlineOf(12_700)).to.equal(12);
    expect(await deadlineOf(400)).to.equal(1);
    expect(await deadlineOf(600_000)).to.equal(template.activeDeadlineSeconds);
  });

  it("stops waiting for a Job at the run's deadline (SIGTERM or the hard end), and starts none after it", async () => {
    const fake = fakeApi([undefined]);
    fake.api.unsuspendJob = async () => {};
    const deadline = new WorkDeadline(undefined);
    let reads = 0;
    const readJob = fake.api.readJob;
    fake.api.readJob = async (name) => {
      // The Job never finishes; the run is stopped while the coordinator waits for it.
      if (++reads === 2) deadline.stop('SIGTERM');
      return readJob(name);
    };
    const executor = new KubernetesJobExecutor({ api: fake.api, template, sleep: async () => {} });
    const [result] = await executor.run([shard(0)], { concurrency: 1, deadline });
    expect(reads).to.equal(2);
    expect(result).to.deep.include({ ok: false });
    expect((result as { error: string }).error).to.contain('did not finish before SIGTERM');
    const calls = fake.calls.length;
    const [after] = await executor.run([shard(1)], { concurrency: 1, deadline });
    expect((after as { error: string }).error).to.contain('not started: SIGTERM');
    expect(fake.calls).to.have.length(calls);
  });
});
