// Contract interfaces against the reference selectors and the published ABIs; log decoding; range splitting.
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { Interface, zeroPadValue } from 'ethers';
import { dryRunInterface, rrpInterface } from '../../../src/chain/contracts.js';
import { decodeLogs, fetchNodeLogs, type RawLog } from '../../../src/chain/logs.js';
import { RpcClient } from '../../../src/chain/rpc.js';

const fixtures = new URL('../../fixtures/airnode/', import.meta.url);
const selectors = JSON.parse(readFileSync(new URL('vectors/protocol-selectors.json', fixtures), 'utf8')) as {
  eventTopic0: Record<string, string>;
  functionSelectors: Record<string, string>;
};

const RRP = '0x5FbDB2315678afecb367f032d93F642f64180aa3';
const NODE = '0xA30CA71Ba54E83127214D3271aEA8F5D6bD4Dace';

describe('protocol interfaces', () => {
  it('have the reference event topics and function selectors', () => {
    for (const [signature, topic] of Object.entries(selectors.eventTopic0)) {
      const name = signature.slice(0, signature.indexOf('('));
      expect(rrpInterface.getEvent(name)?.topicHash, signature).to.equal(topic);
    }
    for (const [signature, selector] of Object.entries(selectors.functionSelectors)) {
      const name = signature.slice(0, signature.indexOf('('));
      if (['isAuthorizedV0', 'isAuthorized', 'multicall'].includes(name)) continue;
      expect(rrpInterface.getFunction(name)?.selector, signature).to.equal(selector);
    }
  });

  it('match the published AirnodeRrpV0 and DryRun ABIs', () => {
    for (const [file, iface] of [
      ['AirnodeRrpV0.abi.json', rrpInterface],
      ['AirnodeRrpV0DryRun.abi.json', dryRunInterface],
    ] as const) {
      const raw = JSON.parse(readFileSync(new URL(`protocol/${file}`, fixtures), 'utf8'));
      const published = new Interface(Array.isArray(raw) ? raw : raw.abi);
      published.forEachFunction((fn) => {
        expect(iface.getFunction(fn.name)?.format('sighash'), fn.name).to.equal(fn.format('sighash'));
      });
    }
  });
});

function fullRequestLog(overrides: Partial<RawLog> & { requestId?: string; blockNumber?: string } = {}): RawLog {
  const event = rrpInterface.getEvent('MadeFullRequest')!;
  const requestId = overrides.requestId ?? `0x${'11'.repeat(32)}`;
  const encoded = rrpInterface.encodeEventLog(event, [
    NODE,
    requestId,
    1,
    31337,
    '0x0000000000000000000000000000000000000001',
    `0x${'22'.repeat(32)}`,
    '0x0000000000000000000000000000000000000002',
    '0x0000000000000000000000000000000000000003',
    '0x0000000000000000000000000000000000000004',
    '0xaabbccdd',
    '0x',
  ]);
  return {
    address: RRP,
    topics: encoded.topics,
    data: encoded.data,
    blockNumber: overrides.blockNumber ?? '0x10',
    logIndex: '0x0',
    transactionHash: `0x${'33'.repeat(32)}`,
    ...overrides,
  };
}

describe('decodeLogs', () => {
  it('decodes requests, drops nothing itself, and counts foreign or malformed logs', () => {
    const fulfilled = rrpInterface.encodeEventLog(rrpInterface.getEvent('FulfilledRequest')!, [
      NODE,
      `0x${'11'.repeat(32)}`,
      '0x1234',
    ]);
    const decoded = decodeLogs(
      [
        fullRequestLog(),
        { ...fullRequestLog(), address: '0x0000000000000000000000000000000000000009' },
        { ...fullRequestLog(), data: '0xdeadbeef' },
        {
          address: RRP,
          topics: fulfilled.topics,
          data: fulfilled.data,
          blockNumber: '0x11',
          logIndex: '0x1',
          transactionHash: '0x',
        },
      ],
      RRP,
    );
    expect(decoded.apiCalls).to.have.length(1);
    expect(decoded.apiCalls[0]).to.include({
      type: 'full',
      nodeAddress: NODE,
      blockNumber: 16,
      fulfillFunctionId: '0xaabbccdd',
    });
    expect([...decoded.finishedRequestIds]).to.deep.equal([`0x${'11'.repeat(32)}`]);
    expect(decoded.undecodable).to.equal(2);
  });
});

