import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig, type V1ConfigMap, type V1Job, type V1Pod } from '@kubernetes/client-node';
import { expect } from 'chai';
import {
  type ApiShardInput,
  MAX_SHARD_OUTPUT_BYTES,
  MAX_WORKER_INPUT_BYTES,
  parseShardOutput,
  SHARD_FORMAT,
  WORKER_DEADLINE_AT_ENV,
  type WorkerTemplate,
} from '../../../../src/contract/shard.js';
import { RestClient, RuntimeClient } from '../../../../src/kube/api.js';
import { WorkDeadline } from '../../../../src/node/deadline.js';
import {
  KubernetesJobExecutor,
  kubeWorkerJobApi,
  type WorkerJobApi,
} from '../../../../src/node/kubernetes/job-executor.js';

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
    async deleteJob() {
      calls.push('deleteJob');
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

  it('a shard whose input no ConfigMap holds fails alone with the reason; the others get their Job', async () => {
    const output = (i: number) =>
      JSON.stringify({
        format: SHARD_FORMAT,
        results: [
          {
            id: shard(i).requests[0]!.id,
            result: { success: true, encodedValue: '0x01' },
            api: { outcome: '2xx', durationMs: 1 },
          },
        ],
        apiMs: i,
      });
    const huge = shard(1);
    huge.requests[0]!.parameters = { note: 'x'.repeat(MAX_WORKER_INPUT_BYTES) };
    const fake = fakeApi([output(0), output(2)]);
    const executor = new KubernetesJobExecutor({ api: fake.api, template, sleep: async () => {} });
    const results = await executor.run([shard(0), huge, shard(2)], { concurrency: 2 });
    expect(results.map((r) => r.ok)).to.deep.equal([true, false, true]);
    expect((results[1] as { error: string }).error).to.match(
      new RegExp(`^shard input is \\d+ bytes, over the ${MAX_WORKER_INPUT_BYTES} a worker Job's input holds$`),
    );
    expect(fake.job()!.spec).to.include({ completions: 2 });
    expect(Object.keys(fake.configMaps[0]!.data!)).to.deep.equal(['shard-0.json', 'shard-1.json']);
    expect(results[2]).to.have.nested.property('output.apiMs', 2);
  });

  it('a Job whose input cannot be created fails its shards and is deleted (a suspended Job would never finish)', async () => {
    const fake = fakeApi([undefined]);
    fake.api.createConfigMap = async () => {
      throw new Error('ConfigMap "x" is invalid: []: Too long: must have at most 1048576 bytes');
    };
    const executor = new KubernetesJobExecutor({ api: fake.api, template, sleep: async () => {} });
    const [result] = await executor.run([shard(0)], { concurrency: 1 });
    expect((result as { error: string }).error).to.match(/^could not start worker Job .*: ConfigMap "x" is invalid/);
    expect(fake.calls).to.deep.equal(['createJob', 'deleteJob']);
  });

  it('runs a shard too large for one input in pieces, and gives its results together; the other shards run beside it', async () => {
    // Plays the Job controller and the workers: every Job completes, each pod answers the requests of its input.
    const inputs = new Map<string, Record<string, string>>();
    const api: WorkerJobApi = {
      createJob: async (job) => ({ ...job, metadata: { ...job.metadata, uid: `${job.metadata!.name}-uid` } }),
      unsuspendJob: async () => {},
      readJob: async () => ({ status: { conditions: [{ type: 'Complete', status: 'True' }] } }),
      createConfigMap: async (configMap) => {
        inputs.set(configMap.metadata!.name!, configMap.data!);
      },
      deleteJob: async () => {},
      listJobPods: async (job) =>
        Object.keys(inputs.get(job)!).map((_, index) => ({
          metadata: {
            name: `${job}/${index}`,
            annotations: { 'batch.kubernetes.io/job-completion-index': String(index) },
          },
          status: { phase: 'Succeeded' },
        })),
      readPodLog: async (pod) => {
        const [job, index] = pod.split('/');
        const input = JSON.parse(inputs.get(job!)![`shard-${index}.json`]!) as ApiShardInput;
        const results = input.requests.map((r) => ({
          id: r.id,
          result: { success: true, encodedValue: '0x01' },
          api: { outcome: '2xx', durationMs: 1 },
        }));
        return JSON.stringify({ format: SHARD_FORMAT, results, apiMs: input.requests.length });
      },
    };
    const request = (n: number, bytes: number) => ({
      ...shard(n).requests[0]!,
      parameters: { note: 'x'.repeat(bytes) },
    });
    // Three requests of 400 kB: 1.2 MB in one shard, which no ConfigMap holds.
    const big: ApiShardInput = {
      ...shard(0),
      requests: [request(1, 400_000), request(2, 400_000), request(3, 400_000)],
    };
    const executor = new KubernetesJobExecutor({ api, template, sleep: async () => {} });
    const results = await executor.run([big, shard(9)], { concurrency: 4 });
    expect(results.map((r) => r.ok)).to.deep.equal([true, true]);
    const ids = (result: (typeof results)[number]) => (result.ok ? result.output.results.map((r) => r.id) : []);
    expect(ids(results[0]!)).to.deep.equal(big.requests.map((r) => r.id));
    expect(ids(results[1]!)).to.deep.equal([shard(9).requests[0]!.id]);
    expect(results[0]).to.have.nested.property('output.apiMs', 2);
    // Each input fits a ConfigMap: [1, 2] in one Job, [3] and the small shard in the other.
    expect([...inputs.values()].map((data) => Object.keys(data).length)).to.deep.equal([1, 2]);
    for (const data of inputs.values()) {
      const bytes = Object.entries(data).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0);
      expect(bytes).to.be.at.most(MAX_WORKER_INPUT_BYTES);
    }
  });

  // The kubelet's log reader can't run here (kwok's pods write no log; the real node's tests do not fill 8 MiB):
  // a loopback server answers the log request as the kubelet does, `tailLines` first, then `limitBytes` from there.
  it("reads the end of a worker's log, so an output line after more than 8 MiB of log is still found", async () => {
    const lines = Array.from(
      { length: 9 * 1024 },
      (_, i) => `{"level":30,"msg":"noise ${i}","pad":"${'p'.repeat(1000)}"}`,
    );
    const output = JSON.stringify({ format: SHARD_FORMAT, results: [], apiMs: 7 });
    const log = `${[...lines, output, '{"level":30,"msg":"worker done"}'].join('\n')}\n`;
    expect(Buffer.byteLength(log)).to.be.above(MAX_SHARD_OUTPUT_BYTES);
    const queries: URLSearchParams[] = [];
    const server = createServer((req, res) => {
      const query = new URL(req.url ?? '/', 'http://localhost').searchParams;
      queries.push(query);
      let text = log;
      const tail = Number(query.get('tailLines') ?? 0);
      if (tail > 0) text = `${text.trimEnd().split('\n').slice(-tail).join('\n')}\n`;
      const limit = Number(query.get('limitBytes') ?? 0);
      const body = limit > 0 ? Buffer.from(text).subarray(0, limit) : Buffer.from(text);
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [
        { name: 'l', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true },
      ],
      users: [{ name: 'l' }],
      contexts: [{ name: 'l', cluster: 'l', user: 'l' }],
      currentContext: 'l',
    });
    const rest = new RestClient(kubeConfig, { qps: 100, burst: 100 });
    try {
      const read = await kubeWorkerJobApi(new RuntimeClient(rest, 'test'), 'ns1').readPodLog('w-0', 'worker');
      expect(Buffer.byteLength(read ?? '')).to.be.at.most(MAX_SHARD_OUTPUT_BYTES);
      expect(parseShardOutput(read)).to.deep.equal({ format: SHARD_FORMAT, results: [], apiMs: 7 });
      expect(queries[0]!.get('limitBytes')).to.equal(String(MAX_SHARD_OUTPUT_BYTES));
    } finally {
      rest.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("gives the worker Job the whole seconds left to the run's hard end, never more than the template's deadline, and tells its workers when that ends", async () => {
    const deadlineOf = async (hardEndInMs: number) => {
      const fake = fakeApi([undefined]);
      const now = () => 1_000_000;
      const deadline = WorkDeadline.after(hardEndInMs, now);
      const before = Date.now();
      await new KubernetesJobExecutor({ api: fake.api, template, now, sleep: async () => {} }).run([shard(0)], {
        concurrency: 1,
        deadline,
      });
      const after = Date.now();
      deadline.stop('test over');
      const seconds = fake.job()!.spec!.activeDeadlineSeconds!;
      // The instant the Job's deadline runs out, read before the Job was made: a worker's budget waits end before it.
      const env = fake.job()!.spec!.template.spec!.containers[0]!.env ?? [];
      const at = Number(env.find((e) => e.name === WORKER_DEADLINE_AT_ENV)?.value);
      expect(at).to.be.within(before + seconds * 1000, after + seconds * 1000);
      return seconds;
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
