// The heartbeat (src/node/heartbeat.ts) on a loopback receiver: the reference's bytes (payload key order,
// EIP-191 signature by the node key), the reference's own reportHeartbeat as a differential, the gateway URLs
// in a pod the operator made, failures that are counted and never thrown, and `oracle-node coordinator`
// sending it after its cycle.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { verifyMessage } from 'ethers';
import type { Config } from '../../../src/config/index.js';
import { buildHeartbeatPayload, heartbeatResult, sendHeartbeat } from '../../../src/node/heartbeat.js';
import { createMetricsRegistry, metricValue } from '../../../src/observability/index.js';
import { nodeWallet } from '../../../src/protocol/wallet.js';
import { ORACLE_NODE_ARGS, repoRoot } from '../../support/binary.js';
import { buildConfigJson, writeNodeFiles } from '../../support/harness.js';
import { buildConfig, type ConfigOverrides, MNEMONIC, NODE_ADDRESS } from '../gateway/fixtures.js';

const node = nodeWallet(MNEMONIC);
const run = promisify(execFile);

describe('heartbeat (component)', function () {
  this.timeout(30_000);
  let receiver: Server;
  let url: string;
  const received: { headers: IncomingMessage['headers']; body: string }[] = [];
  let mode: 'ok' | 'fail' | 'hang' | 'redirect' = 'ok';
  const apiKey = 'heartbeat-api-key-0123456789-abcdefghij';

  before(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => {
        body += chunk;
      });
      req.on('end', () => {
        received.push({ headers: req.headers, body });
        if (mode === 'hang') return;
        if (mode === 'redirect') {
          res.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' }).end();
          return;
        }
        res.writeHead(mode === 'ok' ? 200 : 500).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/heartbeat`;
  });
  after(async () => {
    receiver.closeAllConnections();
    await new Promise((resolve) => receiver.close(resolve));
  });

  function config(overrides: ConfigOverrides = {}): Config {
    return buildConfig('http://127.0.0.1:1', {
      heartbeat: { enabled: true, url, apiKey },
      gatewayServerPort: 8765,
      ...overrides,
    });
  }

  it('posts the signed payload with the API key header and the keys in reference order', async () => {
    mode = 'ok';
    received.length = 0;
    const nowMs = 1_700_000_000_400;
    const outcome = await sendHeartbeat(config(), { deploymentId: 'local1a2b3c4d', nowMs });
    expect(outcome.sent).to.equal(true);
    expect(received).to.have.length(1);
    const { headers, body } = received[0]!;
    expect(headers['airnode-heartbeat-api-key']).to.equal(apiKey);
    expect(headers['content-type']).to.equal('application/json');
    const parsed = JSON.parse(body) as { payload: string; signature: string };
    expect(Object.keys(parsed)).to.deep.equal(['payload', 'signature']);
    expect(parsed.payload).to.equal(
      '{"timestamp":1700000000,"stage":"test","cloud_provider":"local","deployment_id":"local1a2b3c4d",' +
        '"http_gateway_url":"http://localhost:8765/http-data","http_signed_data_gateway_url":"http://localhost:8765/http-signed-data",' +
        '"oev_gateway_url":"http://localhost:8765/sign-oev"}',
    );
    expect(verifyMessage(parsed.payload, parsed.signature)).to.equal(NODE_ADDRESS);
  });

  it('sends the same request as the reference reportHeartbeat (differential)', async () => {
    mode = 'ok';
    process.env.AIRNODE_WALLET_PRIVATE_KEY = node.privateKey;
    const require = createRequire(import.meta.url);
    const reference = require('@api3/airnode-node/dist/src/reporting/heartbeat.js') as {
      reportHeartbeat(state: unknown): Promise<unknown>;
    };
    for (const cloudProvider of [
      { type: 'local', gatewayServerPort: 8765 },
      { type: 'aws', region: 'us-east-1', disableConcurrencyReservations: false },
    ]) {
      const env = { HTTP_GATEWAY_URL: 'https://gw.example/uuid-1', OEV_GATEWAY_URL: 'https://gw.example/uuid-2' };
      Object.assign(process.env, env);
      const ours = config();
      const referenceConfig = { nodeSettings: { ...ours.nodeSettings, cloudProvider } };
      const oursConfig = { ...ours, nodeSettings: { ...ours.nodeSettings, cloudProvider } } as unknown as Config;
      received.length = 0;
      const log = console.log;
      console.log = () => {};
      try {
        await reference.reportHeartbeat({ config: referenceConfig, settings: { deploymentId: 'aws12345678' } });
      } finally {
        console.log = log;
      }
      await sendHeartbeat(oursConfig, { deploymentId: 'aws12345678', env });
      expect(received).to.have.length(2);
      const [theirs, mine] = received.map((entry) => ({
        header: entry.headers['airnode-heartbeat-api-key'],
        body: JSON.parse(entry.body) as { payload: string; signature: string },
      }));
      expect(mine!.header).to.equal(theirs!.header);
      const withoutTime = (payload: string) => payload.replace(/"timestamp":\d+/, '"timestamp":0');
      expect(withoutTime(mine!.body.payload)).to.equal(withoutTime(theirs!.body.payload));
      expect(verifyMessage(theirs!.body.payload, theirs!.body.signature)).to.equal(NODE_ADDRESS);
      for (const name of Object.keys(env)) delete process.env[name];
    }
  });

  it('derives the deployment id when the caller gives none', async () => {
    mode = 'ok';
    received.length = 0;
    await sendHeartbeat(config(), {});
    const payload = JSON.parse(JSON.parse(received[0]!.body).payload) as Record<string, unknown>;
    expect(payload.deployment_id).to.match(/^local[0-9a-f]{8}$/);
  });

  it('does not send when disabled', async () => {
    received.length = 0;
    const outcome = await sendHeartbeat(buildConfig('http://127.0.0.1:1'), {});
    expect(outcome).to.deep.equal({ sent: false, reason: 'disabled' });
    expect(received).to.have.length(0);
  });

  it('logs and counts failures without throwing: error status, timeout, connection refused, redirect', async function () {
    this.timeout(15_000); // a heartbeat timeout that did not work would hang far longer
    const registry = createMetricsRegistry();
    mode = 'fail';
    expect(await sendHeartbeat(config(), {}, { registry })).to.include({ sent: false, reason: 'failed' });
    mode = 'hang';
    // A hanging heartbeat server never answers: only the 300 ms timeout ends this call (else the test times out).
    expect(await sendHeartbeat(config(), {}, { registry, timeoutMs: 300 })).to.include({
      sent: false,
      reason: 'failed',
    });
    const refused = buildConfig('http://127.0.0.1:1', {
      heartbeat: { enabled: true, url: 'http://127.0.0.1:1/hb', apiKey },
    });
    expect(await sendHeartbeat(refused, {}, { registry })).to.include({ sent: false, reason: 'failed' });
    mode = 'redirect';
    expect(await sendHeartbeat(config(), {}, { registry })).to.include({ sent: false, reason: 'failed' });
    expect(await metricValue(registry, 'heartbeat_requests_total', { outcome: 'failure' })).to.equal(4);
    mode = 'ok';
  });
});

describe('heartbeat in a pod the operator made, and from `oracle-node coordinator` (component)', function () {
  this.timeout(60_000);
  const vectors = JSON.parse(
    readFileSync(join(repoRoot, 'test/fixtures/airnode/vectors/derivation-vectors.json'), 'utf8'),
  ) as {
    mnemonic: string;
    nodeAddress_m_44_60_0_0_0: { value: string };
    deploymentIds: { cloudProvider: { type: string }; stage: string; nodeVersion: string; deploymentId: string }[];
  };
  const apiKey = 'heartbeat-api-key-0123456789-abcdefghij';
  let receiver: Server;
  let url: string;
  const received: { headers: IncomingMessage['headers']; body: string }[] = [];

  before(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => {
        body += chunk;
      });
      req.on('end', () => {
        received.push({ headers: req.headers, body });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/heartbeat`;
  });
  after(async () => {
    receiver.closeAllConnections();
    await new Promise((resolve) => receiver.close(resolve));
  });

  const podConfig = () =>
    buildConfig('http://127.0.0.1:1', {
      heartbeat: { enabled: true, url, apiKey },
      gatewayServerPort: 8765,
      httpGateway: { enabled: true, maxConcurrency: 10, corsOrigins: [] },
      httpSignedDataGateway: { enabled: false },
      oevGateway: { enabled: true, maxConcurrency: 10, corsOrigins: [] },
    });

  it('reports the enabled gateways under the public URL and never localhost', () => {
    const payload = JSON.parse(
      buildHeartbeatPayload(podConfig(), {
        deploymentId: 'local1a2b3c4d',
        nowMs: 1_700_000_000_000,
        kubernetes: { gatewayUrl: 'https://oracle.example.org/' },
      }),
    ) as Record<string, unknown>;
    expect(Object.keys(payload)).to.deep.equal([
      'timestamp',
      'stage',
      'cloud_provider',
      'deployment_id',
      'http_gateway_url',
      'oev_gateway_url',
    ]);
    expect(payload.http_gateway_url).to.equal('https://oracle.example.org/http-data');
    expect(payload.oev_gateway_url).to.equal('https://oracle.example.org/sign-oev');
    // No public URL known: no gateway URL at all rather than one nobody can reach.
    const without = buildHeartbeatPayload(podConfig(), { deploymentId: 'local1a2b3c4d', kubernetes: {} });
    expect(without).not.to.include('localhost');
    expect(Object.keys(JSON.parse(without) as object)).to.deep.equal([
      'timestamp',
      'stage',
      'cloud_provider',
      'deployment_id',
    ]);
  });

  it('names each outcome as the cycle report does', async () => {
    expect(heartbeatResult(await sendHeartbeat(podConfig(), { kubernetes: {} }))).to.equal('Sent');
    expect(heartbeatResult({ sent: false, reason: 'disabled' })).to.equal('Disabled');
    expect(heartbeatResult({ sent: false, reason: 'failed', error: 'x' })).to.equal('Failed');
  });

  it('`oracle-node coordinator` sends it after its cycle, signed by the node key (derivation vectors)', async () => {
    received.length = 0;
    const dir = mkdtempSync(join(tmpdir(), 'coordinator-heartbeat-'));
    const deployment = {
      chainId: 31337,
      AirnodeRrpV0: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
      AirnodeRrpV0DryRun: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
    } as unknown as Parameters<typeof buildConfigJson>[0]['deployment'];
    // No chain answers (port 1): the cycle finds every provider down and the heartbeat still follows it.
    const { config, secrets } = buildConfigJson({ providers: { down: 'http://127.0.0.1:1' }, deployment, apiUrl: url });
    const vector = vectors.deploymentIds.find((v) => v.cloudProvider.type === 'local')!;
    const nodeSettings = config.nodeSettings as Record<string, unknown>;
    nodeSettings.stage = vector.stage;
    nodeSettings.nodeVersion = vector.nodeVersion;
    nodeSettings.heartbeat = { enabled: true, url: `\${HEARTBEAT_URL}`, apiKey: `\${HEARTBEAT_KEY}` };
    nodeSettings.cloudProvider = { type: 'local', gatewayServerPort: 8765 };
    const env = { ...secrets, NODE_MNEMONIC: vectors.mnemonic, HEARTBEAT_URL: url, HEARTBEAT_KEY: apiKey };
    const files = writeNodeFiles(dir, { config, secrets: env });
    const { stdout } = await run(process.execPath, [...ORACLE_NODE_ARGS, 'coordinator', ...files.args], {
      cwd: repoRoot,
      env: { ...process.env, ORACLE_NODE_WORKER_TEMPLATE: '' },
    });
    expect(JSON.parse(stdout).providers[0].ok).to.equal(false);
    expect(received).to.have.length(1);
    const { headers, body } = received[0]!;
    expect(headers['airnode-heartbeat-api-key']).to.equal(apiKey);
    // The body's bytes: payload first, then signature; the payload a JSON string with the reference's key order.
    expect(body).to.match(/^\{"payload":"\{\\"timestamp\\":\d+,\\"stage\\":\\"dev\\",/);
    const parsed = JSON.parse(body) as { payload: string; signature: string };
    expect(Object.keys(parsed)).to.deep.equal(['payload', 'signature']);
    expect(parsed.payload.replace(/"timestamp":\d+/, '"timestamp":0')).to.equal(
      `{"timestamp":0,"stage":"dev","cloud_provider":"local","deployment_id":"${vector.deploymentId}",` +
        '"http_gateway_url":"http://localhost:8765/http-data",' +
        '"http_signed_data_gateway_url":"http://localhost:8765/http-signed-data",' +
        '"oev_gateway_url":"http://localhost:8765/sign-oev"}',
    );
    expect(verifyMessage(parsed.payload, parsed.signature)).to.equal(vectors.nodeAddress_m_44_60_0_0_0.value);
  });
});
