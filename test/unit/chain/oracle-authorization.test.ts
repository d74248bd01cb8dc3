// Gas price oracle order and fallback, and authorization rules, against a scripted JSON-RPC transport.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { AbiCoder } from 'ethers';
import { authorizedOffChain, authorizeRequests, authorizersAreEmpty } from '../../../src/chain/authorization.js';
import { erc721AuthorizerInterface, rrpInterface } from '../../../src/chain/contracts.js';
import { getGasTarget } from '../../../src/chain/gas-price.js';
import { RpcClient } from '../../../src/chain/rpc.js';
import type { ChainConfig } from '../../../src/chain/types.js';
import { FileResponseCache } from '../../../src/node/cache.js';

type Handler = (method: string, params: unknown[]) => unknown;
let urlSeq = 0;
function scripted(handler: Handler): { client: RpcClient; methods: string[] } {
  const methods: string[] = [];
  const client = new RpcClient(`http://127.0.0.1:1/scripted-${urlSeq++}`, { attempts: 1 }, async (_url, body) => {
    const { id, method, params } = JSON.parse(body) as { id: number; method: string; params: unknown[] };
    methods.push(method);
    try {
      return { jsonrpc: '2.0', id, result: handler(method, params) };
    } catch (error) {
      return { jsonrpc: '2.0', id, error: { code: -32000, message: (error as Error).message } };
    }
  });
  return { client, methods };
}

const constant = { gasPriceStrategy: 'constantGasPrice' as const, gasPrice: { value: 10, unit: 'gwei' as const } };

describe('getGasTarget', () => {
  it('uses the first strategy that works, in order', async () => {
    const { client, methods } = scripted((method) => {
      if (method === 'eth_getBlockByNumber') throw new Error('no blocks here');
      if (method === 'eth_gasPrice') return '0x3b9aca00'; // 1 gwei
      throw new Error(method);
    });
    const target = await getGasTarget(
      client,
      [
        {
          gasPriceStrategy: 'providerRecommendedEip1559GasPrice',
          baseFeeMultiplier: 2,
          priorityFee: { value: 1, unit: 'gwei' },
        },
        { gasPriceStrategy: 'providerRecommendedGasPrice', recommendedGasPriceMultiplier: 1.5 },
        constant,
      ],
      250_000,
    );
    expect(target).to.deep.equal({ type: 0, gasPrice: 1_500_000_000n, gasLimit: 250_000n });
    expect(methods).to.deep.equal(['eth_getBlockByNumber', 'eth_gasPrice']);
  });

  it('falls back to the constant price when every other strategy fails', async () => {
    const { client } = scripted(() => {
      throw new Error('down');
    });
    const target = await getGasTarget(client, [
      { gasPriceStrategy: 'providerRecommendedGasPrice', recommendedGasPriceMultiplier: 1.1 },
      constant,
    ]);
    expect(target).to.deep.equal({ type: 0, gasPrice: 10_000_000_000n });
  });

  it('builds EIP-1559 targets from the base fee, and percentile prices from two blocks', async () => {
    const block = (number: number, prices: number[]) => ({
      number: `0x${number.toString(16)}`,
      baseFeePerGas: '0x64',
      transactions: prices.map((p) => ({ gasPrice: `0x${p.toString(16)}` })),
    });
    const { client } = scripted((method, params) => {
      if (method !== 'eth_getBlockByNumber') throw new Error(method);
      return params[0] === 'latest' ? block(100, [10, 20, 30, 40, 50]) : block(80, [12, 22, 32, 42, 52]);
    });
    expect(
      await getGasTarget(client, [
        {
          gasPriceStrategy: 'providerRecommendedEip1559GasPrice',
          baseFeeMultiplier: 2,
          priorityFee: { value: 7, unit: 'wei' },
        },
        constant,
      ]),
    ).to.deep.equal({ type: 2, maxPriorityFeePerGas: 7n, maxFeePerGas: 207n });
    expect(
      await getGasTarget(client, [
        {
          gasPriceStrategy: 'latestBlockPercentileGasPrice',
          percentile: 60,
          minTransactionCount: 5,
          pastToCompareInBlocks: 20,
          maxDeviationMultiplier: 2,
        },
        constant,
      ]),
    ).to.deep.equal({ type: 0, gasPrice: 30n });
  });
});

const chain = (authorizers: Partial<ChainConfig['authorizers']>, authorizations: Record<string, string[]> = {}) =>
  ({
    id: '31337',
    authorizers: {
      requesterEndpointAuthorizers: [],
      crossChainRequesterAuthorizers: [],
      requesterAuthorizersWithErc721: [],
      crossChainRequesterAuthorizersWithErc721: [],
      ...authorizers,
    },
    authorizations: { requesterEndpointAuthorizations: authorizations },
  }) as unknown as ChainConfig;