describe('fetchNodeLogs', () => {
  it('splits the block range when the provider refuses a large one', async () => {
    const ranges: [number, number][] = [];
    const client = new RpcClient('http://127.0.0.1:1', { attempts: 1 }, async (_url, body) => {
      const request = JSON.parse(body) as {
        id: number;
        params: [{ fromBlock: string; toBlock: string; topics: unknown[] }];
      };
      const from = Number(request.params[0].fromBlock);
      const to = Number(request.params[0].toBlock);
      expect(request.params[0].topics).to.deep.equal([null, zeroPadValue(NODE, 32).toLowerCase()]);
      if (to - from + 1 > 100)
        return { jsonrpc: '2.0', id: request.id, error: { code: -32005, message: 'block range too large' } };
      ranges.push([from, to]);
      return { jsonrpc: '2.0', id: request.id, result: [fullRequestLog({ blockNumber: `0x${from.toString(16)}` })] };
    });
    const logs = await fetchNodeLogs(client, { rrpAddress: RRP, nodeAddress: NODE, fromBlock: 0, toBlock: 300 });
    expect(ranges[0]![0]).to.equal(0);
    expect(ranges.at(-1)![1]).to.equal(300);
    for (let i = 1; i < ranges.length; i++) expect(ranges[i]![0]).to.equal(ranges[i - 1]![1] + 1);
    expect(logs).to.have.length(ranges.length);
  });

  it('honours a configured maximum range without asking for more', async () => {
    let calls = 0;
    const client = new RpcClient('http://127.0.0.1:1', {}, async (_url, body) => {
      calls++;
      const request = JSON.parse(body) as { id: number; params: [{ fromBlock: string; toBlock: string }] };
      expect(Number(request.params[0].toBlock) - Number(request.params[0].fromBlock)).to.be.lessThan(50);
      return { jsonrpc: '2.0', id: request.id, result: [] };
    });
    await fetchNodeLogs(client, { rrpAddress: RRP, nodeAddress: NODE, fromBlock: 0, toBlock: 199, maxRange: 50 });
    expect(calls).to.equal(4);
  });

  it('rejects a non-array answer (a lying provider)', async () => {
    const client = new RpcClient('http://127.0.0.1:1', { attempts: 1 }, async () => ({
      jsonrpc: '2.0',
      id: 1,
      result: 'nope',
    }));
    let error: unknown;
    try {
      await fetchNodeLogs(client, { rrpAddress: RRP, nodeAddress: NODE, fromBlock: 0, toBlock: 1 });
    } catch (e) {
      error = e;
    }
    expect(String(error)).to.match(/not an array/);
  });
});

describe('decodeLogs against ethers (word-level decoder)', () => {
  it('decodes every event field exactly as the ABI decoder does, with any parameter length', () => {
    for (let length = 0; length < 70; length += 7) {
      const parameters = `0x${'ab'.repeat(length)}`;
      for (const name of ['MadeFullRequest', 'MadeTemplateRequest'] as const) {
        const event = rrpInterface.getEvent(name)!;
        const values = [
          NODE,
          `0x${'12'.repeat(32)}`,
          2n ** 200n + BigInt(length),
          137,
          '0x00000000000000000000000000000000000000A1',
          `0x${'34'.repeat(32)}`,
          '0x00000000000000000000000000000000000000b2',
          '0x00000000000000000000000000000000000000C3',
          '0x00000000000000000000000000000000000000d4',
          '0xdeadbeef',
          parameters,
        ];
        const encoded = rrpInterface.encodeEventLog(event, values);
        const log = { address: RRP, ...encoded, blockNumber: '0x1', logIndex: '0x2', transactionHash: '0x' };
        const parsed = rrpInterface.parseLog(encoded)!;
        const [request] = decodeLogs([log], RRP).apiCalls;
        expect(request).to.include({
          id: String(parsed.args.getValue('requestId')),
          nodeAddress: parsed.args.getValue('airnode'),
          requesterRequestCount: String(parsed.args.getValue('requesterRequestCount')),
          chainId: '137',
          requester: parsed.args.getValue('requester'),
          sponsor: parsed.args.getValue('sponsor'),
          sponsorWallet: parsed.args.getValue('sponsorWallet'),
          fulfillAddress: parsed.args.getValue('fulfillAddress'),
          fulfillFunctionId: '0xdeadbeef',
          encodedParameters: parameters,
        });
        expect(name === 'MadeFullRequest' ? request!.endpointId : request!.templateId).to.equal(`0x${'34'.repeat(32)}`);
        // Trailing garbage, a short word or a wrong offset are rejected.
        expect(decodeLogs([{ ...log, data: `${log.data}00` }], RRP).undecodable).to.equal(1);
        expect(decodeLogs([{ ...log, data: log.data.slice(0, 200) }], RRP).undecodable).to.equal(1);
      }
    }
  });

  it('decodes withdrawal events', () => {
    const requested = rrpInterface.encodeEventLog(rrpInterface.getEvent('RequestedWithdrawal')!, [
      NODE,
      '0x00000000000000000000000000000000000000A1',
      `0x${'56'.repeat(32)}`,
      '0x00000000000000000000000000000000000000b2',
    ]);
    const fulfilled = rrpInterface.encodeEventLog(rrpInterface.getEvent('FulfilledWithdrawal')!, [
      NODE,
      '0x00000000000000000000000000000000000000A1',
      `0x${'56'.repeat(32)}`,
      '0x00000000000000000000000000000000000000b2',
      5,
    ]);
    const position = { blockNumber: '0x1', logIndex: '0x0', transactionHash: '0x' };
    const decoded = decodeLogs(
      [
        { address: RRP, ...requested, ...position },
        { address: RRP, ...fulfilled, ...position },
      ],
      RRP,
    );
    expect(decoded.withdrawals).to.deep.equal([
      {
        blockNumber: 1,
        logIndex: 0,
        transactionHash: '0x',
        id: `0x${'56'.repeat(32)}`,
        nodeAddress: NODE,
        sponsor: '0x00000000000000000000000000000000000000A1',
        sponsorWallet: '0x00000000000000000000000000000000000000b2',
      },
    ]);
    expect([...decoded.fulfilledWithdrawalIds]).to.deep.equal([`0x${'56'.repeat(32)}`]);
  });
});
