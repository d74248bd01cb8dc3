import { expect } from 'chai';
import type { DecodedLogs } from '../../../src/chain/logs.js';
import {
  applyChainLimit,
  discoverRequests,
  filterByMinConfirmations,
  MAX_ENCODED_PARAMETERS_BYTES,
  parseMinConfirmations,
  withdrawalsPastStandbyDelay,
} from '../../../src/chain/requests.js';
import type { ApiCallRequest, WithdrawalRequest } from '../../../src/chain/types.js';
import { decodeParameters, encodeParameters } from '../../../src/ois/abi.js';
import {
  deriveEndpointId,
  deriveFullRequestId,
  deriveTemplateIdV0,
  deriveTemplateRequestId,
} from '../../../src/protocol/ids.js';

const RRP = '0x5FbDB2315678afecb367f032d93F642f64180aa3';
const NODE = '0xA30CA71Ba54E83127214D3271aEA8F5D6bD4Dace';
const REQUESTER = '0x0000000000000000000000000000000000000001';
const SPONSOR = '0x0000000000000000000000000000000000000002';
const SPONSOR_WALLET = '0x0000000000000000000000000000000000000003';
const FULFILL = '0x0000000000000000000000000000000000000004';
const ENDPOINT = deriveEndpointId('Test', 'price').toLowerCase();
const triggers = [{ endpointId: ENDPOINT, oisTitle: 'Test', endpointName: 'price', cacheResponses: false }];

let nextCount = 1;
function fullRequest(overrides: Partial<ApiCallRequest> = {}): ApiCallRequest {
  const base = {
    type: 'full' as const,
    nodeAddress: NODE,
    requesterRequestCount: String(nextCount++),
    chainId: '31337',
    requester: REQUESTER,
    endpointId: ENDPOINT,
    templateId: null,
    sponsor: SPONSOR,
    sponsorWallet: SPONSOR_WALLET,
    fulfillAddress: FULFILL,
    fulfillFunctionId: '0xaabbccdd',
    encodedParameters: encodeParameters([{ type: 'string', name: 'coin', value: 'ETH' }]),
    parameters: {},
    blockNumber: 10,
    logIndex: 0,
    transactionHash: '0x',
    ...overrides,
  };
  const id = deriveFullRequestId({
    chainId: '31337',
    rrpAddress: RRP,
    requester: base.requester,
    requesterRequestCount: base.requesterRequestCount,
    nodeAddress: base.nodeAddress,
    endpointId: base.endpointId!,
    sponsor: base.sponsor,
    sponsorWallet: base.sponsorWallet,
    fulfillAddress: base.fulfillAddress,
    fulfillFunctionId: base.fulfillFunctionId,
    parameters: base.encodedParameters,
  }).toLowerCase();
  return { id, ...base, ...(overrides.id ? { id: overrides.id } : {}) };
}

function decoded(apiCalls: ApiCallRequest[], extra: Partial<DecodedLogs> = {}): DecodedLogs {
  return {
    apiCalls,
    withdrawals: [],
    finishedRequestIds: new Set(),
    fulfilledWithdrawalIds: new Set(),
    undecodable: 0,
    ...extra,
  };
}

const discover = (logs: DecodedLogs, templates = new Map()) =>
  discoverRequests({
    decoded: logs,
    chainId: '31337',
    rrpAddress: RRP,
    nodeAddress: NODE,
    templates,
    triggers,
    decodeParameters,
    sponsorWalletOf: () => SPONSOR_WALLET,
  });

