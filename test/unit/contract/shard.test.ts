import { expect } from 'chai';
import {
  buildWorkerJob,
  parseShardInput,
  parseShardOutput,
  SHARD_FORMAT,
  type ShardInput,
  type ShardOutput,
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
const shard: ShardInput = {
  format: SHARD_FORMAT,
  chainId: '31337',
  sponsor: word('1', 40),
  sponsorWallet: word('2', 40),
  providers: ['local'],
  currentBlock: 12,
  gasTarget: { type: 2, maxFeePerGas: '2000000000', maxPriorityFeePerGas: '1000000000', gasLimit: '500000' },
  apiCalls: [
    {
      blockNumber: 10,
      logIndex: 0,
      transactionHash: word('a', 64),
      type: 'template',
      id: word('b', 64),
      nodeAddress: word('3', 40),
      requesterRequestCount: '1',
      chainId: '31337',
      requester: word('4', 40),
      endpointId: word('c', 64),
      templateId: word('d', 64),
      sponsor: word('1', 40),
      sponsorWallet: word('2', 40),
      fulfillAddress: word('5', 40),
      fulfillFunctionId: '0x12345678',
      encodedParameters: '0x',
      parameters: { from: 'ETH' },
      template: { nodeAddress: word('3', 40), endpointId: word('c', 64), encodedParameters: '0x' },
      oisTitle: 'Currency Converter API',
      endpointName: 'convertToUSD',
      cacheResponses: false,
    },
  ],
  withdrawals: [
    {
      blockNumber: 11,
      logIndex: 1,
      transactionHash: word('e', 64),
      id: word('f', 64),
      nodeAddress: word('3', 40),
      sponsor: word('1', 40),
      sponsorWallet: word('2', 40),
    },
  ],
  traceparents: { [word('b', 64)]: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` },
};

const output: ShardOutput = {
  chainId: '31337',
  sponsorWallet: word('2', 40),
  outcomes: [
    {
      id: word('b', 64),
      kind: 'api',
      outcome: 'fulfilled',
      txHash: word('9', 64),
      nonce: 0,
      provider: 'local',
      replacement: true,
      api: { outcome: '2xx', durationMs: 3 },
    },
  ],
  apiCalls: 1,
  cacheHits: 0,
  rpcCalls: 7,
  timings: { apiMs: 3, planMs: 2, sendMs: 1 },
  gasPriceWei: '2000000000',
};

describe('the coordinator <-> worker contract', () => {
  it('a shard the coordinator wrote is read back unchanged by the worker', () => {
    expect(parseShardInput(JSON.stringify(shard))).to.deep.equal({ shard });
  });

  it('a shard that is not JSON, of another format or malformed is refused with the reason', () => {
    expect(parseShardInput('{')).to.deep.equal({ error: 'not JSON' });
    expect(parseShardInput(JSON.stringify({ ...shard, format: 'oracle-node/shard@9' }))).to.deep.equal({
      error: 'unknown shard format oracle-node/shard@9',
    });
    const badCall = { ...shard, apiCalls: [{ ...shard.apiCalls[0]!, sponsorWallet: 'me' }] };
    expect(parseShardInput(JSON.stringify(badCall)))
      .to.have.property('error')
      .that.matches(/apiCalls\.0\.sponsorWallet/);
    expect(parseShardInput(JSON.stringify({ ...shard, gasTarget: { type: 2, maxFeePerGas: '-1' } })))
      .to.have.property('error')
      .that.matches(/gasTarget/);
  });

  it("the worker's output is read from the last well-formed JSON line of its log", () => {
    expect(parseShardOutput(undefined)).to.equal(undefined);
    expect(parseShardOutput('{"level":30}\nplain')).to.equal(undefined);
    expect(parseShardOutput(`${JSON.stringify(output)}\n{"level":30}\n`)).to.deep.equal(output);
    // A line that looks like an output but breaks the contract is not taken for one.
    expect(parseShardOutput('{"chainId":"1","outcomes":[]}\n{"level":30}\n')).to.equal(undefined);
    const badOutcome = { ...output, outcomes: [{ ...output.outcomes[0], outcome: 'maybe' }] };
    expect(parseShardOutput(JSON.stringify(badOutcome))).to.equal(undefined);
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
});
