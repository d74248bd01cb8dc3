// Every output of every engine subcommand, grepped for every secret value: stdout, stderr, the coordinator's
// cycle summary, the worker's shard output and the HTTP answers of `gateway` and `start`. The node is set up the
// way a careless operator and a hostile API would make it leak: provider URLs with user:password (one of them
// dead, so errors mention it), an API that echoes its key in every answer (also in its errors), a snippet that
// throws with the API's answer in its message, a heartbeat key, a private gateway path key, DEBUG logs.
import { type ChildProcess, execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { validateConfig } from '../../../src/config/index.js';
import { planChainShards } from '../../../src/node/cycle.js';
import { apiRequestOf, apiShardInput } from '../../../src/node/executor.js';
import { silentLogger } from '../../../src/node/logger.js';
import { deriveEndpointId } from '../../../src/protocol/ids.js';
import { ORACLE_NODE_ARGS, repoRoot, spawnOracleNode } from '../../support/binary.js';
import { freePort, startTestChain, waitForMined } from '../../support/chain.js';
import {
  buildConfigJson,
  createSponsor,
  ENDPOINTS,
  type NodeFiles,
  OIS_TITLE,
  requestPrice,
  wallets,
  writeNodeFiles,
} from '../../support/harness.js';

const run = promisify(execFile);
/** A secrets.env reference: dollar, braces, name. */
const ref = (name: string) => '$' + `{${name}}`;

const SECRETS = {
  RPC_PASS: 'rpc-pass-Hq2Lm9Zt4Kc7',
  DEAD_PASS: 'dead-pass-Vx8Jr3Np6Sd1',
  API_KEY: 'api-key-Bw5Fy1Mq7Tg3Xe9',
  HEARTBEAT_KEY: 'heartbeat-key-Pz4Rn8Lc2Wv6Yh0Ku3Dj7Gs1',
  GATEWAY_PATH_KEY: 'path-key-Nc6Tb2Qx9Ls4',
};

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}

