// Hostile-load benchmark (issue: no caller can stall or exhaust a node). The gateway runs in a child process
// with the real engine; this process is the caller and measures:
//   1. /healthz latency (median and max of 40 sequential probes) while 5 snippets spin `while (true) {}` until
//      their 3 s budget ends;
//   2. /healthz latency while 10 OEV bodies of 64 beacons each are verified;
//   3. the gateway's RSS: at start, at the peak of 20 concurrent snippets that allocate ~32 MB each and then
//      wait, and 20 s after they finished.
//   node --import tsx bench/hostile.bench.ts
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Wallet } from 'ethers';
import { validateConfig } from '../src/config/index.js';
import { DEFAULT_PATH_KEY, startGatewayServer } from '../src/gateway/server.js';
import { silentLogger } from '../src/observability/index.js';
import { deriveEndpointId } from '../src/protocol/ids.js';
import { configJson, MNEMONIC, OIS_TITLE, SECRETS, startLoopbackApi } from '../test/component/gateway/fixtures.js';

const { values } = parseArgs({ options: { role: { type: 'string' } }, allowPositionals: true });

const BUSY = deriveEndpointId(OIS_TITLE, 'busy');
const HOG = deriveEndpointId(OIS_TITLE, 'hog');

function benchConfig(apiUrl: string) {
  const wide = { enabled: true as const, maxConcurrency: 1000, corsOrigins: [] };
  const raw = configJson(apiUrl, { httpGateway: wide, oevGateway: wide });
  const snippet = (name: string, value: string) => ({
    name,
    operation: { method: 'get', path: '/price' },
    fixedOperationParameters: [{ operationParameter: { in: 'query', name: 'coin' }, value: 'eth' }],
    reservedParameters: [
      { name: '_type', fixed: 'int256' },
      { name: '_path', fixed: 'price' },
    ],
    parameters: [],
    postProcessingSpecificationV2: { environment: 'Node', timeoutMs: 3000, value },
  });
  (raw.ois[0]!.endpoints as unknown[]).push(
    snippet('busy', '() => { while (true) {} }'),
    snippet(
      'hog',
      'async ({ response }) => { const a = []; for (let i = 0; i < 2000000; i++) a.push(i); await new Promise((r) => setTimeout(r, 1500)); return { response: { price: a.length } }; }',
    ),
  );
  (raw.triggers.http as unknown[]).push(
    { endpointId: BUSY, oisTitle: OIS_TITLE, endpointName: 'busy' },
    { endpointId: HOG, oisTitle: OIS_TITLE, endpointName: 'hog' },
  );
  const result = validateConfig(raw, SECRETS);
  if (!result.ok || !result.config) throw new Error(JSON.stringify(result.errors));
  return result.config;
}

async function serveGateway(): Promise<void> {
  const api = await startLoopbackApi();
  const server = await startGatewayServer(benchConfig(api.url), { host: '127.0.0.1', port: 0, logger: silentLogger() });
  process.on('message', (message) => {
    if (message === 'rss') process.send!({ rss: process.memoryUsage().rss });
  });
  process.send!({ port: server.port });
}

function median(list: number[]): number {
  const sorted = [...list].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function probeHealth(base: string, count: number): Promise<{ median: number; max: number }> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    // A keep-alive socket the server closed while it was blocked fails once: the retry is part of the latency.
    await fetch(`${base}/healthz`).catch(() => fetch(`${base}/healthz`));
    times.push(performance.now() - start);
  }
  return { median: median(times), max: Math.max(...times) };
}

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(
    (reply) => reply.text(),
  );

async function main(): Promise<void> {
  const child = fork(fileURLToPath(import.meta.url), ['--role', 'gateway'], { execArgv: ['--import', 'tsx'] });
  const port = await new Promise<number>((resolve) =>
    child.once('message', (message) => resolve((message as { port: number }).port)),
  );
  const rss = () =>
    new Promise<number>((resolve) => {
      child.once('message', (message) => resolve((message as { rss: number }).rss / 1024 / 1024));
      child.send('rss');
    });
  const base = `http://127.0.0.1:${port}`;
  const http = (id: string) => `${base}/http-data/${DEFAULT_PATH_KEY}/${id}`;
  const mb = (value: number) => `${value.toFixed(0)} MB`;
  const ms = ({ median: m, max }: { median: number; max: number }) =>
    `median ${m.toFixed(1)} ms, max ${max.toFixed(0)} ms`;

  const started = await rss();
  await probeHealth(base, 10);
  console.log(`/healthz idle: ${ms(await probeHealth(base, 40))}`);

  const busy = Promise.all(Array.from({ length: 5 }, () => post(http(BUSY), { parameters: {} })));
  await new Promise((resolve) => setTimeout(resolve, 200));
  console.log(`/healthz with 5 busy snippets: ${ms(await probeHealth(base, 40))}`);
  await busy;

  const node = Wallet.fromPhrase(MNEMONIC);
  const now = String(Math.floor(Date.now() / 1000));
  const signedData = { timestamp: now, encodedValue: `0x${'00'.repeat(31)}01`, signature: '' };
  signedData.signature = await Wallet.createRandom().signMessage(new Uint8Array(32));
  const beacon = (address: string) => ({ airnodeAddress: address, templateId: `0x${'11'.repeat(32)}`, signedData });
  const oevBody = {
    chainId: 1,
    api3ServerV1: `0x${'22'.repeat(20)}`,
    oevProxyAddress: `0x${'33'.repeat(20)}`,
    updateId: `0x${'44'.repeat(32)}`,
    bidderAddress: `0x${'55'.repeat(20)}`,
    bidAmount: '1',
    // Every signature valid for a stranger: the node's own beacon last, so all 64 are recovered.
    beacons: [...Array.from({ length: 63 }, () => beacon(Wallet.createRandom().address)), beacon(node.address)],
  };
  const oev = Promise.all(Array.from({ length: 10 }, () => post(`${base}/sign-oev/${DEFAULT_PATH_KEY}`, oevBody)));
  console.log(`/healthz with 10 OEV bodies of 64 beacons: ${ms(await probeHealth(base, 40))}`);
  await oev;

  let peak = await rss();
  let sampling = false;
  const sampler = setInterval(async () => {
    if (sampling) return;
    sampling = true;
    peak = Math.max(peak, await rss());
    sampling = false;
  }, 100);
  await Promise.all(Array.from({ length: 20 }, () => post(http(HOG), { parameters: {} })));
  clearInterval(sampler);
  await new Promise((resolve) => setTimeout(resolve, 20_000));
  const after = await rss();
  console.log(`RSS: at start ${mb(started)}, peak with 20 concurrent snippets ${mb(peak)}, 20 s after ${mb(after)}`);
  child.kill('SIGINT');
}

if (values.role === 'gateway') await serveGateway();
else await main();
