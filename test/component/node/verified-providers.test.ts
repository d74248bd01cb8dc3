// The chain ids a coordinator verified, carried to the next coordinator process (each Kubernetes cycle is a new
// pod): real `oracle-node coordinator` processes on anvil (real AirnodeRrpV0) behind counting proxies whose URLs
// carry an API key, sharing a cache directory as CronJob runs share the cycle ConfigMap.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { ORACLE_NODE_ARGS, repoRoot } from '../../support/binary.js';
import { startTestChain, waitForMined } from '../../support/chain.js';
import {
  type ApiServer,
  buildConfigJson,
  createSponsor,
  requestEvents,
  requestPrice,
  startApiServer,
  writeNodeFiles,
} from '../../support/harness.js';
import { type RecordingProxy, startRecordingProxy } from '../../support/rpc-proxy.js';

const run = promisify(execFile);
const API_KEY = 'secret-api-key-0123456789';

type Summary = {
  transactions: { fulfilled: number };
  providers: { provider: string; ok: boolean; fault?: string }[];
};

describe('verified provider chain ids carried between coordinator processes (anvil, real AirnodeRrpV0)', () => {
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  let api: ApiServer;
  let proxies: RecordingProxy[] = [];
  let sponsorSeq = 0;

  before(async () => {
    chain = await startTestChain();
    api = await startApiServer();
  });
  afterEach(async () => {
    await Promise.all(proxies.map((p) => p.close()));
    proxies = [];
  });
  after(async () => {
    await api?.close();
    await chain?.anvil.stop();
  });

  async function proxy(): Promise<RecordingProxy> {
    const started = await startRecordingProxy(chain.anvil.url);
    proxies.push(started);
    return started;
  }

  /** Config and secrets for these providers, and a cache directory shared by the runs. */
  function node(providers: Record<string, string>): { args: string[]; cacheDir: string } {
    const dir = mkdtempSync(join(tmpdir(), 'verified-providers-'));
    const built = buildConfigJson({ providers, deployment: chain.deployment, apiUrl: api.url });
    return { args: writeNodeFiles(dir, built).args, cacheDir: join(dir, 'cache') };
  }

  /** One `oracle-node coordinator` process: its summary once its transactions are mined. */
  async function coordinator(files: { args: string[]; cacheDir: string }): Promise<Summary> {
    const { stdout } = await run(
      process.execPath,
      [...ORACLE_NODE_ARGS, 'coordinator', ...files.args, '--cache-dir', files.cacheDir],
      { cwd: repoRoot },
    );
    await waitForMined(chain.anvil.url);
    return JSON.parse(stdout) as Summary;
  }

  async function request(): Promise<string> {
    const sponsor = await createSponsor(chain.deployment, `verified-providers-${sponsorSeq++}`);
    return requestPrice(chain.deployment, sponsor);
  }

  const fulfilled = async (id: string) => (await requestEvents(chain.deployment, id)).fulfilled.length;
  const byName = (summary: Summary) => Object.fromEntries(summary.providers.map((p) => [p.provider, p]));

  it('sends no eth_chainId from the second coordinator process, and stores no URL or API key', async () => {
    const provider = await proxy();
    const files = node({ hosted: `${provider.url}/v3/${API_KEY}` });
    const first = await request();
    await coordinator(files);
    expect(await fulfilled(first)).to.equal(1);
    expect(provider.counts.get('eth_chainId')).to.equal(1);

    const second = await request();
    provider.reset();
    const summary = await coordinator(files);
    expect(summary.transactions.fulfilled).to.equal(1);
    expect(await fulfilled(second)).to.equal(1);
    expect(provider.counts.get('eth_chainId') ?? 0).to.equal(0);

    const stored = readFileSync(join(files.cacheDir, 'verified-chain-ids.json'), 'utf8');
    expect(stored).not.to.include(API_KEY);
    expect(stored).not.to.include(provider.url.replace('http://', ''));
    expect(stored).not.to.include('127.0.0.1');
  });

  it('still refuses a provider on another network in the next process, and serves through the good one', async () => {
    const mainnet = await proxy();
    mainnet.setFault((call) => (call.method === 'eth_chainId' ? { result: () => '0x1' } : undefined));
    const good = await proxy();
    const files = node({ mainnet: `${mainnet.url}/v3/${API_KEY}`, good: good.url });
    for (let run = 0; run < 2; run++) {
      const id = await request();
      const summary = await coordinator(files);
      expect(byName(summary)['mainnet']).to.include({ ok: false, fault: 'wrong-chain' });
      expect(byName(summary)['good']).to.include({ ok: true });
      expect(await fulfilled(id)).to.equal(1);
    }
    // Nothing but its chain id is ever asked of it, and its answer was carried over too.
    expect([...mainnet.counts.keys()]).to.deep.equal(['eth_chainId']);
    expect(good.counts.get('eth_chainId')).to.equal(1);
  });

  it('asks again when the stored entry is garbled', async () => {
    const provider = await proxy();
    const files = node({ hosted: `${provider.url}/v3/${API_KEY}` });
    await coordinator(files);
    writeFileSync(join(files.cacheDir, 'verified-chain-ids.json'), '{"format":1,"providers":{"zz":{"chainId":"x"}}');
    provider.reset();
    await coordinator(files);
    expect(provider.counts.get('eth_chainId')).to.equal(1);
  });
});
