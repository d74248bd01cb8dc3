// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are ${NAME} secret references, not templates
// The gateway process started with only the keys of the Secret the operator gives its pod (config/secret-scopes.ts).
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { secretScopes } from '../../../src/config/index.js';
import { ENV } from '../../../src/contract/pods.js';
import { DEFAULT_PATH_KEY } from '../../../src/gateway/server.js';
import { spawnOracleNode } from '../../support/binary.js';
import { API_KEY, configJson, ENDPOINTS, type LoopbackApi, startLoopbackApi } from './fixtures.js';

describe('oracle-node gateway with only its own keys (process)', function () {
  this.timeout(60_000);
  let api: LoopbackApi;
  let dir: string;
  let child: ChildProcess | undefined;

  before(async () => {
    api = await startLoopbackApi();
    dir = await mkdtemp(join(tmpdir(), 'gateway-scope-'));
  });
  after(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await api.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('the HTTP gateway serves its endpoints holding only their API key: no mnemonic, no heartbeat key', async () => {
    const config = configJson(api.url, {
      httpSignedDataGateway: { enabled: false },
      oevGateway: { enabled: false },
      heartbeat: { enabled: true, url: '${HEARTBEAT_URL}', apiKey: '${HEARTBEAT_API_KEY}' },
      logLevel: 'INFO',
    });
    expect(secretScopes(config).gateway).to.deep.equal(['API_KEY']);
    await writeFile(join(dir, 'config.json'), JSON.stringify(config));
    child = spawnOracleNode(['gateway', '-c', join(dir, 'config.json'), '--port', '0', '--host', '127.0.0.1'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env['PATH'], API_KEY, [ENV.secretScope]: 'gateway' },
    });
    let output = '';
    child.stdout!.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr!.on('data', (chunk) => {
      output += chunk;
    });
    const deadline = Date.now() + 30_000;
    let port: number | undefined;
    while (!port && Date.now() < deadline && child.exitCode === null) {
      port = Number(/"port":(\d+),[^\n]*gateway server running/.exec(output)?.[1]) || undefined;
      if (!port) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(port, output).to.be.a('number');
    const reply = await fetch(`http://127.0.0.1:${port}/http-data/${DEFAULT_PATH_KEY}/${ENDPOINTS.price}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ parameters: {} }),
    });
    expect(reply.status, output).to.equal(200);
    child.kill('SIGTERM');
  });
});
