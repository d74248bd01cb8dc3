// The pure steps of a chain's plan (src/node/cycle-plan.ts): the requests confirmed against the confirmed head, the
// shards by sponsor wallet, and the authorizers' window for the traces.
import { expect } from 'chai';
import type { ProviderDiscovery } from '../../../src/chain/discovery.js';
import type { DiscoveredApiCall } from '../../../src/chain/requests.js';
import type { ChainConfig, WithdrawalRequest } from '../../../src/chain/types.js';
import type { Config } from '../../../src/config/index.js';
import type { CycleWindow, PlanContext } from '../../../src/node/cycle-context.js';
import { authorizationWindow, type Confirmed, confirm, shardBySponsorWallet } from '../../../src/node/cycle-plan.js';
import type { DiscoveredProvider } from '../../../src/node/cycle-providers.js';
import { silentLogger } from '../../../src/node/logger.js';

const CHAIN_ID = '31337';
const wallet = (n: number) => `0x${String(n).padStart(40, '0')}`;
const requestId = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;

function call(n: number, overrides: Partial<DiscoveredApiCall> = {}): DiscoveredApiCall {
  return {
    type: 'full',
    id: requestId(n),
    nodeAddress: wallet(9),
    requesterRequestCount: String(n),
    chainId: CHAIN_ID,
    requester: wallet(8),
    endpointId: requestId(1000),
    templateId: null,
    sponsor: wallet(1),
    sponsorWallet: wallet(101),
    fulfillAddress: wallet(7),
    fulfillFunctionId: '0x12345678',
    encodedParameters: '0x',
    parameters: {},
    oisTitle: 'Test',
    endpointName: 'price',
    cacheResponses: false,
    blockNumber: 100,
    logIndex: n,
    transactionHash: requestId(5000 + n),
    ...overrides,
  };
}

function withdrawal(n: number, overrides: Partial<WithdrawalRequest> = {}): WithdrawalRequest {
  return {
    id: requestId(2000 + n),
    nodeAddress: wallet(9),
    sponsor: wallet(1),
    sponsorWallet: wallet(101),
    blockNumber: 100,
    logIndex: 50 + n,
    transactionHash: requestId(6000 + n),
    ...overrides,
  };
}

function provider(name: string, head: number, discovery: Partial<ProviderDiscovery> = {}): DiscoveredProvider {
  return {
    name,
    url: `http://${name}.invalid`,
    client: undefined as never,
    head,
    discovery: { currentBlock: head, apiCalls: [], withdrawals: [], dropped: [], undecodableLogs: 0, ...discovery },
    summary: { chainId: CHAIN_ID, provider: name, ok: true, rpcCalls: 0 },
  };
}

function context(
  options: {
    maxConcurrency?: number;
    minConfirmations?: number;
    standbyDelayBlocks?: number;
    window?: CycleWindow;
  } = {},
): PlanContext {
  const chain = {
    id: CHAIN_ID,
    maxConcurrency: options.maxConcurrency ?? 100,
    minConfirmations: options.minConfirmations ?? 0,
    providers: { a: { url: 'http://a.invalid' }, b: { url: 'http://b.invalid' } },
  } as unknown as ChainConfig;
  return {
    config: { ois: [] } as unknown as Config,
    chain,
    deps: {
      executor: undefined as never,
      logger: silentLogger,
      wallets: undefined as never,
      ...(options.standbyDelayBlocks !== undefined ? { standbyDelayBlocks: options.standbyDelayBlocks } : {}),
      ...(options.window ? { window: options.window } : {}),
    },
    makeClient: () => undefined as never,
    memory: undefined as never,
    windowLogs: undefined,
  };
}