describe('hostile input: no secret in any output of any subcommand', function () {
  this.timeout(240_000);
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  const servers: Server[] = [];
  let dir: string;
  let nodeFiles: NodeFiles;
  let secrets: Record<string, string>;
  /** Everything any subcommand printed or answered, with where it came from. */
  const outputs: { where: string; text: string }[] = [];

  before(async () => {
    chain = await startTestChain();
    // A self-hosted RPC node behind Basic authentication.
    const rpcProxy = createServer(async (req, res) => {
      const expected = `Basic ${Buffer.from(`rpc-user:${SECRETS.RPC_PASS}`).toString('base64')}`;
      if (req.headers.authorization !== expected) {
        res.writeHead(401).end();
        return;
      }
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const answer = await fetch(chain.anvil.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: Buffer.concat(chunks),
      });
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(await answer.text());
    });
    // An API that echoes its key in every answer, good or bad.
    const api = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const key = req.headers['x-api-key'];
      res.setHeader('content-type', 'application/json');
      if (key !== SECRETS.API_KEY) res.writeHead(401).end(JSON.stringify({ error: 'bad key', got: key }));
      else if (url.pathname === '/price') res.end(JSON.stringify({ price: 3000.25, echo: key }));
      else res.writeHead(500).end(JSON.stringify({ error: `key ${key} is over quota` }));
    });
    const heartbeat = createServer((_req, res) => res.writeHead(500).end());
    servers.push(rpcProxy, api, heartbeat);
    const rpcHost = await listen(rpcProxy);
    const apiHost = await listen(api);
    const heartbeatHost = await listen(heartbeat);
    const deadPort = await freePort();

    const built = buildConfigJson({
      providers: { selfHosted: `http://rpc-user:${SECRETS.RPC_PASS}@${rpcHost}/`, dead: 'placeholder' },
      deployment: chain.deployment,
      apiUrl: `http://${apiHost}`,
    });
    secrets = {
      ...built.secrets,
      ...SECRETS,
      PROVIDER_URL_1: `http://dead-user:${SECRETS.DEAD_PASS}@127.0.0.1:${deadPort}/`,
    };
    // biome-ignore lint/suspicious/noExplicitAny: the raw config.json shape, edited in place
    const config = built.config as Record<string, any>;
    config.nodeSettings.logLevel = 'DEBUG';
    config.nodeSettings.heartbeat = { enabled: true, url: `http://${heartbeatHost}/`, apiKey: ref('HEARTBEAT_KEY') };
    config.nodeSettings.httpGateway = { enabled: true, maxConcurrency: 10, corsOrigins: [] };
    config.nodeSettings.httpSignedDataGateway = { enabled: true, maxConcurrency: 10, corsOrigins: [] };
    config.triggers.http = [
      { endpointId: ENDPOINTS.price, oisTitle: OIS_TITLE, endpointName: 'price' },
      { endpointId: ENDPOINTS.broken, oisTitle: OIS_TITLE, endpointName: 'broken' },
      { endpointId: deriveEndpointId(OIS_TITLE, 'echo'), oisTitle: OIS_TITLE, endpointName: 'echo' },
    ];
    config.triggers.httpSignedData = [{ endpointId: ENDPOINTS.price, oisTitle: OIS_TITLE, endpointName: 'price' }];
    const ois = config.ois[0];
    ois.apiSpecifications.components.securitySchemes = { key: { type: 'apiKey', in: 'header', name: 'X-Api-Key' } };
    ois.apiSpecifications.security = { key: [] };
    config.apiCredentials = [{ oisTitle: OIS_TITLE, securitySchemeName: 'key', securitySchemeValue: ref('API_KEY') }];
    // A snippet that fails with the API's whole answer (and so its key) in the message, for coin "LEAK".
    ois.endpoints[0].postProcessingSpecificationV2 = {
      environment: 'Node',
      timeoutMs: 5000,
      value:
        '({ response, endpointParameters }) => { if (endpointParameters.coin === "LEAK") throw new Error("bad answer " + JSON.stringify(response)); return { response }; }',
    };
    // The raw API answer (with the echoed key) as the value.
    ois.endpoints.push({
      name: 'echo',
      operation: { method: 'get', path: '/price' },
      fixedOperationParameters: [],
      reservedParameters: [
        { name: '_type', fixed: 'string' },
        { name: '_path', fixed: 'echo' },
      ],
      parameters: [{ name: 'coin', operationParameter: { in: 'query', name: 'coin' } }],
    });
    dir = mkdtempSync(join(tmpdir(), 'hostile-secrets-'));
    nodeFiles = writeNodeFiles(dir, { config, secrets });
    const check = validateConfig(JSON.stringify(config), secrets);
    expect(check.errors, JSON.stringify(check.errors)).to.deep.equal([]);
  });

  after(async () => {
    for (const server of servers) await close(server);
    await chain?.anvil.stop();
  });

  const configArgs = () => nodeFiles.args;
  const cacheArgs = () => ['--cache-dir', join(dir, 'cache')];

  function capture(child: ChildProcess, where: string) {
    const io = { stdout: '', stderr: '' };
    child.stdout?.on('data', (chunk) => {
      io.stdout += chunk;
    });
    child.stderr?.on('data', (chunk) => {
      io.stderr += chunk;
    });
    child.once('exit', () => {
      outputs.push({ where: `${where} stdout`, text: io.stdout }, { where: `${where} stderr`, text: io.stderr });
    });
    return io;
  }

  const exited = (child: ChildProcess) =>
    new Promise<number | null>((resolve) => {
      if (child.exitCode !== null) resolve(child.exitCode);
      else child.once('exit', (code) => resolve(code));
    });

  async function until(condition: () => boolean, what: string): Promise<void> {
    for (let i = 0; i < 1200; i++) {
      if (condition()) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  async function post(url: string, body: unknown, where: string) {
    const reply = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await reply.text();
    outputs.push({ where, text });
    return { status: reply.status, text };
  }

  async function request(coin: string, seed: string) {
    const sponsor = await createSponsor(chain.deployment, seed);
    await requestPrice(chain.deployment, sponsor, coin);
    return sponsor;
  }

  it('validate', async () => {
    const child = spawnOracleNode(['validate', ...configArgs()]);
    capture(child, 'validate');
    expect(await exited(child)).to.equal(0);
  });

  it('coordinator: the summary and the logs of a cycle with a leaking snippet and a dead provider', async () => {
    await request('LEAK', 'hostile-coordinator');
    const child = spawnOracleNode(['coordinator', ...configArgs(), ...cacheArgs(), '--details']);
    const io = capture(child, 'coordinator');
    expect(await exited(child)).to.equal(0);
    await waitForMined(chain.anvil.url);
    const summary = JSON.parse(io.stdout) as { providers: { provider: string; ok: boolean }[] };
    // The self-hosted provider with credentials works; the dead one is reported without its URL.
    expect(summary.providers.map((p) => [p.provider, p.ok])).to.deep.equal([
      ['selfHosted', true],
      ['dead', false],
    ]);
    expect(io.stdout + io.stderr).to.contain('bad answer');
  });

  it('worker: one shard with the leaking snippet', async () => {
    const sponsor = await request('LEAK', 'hostile-worker');
    const parsed = validateConfig(readFileSync(join(dir, 'config.json'), 'utf8'), secrets).config!;
    const selfHostedOnly = {
      ...parsed,
      chains: [{ ...parsed.chains[0]!, providers: { selfHosted: parsed.chains[0]!.providers['selfHosted']! } }],
    };
    const { shards } = await planChainShards(selfHostedOnly, selfHostedOnly.chains[0]!, {
      executor: { run: async () => [] },
      logger: silentLogger,
      wallets,
    });
    const shard = shards.find((candidate) => candidate.sponsorWallet === sponsor.sponsorWallet);
    expect(shard, 'a shard for the sponsor').not.to.equal(undefined);
    writeFileSync(join(dir, 'shard.json'), JSON.stringify(apiShardInput(shard!, shard!.apiCalls.map(apiRequestOf))));
    const child = spawnOracleNode(['worker', '--shard', join(dir, 'shard.json'), ...configArgs()]);
    capture(child, 'worker');
    expect(await exited(child)).to.equal(0);
  });

  it('gateway: answers that echo the key, a snippet error with the API answer, a failing API', async () => {
    const child = spawnOracleNode([
      'gateway',
      ...configArgs(),
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--path-key-secret',
      'GATEWAY_PATH_KEY',
      '--metrics-port',
      '0',
    ]);
    const io = capture(child, 'gateway');
    await until(() => /gateway server running/.test(io.stdout), 'the gateway');
    const port = Number(/"port":(\d+)/.exec(io.stdout)?.[1]);
    const metricsPort = Number(/"metricsPort":(\d+)/.exec(io.stdout)?.[1]);
    // --metrics-port: health and metrics there, not on the caller-facing port.
    expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).to.equal(404);
    const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(metrics.status).to.equal(200);
    outputs.push({ where: 'gateway /metrics', text: await metrics.text() });
    const base = `http://127.0.0.1:${port}/http-data/${SECRETS.GATEWAY_PATH_KEY}`;
    const echo = await post(`${base}/${deriveEndpointId(OIS_TITLE, 'echo')}`, { parameters: { coin: 'ETH' } }, 'gw');
    expect(echo.status).to.equal(200);
    expect(echo.text).to.contain('[REDACTED]');
    expect((await post(`${base}/${ENDPOINTS.price}`, { parameters: { coin: 'LEAK' } }, 'gw leak')).status).to.equal(
      500,
    );
    expect((await post(`${base}/${ENDPOINTS.broken}`, { parameters: {} }, 'gw broken')).status).to.equal(500);
    child.kill('SIGTERM');
    expect(await exited(child)).to.equal(0);
  });

  it('start: a cycle, a heartbeat and gateway answers, then SIGTERM', async () => {
    await request('LEAK', 'hostile-start');
    const port = await freePort();
    const child = spawnOracleNode([
      'start',
      ...configArgs(),
      ...cacheArgs(),
      '--interval-ms',
      '500',
      '--port',
      `${port}`,
    ]);
    const io = capture(child, 'start');
    await until(() => /cycle finished/.test(io.stderr) && /heartbeat/i.test(io.stderr), 'a cycle and a heartbeat');
    const base = `http://127.0.0.1:${port}/http-data/01234567-abcd-abcd-abcd-012345678abc`;
    await post(`${base}/${deriveEndpointId(OIS_TITLE, 'echo')}`, { parameters: { coin: 'ETH' } }, 'start gw');
    await post(`${base}/${ENDPOINTS.price}`, { parameters: { coin: 'LEAK' } }, 'start gw leak');
    child.kill('SIGTERM');
    expect(await exited(child)).to.equal(0);
    await waitForMined(chain.anvil.url);
  });

  it('derive and schema', async () => {
    const derived = await run(process.execPath, [...ORACLE_NODE_ARGS, 'derive', 'node-address'], {
      cwd: repoRoot,
      env: { ...process.env, NODE_WALLET_MNEMONIC: secrets['NODE_MNEMONIC'] },
    });
    outputs.push({ where: 'derive', text: derived.stdout + derived.stderr });
    const schema = await run(process.execPath, [...ORACLE_NODE_ARGS, 'schema'], { cwd: repoRoot });
    outputs.push({ where: 'schema', text: schema.stdout + schema.stderr });
  });

  it('no output holds any secret value, raw, JSON-escaped or URI-encoded', () => {
    expect(outputs.length).to.be.greaterThan(12);
    const values = Object.values(secrets).flatMap((value) => [value, encodeURIComponent(value)]);
    for (const { where, text } of outputs) {
      for (const value of values) {
        expect(text.includes(value), `${where} contains a secret (${value.slice(0, 6)}…)`).to.equal(false);
      }
    }
  });
});
