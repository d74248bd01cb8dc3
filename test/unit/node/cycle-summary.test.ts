// The summary of a cycle (src/node/cycle-summary.ts): the empty summary, a chain's run folded in, a window's cycles
// merged, the strategy failures counted once per chain and strategy, and the requests a plan saw.
import { expect } from 'chai';
import type { ProviderDiscovery } from '../../../src/chain/discovery.js';
import type { DiscoveredApiCall } from '../../../src/chain/requests.js';
import {
  addChainRun,
  type ChainRunReport,
  type CycleSummary,
  countStrategyFailure,
  emptySummary,
  mergeSummaries,
  seenRequests,
} from '../../../src/node/cycle-summary.js';
import type { ShardResult } from '../../../src/node/executor.js';

const requestId = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;
const wallet = (n: number) => `0x${String(n).padStart(40, '0')}`;

function output(overrides: Record<string, unknown> = {}) {
  return {
    chainId: '1',
    sponsorWallet: wallet(101),
    outcomes: [],
    apiCalls: 0,
    cacheHits: 0,
    rpcCalls: 0,
    ...overrides,
  } as unknown as Extract<ShardResult, { ok: true }>['output'];
}

function chainRun(overrides: Partial<ChainRunReport> = {}): ChainRunReport {
  return {
    planned: {
      shards: [],
      providers: [],
      seen: [],
      discovered: 0,
      waiting: 0,
      overLimit: 0,
      gasPriceStrategyFailures: [],
    },
    results: [],
    timings: { discoveryMs: 0, shardsMs: 0 },
    balances: { wallets: [], rpcCalls: 0 },
    ...overrides,
  };
}

