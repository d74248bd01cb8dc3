import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { WINDOW_COORDINATOR_URL_ENV, WINDOW_CREDENTIAL_ENV } from '../../../src/contract/shard.js';
import { DEFAULT_PATH_KEY } from '../../../src/gateway/server.js';
import { spawnOracleNode } from '../../support/binary.js';
import { API_KEY, configJson, ENDPOINTS, type LoopbackApi, MNEMONIC, startLoopbackApi } from './fixtures.js';

// `oracle-node gateway` as a real process: config + secrets from files, logs on stdout, SIGTERM drains.
describe('oracle-node gateway (process)', function () {
  this.timeout(60_000);
  let api: LoopbackApi;
  let dir: string;
  let child: ChildProcess | undefined;

  before(async () => {
    api = await startLoopbackApi();
    dir = await mkdtemp(join(tmpdir(), 'gateway-cli-'));
  });
  after(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await api.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves with the configured log format, redacts secrets, runs snippets in UTC, and drains on SIGTERM', async () => {
    const config = configJson(api.url, { logLevel: 'DEBUG' });
    config.nodeSettings.logFormat = 'plain';
    // A snippet reading local time: 1700000000 is 22:13 UTC (14:13 in the TZ the process is started with).
    const stamped = config.ois[0]!.endpoints.find((endpoint) => endpoint.name === 'stamped')!;
    Object.assign(stamped, {
      postProcessingSpecificationV2: {
        environment: 'Node',
        timeoutMs: 5000,
        value: '() => ({ response: { value: new Date(1700000000000).getHours() } })',
      },
    });
    await writeFile(join(dir, 'config.json'), JSON.stringify(config));
    await writeFile(
      join(dir, 'secrets.env'),
      `NODE_WALLET_MNEMONIC=${MNEMONIC}\nAPI_KEY=${API_KEY}\nGATEWAY_PATH_KEY=abcdefghijklmnop-0123\n`,
    );
    child = spawnOracleNode(
      [
        'gateway',
        '-c',
        join(dir, 'config.json'),
        '-s',
        join(dir, 'secrets.env'),
        '--port',
        '0',
        '--host',
        '127.0.0.1',
        '--path-key-secret',
        'GATEWAY_PATH_KEY',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TZ: 'America/Los_Angeles' } },
    );
    let output = '';
    child.stdout!.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr!.on('data', (chunk) => {
      output += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child!.on('exit', (code) => resolve(code)));
    const deadline = Date.now() + 30_000;
    let port: number | undefined;
    while (!port && Date.now() < deadline) {
      port = Number(/gateway server running .*?port=(\d+)/.exec(output)?.[1]) || undefined;
      if (!port) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(port, output).to.be.a('number');
    const base = `http://127.0.0.1:${port}`;
    const ok = await fetch(`${base}/http-data/abcdefghijklmnop-0123/${ENDPOINTS.price}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ parameters: { coin: API_KEY } }),
    });
    expect(ok.status).to.equal(200);
    const publicKey = await fetch(`${base}/http-data/${DEFAULT_PATH_KEY}/${ENDPOINTS.price}`, { method: 'POST' });
    expect(publicKey.status).to.equal(404);
    const local = await fetch(`${base}/http-data/abcdefghijklmnop-0123/${ENDPOINTS.stamped}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ parameters: {} }),
    });
    const localBody = (await local.json()) as { values: string[] };
    expect(localBody.values, 'the hour as UTC, times 100').to.deep.equal(['2200']);

    const slow = fetch(`${base}/http-data/abcdefghijklmnop-0123/${ENDPOINTS.slow}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ parameters: { ms: '800' } }),
    });
    // SIGTERM only once the slow call has reached the API, so it is in flight whatever the machine's speed.
    const before = api.requests;
    while (api.requests === before) await new Promise((resolve) => setTimeout(resolve, 10));
    child.kill('SIGTERM');
    const slowReply = await slow;
    expect(slowReply.status).to.equal(200);
    expect(await exited).to.equal(0);
    // Plain lines, one per entry, with the DEBUG request lines and no secret value.
    expect(output).to.match(/^\d{4}-\d\d-\d\dT\S+Z INFO {2}gateway listening/m);
    expect(output).to.contain('DEBUG gateway request served');
    expect(output).to.contain('draining in-flight requests');
    expect(output).not.to.contain(API_KEY);
    expect(output).not.to.contain('abcdefghijklmnop-0123');
    expect(output).not.to.contain(MNEMONIC);
  });

  it('refuses an --api-rate-limit naming an OIS or endpoint the config lacks, quoting the flag (gateway, worker)', async () => {
    await writeFile(join(dir, 'budget-config.json'), JSON.stringify(configJson(api.url)));
    await writeFile(join(dir, 'budget-secrets.env'), `NODE_WALLET_MNEMONIC=${MNEMONIC}\nAPI_KEY=${API_KEY}\n`);
    const files = ['-c', join(dir, 'budget-config.json'), '-s', join(dir, 'budget-secrets.env')];
    const run = async (args: string[], env: Record<string, string> = {}) => {
      const process = spawnOracleNode(args, {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...globalThis.process.env, ...env },
      });
      let stderr = '';
      process.stderr!.on('data', (chunk) => {
        stderr += chunk;
      });
      const code = await new Promise<number | null>((resolve) => process.on('exit', (exit) => resolve(exit)));
      return { code, stderr };
    };
    const gateway = await run(['gateway', ...files, '--port', '0', '--api-rate-limit', 'Loopback API/nope=5/s']);
    expect(gateway.code).to.equal(2);
    expect(gateway.stderr).to.contain(
      "--api-rate-limit 'Loopback API/nope=5/s': OIS 'Loopback API' has no endpoint named 'nope'",
    );
    // A window's worker checks its flags before it asks the coordinator for anything.
    const worker = await run(['worker', '--coordinator', ...files, '--api-rate-limit', 'Elsewhere=5/m'], {
      [WINDOW_COORDINATOR_URL_ENV]: 'http://127.0.0.1:9',
      [WINDOW_CREDENTIAL_ENV]: 'window-credential-0123456789',
    });
    expect(worker.code).to.equal(2);
    expect(worker.stderr).to.contain("--api-rate-limit 'Elsewhere=5/m': the config has no OIS titled 'Elsewhere'");
  });
});