describe('discoverRequests', () => {
  it('keeps a valid full request with decoded parameters and its trigger', () => {
    const request = fullRequest();
    const { apiCalls, dropped } = discover(decoded([request]));
    expect(dropped).to.deep.equal([]);
    expect(apiCalls).to.have.length(1);
    expect(apiCalls[0]).to.include({ id: request.id, oisTitle: 'Test', endpointName: 'price', cacheResponses: false });
    expect(apiCalls[0]!.parameters).to.deep.equal({ coin: 'ETH' });
    expect(apiCalls[0]!.errorMessage).to.equal(undefined);
  });

  it('drops finished requests, undecodable parameters, unknown endpoints and foreign sponsor wallets', () => {
    const finished = fullRequest();
    const undecodable = fullRequest({ encodedParameters: '0x1234' });
    const unknown = fullRequest({ endpointId: `0x${'99'.repeat(32)}` });
    const wrongWallet = fullRequest({ sponsorWallet: '0x0000000000000000000000000000000000000005' });
    const { apiCalls, dropped } = discover(
      decoded([finished, undecodable, unknown, wrongWallet], { finishedRequestIds: new Set([finished.id]) }),
    );
    expect(apiCalls).to.deep.equal([]);
    expect(dropped.map((d) => d.id)).to.deep.equal([undecodable.id, unknown.id, wrongWallet.id]);
  });

  it('turns a request with a wrong id into a fail with the reference message', () => {
    const request = { ...fullRequest(), id: `0x${'ab'.repeat(32)}` };
    const { apiCalls } = discover(decoded([request]));
    expect(apiCalls[0]!.errorMessage).to.equal(`RequestId is invalid. Request ID:0x${'ab'.repeat(32)}`);
  });

  it('merges template parameters under request parameters and verifies the template id', () => {
    const templateParameters = encodeParameters([
      { type: 'string', name: 'coin', value: 'BTC' },
      { type: 'string', name: '_times', value: '10' },
    ]);
    const templateId = deriveTemplateIdV0(NODE, ENDPOINT, templateParameters).toLowerCase();
    const requestParameters = encodeParameters([{ type: 'string', name: 'coin', value: 'ETH' }]);
    const common = {
      chainId: '31337',
      rrpAddress: RRP,
      requester: REQUESTER,
      requesterRequestCount: '77',
      sponsor: SPONSOR,
      sponsorWallet: SPONSOR_WALLET,
      fulfillAddress: FULFILL,
      fulfillFunctionId: '0xaabbccdd',
      parameters: requestParameters,
    };
    const request: ApiCallRequest = {
      ...fullRequest(),
      type: 'template',
      endpointId: null,
      templateId,
      requesterRequestCount: '77',
      encodedParameters: requestParameters,
      id: deriveTemplateRequestId({ ...common, templateId }).toLowerCase(),
    };
    const templates = new Map([
      [templateId, { nodeAddress: NODE, endpointId: ENDPOINT, encodedParameters: templateParameters }],
    ]);
    const { apiCalls } = discover(decoded([request]), templates);
    expect(apiCalls[0]!.parameters).to.deep.equal({ coin: 'ETH', _times: '10' });
    expect(apiCalls[0]!.endpointId).to.equal(ENDPOINT);
    expect(apiCalls[0]!.errorMessage).to.equal(undefined);

    const tampered = new Map([
      [templateId, { nodeAddress: NODE, endpointId: ENDPOINT, encodedParameters: requestParameters }],
    ]);
    expect(discover(decoded([request]), tampered).apiCalls[0]!.errorMessage).to.match(/^Invalid template ID:/);
    expect(discover(decoded([request]), new Map()).dropped[0]!.reason).to.equal('template not found');
  });

  it("fails a request whose parameters (with its template's) are over the bound, without decoding them", () => {
    const coin = (length: number) => encodeParameters([{ type: 'string', name: 'coin', value: 'E'.repeat(length) }]);
    // The encoding's overhead: header, name, offset and length words (4 x 32 bytes).
    const atBound = fullRequest({ encodedParameters: coin(MAX_ENCODED_PARAMETERS_BYTES - 128) });
    const overBound = fullRequest({ encodedParameters: coin(MAX_ENCODED_PARAMETERS_BYTES - 127) });
    const megabyte = fullRequest({ encodedParameters: coin(1_100_000) });
    let decodedCalls = 0;
    const { apiCalls, dropped } = discoverRequests({
      decoded: decoded([atBound, overBound, megabyte]),
      chainId: '31337',
      rrpAddress: RRP,
      nodeAddress: NODE,
      templates: new Map(),
      triggers,
      decodeParameters: (encoded) => {
        decodedCalls++;
        return decodeParameters(encoded);
      },
      sponsorWalletOf: () => SPONSOR_WALLET,
    });
    expect(dropped).to.deep.equal([]);
    expect(decodedCalls).to.equal(1);
    expect(apiCalls.map((call) => call.errorMessage)).to.deep.equal([
      undefined,
      `Parameters are ${MAX_ENCODED_PARAMETERS_BYTES + 32} bytes, over the limit of ${MAX_ENCODED_PARAMETERS_BYTES}`,
      'Parameters are 1100128 bytes, over the limit of 65536',
    ]);
    expect(apiCalls[1]!.parameters).to.deep.equal({});
    // The template's parameters count too.
    const templateParameters = coin(MAX_ENCODED_PARAMETERS_BYTES - 200);
    const templateId = deriveTemplateIdV0(NODE, ENDPOINT, templateParameters).toLowerCase();
    const requestParameters = coin(100);
    const request: ApiCallRequest = {
      ...fullRequest(),
      type: 'template',
      endpointId: null,
      templateId,
      requesterRequestCount: '78',
      encodedParameters: requestParameters,
      id: deriveTemplateRequestId({
        chainId: '31337',
        rrpAddress: RRP,
        requester: REQUESTER,
        requesterRequestCount: '78',
        sponsor: SPONSOR,
        sponsorWallet: SPONSOR_WALLET,
        fulfillAddress: FULFILL,
        fulfillFunctionId: '0xaabbccdd',
        parameters: requestParameters,
        templateId,
      }).toLowerCase(),
    };
    const templates = new Map([
      [templateId, { nodeAddress: NODE, endpointId: ENDPOINT, encodedParameters: templateParameters }],
    ]);
    expect(discover(decoded([request]), templates).apiCalls[0]!.errorMessage).to.match(/^Parameters are 65728 bytes/);
  });

  it('holds the requests of a sponsor with a pending withdrawal', () => {
    const request = fullRequest();
    const withdrawal: WithdrawalRequest = {
      id: `0x${'77'.repeat(32)}`,
      nodeAddress: NODE,
      sponsor: SPONSOR,
      sponsorWallet: SPONSOR_WALLET,
      blockNumber: 5,
      logIndex: 0,
      transactionHash: '0x',
    };
    const result = discover(decoded([request], { withdrawals: [withdrawal] }));
    expect(result.apiCalls).to.deep.equal([]);
    expect(result.withdrawals).to.deep.equal([withdrawal]);
    expect(result.dropped[0]!.reason).to.equal('sponsor has a pending withdrawal');
    const done = discover(
      decoded([request], { withdrawals: [withdrawal], fulfilledWithdrawalIds: new Set([withdrawal.id]) }),
    );
    expect(done.apiCalls).to.have.length(1);
  });
});

