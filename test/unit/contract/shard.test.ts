import { expect } from 'chai';
import {
  type ApiShardInput,
  type ApiShardOutput,
  buildWindowWorkerJob,
  buildWorkerJob,
  MAX_ENCODED_VALUE_BYTES,
  MAX_SHARD_INPUT_BYTES,
  MAX_SHARD_OUTPUT_BYTES,
  MAX_WORKER_INPUT_BYTES,
  packShardInputs,
  parseShardInput,
  parseShardOutput,
  parseShardOutputBody,
  parseWindowTask,
  resultsFor,
  SHARD_FORMAT,
  splitShardInput,
  WINDOW_COORDINATOR_URL_ENV,
  WINDOW_CREDENTIAL_ENV,
  type WorkerTemplate,
} from '../../../src/contract/shard.js';

const template: WorkerTemplate = {
  namePrefix: 'n-dev-worker',
  labels: { 'oracle-node.io/name': 'n' },
  ownerReferences: [{ apiVersion: 'oracle-node.io/v1alpha1', kind: 'OracleNode', name: 'n', uid: 'u' }],
  activeDeadlineSeconds: 50,
  ttlSecondsAfterFinished: 300,
  template: { metadata: { labels: {} }, spec: { containers: [{ name: 'worker', image: 'i' }] } },
};

