import type { V1ConfigMap } from '@kubernetes/client-node';
import { expect } from 'chai';
import { PendingSightings } from '../../../../src/chain/pending.js';
import type { ProviderMemory } from '../../../../src/chain/provider-health.js';
import type { Config } from '../../../../src/config/index.js';
import {
  CYCLE_REPORT_KEY,
  PENDING_SIGHTINGS_KEY,
  parseCycleReport,
  VERIFIED_CHAIN_IDS_KEY,
} from '../../../../src/contract/pods.js';
import type { ConfigMapStore } from '../../../../src/node/kubernetes/config-map-store.js';
import { writeCycleReport } from '../../../../src/node/kubernetes/cycle-report.js';
import {
  configMapTextStore,
  configMapVerifiedProvidersStore,
} from '../../../../src/node/kubernetes/verified-providers.js';
import { silentLogger } from '../../../../src/node/logger.js';
import { loadHandedOver, SIGHTINGS_WORDS, saveHandedOver } from '../../../../src/node/pending-sightings.js';
import { loadProviderMemory, saveProviderMemory } from '../../../../src/node/verified-providers.js';

const URL = 'https://eth.example.test/v3/secret-api-key-0123456789';

/** Just what the provider memory reads of a config: the mnemonic and the provider URLs. */
const config = (mnemonic: string) =>
  ({
    nodeSettings: { nodeWalletMnemonic: mnemonic },
    chains: [{ id: '1', providers: { p: { url: URL } } }],
  }) as unknown as Config;

function cycleConfigMap(): ConfigMapStore & { configMap: V1ConfigMap } {
  const s = {
    configMap: { metadata: { name: 'n-cycle', resourceVersion: '1' }, data: {} } as V1ConfigMap,
    async read() {
      return structuredClone(s.configMap);
    },
    async replace(next: V1ConfigMap) {
      s.configMap = structuredClone(next);
      return s.configMap;
    },
  };
  return s;
}

/** A memory that knows the provider's chain id as if it had asked (what a cycle leaves). */
async function verifiedMemory(memory: ProviderMemory, chainId: bigint): Promise<void> {
  const client = { url: URL, request: async () => `0x${chainId.toString(16)}` };
  await memory.chainIdOf(client as never);
}

describe('verified provider chain ids in the cycle ConfigMap', () => {
  it('carries them to the next coordinator run, beside the cycle report, with no URL in the ConfigMap', async () => {
    const backing = cycleConfigMap();
    await writeCycleReport(backing, { job: 'n-cycle-1' });
    const store = configMapVerifiedProvidersStore(backing);

    const first = await loadProviderMemory(config('mnemonic'), store, silentLogger);
    await verifiedMemory(first.memory, 1n);
    await saveProviderMemory(config('mnemonic'), store, first, silentLogger);

    const data = backing.configMap.data!;
    expect(data[VERIFIED_CHAIN_IDS_KEY]).to.be.a('string');
    expect(JSON.stringify(data)).not.to.include('secret-api-key');
    expect(JSON.stringify(data)).not.to.include('eth.example.test');
    expect(parseCycleReport(data)).to.deep.equal({ job: 'n-cycle-1' });
    expect(data[CYCLE_REPORT_KEY]).to.be.a('string');

    const next = await loadProviderMemory(config('mnemonic'), store, silentLogger);
    const asked: string[] = [];
    const client = {
      url: URL,
      request: async (method: string) => {
        asked.push(method);
        return '0x1';
      },
    };
    expect(await next.memory.chainIdOf(client as never)).to.equal(1n);
    expect(asked).to.deep.equal([]);

    // Another node's key (mnemonic) does not match the fingerprints: its provider is asked again.
    const other = await loadProviderMemory(config('another mnemonic'), store, silentLogger);
    await other.memory.chainIdOf(client as never);
    expect(asked).to.deep.equal(['eth_chainId']);
  });

  it("carries a one-shot run's pending-transaction sightings to the next, beside the others, written only when changed", async () => {
    const backing = cycleConfigMap();
    await writeCycleReport(backing, { job: 'n-cycle-1' });
    const store = configMapTextStore(backing, PENDING_SIGHTINGS_KEY);
    const wallet = `1:0x${'ab'.repeat(20)}`;
    const first = new PendingSightings();
    const loaded = await loadHandedOver(store, first, silentLogger, SIGHTINGS_WORDS);
    first.observe(wallet, { latestCount: 2, pendingCount: 3, block: 50 });
    await saveHandedOver(store, first, loaded, silentLogger, SIGHTINGS_WORDS);
    expect(parseCycleReport(backing.configMap.data!)).to.deep.equal({ job: 'n-cycle-1' });
    let writes = 0;
    const replace = backing.replace;
    backing.replace = (next) => {
      writes++;
      return replace(next);
    };
    const next = new PendingSightings();
    const nextLoaded = await loadHandedOver(store, next, silentLogger, SIGHTINGS_WORDS);
    expect(next.observe(wallet, { latestCount: 2, pendingCount: 3, block: 52 })).to.equal(2);
    // Unchanged (the same sighting): nothing written.
    await saveHandedOver(store, next, nextLoaded, silentLogger, SIGHTINGS_WORDS);
    expect(writes).to.equal(0);
    // Nothing pending any more: the next run is told so.
    next.observe(wallet, { latestCount: 3, pendingCount: 3, block: 53 });
    await saveHandedOver(store, next, nextLoaded, silentLogger, SIGHTINGS_WORDS);
    expect(writes).to.equal(1);
    expect(backing.configMap.data![PENDING_SIGHTINGS_KEY]).to.equal('');
  });
});