describe('applyChainLimit', () => {
  const items = (n: number, block = 1) =>
    Array.from({ length: n }, (_, i) => ({ blockNumber: block + i, logIndex: 0 }));
  it('shares maxConcurrency between providers, smallest first, oldest requests first', () => {
    const limited = applyChainLimit(
      [
        { apiCalls: items(10), withdrawals: [] },
        { apiCalls: items(2), withdrawals: [] },
        { apiCalls: items(6), withdrawals: items(1, 0) },
      ],
      9,
    );
    // sorted: 2 takes min(3,2)=2; then 7 left for 2 providers: 7-count takes 3; 10-count takes 4
    expect(limited.map((p) => p.apiCalls.length + p.withdrawals.length)).to.deep.equal([4, 2, 3]);
    expect(limited[2]!.withdrawals).to.have.length(1); // block 0 is the oldest
    expect(limited[0]!.apiCalls.map((c) => c.blockNumber)).to.deep.equal([1, 2, 3, 4]);
  });
});

describe('filterByMinConfirmations', () => {
  const r = (sponsor: string, blockNumber: number, min?: string) => ({ sponsor, blockNumber, logIndex: 0, min });
  it('applies the largest requested value per sponsor and keeps nonce order', () => {
    const requests = [r('a', 95), r('a', 99), r('a', 100), r('b', 100, '0'), r('c', 90, '20'), r('c', 99)];
    const { kept, waiting } = filterByMinConfirmations(requests, {
      currentBlock: 100,
      chainMinConfirmations: 2,
      requestedMinConfirmations: (x) => x.min,
    });
    expect(kept).to.deep.equal([r('a', 95), r('b', 100, '0')]);
    expect(waiting).to.have.length(4);
  });

  it("a standby keeps a request only N blocks after its confirmations; the ones in between are the primary's", () => {
    const requests = [r('a', 90), r('a', 96), r('b', 97, '3'), r('c', 99)];
    const input = {
      currentBlock: 100,
      chainMinConfirmations: 1,
      requestedMinConfirmations: (x: { min?: string }) => x.min,
    };
    // a@90: servable since 91, 9 blocks ago; a@96: since 97, 3 blocks ago (and it holds nothing after it); b@97 needs
    // 3 confirmations: servable since 100, 0 blocks ago; c@99: servable since 100.
    const standby = filterByMinConfirmations(requests, { ...input, standbyDelayBlocks: 4 });
    expect(standby.kept).to.deep.equal([r('a', 90)]);
    expect(standby.leftToPrimary).to.deep.equal([r('a', 96), r('b', 97, '3'), r('c', 99)]);
    expect(standby.waiting).to.deep.equal([r('a', 96), r('b', 97, '3'), r('c', 99)]);
    // Exactly N blocks after: kept.
    expect(filterByMinConfirmations(requests, { ...input, standbyDelayBlocks: 3 }).kept).to.deep.equal([
      r('a', 90),
      r('a', 96),
    ]);
    // A primary (0 or absent) is unchanged: everything servable is kept, nothing is left to anyone.
    for (const standbyDelayBlocks of [0, undefined]) {
      const primary = filterByMinConfirmations(requests, { ...input, standbyDelayBlocks });
      expect(primary.kept).to.have.length(4);
      expect(primary.leftToPrimary).to.deep.equal([]);
    }
  });

  it("a standby's sponsor waits behind its first request left to the primary (nonce order); one not confirmed is not the primary's yet", () => {
    const requests = [r('a', 97), r('a', 99), r('a', 100)];
    const { kept, waiting, leftToPrimary } = filterByMinConfirmations(requests, {
      currentBlock: 100,
      chainMinConfirmations: 1,
      requestedMinConfirmations: () => undefined,
      standbyDelayBlocks: 2,
    });
    expect(kept).to.deep.equal([r('a', 97)]);
    expect(leftToPrimary).to.deep.equal([r('a', 99)]);
    expect(waiting).to.deep.equal([r('a', 99), r('a', 100)]);
  });

  it("a standby's withdrawals wait N blocks (the primary serves them at once)", () => {
    const withdrawals = [{ blockNumber: 95 }, { blockNumber: 97 }, { blockNumber: 100 }];
    expect(withdrawalsPastStandbyDelay(withdrawals, { currentBlock: 100, standbyDelayBlocks: 3 })).to.deep.equal([
      { blockNumber: 95 },
      { blockNumber: 97 },
    ]);
    expect(withdrawalsPastStandbyDelay(withdrawals, { currentBlock: 100 })).to.deep.equal(withdrawals);
  });

  it('ignores invalid `_minConfirmations` values', () => {
    expect(parseMinConfirmations('301')).to.equal(undefined);
    expect(parseMinConfirmations('-1')).to.equal(undefined);
    expect(parseMinConfirmations('1.5')).to.equal(undefined);
    expect(parseMinConfirmations('300')).to.equal(300);
    expect(parseMinConfirmations(undefined)).to.equal(undefined);
  });
});