const word = (digit: string, length: number) => `0x${digit.repeat(length)}`;
const requestId = word('b', 64);
const shard: ApiShardInput = {
  format: SHARD_FORMAT,
  chainId: '31337',
  requests: [
    {
      id: requestId,
      endpointId: word('c', 64),
      oisTitle: 'Currency Converter API',
      endpointName: 'convertToUSD',
      parameters: { from: 'ETH' },
      requester: word('4', 40),
      sponsor: word('1', 40),
      sponsorWallet: word('2', 40),
    },
  ],
  traceparents: { [requestId]: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` },
};

const output: ApiShardOutput = {
  format: SHARD_FORMAT,
  results: [
    {
      id: requestId,
      result: { success: true, encodedValue: `0x${'00'.repeat(32)}` },
      api: { outcome: '2xx', durationMs: 3 },
    },
  ],
  apiMs: 3,
};

describe('the coordinator <-> worker contract', () => {
  it('a shard the coordinator wrote is read back unchanged by the worker', () => {
    expect(parseShardInput(JSON.stringify(shard))).to.deep.equal({ shard });
  });

  it('carries only what the API calls need: no chain data, provider, gas price or nonce', () => {
    const extra = { ...shard, providers: ['local'], gasTarget: { type: 0, gasPrice: '1' }, currentBlock: 1 };
    const parsed = parseShardInput(JSON.stringify(extra));
    expect(parsed).to.deep.equal({ shard });
  });

  it('a shard that is not JSON, of another format or malformed is refused with the reason', () => {
    expect(parseShardInput('{')).to.deep.equal({ error: 'not JSON' });
    expect(parseShardInput(JSON.stringify({ ...shard, format: 'oracle-node/shard@1' }))).to.deep.equal({
      error: 'unknown shard format oracle-node/shard@1',
    });
    expect(parseShardInput(`${JSON.stringify(shard)}${' '.repeat(MAX_SHARD_INPUT_BYTES)}`)).to.deep.equal({
      error: `over ${MAX_SHARD_INPUT_BYTES} bytes`,
    });
    const badCall = { ...shard, requests: [{ ...shard.requests[0]!, sponsorWallet: 'me' }] };
    expect(parseShardInput(JSON.stringify(badCall)))
      .to.have.property('error')
      .that.matches(/requests\.0\.sponsorWallet/);
  });

  it("the worker's output is read from the last well-formed JSON line of its log", () => {
    expect(parseShardOutput(undefined)).to.equal(undefined);
    expect(parseShardOutput('{"level":30}\nplain')).to.equal(undefined);
    expect(parseShardOutput(`${JSON.stringify(output)}\n{"level":30}\n`)).to.deep.equal(output);
    // A line that looks like an output but breaks the contract is not taken for one.
    expect(parseShardOutput(JSON.stringify({ ...output, format: 'oracle-node/shard@1' }))).to.equal(undefined);
    const badOutcome = { ...output, results: [{ ...output.results[0], api: { outcome: 'maybe', durationMs: 1 } }] };
    expect(parseShardOutput(JSON.stringify(badOutcome))).to.equal(undefined);
    const notHex = { ...output, results: [{ ...output.results[0], result: { success: true, encodedValue: '0xzz' } }] };
    expect(parseShardOutput(JSON.stringify(notHex))).to.equal(undefined);
    const success = { ...output, results: [{ ...output.results[0], result: { success: true, errorMessage: 'x' } }] };
    expect(parseShardOutput(JSON.stringify(success))).to.equal(undefined);
  });

  it("a worker's output is bounded: an oversized value, too many results or too long a log is refused", () => {
    const huge = `0x${'00'.repeat(MAX_ENCODED_VALUE_BYTES + 1)}`;
    const oversized = { ...output, results: [{ ...output.results[0], result: { success: true, encodedValue: huge } }] };
    expect(parseShardOutput(JSON.stringify(oversized))).to.equal(undefined);
    const atBound = `0x${'00'.repeat(MAX_ENCODED_VALUE_BYTES)}`;
    const fits = { ...output, results: [{ ...output.results[0]!, result: { success: true, encodedValue: atBound } }] };
    expect(parseShardOutput(JSON.stringify(fits))).to.deep.equal(fits);
    const many = { ...output, results: Array.from({ length: 10_001 }, () => output.results[0]) };
    expect(parseShardOutput(JSON.stringify(many))).to.equal(undefined);
    const padded = `${' '.repeat(MAX_SHARD_OUTPUT_BYTES)}\n${JSON.stringify(output)}\n`;
    expect(parseShardOutput(padded)).to.equal(undefined);
  });

  it('the coordinator takes only the results of the ids it gave the worker, the first of each', () => {
    const other = word('e', 64);
    const forged: ApiShardOutput = {
      ...output,
      results: [
        { id: other, result: { success: true, encodedValue: '0x01' }, api: { outcome: '2xx', durationMs: 1 } },
        { ...output.results[0]!, id: requestId.toUpperCase().replace('0X', '0x') },
        {
          id: requestId,
          result: { success: false, errorMessage: 'second' },
          api: { outcome: 'failed', durationMs: 1 },
        },
      ],
    };
    const results = resultsFor(shard, forged);
    expect([...results.keys()]).to.deep.equal([requestId]);
    expect(results.get(requestId)!.result).to.deep.equal(output.results[0]!.result);
    // A request the worker left out has no result: the coordinator counts it as a failed API call.
    expect(resultsFor(shard, { ...output, results: [] }).size).to.equal(0);
  });

  it('the worker Job is the template completed: shard volume, cycle label, bounded parallelism', () => {
    const job = buildWorkerJob(template, { name: 'n-dev-worker-abc', shardCount: 5, concurrency: 2, chainId: '1' });
    expect(job.spec!.parallelism).to.equal(2);
    expect(job.spec!.completions).to.equal(5);
    expect(job.metadata!.labels).to.include({ 'oracle-node.io/cycle': 'n-dev-worker-abc' });
    expect(job.spec!.template.spec!.volumes).to.deep.equal([
      { name: 'shards', configMap: { name: 'n-dev-worker-abc' } },
    ]);
    // The template itself is not changed.
    expect(template.template.spec!.volumes).to.equal(undefined);
  });

  it('packs shard inputs in order into batches that fit one input ConfigMap; one too large alone is left out', () => {
    const text = (bytes: number) => 'x'.repeat(bytes);
    const third = Math.floor(MAX_WORKER_INPUT_BYTES / 3);
    const packed = packShardInputs([
      text(third),
      text(MAX_WORKER_INPUT_BYTES),
      text(third),
      text(third),
      text(10),
      text(2_000_000),
    ]);
    expect(packed.oversized).to.deep.equal([
      { index: 1, bytes: MAX_WORKER_INPUT_BYTES + 12 },
      { index: 5, bytes: 2_000_012 },
    ]);
    expect(packed.batches).to.deep.equal([
      [0, 2],
      [3, 4],
    ]);
    expect(packShardInputs([]).batches).to.deep.equal([]);
  });

  it("splits a shard too large for one input into pieces of its requests, in order, each with its requests' traceparents", () => {
    const requests = [1, 2, 3].map((n) => ({
      ...shard.requests[0]!,
      id: `0x${String(n).padStart(64, '0')}`,
      parameters: { note: 'x'.repeat(400_000) },
    }));
    const traceparents = Object.fromEntries(requests.map((r) => [r.id, shard.traceparents![requestId]!]));
    const big: ApiShardInput = { ...shard, requests, traceparents };
    const pieces = splitShardInput(big);
    expect(pieces.map((piece) => piece.requests.map((r) => r.id))).to.deep.equal([
      [requests[0]!.id, requests[1]!.id],
      [requests[2]!.id],
    ]);
    for (const piece of pieces) {
      expect(Buffer.byteLength(JSON.stringify(piece))).to.be.at.most(MAX_WORKER_INPUT_BYTES);
      expect(Object.keys(piece.traceparents!)).to.deep.equal(piece.requests.map((r) => r.id));
      expect(parseShardInput(JSON.stringify(piece))).to.deep.equal({ shard: piece });
    }
    expect(splitShardInput(shard)).to.deep.equal([shard]);
  });

  it("the window's worker Job is the template serving the coordinator: its URL and credential, no shard volume", () => {
    const withPod: WorkerTemplate = structuredClone(template);
    withPod.template.spec = {
      automountServiceAccountToken: false,
      serviceAccountName: 'n-dev-worker',
      containers: [
        {
          name: 'worker',
          image: 'i',
          args: [
            'worker',
            '--shard',
            '/var/run/oracle-node/shards/shard-$(JOB_COMPLETION_INDEX).json',
            '-c',
            '/c.json',
          ],
          env: [{ name: 'ORACLE_NODE_SECRET_SCOPE', value: 'worker' }],
          volumeMounts: [
            { name: 'config', mountPath: '/etc/oracle-node' },
            { name: 'shards', mountPath: '/var/run/oracle-node/shards' },
          ],
        },
      ],
    };
    const job = buildWindowWorkerJob(withPod, {
      name: 'n-dev-worker-wabc',
      parallelism: 3,
      activeDeadlineSeconds: 48.7,
      coordinatorUrl: 'http://10.0.0.7:8090',
      credential: 'c'.repeat(43),
    });
    expect(job.spec).to.include({ parallelism: 3, activeDeadlineSeconds: 48, ttlSecondsAfterFinished: 300 });
    // Not suspended, not Indexed, no completions: its pods serve until the window is over.
    expect(job.spec!.suspend).to.equal(undefined);
    expect(job.spec!.completionMode).to.equal(undefined);
    expect(job.spec!.completions).to.equal(undefined);
    expect(job.metadata!.labels).to.include({
      'oracle-node.io/cycle': 'n-dev-worker-wabc',
      'oracle-node.io/name': 'n',
    });
    const pod = job.spec!.template.spec!;
    expect(pod.automountServiceAccountToken, 'no Kubernetes token').to.equal(false);
    expect(pod.volumes).to.equal(undefined);
    const [container] = pod.containers;
    expect(container!.args).to.deep.equal(['worker', '--coordinator', '-c', '/c.json']);
    expect(container!.env).to.deep.equal([
      { name: 'ORACLE_NODE_SECRET_SCOPE', value: 'worker' },
      { name: WINDOW_COORDINATOR_URL_ENV, value: 'http://10.0.0.7:8090' },
      { name: WINDOW_CREDENTIAL_ENV, value: 'c'.repeat(43) },
    ]);
    expect(container!.volumeMounts).to.deep.equal([{ name: 'config', mountPath: '/etc/oracle-node' }]);
    // The template itself is not changed.
    expect(withPod.template.spec.containers[0]!.args![1]).to.equal('--shard');
  });

  it('a window task and a posted output are parsed, not cast, and bounded', () => {
    const task = { task: 'a'.repeat(32), shard };
    expect(parseWindowTask(JSON.stringify(task))).to.deep.equal({ task });
    expect(parseWindowTask(JSON.stringify({ ...task, task: '../x' }))).to.have.property('error');
    expect(parseWindowTask('{')).to.deep.equal({ error: 'not JSON' });
    expect(parseWindowTask(' '.repeat(MAX_SHARD_INPUT_BYTES + 1))).to.have.property('error');
    expect(parseShardOutputBody(JSON.stringify(output))).to.deep.equal(output);
    expect(parseShardOutputBody(JSON.stringify({ ...output, format: 'other' }))).to.equal(undefined);
    expect(parseShardOutputBody(' '.repeat(MAX_SHARD_OUTPUT_BYTES + 1))).to.equal(undefined);
  });
});
