// The Airnode feed against the real thing: the real @api3/signed-api 3.3.0 on loopback accepts what the feed pushes
// (it verifies both signatures), serves it back, and the signatures recover the node address; the real
// @api3/airnode-feed 3.3.0 on the same config gives the same template ids, encoded values and signatures.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { AbiCoder, getBytes, solidityPackedKeccak256, verifyMessage } from 'ethers';
import { startFeed } from '../../../src/feed/engine.js';
import { deriveOevTemplateId, feedSigner, signTemplateData } from '../../../src/feed/signing.js';
import { validateFeedConfig } from '../../../src/feed/validate.js';
import { createMetricsRegistry, metricValue, silentLogger } from '../../../src/observability/index.js';
import { spawnOracleNode } from '../../support/binary.js';
import { TEST_MNEMONIC } from '../../support/chain.js';
import {
  buildFeedConfig,
  feedSecrets,
  type ReferenceProcess,
  type ServedBeacon,
  served,
  startReferenceFeed,
  startSignedApi,
} from '../../support/feed.js';
import { freePort } from '../../support/net.js';
import { waitFor } from '../../support/wait.js';
import { ApiServer } from '../ois/api-server.js';

const API_KEY = 'feed-api-key-0123456789';
const AUTH_TOKEN = 'signed-api-token-0123456789';
const PRICES = { BTC: 65000.5, ETH: 3000.25, SOL: 150.125 };
const ASSETS = Object.keys(PRICES);
const airnode = feedSigner(TEST_MNEMONIC).address;

function encodedPrice(asset: keyof typeof PRICES): string {
  return AbiCoder.defaultAbiCoder().encode(['int256'], [BigInt(Math.round(PRICES[asset] * 1000)) * 10n ** 15n]);
}

/** The signer of a Signed API entry, recovered as the Signed API and the contracts do. */
function recoverSigner(templateId: string, timestamp: string, encodedValue: string, signature: string): string {
  const digest = solidityPackedKeccak256(['bytes32', 'uint256', 'bytes'], [templateId, timestamp, encodedValue]);
  return verifyMessage(getBytes(digest), signature);
}

async function priceApi(): Promise<ApiServer> {
  return new ApiServer()
    .route('/prices', (request, _body, response) => {
      if (request.headers['x-api-key'] !== API_KEY) {
        response.writeHead(401).end('{}');
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ prices: PRICES }));
    })
    .start();
}

async function loadConfig(config: unknown) {
  const result = await validateFeedConfig(config, { WALLET_MNEMONIC: TEST_MNEMONIC, API_KEY });
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.config;
}

/** Waits until the Signed API serves a value for every asset on `path`. */
async function servedForAll(url: string, path: string, count: number): Promise<ServedBeacon[]> {
  return waitFor(
    async () => {
      const data = Object.values(await served(url, path, airnode));
      return data.length === count ? data : undefined;
    },
    60_000,
    { description: `${count} values served on ${url}${path}` },
  );
}

