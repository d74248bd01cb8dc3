// Providers that answer but must not be trusted for the cycle, on anvil through the real AirnodeRrpV0: the
// fault-injecting proxy (test/support/rpc-proxy.ts) in front of anvil floods, lags, reports a syncing head, stops
// moving or sits on another network, next to a good provider. Each case checks what was served on chain, the cycle summary,
// the log line and the metric.
import { expect } from 'chai';
import { MAX_PROVIDER_LAG_BLOCKS, ProviderMemory, STALLED_AFTER_MS } from '../../../src/chain/provider-health.js';
import { httpTransport, RpcClient } from '../../../src/chain/rpc.js';
import { MemoryResponseCache } from '../../../src/node/cache.js';
import { type CycleSummary, runCycle } from '../../../src/node/cycle.js';
import { InProcessExecutor } from '../../../src/node/executor.js';
import { cycleMetrics } from '../../../src/node/metrics.js';
import { createLogger, createMetricsRegistry, type Registry } from '../../../src/observability/index.js';
import { mineBlocks, setBalance, startTestChain, waitForMined } from '../../support/chain.js';
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
import { type FaultRule, type RecordingProxy, startRecordingProxy } from '../../support/rpc-proxy.js';

type LogLine = { level: string; msg: string; [key: string]: unknown };

