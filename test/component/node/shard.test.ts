// A shard's submission on a bad day of the chain, on anvil through the real AirnodeRrpV0 and the fault-injecting
// JSON-RPC proxy (test/support/rpc-proxy.ts): answers that mean "in the pool", answers lost after the chain took
// the transaction, slow gas price calls, and two coordinators whose cycles overlap. Outcomes are checked against
// the chain's own events and transactions.
import { expect } from 'chai';
import { rrpInterface } from '../../../src/chain/contracts.js';
import { simulatorInterface } from '../../../src/chain/simulation.js';
import { type CycleSummary, runCycle } from '../../../src/node/cycle.js';
import { InProcessExecutor } from '../../../src/node/executor.js';
import type { Logger } from '../../../src/node/logger.js';
import { silentLogger } from '../../../src/node/logger.js';
import { cycleMetrics } from '../../../src/node/metrics.js';
import { createMetricsRegistry } from '../../../src/observability/index.js';
import { deployRequester, rpc, setBalance, startTestChain, waitForMined } from '../../support/chain.js';
import {
  type ApiServer,
  buildConfig,
  type ConfigOptions,
  createSponsor,
  ENDPOINTS,
  encodeCoin,
  makeFullRequest,
  NODE_ADDRESS,
  requestEvents,
  requesterCall,
  requestPrice,
  startApiServer,
  wallets,
} from '../../support/harness.js';
import { capturingLogger } from '../../support/logs.js';
import { type FaultRule, type RecordingProxy, startRecordingProxy } from '../../support/rpc-proxy.js';

const PERCENTILE = {
  gasPriceStrategy: 'latestBlockPercentileGasPrice',
  percentile: 50,
  minTransactionCount: 1,
  pastToCompareInBlocks: 3,
  maxDeviationMultiplier: 2,
};

