// Gateway callers with keys and rates (src/gateway/callers.ts) on a real gateway server over loopback, the real OIS
// engine and a loopback API: 401 without a valid key, each caller's rate with 429 and Retry-After (the API never
// sees the excess), keys rotated in the directory without a restart, the caller's name (never its key) in metrics.
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { parseRate } from '../../../src/common/rate-limit.js';
import { GatewayCallers } from '../../../src/gateway/callers.js';
import {
  type CallEndpoint,
  DEFAULT_PATH_KEY,
  type GatewayServer,
  startGatewayServer,
} from '../../../src/gateway/server.js';
import { silentLogger } from '../../../src/observability/index.js';
import { spawnOracleNode } from '../../support/binary.js';
import { capturingLogger } from '../../support/logs.js';
import { waitFor } from '../../support/wait.js';
import {
  API_KEY,
  buildConfig,
  configJson,
  ENDPOINTS,
  type LoopbackApi,
  loadEngine,
  MNEMONIC,
  startLoopbackApi,
} from './fixtures.js';

const ALICE_KEY = 'alice-key-0123456789abcdef';
const BOB_KEY = 'bob-key-0123456789abcdef-bob';

describe('gateway callers: keys and rates (component)', function () {
  this.timeout(60_000);
  let api: LoopbackApi;
  let engine: CallEndpoint;
  let dir: string;
  let server: GatewayServer;
  let callers: GatewayCallers;
  const log = capturingLogger();

  const url = () => `http://127.0.0.1:${server.port}/http-data/${DEFAULT_PATH_KEY}/${ENDPOINTS.price}`;
  const call = (headers: Record<string, string> = {}) =>
    fetch(url(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ parameters: { coin: 'btc' } }),
    });

  before(async () => {
    api = await startLoopbackApi();
    engine = (await loadEngine()).callEndpoint;
    dir = await mkdtemp(join(tmpdir(), 'gateway-callers-'));
    await writeFile(join(dir, 'alice'), `${ALICE_KEY}\n`);
    await writeFile(join(dir, 'bob'), BOB_KEY);
    // A Secret volume's own entries start with dots, and a key too short to be a credential is left out.
    await writeFile(join(dir, '..data'), 'not a caller');
    await writeFile(join(dir, 'carol'), 'short');
    callers = await GatewayCallers.load({
      dir,
      rates: { alice: parseRate('3/m')! },
      defaultRate: parseRate('100/s')!,
      reloadMs: 50,
      logger: log.logger,
    });
    server = await startGatewayServer(buildConfig(api.url), {
      host: '127.0.0.1',
      port: 0,
      callEndpoint: engine,
      logger: silentLogger(),
      callers,
    });
  });
  after(async () => {
    callers?.close();
    await server?.close();
    await api?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers 401 without a key, with a wrong or short one, and with a Secret entry that is not a caller', async () => {
    const before = api.requests;
    const attempts: Record<string, string>[] = [
      {},
      { 'x-api-key': 'wrong-key-0123456789abcdef' },
      { authorization: `Basic ${ALICE_KEY}` },
      { 'x-api-key': 'short' },
      { 'x-api-key': 'not a caller' },
    ];
    for (const headers of attempts) {
      const reply = await call(headers);
      expect(reply.status, JSON.stringify(headers)).to.equal(401);
      expect(reply.headers.get('www-authenticate')).to.equal('Bearer');
      expect(await reply.json()).to.deep.equal({ message: 'Missing or invalid API key' });
    }
    expect(api.requests).to.equal(before);
    expect(callers.names()).to.deep.equal(['alice', 'bob']);
    const warning = log.at('WARN').find((line) => line.msg.startsWith('gateway callers left out'));
    expect(warning?.['callers']).to.deep.equal(['carol']);
  });

  it("applies each caller's rate: alice's fourth call in a minute gets 429 with Retry-After, bob is not held back", async () => {
    const before = api.requests;
    for (let i = 0; i < 3; i++) expect((await call({ 'x-api-key': ALICE_KEY })).status).to.equal(200);
    const over = await call({ authorization: `Bearer ${ALICE_KEY}` });
    expect(over.status).to.equal(429);
    const retryAfter = Number(over.headers.get('retry-after'));
    expect(retryAfter).to.be.within(1, 60);
    expect(api.requests).to.equal(before + 3);
    expect((await call({ authorization: `Bearer ${BOB_KEY}` })).status).to.equal(200);
    const metrics = await (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text();
    expect(metrics).to.match(/gateway_caller_requests_total\{gateway="httpGateway",caller="alice",status="200"\} 3/);
    expect(metrics).to.match(/gateway_caller_requests_total\{gateway="httpGateway",caller="alice",status="429"\} 1/);
    expect(metrics).to.match(/gateway_rejected_requests_total\{gateway="httpGateway",reason="unauthorized"\} 5/);
    expect(metrics).to.not.include(ALICE_KEY);
    expect(metrics).to.not.include(BOB_KEY);
  });

  it('takes a rotated key without a restart: the old key is refused, the new one served', async () => {
    const rotated = 'bob-rotated-key-abcdef0123456789';
    // As the kubelet does: the new file replaces the old one in one rename.
    await writeFile(join(dir, '.bob.new'), rotated);
    await rename(join(dir, '.bob.new'), join(dir, 'bob'));
    await waitFor(async () => (await call({ 'x-api-key': rotated })).status === 200, 10_000, {
      description: 'the rotated key to be served',
    });
    expect((await call({ 'x-api-key': BOB_KEY })).status).to.equal(401);
    const lines = JSON.stringify(log.lines);
    expect(lines).to.not.include(rotated);
    expect(lines).to.not.include(BOB_KEY);
  });

  it('oracle-node start --callers serves its gateway to the callers alone, at their rates', async () => {
    await writeFile(join(dir, 'config.json'), JSON.stringify(configJson(api.url, { logLevel: 'INFO' })));
    await writeFile(join(dir, 'secrets.env'), `NODE_WALLET_MNEMONIC=${MNEMONIC}\nAPI_KEY=${API_KEY}\n`);
    const keys = await mkdtemp(join(tmpdir(), 'start-callers-'));
    await writeFile(join(keys, 'alice'), ALICE_KEY);
    const child = spawnOracleNode([
      'start',
      '-c',
      join(dir, 'config.json'),
      '-s',
      join(dir, 'secrets.env'),
      '--port',
      '0',
      '--callers',
      keys,
      '--caller-rate',
      'alice=1/m',
    ]);
    let output = '';
    child.stdout!.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr!.on('data', (chunk) => {
      output += chunk;
    });
    try {
      const port = await waitFor(
        () => Number(/"port":(\d+)[^\n]*"msg":"gateway server running"/.exec(output)?.[1]) || undefined,
        30_000,
        {
          description: 'the gateway of oracle-node start to listen',
        },
      );
      const started = `http://127.0.0.1:${port}/http-data/${DEFAULT_PATH_KEY}/${ENDPOINTS.price}`;
      const post = (headers: Record<string, string>) =>
        fetch(started, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ parameters: { coin: 'btc' } }),
        });
      expect((await post({})).status).to.equal(401);
      expect((await post({ 'x-api-key': ALICE_KEY })).status).to.equal(200);
      expect((await post({ 'x-api-key': ALICE_KEY })).status).to.equal(429);
      expect(output).to.not.include(ALICE_KEY);
    } finally {
      child.kill('SIGTERM');
      await rm(keys, { recursive: true, force: true });
    }
  });
});
