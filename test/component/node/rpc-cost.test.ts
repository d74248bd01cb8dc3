// What a cycle reads once per chain is read once per chain, not once per sponsor wallet: the gas price and the
// wallets' balances. On anvil through the real AirnodeRrpV0, counted by a recording proxy.
import { expect } from 'chai';
import { ProviderMemory } from '../../../src/chain/provider-health.js';
import { runCycle } from '../../../src/node/cycle.js';
import { InProcessExecutor } from '../../../src/node/executor.js';
import { silentLogger } from '../../../src/node/logger.js';
import { rpc, setBalance, startTestChain, waitForMined } from '../../support/chain.js';
import {
  type ApiServer,
  buildConfig,
  createSponsor,
  NODE_ADDRESS,
  requestEvents,
  requestPrice,
  startApiServer,
  wallets,
} from '../../support/harness.js';
import { type RecordingProxy, startRecordingProxy } from '../../support/rpc-proxy.js';

describe('RPC cost of a cycle on anvil (real AirnodeRrpV0)', () => {
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  let api: ApiServer;
  let proxy: RecordingProxy;

  before(async () => {
    chain = await startTestChain();
    api = await startApiServer();
    proxy = await startRecordingProxy(chain.anvil.url);
    await setBalance(chain.anvil.url, NODE_ADDRESS, 10n ** 20n);
  });
  after(async () => {
    await proxy?.close();
    await api?.close();
    await chain?.anvil.stop();
  });

  it('reads the gas price and the sponsor wallet balances once for the chain, whatever the number of sponsors', async () => {
    const sponsors = await Promise.all([0, 1, 2].map((i) => createSponsor(chain.deployment, `rpc-cost-${i}`)));
    const ids: string[] = [];
    for (const sponsor of sponsors) {
      for (let i = 0; i < 2; i++) {
        ids.push(await requestPrice(chain.deployment, sponsor));
      }
    }
    const config = buildConfig({
      providers: { counted: proxy.url },
      deployment: chain.deployment,
      apiUrl: api.url,
      fulfillmentGasLimit: 500_000,
    });
    proxy.reset();
    const summary = await runCycle(config, {
      executor: new InProcessExecutor({ config, wallets, logger: silentLogger }),
      logger: silentLogger,
      wallets,
      providerMemory: new ProviderMemory(),
    });
    await waitForMined(chain.anvil.url);
    for (const id of ids) expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);

    const counts = Object.fromEntries(proxy.counts);
    // providerRecommendedGasPrice: one eth_gasPrice for the chain (it was one per sponsor wallet).
    expect(counts['eth_gasPrice']).to.equal(1);
    // One simulation of each wallet's fulfilments (src/chain/simulation.ts), and one call for all the balances (no
    // eth_getBalance per wallet).
    expect(counts['eth_call']).to.equal(sponsors.length + 1);
    expect(counts['eth_getBalance']).to.equal(undefined);
    // The balances reported are the wallets' own, this cycle's transactions paid for.
    expect(summary.sponsorWallets.map((w) => w.sponsorWallet).sort()).to.deep.equal(
      sponsors.map((s) => s.sponsorWallet).sort(),
    );
    for (const wallet of summary.sponsorWallets) {
      const balance = await rpc<string>(chain.anvil.url, 'eth_getBalance', [wallet.sponsorWallet, 'latest']);
      expect(wallet.balanceWei).to.equal(BigInt(balance).toString());
    }
  });

  it('reads the balances one by one from a provider that refuses an eth_call without a target', async () => {
    const sponsor = await createSponsor(chain.deployment, 'rpc-cost-refused');
    const id = await requestPrice(chain.deployment, sponsor);
    const config = buildConfig({ providers: { counted: proxy.url }, deployment: chain.deployment, apiUrl: api.url });
    proxy.reset();
    proxy.setFault(({ method, params }) =>
      method === 'eth_call' && (params[0] as { to?: string }).to === undefined
        ? { error: { code: -32602, message: 'missing "to"' } }
        : undefined,
    );
    try {
      const summary = await runCycle(config, {
        executor: new InProcessExecutor({ config, wallets, logger: silentLogger }),
        logger: silentLogger,
        wallets,
        providerMemory: new ProviderMemory(),
      });
      await waitForMined(chain.anvil.url);
      expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
      expect(proxy.counts.get('eth_getBalance')).to.equal(1);
      const balance = await rpc<string>(chain.anvil.url, 'eth_getBalance', [sponsor.sponsorWallet, 'latest']);
      expect(summary.sponsorWallets).to.deep.equal([
        {
          chainId: '31337',
          sponsorWallet: sponsor.sponsorWallet,
          balanceWei: BigInt(balance).toString(),
          openRequests: 1,
        },
      ]);
    } finally {
      proxy.setFault(undefined);
    }
  });
});