describe('provider faults on anvil (real AirnodeRrpV0)', () => {
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  let api: ApiServer;
  let proxies: RecordingProxy[] = [];
  let sponsorSeq = 0;

  before(async () => {
    chain = await startTestChain();
    api = await startApiServer();
    await setBalance(chain.anvil.url, NODE_ADDRESS, 10n ** 20n);
    // Heads far enough from genesis for a provider to lag 100 blocks behind.
    await mineBlocks(chain.anvil.url, 150);
  });
  afterEach(async () => {
    await Promise.all(proxies.map((p) => p.close()));
    proxies = [];
  });
  after(async () => {
    await api?.close();
    await chain?.anvil.stop();
  });

  /** A provider in front of anvil that answers as `rule` says. */
  async function faultProxy(rule: FaultRule): Promise<RecordingProxy> {
    const proxy = await startRecordingProxy(chain.anvil.url);
    proxy.setFault(rule);
    proxies.push(proxy);
    return proxy;
  }

  /** Every call of `method` answered with what `result` makes of the chain's result. */
  const rewrite =
    (method: string, result: (upstream: unknown) => unknown): FaultRule =>
    (call) =>
      call.method === method ? { result } : undefined;

  /** One cycle with the given providers; its summary, log lines and metrics registry. */
  async function cycle(
    providers: Record<string, string>,
    memory = new ProviderMemory(),
    rpcClient?: (url: string) => RpcClient,
  ): Promise<{ summary: CycleSummary; logs: LogLine[]; registry: Registry; text: string }> {
    const config = buildConfig({ providers, deployment: chain.deployment, apiUrl: api.url });
    let text = '';
    const logger = createLogger({
      level: 'INFO',
      destination: {
        write(line: string) {
          text += line;
        },
      },
    });
    const executor = new InProcessExecutor({ config, wallets, logger, cache: new MemoryResponseCache() });
    const summary = await runCycle(config, {
      executor,
      logger,
      wallets,
      discoveryTimeoutMs: 30_000,
      providerMemory: memory,
      ...(rpcClient ? { rpcClient } : {}),
    });
    await waitForMined(chain.anvil.url);
    const registry = createMetricsRegistry();
    cycleMetrics(registry).observe(summary, 1);
    const logs = text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as LogLine);
    return { summary, logs, registry, text };
  }

  async function requests(count: number): Promise<{ ids: string[]; sponsorWallet: string }> {
    const sponsor = await createSponsor(chain.deployment, `provider-faults-${sponsorSeq++}`);
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      ids.push(await requestPrice(chain.deployment, sponsor));
    }
    return { ids, sponsorWallet: sponsor.sponsorWallet };
  }

  async function fulfilled(ids: string[]): Promise<number> {
    let count = 0;
    for (const id of ids) count += (await requestEvents(chain.deployment, id)).fulfilled.length;
    return count;
  }

  const byName = (summary: CycleSummary) => Object.fromEntries(summary.providers.map((p) => [p.provider, p]));

  async function metric(registry: Registry, name: string, labels: Record<string, string>): Promise<number | undefined> {
    const values = (await registry.getSingleMetric(name)?.get())?.values ?? [];
    const match = values.find((v) => Object.entries(labels).every(([k, value]) => v.labels[k] === value));
    return match?.value;
  }

  describe('an answer over the size cap', () => {
    it('leaves the provider out as oversized and serves through the good one', async () => {
      // A 1 MiB cap instead of MAX_ANSWER_BYTES (32 MiB), so that a loaded machine reads past it within the timeout.
      const cap = 1024 * 1024;
      const flood = await faultProxy(() => ({ padTo: 2 * cap }));
      const { ids } = await requests(1);
      const { summary, logs, registry } = await cycle(
        { flood: flood.url, good: chain.anvil.url },
        new ProviderMemory(),
        (url) => new RpcClient(url, {}, httpTransport(cap)),
      );
      expect(byName(summary)['flood']).to.include({ ok: false, fault: 'oversized' });
      expect(byName(summary)['good']).to.include({ ok: true });
      expect(await fulfilled(ids)).to.equal(1);
      expect(logs.find((l) => l.msg === 'provider unavailable this cycle')).to.include({
        level: 'WARN',
        provider: 'flood',
        fault: 'oversized',
      });
      expect(await metric(registry, 'node_provider_faults_total', { provider: 'flood', fault: 'oversized' })).to.equal(
        1,
      );
    });
  });

  describe('a provider behind the chain', () => {
    it(`leaves out a provider more than ${MAX_PROVIDER_LAG_BLOCKS} blocks behind (first in the list), with a WARN and the lag metric, and serves every request through the good one`, async () => {
      const stale = await faultProxy(rewrite('eth_blockNumber', (head) => `0x${(Number(head) - 100).toString(16)}`));
      const { ids } = await requests(3);
      const { summary, logs, registry } = await cycle({ stale: stale.url, good: chain.anvil.url });
      expect(await fulfilled(ids)).to.equal(3);
      expect(summary.requests.waitingForConfirmations).to.equal(0);
      expect(byName(summary)['stale']).to.include({ ok: false, fault: 'lagging', lagBlocks: 100 });
      expect(byName(summary)['good']).to.include({ ok: true, lagBlocks: 0 });
      const warning = logs.find((l) => l.msg === 'provider is behind the chain; not used this cycle');
      expect(warning).to.include({ level: 'WARN', provider: 'stale', fault: 'lagging', lagBlocks: 100 });
      expect(await metric(registry, 'node_provider_lag_blocks', { provider: 'stale' })).to.equal(100);
      expect(await metric(registry, 'node_provider_up', { provider: 'stale' })).to.equal(0);
      // Never used for submissions either.
      expect(stale.counts.get('eth_sendRawTransaction') ?? 0).to.equal(0);
      expect(stale.counts.get('eth_getTransactionCount') ?? 0).to.equal(0);
    });

    it('leaves out a syncing provider that reports block 0 (second in the list)', async () => {
      const syncing = await faultProxy(rewrite('eth_blockNumber', () => '0x0'));
      const { ids } = await requests(3);
      const { summary } = await cycle({ good: chain.anvil.url, syncing: syncing.url });
      expect(await fulfilled(ids)).to.equal(3);
      expect(byName(summary)['syncing']).to.include({ ok: false, fault: 'syncing' });
    });

    it(`leaves out a provider whose head has stayed behind the others for ${STALLED_AFTER_MS / 1000} s (stalled)`, async () => {
      let clock = 0;
      const memory = new ProviderMemory(() => clock);
      let answered: unknown;
      const stuck = await faultProxy(
        rewrite('eth_blockNumber', (head) => {
          answered = head;
          return head;
        }),
      );
      const first = await requests(1);
      await cycle({ stuck: stuck.url, good: chain.anvil.url }, memory);
      expect(await fulfilled(first.ids)).to.equal(1);
      // From now on the provider answers the head it answered in that cycle, while the chain moves a few blocks on.
      const frozen = answered;
      stuck.setFault(rewrite('eth_blockNumber', () => frozen));
      const second = await requests(2);
      // Behind, but not for long yet: still used (its head holds the new requests back).
      clock += 1000;
      const behind = await cycle({ stuck: stuck.url, good: chain.anvil.url }, memory);
      expect(byName(behind.summary)['stuck']).to.include({ ok: true });
      expect(await fulfilled(second.ids)).to.equal(0);
      clock += STALLED_AFTER_MS;
      const { summary } = await cycle({ stuck: stuck.url, good: chain.anvil.url }, memory);
      expect(await fulfilled(second.ids)).to.equal(2);
      const lag = byName(summary)['stuck']!.lagBlocks!;
      expect(lag).to.be.within(1, MAX_PROVIDER_LAG_BLOCKS);
      expect(byName(summary)['stuck']).to.include({ ok: false, fault: 'stalled' });
    });
  });

  describe('a provider whose head is far ahead of the chain', () => {
    const ahead50 = () => rewrite('eth_blockNumber', (head) => `0x${(Number(head) + 50).toString(16)}`);

    async function failedCount(ids: string[]): Promise<number> {
      let count = 0;
      for (const id of ids) count += (await requestEvents(chain.deployment, id)).failed.length;
      return count;
    }

    it('leaves it out as ahead (first in the list, two honest ones beside it), with a WARN and the metric, and serves every request through the honest ones, none failed', async () => {
      const liar = await faultProxy(ahead50());
      const honest = await faultProxy(() => undefined);
      const { ids } = await requests(3);
      const { summary, logs, registry } = await cycle({ liar: liar.url, honest: honest.url, good: chain.anvil.url });
      expect(await fulfilled(ids)).to.equal(3);
      expect(await failedCount(ids)).to.equal(0);
      expect(summary.transactions).to.include({ fulfilled: 3, failed: 0 });
      expect(byName(summary)['liar']).to.include({ ok: false, fault: 'ahead', lagBlocks: -50 });
      expect(byName(summary)['honest']).to.include({ ok: true, lagBlocks: 0 });
      expect(byName(summary)['good']).to.include({ ok: true, lagBlocks: 0 });
      const warning = logs.find((l) => l.msg === 'provider is ahead of the chain; not used this cycle');
      expect(warning).to.include({ level: 'WARN', provider: 'liar', fault: 'ahead', lagBlocks: -50 });
      expect(await metric(registry, 'node_provider_faults_total', { provider: 'liar', fault: 'ahead' })).to.equal(1);
      // Its head set nothing: no logs read through it, no transaction sent through it.
      expect(liar.counts.get('eth_getLogs') ?? 0).to.equal(0);
      expect(liar.counts.get('eth_sendRawTransaction') ?? 0).to.equal(0);
    });

    it('beside one honest provider, asks it for the block at its head, and leaves it out as ahead when it has none', async () => {
      const liar = await faultProxy(ahead50());
      const { ids } = await requests(2);
      const { summary } = await cycle({ liar: liar.url, good: chain.anvil.url });
      expect(await fulfilled(ids)).to.equal(2);
      expect(await failedCount(ids)).to.equal(0);
      expect(byName(summary)['liar']).to.include({ ok: false, fault: 'ahead', lagBlocks: -50 });
      expect(byName(summary)['good']).to.include({ ok: true });
      expect(liar.counts.get('eth_getBlockByNumber')).to.equal(1);
    });

    it('when it is the only provider that gave a head, is shown first and trusted with nothing: no request served, none failed, until another provider answers', async () => {
      const liar = await faultProxy(ahead50());
      const down = await faultProxy((call) =>
        call.method === 'eth_blockNumber' ? { error: { code: -32603, message: 'backend unavailable' } } : undefined,
      );
      const memory = new ProviderMemory();
      const { ids } = await requests(1);
      const first = await cycle({ liar: liar.url, down: down.url }, memory);
      expect(byName(first.summary)['liar']).to.include({ ok: false, fault: 'ahead' });
      expect(byName(first.summary)['down']).to.include({ ok: false, fault: 'unavailable' });
      expect(first.summary.shards.total).to.equal(0);
      expect(await failedCount(ids)).to.equal(0);
      down.setFault(undefined);
      const second = await cycle({ liar: liar.url, down: down.url }, memory);
      expect(byName(second.summary)['liar']).to.include({ ok: false, fault: 'ahead' });
      expect(await fulfilled(ids)).to.equal(1);
      expect(await failedCount(ids)).to.equal(0);
    });
  });

  describe('a provider on another network', () => {
    it('refuses it with an ERROR that names chain and provider (never the URL), asks its chain id once per process', async () => {
      const memory = new ProviderMemory();
      const mainnet = await faultProxy(rewrite('eth_chainId', () => '0x1'));
      // The URL carries an API key, as hosted providers' do.
      const mainnetUrl = `${mainnet.url}/v3/secret-api-key-0123456789`;
      const good = await startRecordingProxy(chain.anvil.url);
      try {
        const { ids } = await requests(1);
        const first = await cycle({ mainnet: mainnetUrl, good: good.url }, memory);
        expect(await fulfilled(ids)).to.equal(1);
        expect(byName(first.summary)['mainnet']).to.include({ ok: false, fault: 'wrong-chain' });
        const error = first.logs.find((l) => l.level === 'ERROR');
        expect(error).to.include({ chainId: '31337', provider: 'mainnet', providerChainId: '1' });
        expect(first.text).not.to.include('secret-api-key');
        expect(first.text).not.to.include(mainnet.url);
        expect(await metric(first.registry, 'node_provider_faults_total', { provider: 'mainnet' })).to.equal(1);
        // Nothing else is asked of a provider on another network.
        expect([...mainnet.counts.keys()]).to.deep.equal(['eth_chainId']);

        const second = await cycle({ mainnet: mainnetUrl, good: good.url }, memory);
        expect(byName(second.summary)['mainnet']).to.include({ ok: false, fault: 'wrong-chain' });
        expect(mainnet.counts.get('eth_chainId')).to.equal(1);
        expect(good.counts.get('eth_chainId')).to.equal(1);
      } finally {
        await good.close();
      }
    });

    it('asks a verified provider its chain id again after a send on its chain failed, and then refuses it', async () => {
      const memory = new ProviderMemory();
      const repointed = await faultProxy(() => undefined);
      const providers = { repointed: `${repointed.url}/v3/secret-api-key-0123456789` };
      const first = await cycle(providers, memory);
      expect(byName(first.summary)['repointed']).to.include({ ok: true });
      expect(repointed.counts.get('eth_chainId')).to.equal(1);

      // The endpoint now serves another network: it refuses our transactions (signed for chain 31337).
      repointed.setFault((call) =>
        call.method === 'eth_chainId'
          ? { result: () => '0x1' }
          : call.method === 'eth_sendRawTransaction'
            ? { error: { code: -32000, message: 'invalid chain id for signer' } }
            : undefined,
      );
      await requests(1);
      const second = await cycle(providers, memory);
      expect(repointed.counts.get('eth_chainId')).to.equal(1);
      expect(second.summary.transactions.errors + second.summary.shards.failed).to.be.greaterThan(0);

      const third = await cycle(providers, memory);
      expect(repointed.counts.get('eth_chainId')).to.equal(2);
      expect(byName(third.summary)['repointed']).to.include({ ok: false, fault: 'wrong-chain' });
    });
  });
});