const NODE = '0xA30CA71Ba54E83127214D3271aEA8F5D6bD4Dace';
const RRP = '0x5FbDB2315678afecb367f032d93F642f64180aa3';
const requests = Array.from({ length: 12 }, (_, i) => ({
  id: `0x${i.toString(16).padStart(64, '0')}`,
  endpointId: `0x${'ee'.repeat(32)}`,
  sponsor: '0x0000000000000000000000000000000000000002',
  requester: `0x${(i + 1).toString(16).padStart(40, '0')}`,
}));

describe('authorizeRequests', () => {
  it('is open when all authorizer lists are empty, without any RPC call', async () => {
    const { client, methods } = scripted(() => {
      throw new Error('no calls expected');
    });
    expect(authorizersAreEmpty(chain({}).authorizers)).to.equal(true);
    const allowed = await authorizeRequests(client, { chain: chain({}), rrpAddress: RRP, nodeAddress: NODE, requests });
    expect(allowed.size).to.equal(12);
    expect(methods).to.deep.equal([]);
  });

  it('lets `authorizations` decide first, then asks the authorizers in batches of 10', async () => {
    const batches: number[] = [];
    const { client } = scripted((_method, params) => {
      const data = (params[0] as { data: string }).data;
      const decoded = rrpInterface.decodeFunctionData('checkAuthorizationStatuses', data);
      const ids = decoded[2] as string[];
      batches.push(ids.length);
      // Authorize even-numbered requests only.
      return rrpInterface.encodeFunctionResult('checkAuthorizationStatuses', [ids.map((id) => BigInt(id) % 2n === 0n)]);
    });
    const offChain = { [requests[1]!.endpointId]: [requests[1]!.requester] };
    expect([...authorizedOffChain(requests, { requesterEndpointAuthorizations: offChain })]).to.deep.equal([
      requests[1]!.id,
    ]);
    const allowed = await authorizeRequests(client, {
      chain: chain({ requesterEndpointAuthorizers: ['0x0000000000000000000000000000000000000099'] }, offChain),
      rrpAddress: RRP,
      nodeAddress: NODE,
      requests,
    });
    expect(batches).to.deep.equal([10, 1]);
    expect([...allowed].sort()).to.deep.equal(
      requests
        .filter((_, i) => i % 2 === 0 || i === 1)
        .map((r) => r.id)
        .sort(),
    );
  });

  it('asks ERC721 authorizers through one multicall per batch (OR over tokens)', async () => {
    const tokens = ['0x00000000000000000000000000000000000000a1', '0x00000000000000000000000000000000000000a2'];
    const { client } = scripted((_method, params) => {
      const data = (params[0] as { data: string }).data;
      const [calls] = erc721AuthorizerInterface.decodeFunctionData('multicall', data) as unknown as [string[]];
      const results = calls.map((call) => {
        const [, , requester, token] = erc721AuthorizerInterface.decodeFunctionData('isAuthorized', call);
        // requester 3 holds token a2
        const ok = BigInt(requester as string) === 3n && String(token).toLowerCase() === tokens[1];
        return AbiCoder.defaultAbiCoder().encode(['bool'], [ok]);
      });
      return erc721AuthorizerInterface.encodeFunctionResult('multicall', [results]);
    });
    const allowed = await authorizeRequests(client, {
      chain: chain({
        requesterAuthorizersWithErc721: [
          { erc721s: tokens, RequesterAuthorizerWithErc721: '0x0000000000000000000000000000000000000077' },
        ],
      }),
      rrpAddress: RRP,
      nodeAddress: NODE,
      requests,
    });
    expect([...allowed]).to.deep.equal([requests[2]!.id]);
  });

  it('serves nothing when the authorizer cannot answer', async () => {
    const { client } = scripted(() => {
      throw new Error('execution reverted');
    });
    const allowed = await authorizeRequests(client, {
      chain: chain({ requesterEndpointAuthorizers: ['0x0000000000000000000000000000000000000099'] }),
      rrpAddress: RRP,
      nodeAddress: NODE,
      requests,
    });
    expect(allowed.size).to.equal(0);
  });
});

describe('FileResponseCache', () => {
  it('stores by request id in a directory and ignores unreadable entries', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cache-'));
    const cache = new FileResponseCache(join(dir, 'nested'));
    const id = `0x${'ab'.repeat(32)}`;
    expect(await cache.get(id)).to.equal(undefined);
    await cache.set(id, { encodedValue: '0x01', signature: '0x02' });
    expect(await new FileResponseCache(join(dir, 'nested')).get(id.toUpperCase().replace('0X', '0x'))).to.deep.equal({
      encodedValue: '0x01',
      signature: '0x02',
    });
    writeFileSync(join(dir, 'nested', `requestId-0x${'cd'.repeat(32)}`), 'not json');
    expect(await cache.get(`0x${'cd'.repeat(32)}`)).to.equal(undefined);
    let error: unknown;
    try {
      await cache.set('../escape', { encodedValue: '0x', signature: '0x' });
    } catch (e) {
      error = e;
    }
    expect(String(error)).to.match(/requestId/);
  });
});