describe('feed: against the real Signed API and the reference Airnode feed', function () {
  this.timeout(180_000);
  let api: ApiServer;
  const processes: ReferenceProcess[] = [];

  before(async () => {
    api = await priceApi();
  });
  after(async () => {
    await Promise.all(processes.map((process) => process.stop()));
    await api.stop();
  });

  async function signedApi(): Promise<ReferenceProcess> {
    const started = await startSignedApi(airnode, AUTH_TOKEN);
    processes.push(started);
    return started;
  }

  it('pushes what the Signed API accepts and serves back; both signatures recover the node address', async () => {
    const target = await signedApi();
    const config = await loadConfig(
      buildFeedConfig({
        apiUrl: api.url,
        assets: ASSETS,
        fetchInterval: 1,
        signedApis: [{ name: 'main', url: target.url, authToken: AUTH_TOKEN }],
      }),
    );
    const registry = createMetricsRegistry();
    const engine = startFeed({
      config,
      signer: feedSigner(TEST_MNEMONIC),
      logger: silentLogger(),
      registry,
      jitter: 0,
    });
    try {
      const base = await servedForAll(target.url, '/delayed', ASSETS.length);
      for (const entry of base) {
        const asset = ASSETS.find(
          (name) => config.templates[entry.templateId]?.parameters[1]?.value === `prices.${name}`,
        );
        expect(asset, entry.templateId).to.be.a('string');
        expect(entry.encodedValue).to.equal(encodedPrice(asset as keyof typeof PRICES));
        expect(entry.airnode).to.equal(airnode);
        expect(recoverSigner(entry.templateId, entry.timestamp, entry.encodedValue, entry.signature)).to.equal(airnode);
      }
      // The OEV beacons: the Signed API files the OEV signature under the OEV template id.
      const oev = await servedForAll(target.url, '/oev', ASSETS.length);
      expect(oev.map((entry) => entry.templateId).sort()).to.deep.equal(
        base.map((entry) => deriveOevTemplateId(entry.templateId)).sort(),
      );
      for (const entry of oev) {
        expect(recoverSigner(entry.templateId, entry.timestamp, entry.encodedValue, entry.signature)).to.equal(airnode);
      }
      expect(
        await metricValue(registry, 'oracle_node_feed_pushes_total', { signed_api: 'main', outcome: 'success' }),
      ).to.be.greaterThan(0);
      expect(api.requests.every((request) => request.headers['x-api-key'] === API_KEY)).to.equal(true);
    } finally {
      await engine.stop();
    }
  });

  it('a Signed API that hangs or refuses never holds back another one', async () => {
    const live = await signedApi();
    // One Signed API accepts connections and never answers; another port has nothing listening.
    const hanging: Server = createServer(() => {});
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    const hangingUrl = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`;
    const closedUrl = `http://127.0.0.1:${await freePort()}`;
    const config = await loadConfig(
      buildFeedConfig({
        apiUrl: api.url,
        assets: ASSETS,
        fetchInterval: 1,
        signedApis: [
          { name: 'hanging', url: hangingUrl, authToken: AUTH_TOKEN },
          { name: 'closed', url: closedUrl, authToken: null },
          { name: 'live', url: live.url, authToken: AUTH_TOKEN },
        ],
      }),
    );
    const registry = createMetricsRegistry();
    const engine = startFeed({
      config,
      signer: feedSigner(TEST_MNEMONIC),
      logger: silentLogger(),
      registry,
      jitter: 0,
      push: { timeoutMs: 60_000, backoff: { baseMs: 50, maxMs: 200 } },
    });
    try {
      // Several fresh values reach the live one while the hanging POST is still open.
      const first = await servedForAll(live.url, '/delayed', ASSETS.length);
      await waitFor(
        async () => {
          const now = Object.values(await served(live.url, '/delayed', airnode));
          return now.every((entry) => Number(entry.timestamp) > Number(first[0]!.timestamp));
        },
        30_000,
        'a newer value on the live Signed API',
      );
      await waitFor(
        async () =>
          ((await metricValue(registry, 'oracle_node_feed_pushes_total', {
            signed_api: 'closed',
            outcome: 'failure',
          })) ?? 0) >= 2,
        30_000,
        'retries to the closed Signed API',
      );
      expect(await metricValue(registry, 'oracle_node_feed_pushes_total', { signed_api: 'hanging' })).to.equal(
        undefined,
      );
      const states = engine.signedApis();
      expect(states.find((state) => state.name === 'live')?.lastSuccessMs).to.be.a('number');
      expect(states.find((state) => state.name === 'closed')?.lastSuccessMs).to.equal(undefined);
    } finally {
      const stopping = engine.stop();
      hanging.closeAllConnections();
      hanging.close();
      await stopping;
    }
  });

  it('gives the same template ids, encoded values and signatures as the reference Airnode feed', async () => {
    const ours = await signedApi();
    const theirs = await signedApi();
    const base = { apiUrl: api.url, assets: ASSETS, fetchInterval: 1 };
    const config = await loadConfig(
      buildFeedConfig({ ...base, signedApis: [{ name: 'ours', url: ours.url, authToken: AUTH_TOKEN }] }),
    );
    const engine = startFeed({
      config,
      signer: feedSigner(TEST_MNEMONIC),
      logger: silentLogger(),
      registry: createMetricsRegistry(),
      jitter: 0,
    });
    const reference = startReferenceFeed(
      buildFeedConfig({ ...base, signedApis: [{ name: 'theirs', url: theirs.url, authToken: AUTH_TOKEN }] }),
      feedSecrets(TEST_MNEMONIC, API_KEY),
    );
    processes.push(reference);
    try {
      const [oursBase, theirsBase] = await Promise.all([
        servedForAll(ours.url, '/delayed', ASSETS.length),
        servedForAll(theirs.url, '/delayed', ASSETS.length),
      ]);
      const [oursOev, theirsOev] = await Promise.all([
        servedForAll(ours.url, '/oev', ASSETS.length),
        servedForAll(theirs.url, '/oev', ASSETS.length),
      ]);
      const byTemplate = (entries: ServedBeacon[]) =>
        Object.fromEntries(entries.map((entry) => [entry.templateId, entry]));
      const mine = byTemplate(oursBase);
      const reference_ = byTemplate(theirsBase);
      expect(Object.keys(mine).sort()).to.deep.equal(Object.keys(reference_).sort());
      const signer = feedSigner(TEST_MNEMONIC);
      const oevOf = byTemplate(theirsOev);
      for (const [templateId, entry] of Object.entries(reference_)) {
        expect(mine[templateId]!.beaconId).to.equal(entry.beaconId);
        expect(mine[templateId]!.encodedValue).to.equal(entry.encodedValue);
        // Our signatures over the reference's own (template, timestamp, value): byte for byte its base and OEV ones.
        const again = signTemplateData(
          signer,
          templateId,
          deriveOevTemplateId(templateId),
          entry.timestamp,
          entry.encodedValue,
        );
        expect(again.signature).to.equal(entry.signature);
        const oevEntry = oevOf[deriveOevTemplateId(templateId)]!;
        // The reference's OEV signature, byte for byte, from our signer over its (template, timestamp, value).
        expect(
          signTemplateData(signer, templateId, oevEntry.templateId, oevEntry.timestamp, oevEntry.encodedValue)
            .oevSignature,
        ).to.equal(oevEntry.signature);
      }
      expect(oursOev.map((entry) => entry.beaconId).sort()).to.deep.equal(
        theirsOev.map((entry) => entry.beaconId).sort(),
      );
    } finally {
      await engine.stop();
    }
  });

  describe('oracle-node feed (the binary)', () => {
    let dir: string;
    before(() => {
      dir = mkdtempSync(join(tmpdir(), 'feed-cli-'));
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    function run(args: string[]): { child: ChildProcess; output: () => string; exit: Promise<number | null> } {
      const child = spawnOracleNode(['feed', ...args], { env: { ...process.env, LOG_LEVEL: 'debug' } });
      const chunks: string[] = [];
      child.stdout?.on('data', (chunk: Buffer) => chunks.push(chunk.toString()));
      child.stderr?.on('data', (chunk: Buffer) => chunks.push(chunk.toString()));
      const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      return { child, output: () => chunks.join(''), exit };
    }

    it('rejects a bad config with the reference’s path and message (exit 1)', async () => {
      const config = buildFeedConfig({ apiUrl: api.url, assets: ASSETS, fetchInterval: 1, signedApis: [] });
      writeFileSync(join(dir, 'bad.json'), JSON.stringify(config));
      writeFileSync(join(dir, 'secrets.env'), feedSecrets(TEST_MNEMONIC, API_KEY));
      const { exit, output } = run(['-c', join(dir, 'bad.json'), '-s', join(dir, 'secrets.env')]);
      expect(await exit).to.equal(1);
      expect(output()).to.contain('signedApis: Array must contain at least 1 element(s)');
    });

    it('runs a config.json unchanged, serves /metrics and /healthz, stops cleanly on SIGTERM, prints no secret', async () => {
      const target = await signedApi();
      const config = buildFeedConfig({
        apiUrl: api.url,
        assets: ASSETS,
        fetchInterval: 1,
        signedApis: [{ name: 'main', url: target.url, authToken: AUTH_TOKEN }],
      });
      writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
      writeFileSync(join(dir, 'secrets.env'), feedSecrets(TEST_MNEMONIC, API_KEY));
      const port = await freePort();
      const feed = run([
        '-c',
        join(dir, 'config.json'),
        '-s',
        join(dir, 'secrets.env'),
        '--metrics-port',
        String(port),
      ]);
      await servedForAll(target.url, '/delayed', ASSETS.length);
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).to.equal(200);
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics).to.match(/oracle_node_feed_pushes_total\{[^}]*signed_api="main"[^}]*outcome="success"/);
      expect(metrics).to.match(/oracle_node_feed_data_age_seconds\{[^}]*template_id="0x/);
      feed.child.kill('SIGTERM');
      expect(await feed.exit).to.equal(0);
      for (const secret of [TEST_MNEMONIC, API_KEY, AUTH_TOKEN]) expect(feed.output()).not.to.contain(secret);
      expect(feed.output()).to.contain('stopped');
    });
  });
});