describe('the plan of a chain (cycle-plan.ts)', () => {
  describe('confirm', () => {
    it('takes the lowest head of the healthy providers and aggregates each request once, first provider first', () => {
      const first = call(1, { parameters: { from: 'a' } });
      const sameFromB = call(1, { parameters: { from: 'b' } });
      const confirmed = confirm(context(), [
        provider('a', 105, { apiCalls: [first] }),
        provider('b', 103, { apiCalls: [sameFromB, call(2)] }),
      ]);
      expect(confirmed.head).to.equal(103);
      expect(confirmed.discovered).to.equal(2);
      expect([...confirmed.aggregated.keys()]).to.deep.equal([requestId(1), requestId(2)]);
      expect(confirmed.aggregated.get(requestId(1))!.parameters).to.deep.equal({ from: 'a' });
      expect(confirmed.kept.map((c) => c.id)).to.deep.equal([requestId(1), requestId(2)]);
      expect(confirmed.waiting).to.deep.equal([]);
      expect(confirmed.yielded).to.deep.equal([]);
    });

    it('keeps back what lacks its confirmations against the confirmed head, not the highest one', () => {
      const confirmed = confirm(context({ minConfirmations: 3 }), [
        provider('a', 110, {
          apiCalls: [call(1, { blockNumber: 100 }), call(2, { blockNumber: 105, sponsor: wallet(2) })],
        }),
        provider('b', 106),
      ]);
      expect(confirmed.head).to.equal(106);
      expect(confirmed.kept.map((c) => c.id)).to.deep.equal([requestId(1)]);
      expect(confirmed.waiting.map((c) => c.id)).to.deep.equal([requestId(2)]);
    });

    it('applies the chain limit: what is over it is discovered but not aggregated', () => {
      const confirmed = confirm(context({ maxConcurrency: 2 }), [
        provider('a', 100, { apiCalls: [call(1), call(2), call(3)] }),
      ]);
      expect(confirmed.discovered).to.equal(3);
      expect(confirmed.aggregated.size).to.equal(2);
    });

    it('leaves out the requests a window holds in flight, before the limit counts them', () => {
      const window: CycleWindow = {
        logsOf: () => undefined,
        holds: (_chainId, id) => id === requestId(1),
        inFlightNonces: () => [],
      };
      const confirmed = confirm(context({ maxConcurrency: 1, window }), [
        provider('a', 100, { apiCalls: [call(1), call(2)] }),
      ]);
      expect(confirmed.discovered).to.equal(1);
      expect(confirmed.kept.map((c) => c.id)).to.deep.equal([requestId(2)]);
      expect(confirmed.open[0]!.discovery.apiCalls.map((c) => c.id)).to.deep.equal([requestId(2)]);
    });

    it("leaves a standby's requests within its delay to the primary, and its withdrawals too", () => {
      const confirmed = confirm(context({ standbyDelayBlocks: 5 }), [
        provider('a', 103, {
          apiCalls: [call(1, { blockNumber: 100 })],
          withdrawals: [withdrawal(1, { blockNumber: 100 }), withdrawal(2, { blockNumber: 90 })],
        }),
      ]);
      expect(confirmed.kept).to.deep.equal([]);
      expect(confirmed.leftToPrimary.map((c) => c.id)).to.deep.equal([requestId(1)]);
      expect(confirmed.withdrawals.map((w) => w.id)).to.deep.equal([requestId(2002)]);
    });
  });

  describe('shardBySponsorWallet', () => {
    const confirmedOf = (kept: DiscoveredApiCall[], withdrawals: WithdrawalRequest[] = []): Confirmed => ({
      head: 120,
      open: [],
      discovered: kept.length,
      aggregated: new Map(kept.map((c) => [c.id, c])),
      withdrawals,
      kept,
      waiting: [],
      leftToPrimary: [],
      yielded: [],
      deferred: [],
    });

    it('makes one shard per sponsor wallet, its requests and withdrawals in log order, with the healthy providers and the head', () => {
      const healthy = [provider('a', 120), provider('b', 121)];
      const other = { sponsor: wallet(2), sponsorWallet: wallet(102) };
      const shards = shardBySponsorWallet(
        context(),
        healthy,
        confirmedOf(
          [call(3, { blockNumber: 101 }), call(1, { ...other, blockNumber: 100 }), call(2, { blockNumber: 100 })],
          [withdrawal(1, { blockNumber: 99 })],
        ),
      );
      // In the order of each wallet's first request in the logs.
      expect(shards.map((s) => s.sponsorWallet)).to.deep.equal([wallet(102), wallet(101)]);
      const [theirs, mine] = shards;
      expect(mine!.apiCalls.map((c) => c.id)).to.deep.equal([requestId(2), requestId(3)]);
      expect(mine!.withdrawals.map((w) => w.id)).to.deep.equal([requestId(2001)]);
      expect(mine).to.include({ chainId: CHAIN_ID, sponsor: wallet(1), currentBlock: 120 });
      expect(mine!.providers).to.deep.equal(['a', 'b']);
      expect(mine!.inFlightNonces).to.equal(undefined);
      expect(theirs!.apiCalls.map((c) => c.id)).to.deep.equal([requestId(1)]);
    });

    it("gives a wallet's shard the nonces the window holds in flight at the confirmed head", () => {
      const asked: [string, string, number][] = [];
      const window: CycleWindow = {
        logsOf: () => undefined,
        holds: () => false,
        inFlightNonces: (chainId, sponsorWallet, head) => {
          asked.push([chainId, sponsorWallet, head]);
          return sponsorWallet === wallet(101) ? [7, 8] : [];
        },
      };
      const shards = shardBySponsorWallet(
        context({ window }),
        [provider('a', 120)],
        confirmedOf([call(1), call(2, { sponsor: wallet(2), sponsorWallet: wallet(102) })]),
      );
      expect(shards[0]!.inFlightNonces).to.deep.equal([7, 8]);
      expect(shards[1]!).to.not.have.property('inFlightNonces');
      expect(asked).to.deep.equal([
        [CHAIN_ID, wallet(101), 120],
        [CHAIN_ID, wallet(102), 120],
      ]);
    });

    it('makes no shard without requests or withdrawals', () => {
      expect(shardBySponsorWallet(context(), [provider('a', 120)], confirmedOf([]))).to.deep.equal([]);
    });
  });

  describe('authorizationWindow', () => {
    it('spans the widest window of the providers that asked the authorizers, and is absent when none did', () => {
      expect(authorizationWindow([undefined, undefined])).to.deep.equal({});
      expect(authorizationWindow([{ startMs: 20, endMs: 30 }, undefined, { startMs: 10, endMs: 25 }])).to.deep.equal({
        authorization: { startMs: 10, endMs: 30 },
      });
    });
  });
});