describe('expectedRequestId', () => {
  it('equals the ids.ts derivations for full and template requests', async () => {
    const { expectedRequestId } = await import('../../../src/chain/requests.js');
    for (let i = 0; i < 20; i++) {
      const parameters = encodeParameters([{ type: 'string', name: 'coin', value: 'X'.repeat(i * 7) }]);
      const request = fullRequest({
        requesterRequestCount: String(2n ** BigInt(i * 12) + 1n),
        encodedParameters: parameters,
      });
      const full = deriveFullRequestId({
        chainId: String(1 + i * 1000),
        rrpAddress: RRP,
        requester: request.requester,
        requesterRequestCount: request.requesterRequestCount,
        nodeAddress: NODE,
        endpointId: ENDPOINT,
        sponsor: SPONSOR,
        sponsorWallet: SPONSOR_WALLET,
        fulfillAddress: FULFILL,
        fulfillFunctionId: '0xaabbccdd',
        parameters,
      });
      expect(expectedRequestId(request, String(1 + i * 1000), RRP)).to.equal(full.toLowerCase());
      const templateId = `0x${String(i).padStart(2, '0').repeat(32)}`;
      const template = deriveTemplateRequestId({
        chainId: '5',
        rrpAddress: RRP,
        requester: request.requester,
        requesterRequestCount: request.requesterRequestCount,
        templateId,
        sponsor: SPONSOR,
        sponsorWallet: SPONSOR_WALLET,
        fulfillAddress: FULFILL,
        fulfillFunctionId: '0xaabbccdd',
        parameters,
      });
      expect(expectedRequestId({ ...request, type: 'template', templateId }, '5', RRP)).to.equal(
        template.toLowerCase(),
      );
    }
  });
});