describe('shard submission on a bad day of the chain (anvil, fault-injecting proxy)', () => {
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  let api: ApiServer;
  let proxy: RecordingProxy;
  let sponsorSeq = 0;

  before(async () => {
    chain = await startTestChain();
    api = await startApiServer();
    await setBalance(chain.anvil.url, NODE_ADDRESS, 10n ** 20n);
    proxy = await startRecordingProxy(chain.anvil.url);
  });
  beforeEach(() => {
    proxy.reset();
    proxy.setFault(undefined);
  });
  after(async () => {
    await proxy?.close();
    await api?.close();
    await chain?.anvil.stop();
  });

  async function cycle(overrides: Partial<ConfigOptions> = {}, logger: Logger = silentLogger): Promise<CycleSummary> {
    const config = buildConfig({
      providers: { proxied: proxy.url },
      deployment: chain.deployment,
      apiUrl: api.url,
      ...overrides,
    });
    const executor = new InProcessExecutor({ config, wallets, logger });
    const summary = await runCycle(config, { executor, logger, wallets, discoveryTimeoutMs: 10_000 });
    await waitForMined(chain.anvil.url);
    return summary;
  }

  async function sponsorWithRequests(count: number) {
    const sponsor = await createSponsor(chain.deployment, `shard-${sponsorSeq++}`);
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      ids.push(await requestPrice(chain.deployment, sponsor));
    }
    return { sponsor, ids };
  }

  const outcomesOf = (summary: CycleSummary) => summary.results.flatMap((r) => (r.ok ? r.output.outcomes : []));

  /** The hash of the transaction that fulfilled a request on chain. */
  async function fulfilmentHash(requestId: string): Promise<string | undefined> {
    const logs = await rpc<{ transactionHash: string }[]>(chain.anvil.url, 'eth_getLogs', [
      {
        address: chain.deployment.AirnodeRrpV0,
        fromBlock: '0x0',
        toBlock: 'latest',
        topics: [rrpInterface.getEvent('FulfilledRequest')!.topicHash, null, requestId],
      },
    ]);
    return logs[0]?.transactionHash;
  }

  describe('answers that mean the transaction is in the pool', () => {
    for (const message of ['already known', 'nonce too low']) {
      it(`counts a transaction answered "${message}" that is ours as sent, and fills no nonce`, async () => {
        const { ids } = await sponsorWithRequests(3);
        // The chain takes the first transaction, the provider answers with an error anyway.
        proxy.setFault((call) =>
          call.method === 'eth_sendRawTransaction' && call.seen === 0 ? { error: { message } } : undefined,
        );
        const { logger, at } = capturingLogger();
        const summary = await cycle({}, logger);
        for (const id of ids) expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
        const outcomes = outcomesOf(summary);
        for (const id of ids) {
          const outcome = outcomes.find((o) => o.id === id);
          expect(outcome, id).to.include({ outcome: 'fulfilled', txHash: await fulfilmentHash(id) });
        }
        expect(summary.transactions).to.include({ fulfilled: 3, errors: 0 });
        // No zero-value filler went out to compete with the transaction in the pool, and nothing said ERROR.
        expect(proxy.sent.map((tx) => tx.nonce)).to.deep.equal([0, 1, 2]);
        expect(at('ERROR')).to.deep.equal([]);
      });
    }
  });

  describe('a send whose answer was lost', () => {
    const cases: { name: string; providers: () => Record<string, string> }[] = [
      { name: 'through the only provider', providers: () => ({ proxied: proxy.url }) },
      {
        name: 'with a second provider to go on with',
        providers: () => ({ proxied: proxy.url, direct: chain.anvil.url }),
      },
    ];
    for (const { name, providers } of cases) {
      it(`counts transactions the chain took though their answer was lost, confirmed by hash (${name})`, async () => {
        const { sponsor, ids } = await sponsorWithRequests(3);
        // The batch reaches the chain, which mines it; the answer never comes back.
        proxy.setFault((call) =>
          call.method === 'eth_sendRawTransaction' && call.seen === 0 ? { drop: true } : undefined,
        );
        const summary = await cycle({ providers: providers() });
        const outcomes = outcomesOf(summary);
        for (const id of ids) {
          expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
          expect(outcomes.find((o) => o.id === id)).to.include({
            outcome: 'fulfilled',
            txHash: await fulfilmentHash(id),
          });
        }
        // The summary says what the chain says, and nothing was sent twice.
        expect(summary.transactions).to.include({ fulfilled: 3, skipped: 0, errors: 0 });
        expect(proxy.sent.map((tx) => tx.nonce)).to.deep.equal([0, 1, 2]);
        const count = await rpc<string>(chain.anvil.url, 'eth_getTransactionCount', [sponsor.sponsorWallet, 'latest']);
        expect(Number(count)).to.equal(3);
      });
    }
  });

  describe('a provider error on the fulfilment check (never a fail() on chain)', () => {
    const CHECK_SELECTORS = [
      rrpInterface.getFunction('fulfill')!.selector,
      simulatorInterface.getFunction('simulate')!.selector,
    ];
    /** The static call of `fulfill` and the batched simulation answered with `error`; every other call as usual. */
    const failChecks =
      (error: { code: number; message: string }): FaultRule =>
      (call) => {
        const data = (call.params[0] as { data?: string } | undefined)?.data ?? '';
        return call.method === 'eth_call' && CHECK_SELECTORS.some((s) => data.startsWith(s)) ? { error } : undefined;
      };
    const PROVIDER_ERRORS = [
      { code: -32000, message: 'header not found' },
      { code: -32005, message: 'daily request count exceeded, request rate limited' },
    ];

    for (const error of PROVIDER_ERRORS) {
      it(`fulfils through the second provider when the first answers the check with "${error.message}"; a reverting callback still fails`, async () => {
        const reverting = await deployRequester(chain.anvil.url, chain.deployment.AirnodeRrpV0);
        await requesterCall(chain.deployment, 'setShouldRevert', [true], reverting);
        const sponsor = await createSponsor(chain.deployment, `shard-${sponsorSeq++}`, [
          chain.deployment.Requester,
          reverting,
        ]);
        const good = [await requestPrice(chain.deployment, sponsor), await requestPrice(chain.deployment, sponsor)];
        const bad = await makeFullRequest(chain.deployment, {
          requester: reverting,
          endpointId: ENDPOINTS.price,
          sponsor: sponsor.address,
          sponsorWallet: sponsor.sponsorWallet,
          parameters: encodeCoin('ETH'),
        });
        proxy.setFault(failChecks(error));
        // A fixed gas limit: the wallet's checks are one simulation, then one static call each, all refused.
        const summary = await cycle({
          providers: { proxied: proxy.url, direct: chain.anvil.url },
          fulfillmentGasLimit: 500_000,
        });
        for (const id of good) expect(await requestEvents(chain.deployment, id), id).to.deep.include({ failed: [] });
        for (const id of good) expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
        expect(await requestEvents(chain.deployment, bad)).to.deep.equal({
          fulfilled: [],
          failed: [{ message: 'Requester reverted on purpose' }],
        });
        // Nothing went out through the provider that could not check; everything through the second one.
        expect(proxy.sent).to.deep.equal([]);
        expect(outcomesOf(summary).map((o) => o.provider)).to.deep.equal(['direct', 'direct', 'direct']);
      });
    }

    const ONLY_PROVIDER_FAULTS: { name: string; rule: FaultRule }[] = [
      ...PROVIDER_ERRORS.map((error) => ({
        name: `the static call answered "${error.message}"`,
        rule: failChecks(error),
      })),
      {
        name: 'the gas estimates answered "-32603 internal error"',
        rule: (call) =>
          call.method === 'eth_estimateGas' && call.seen < 2
            ? { error: { code: -32603, message: 'internal error' } }
            : undefined,
      },
    ];
    for (const { name, rule } of ONLY_PROVIDER_FAULTS) {
      it(`leaves the request open when the only provider fails its check (${name}), and fulfils it once the fault clears`, async () => {
        const { ids } = await sponsorWithRequests(1);
        const requestId = ids[0]!;
        proxy.setFault(rule);
        const first = await cycle();
        expect(await requestEvents(chain.deployment, requestId)).to.deep.equal({ fulfilled: [], failed: [] });
        expect(proxy.sent).to.deep.equal([]);
        const [open] = outcomesOf(first);
        expect(open).to.include({ id: requestId, outcome: 'error' });
        expect(open!.reason).to.match(/fulfilment check .*stays open/);
        proxy.setFault(undefined);
        const second = await cycle();
        expect(outcomesOf(second)).to.have.length(1);
        expect(outcomesOf(second)[0]).to.include({ id: requestId, outcome: 'fulfilled' });
        expect(await requestEvents(chain.deployment, requestId)).to.deep.include({ failed: [] });
        expect((await requestEvents(chain.deployment, requestId)).fulfilled).to.have.length(1);
      });
    }
  });

  describe('a slow provider and the gas price oracle', () => {
    it('waits for a provider that answers in 2.5 s instead of paying the constant price, and logs and counts a failed strategy', async () => {
      const { ids } = await sponsorWithRequests(1);
      // Every answer comes late: slow, not dead (over the 2 s of a fixed timeout). The coordinator reads the chain's
      // gas price once for its shards, after discovery has measured the provider's latency.
      proxy.setFault(() => ({ delayMs: 2_500 }));
      const { logger, at } = capturingLogger();
      const summary = await cycle(
        {
          gasPriceOracle: [
            // Fails (the chain is younger than that): must be said, not swallowed.
            { ...PERCENTILE, pastToCompareInBlocks: 1_000_000 },
            { gasPriceStrategy: 'providerRecommendedGasPrice', recommendedGasPriceMultiplier: 1 },
            { gasPriceStrategy: 'constantGasPrice', gasPrice: { value: 100, unit: 'gwei' } },
          ],
        },
        logger,
      );
      expect((await requestEvents(chain.deployment, ids[0]!)).fulfilled).to.have.length(1);
      const tx = await rpc<{ gasPrice: string }>(chain.anvil.url, 'eth_getTransactionByHash', [
        await fulfilmentHash(ids[0]!),
      ]);
      // The chain's own price (anvil: about 1 gwei), not the 100 gwei of the last resort.
      expect(BigInt(tx.gasPrice) < 10n ** 10n, `paid ${tx.gasPrice}`).to.equal(true);
      // The chain's price is read once per cycle by the coordinator for all its shards: one warning for the chain.
      const warnings = at('WARN').filter((line) => line.msg === 'gas price strategy failed; trying the next one');
      expect(warnings.map((w) => [w.strategy, w.chainId, w.provider])).to.deep.equal([
        ['latestBlockPercentileGasPrice', '31337', 'proxied'],
      ]);
      expect(warnings[0]!.reason).to.match(/not enough blocks/);
      expect(summary.gasPriceStrategyFailures).to.deep.equal([
        { chainId: '31337', strategy: 'latestBlockPercentileGasPrice', count: 1 },
      ]);
      const registry = createMetricsRegistry();
      cycleMetrics(registry).observe(summary, 1);
      expect(await registry.metrics()).to.include(
        'node_gas_price_strategy_failures_total{chain_id="31337",strategy="latestBlockPercentileGasPrice"} 1',
      );
    });
  });

  describe('two coordinators whose cycles overlap', () => {
    it("leaves the other coordinator's pending transactions alone and counts each fulfilment once", async () => {
      const { ids } = await sponsorWithRequests(3);
      const config = buildConfig({
        providers: { proxied: proxy.url },
        deployment: chain.deployment,
        apiUrl: api.url,
        gasPriceOracle: [{ gasPriceStrategy: 'constantGasPrice', gasPrice: { value: 10, unit: 'gwei' } }],
      });
      const coordinator = () =>
        runCycle(config, {
          executor: new InProcessExecutor({ config, wallets, logger: silentLogger }),
          logger: silentLogger,
          wallets,
        });
      // The first coordinator's transactions are in the pool, not mined yet, when the second one runs.
      await rpc(chain.anvil.url, 'evm_setAutomine', [false]);
      let first: CycleSummary;
      let second: CycleSummary;
      try {
        first = await coordinator();
        second = await coordinator();
        await rpc(chain.anvil.url, 'evm_mine', []);
      } finally {
        await rpc(chain.anvil.url, 'evm_setAutomine', [true]);
      }
      await waitForMined(chain.anvil.url);
      // Three transactions in all, the first coordinator's, mined at its price (no +20 % replacement).
      expect(proxy.sent.map((tx) => tx.nonce)).to.deep.equal([0, 1, 2]);
      for (const id of ids) {
        expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
        const tx = await rpc<{ gasPrice: string }>(chain.anvil.url, 'eth_getTransactionByHash', [
          await fulfilmentHash(id),
        ]);
        expect(BigInt(tx.gasPrice)).to.equal(10n ** 10n);
      }
      expect(first.transactions.fulfilled + second.transactions.fulfilled).to.equal(3);
      const skipped = outcomesOf(second);
      expect(skipped.map((o) => [o.id, o.outcome])).to.deep.equal(ids.map((id) => [id, 'skipped']));
      for (const o of skipped) expect(o.reason).to.match(/^3 pending transaction\(s\) of this wallet.*: not stuck$/);
    });
  });
});