describe('the summary of a cycle (cycle-summary.ts)', () => {
  it('starts empty, every count at zero and every list empty', () => {
    const summary = emptySummary();
    expect(summary.requests).to.deep.equal({
      discovered: 0,
      servable: 0,
      waitingForConfirmations: 0,
      overChainLimit: 0,
    });
    expect(summary.transactions).to.deep.equal({
      fulfilled: 0,
      failed: 0,
      withdrawn: 0,
      deferred: 0,
      skipped: 0,
      errors: 0,
      replaced: 0,
    });
    expect(summary).to.not.have.property('role');
    expect(summary.seen).to.deep.equal([]);
    expect(emptySummary()).to.not.equal(summary);
  });

  it('counts a strategy failure once per chain and strategy, adding to what is counted', () => {
    const failures: CycleSummary['gasPriceStrategyFailures'] = [];
    countStrategyFailure(failures, { chainId: '1', strategy: 'latestBlockPercentileGasPrice' });
    countStrategyFailure(failures, { chainId: '1', strategy: 'latestBlockPercentileGasPrice' });
    countStrategyFailure(failures, { chainId: '2', strategy: 'latestBlockPercentileGasPrice' }, 3);
    countStrategyFailure(failures, { chainId: '1', strategy: 'providerRecommendedGasPrice' });
    expect(failures).to.deep.equal([
      { chainId: '1', strategy: 'latestBlockPercentileGasPrice', count: 2 },
      { chainId: '2', strategy: 'latestBlockPercentileGasPrice', count: 3 },
      { chainId: '1', strategy: 'providerRecommendedGasPrice', count: 1 },
    ]);
  });

  it("folds a chain's run into its cycle: counts added, slowest timings, highest gas price, outcomes by kind", () => {
    const summary = emptySummary();
    const gasPrices = new Map<string, bigint>();
    addChainRun(
      summary,
      gasPrices,
      chainRun({
        planned: {
          shards: [{ apiCalls: [1, 2] }, { apiCalls: [3] }],
          providers: [{ chainId: '1', provider: 'a', ok: true, rpcCalls: 4 }],
          seen: [{ chainId: '1', id: requestId(1), state: 'servable', headBlock: 10 }],
          discovered: 5,
          waiting: 1,
          overLimit: 1,
          gasPriceStrategyFailures: [{ chainId: '1', strategy: 'latestBlockPercentileGasPrice' }],
        },
        results: [
          { ok: false, error: 'worker failed' } as ShardResult,
          {
            ok: true,
            output: output({
              apiCalls: 2,
              cacheHits: 1,
              rpcCalls: 6,
              gasPriceWei: '30',
              gasPriceStrategyFailures: [{ strategy: 'latestBlockPercentileGasPrice' }],
              outcomes: [
                { id: requestId(1), kind: 'api', outcome: 'fulfilled' },
                { id: requestId(2), kind: 'api', outcome: 'fulfilled', replacement: true },
                { id: requestId(3), kind: 'api', outcome: 'error' },
              ],
            }),
          },
          {
            ok: true,
            output: output({ gasPriceWei: '20', outcomes: [{ id: requestId(4), kind: 'api', outcome: 'failed' }] }),
          },
        ],
        timings: { discoveryMs: 12.4, shardsMs: 30.6 },
        balances: { wallets: [{ chainId: '1', sponsorWallet: wallet(101), balanceWei: '7' }], rpcCalls: 1 },
      }),
    );
    addChainRun(summary, gasPrices, chainRun({ timings: { discoveryMs: 40, shardsMs: 2 } }));
    expect(summary.requests).to.deep.equal({
      discovered: 5,
      servable: 3,
      waitingForConfirmations: 1,
      overChainLimit: 1,
    });
    expect(summary.shards).to.deep.equal({ total: 2, failed: 1 });
    expect(summary.transactions).to.include({ fulfilled: 1, replaced: 1, errors: 1, failed: 1 });
    expect(summary).to.include({ apiCalls: 2, cacheHits: 1, rpcCalls: 4 + 6 + 1 });
    expect(summary.timings).to.deep.equal({ discoveryMs: 40, shardsMs: 31 });
    expect(summary.gasPriceStrategyFailures).to.deep.equal([
      { chainId: '1', strategy: 'latestBlockPercentileGasPrice', count: 2 },
    ]);
    expect([...gasPrices]).to.deep.equal([['1', 30n]]);
    expect(summary.results).to.have.length(3);
    expect(summary.seen).to.have.length(1);
    expect(summary.sponsorWallets).to.have.length(1);
  });

  it("merges a window's cycles: counts added, the latest of each provider, wallet and request, gas prices at their highest", () => {
    const first: CycleSummary = {
      ...emptySummary(),
      role: 'standby',
      providers: [{ chainId: '1', provider: 'a', ok: false, rpcCalls: 1 }],
      requests: { discovered: 2, servable: 1, waitingForConfirmations: 1, overChainLimit: 0 },
      gasPrices: [{ chainId: '1', gasPriceWei: '50' }],
      gasPriceStrategyFailures: [{ chainId: '1', strategy: 's', count: 1 }],
      seen: [{ chainId: '1', id: requestId(1), state: 'waitingForConfirmations', headBlock: 10 }],
      rpcCalls: 3,
    };
    const second: CycleSummary = {
      ...emptySummary(),
      providers: [{ chainId: '1', provider: 'a', ok: true, rpcCalls: 2 }],
      requests: { discovered: 1, servable: 1, waitingForConfirmations: 0, overChainLimit: 0 },
      gasPrices: [
        { chainId: '1', gasPriceWei: '40' },
        { chainId: '2', gasPriceWei: '5' },
      ],
      gasPriceStrategyFailures: [
        { chainId: '1', strategy: 's', count: 2 },
        { chainId: '2', strategy: 's', count: 1 },
      ],
      seen: [{ chainId: '1', id: requestId(1), state: 'servable', headBlock: 12 }],
      rpcCalls: 4,
    };
    const merged = mergeSummaries(first, second);
    expect(merged.role).to.equal('standby');
    expect(merged.providers).to.deep.equal([{ chainId: '1', provider: 'a', ok: true, rpcCalls: 2 }]);
    expect(merged.requests).to.deep.equal({
      discovered: 3,
      servable: 2,
      waitingForConfirmations: 1,
      overChainLimit: 0,
    });
    expect(merged.rpcCalls).to.equal(7);
    expect(merged.gasPrices).to.deep.equal([
      { chainId: '1', gasPriceWei: '50' },
      { chainId: '2', gasPriceWei: '5' },
    ]);
    expect(merged.gasPriceStrategyFailures).to.deep.equal([
      { chainId: '1', strategy: 's', count: 3 },
      { chainId: '2', strategy: 's', count: 1 },
    ]);
    expect(merged.seen).to.deep.equal([{ chainId: '1', id: requestId(1), state: 'servable', headBlock: 12 }]);
    // The totals it was merged from are left as they were.
    expect(first.gasPriceStrategyFailures).to.deep.equal([{ chainId: '1', strategy: 's', count: 1 }]);
  });

  describe('seenRequests', () => {
    const call = (n: number, blockNumber = 100): DiscoveredApiCall =>
      ({
        id: requestId(n),
        sponsorWallet: wallet(101),
        endpointId: requestId(1000),
        blockNumber,
      }) as DiscoveredApiCall;
    const discovery = (apiCalls: DiscoveredApiCall[], dropped: ProviderDiscovery['dropped'] = []) => ({
      discovery: { currentBlock: 0, apiCalls, withdrawals: [], dropped, undecodableLogs: 0 },
    });

    it("records each request once, in its plan's first state: yielded, servable, left to the primary, waiting, over the limit, dropped", () => {
      const [yielded, kept, left, waiting, over] = [call(1), call(2), call(3), call(4), call(5)];
      const seen = seenRequests('1', 110, {
        kept: [kept, yielded],
        waiting: [waiting],
        leftToPrimary: [left],
        yielded: [{ call: yielded, reason: 'standby: 1 pending transaction(s)' }],
        standbyDelayBlocks: 4,
        limited: new Map([yielded, kept, left, waiting].map((c) => [c.id, c])),
        healthy: [
          discovery(
            [yielded, kept, left, waiting, over],
            [{ id: requestId(6), reason: 'requester is not authorized' }],
          ),
          discovery([over], [{ id: requestId(2), reason: 'seen as dropped by another provider' }]),
        ],
      });
      expect(seen.map((r) => [r.id, r.state, r.reason])).to.deep.equal([
        [requestId(1), 'waitingForConfirmations', 'standby: 1 pending transaction(s)'],
        [requestId(2), 'servable', undefined],
        [requestId(3), 'waitingForConfirmations', 'standby: left to the primary for 4 block(s)'],
        [requestId(4), 'waitingForConfirmations', undefined],
        [requestId(5), 'overChainLimit', 'over the chain limit (maxConcurrency) this cycle'],
        [requestId(6), 'dropped', 'requester is not authorized'],
      ]);
      expect(seen[1]).to.deep.equal({
        chainId: '1',
        id: requestId(2),
        state: 'servable',
        sponsorWallet: wallet(101),
        endpointId: requestId(1000),
        blockNumber: 100,
        headBlock: 110,
      });
      expect(seen[5]).to.deep.equal({
        chainId: '1',
        id: requestId(6),
        state: 'dropped',
        reason: 'requester is not authorized',
        headBlock: 110,
      });
    });
  });
});
