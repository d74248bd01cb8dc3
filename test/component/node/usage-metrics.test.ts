// The usage of a real cycle (anvil, the real AirnodeRrpV0, an API on loopback): API calls per OIS, endpoint and
// outcome, fulfilments per sponsor with the sponsors beyond the top N counted as `other`, and the counts the
// heartbeat carries with `--heartbeat-usage`, signed by the node key.
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { verifyMessage } from 'ethers';
import { CYCLE_REPORT_KEY, parseCycleReport } from '../../../src/contract/pods.js';
import { runCycle } from '../../../src/node/cycle.js';
import { InProcessExecutor } from '../../../src/node/executor.js';
import { cycleReport } from '../../../src/node/kubernetes/cycle-report.js';
import { silentLogger } from '../../../src/node/logger.js';
import { cycleMetrics } from '../../../src/node/metrics.js';
import { type LastCycleCounts, lastCycleCounts } from '../../../src/node/usage-counts.js';
import { createMetricsRegistry } from '../../../src/observability/index.js';
import { setApiBudgets } from '../../../src/ois/index.js';
import { ORACLE_NODE_ARGS, repoRoot, spawnOracleNode } from '../../support/binary.js';
import { freePort, setBalance, startTestChain, waitForMined } from '../../support/chain.js';
import {
  type ApiServer,
  buildConfig,
  buildConfigJson,
  createSponsor,
  ENDPOINTS,
  encodeCoin,
  makeFullRequest,
  NODE_ADDRESS,
  requestEvents,
  requestPrice,
  startApiServer,
  wallets,
  writeNodeFiles,
} from '../../support/harness.js';
import { waitFor } from '../../support/wait.js';

const run = promisify(execFile);

describe('usage metrics of a cycle (anvil)', () => {
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  let api: ApiServer;

  // A chain per test: a request one test leaves open (a 5xx the engine retries) is not served by the next.
  beforeEach(async () => {
    chain = await startTestChain();
    api = await startApiServer();
    await setBalance(chain.anvil.url, NODE_ADDRESS, 10n ** 20n);
  });
  afterEach(async () => {
    await api?.close();
    await chain?.anvil.stop();
  });
  /** One cycle of the node on the test chain, both halves in this process; its transactions mined. */
  const oneCycle = async () => {
    const config = buildConfig({
      providers: { anvil: chain.anvil.url },
      deployment: chain.deployment,
      apiUrl: api.url,
    });
    const executor = new InProcessExecutor({ config, wallets, logger: silentLogger });
    const summary = await runCycle(config, { executor, logger: silentLogger, wallets });
    await waitForMined(chain.anvil.url);
    return summary;
  };

  it('counts API calls by OIS, endpoint and outcome, and fulfilments of the top sponsors, the rest as other', async () => {
    const big = await createSponsor(chain.deployment, 'usage-big');
    const middle = await createSponsor(chain.deployment, 'usage-middle');
    const small = await createSponsor(chain.deployment, 'usage-small');
    // One after the other: the requests come from one deployer account.
    const fulfilled: string[] = [];
    for (const sponsor of [big, big, big, big, middle, middle, middle])
      fulfilled.push(await requestPrice(chain.deployment, sponsor));
    // The API answers 200, but `_times` is no number: encoding fails, the request is failed on chain at once.
    const unencodable = await requestPrice(chain.deployment, small, 'ETH', [
      { name: '_times', type: 'string', value: 'many' },
    ]);
    // The API answers 500.
    await makeFullRequest(chain.deployment, {
      endpointId: ENDPOINTS.broken,
      sponsor: small.address,
      sponsorWallet: small.sponsorWallet,
      parameters: encodeCoin('ETH'),
    });

    const summary = await oneCycle();
    for (const id of fulfilled) expect((await requestEvents(chain.deployment, id)).fulfilled, id).to.have.length(1);
    expect((await requestEvents(chain.deployment, unencodable)).failed).to.have.length(1);

    const registry = createMetricsRegistry();
    cycleMetrics(registry, { topSponsors: 2 }).observe(summary, 1);
    const text = await registry.metrics();
    const series = (name: string, labels: string) => new RegExp(`^${name}\\{${labels}\\} (\\d+)$`, 'm').exec(text)?.[1];

    expect(series('node_api_calls_total', 'ois="Test API",endpoint="price",outcome="2xx"')).to.equal('7');
    expect(series('node_api_calls_total', 'ois="Test API",endpoint="price",outcome="failed"')).to.equal('1');
    expect(series('node_api_calls_total', 'ois="Test API",endpoint="broken",outcome="5xx"')).to.equal('1');
    expect(text).not.to.match(/node_api_calls_total\{[^}]*outcome="(cached|not called|not_called)"/);

    const sponsor = (address: string, outcome: string) =>
      series('node_sponsor_fulfilments_total', `chain_id="31337",sponsor="${address}",outcome="${outcome}"`);
    expect(sponsor(big.address.toLowerCase(), 'fulfilled')).to.equal('4');
    expect(sponsor(middle.address.toLowerCase(), 'fulfilled')).to.equal('3');
    // The third sponsor (at most 2 requests answered) found no free label: its failures are `other`'s, and no series names it.
    expect(sponsor('other', 'failed')).to.equal(String(summary.transactions.failed));
    expect(summary.transactions.failed).to.be.at.least(1);
    expect(text).not.to.include(small.address.toLowerCase());

    // A coordinator pod reports the same to the operator, its run's top N sponsors by address, through the contract.
    const report = parseCycleReport({ [CYCLE_REPORT_KEY]: JSON.stringify(cycleReport(summary, { topSponsors: 1 })) });
    expect(report?.apiCalls).to.deep.include.members([
      { ois: 'Test API', endpoint: 'price', outcome: '2xx', count: 7 },
      { ois: 'Test API', endpoint: 'price', outcome: 'failed', count: 1 },
      { ois: 'Test API', endpoint: 'broken', outcome: '5xx', count: 1 },
    ]);
    expect(report?.sponsorFulfilments).to.have.deep.members([
      { chainId: '31337', sponsor: big.address.toLowerCase(), outcome: 'fulfilled', count: 4 },
      { chainId: '31337', sponsor: 'other', outcome: 'fulfilled', count: 3 },
      { chainId: '31337', sponsor: 'other', outcome: 'failed', count: summary.transactions.failed },
    ]);
  });

  it('counts a call the rate budget kept back as deferred, never as a call the API failed', async () => {
    const sponsor = await createSponsor(chain.deployment, 'usage-budget');
    await requestPrice(chain.deployment, sponsor);
    await requestPrice(chain.deployment, sponsor);
    // One call a minute: the second request's call never goes out in this cycle.
    setApiBudgets([{ ois: 'Test API', rate: { calls: 1, windowMs: 60_000 } }]);
    try {
      const summary = await oneCycle();
      expect(summary.transactions).to.include({ fulfilled: 1, deferred: 1, failed: 0 });
      expect(api.calls.filter((call) => call.path === '/price')).to.have.length(1);

      const registry = createMetricsRegistry();
      cycleMetrics(registry).observe(summary, 1);
      const text = await registry.metrics();
      expect(text).to.include('node_api_calls_total{ois="Test API",endpoint="price",outcome="2xx"} 1');
      expect(text).to.include('node_api_calls_total{ois="Test API",endpoint="price",outcome="deferred"} 1');
      expect(text).not.to.match(/node_api_calls_total\{[^}]*outcome="failed"/);
      expect(lastCycleCounts(summary, 0)).to.deep.include({
        requests: { fulfilled: 1, failed: 0, deferred: 1, skipped: 0, errors: 0 },
      });
      expect(lastCycleCounts(summary, 0).api_calls).to.include({ '2xx': 1, deferred: 1, failed: 0 });
    } finally {
      setApiBudgets([]);
    }
  });

  it('`coordinator --heartbeat-usage` signs the counts of its cycle into the heartbeat payload (`last_cycle`)', async () => {
    const { bodies, url, close } = await startHeartbeatReceiver();
    try {
      const sponsor = await createSponsor(chain.deployment, 'usage-heartbeat');
      const fulfilled = [await requestPrice(chain.deployment, sponsor), await requestPrice(chain.deployment, sponsor)];
      await makeFullRequest(chain.deployment, {
        endpointId: ENDPOINTS.broken,
        sponsor: sponsor.address,
        sponsorWallet: sponsor.sponsorWallet,
        parameters: encodeCoin('ETH'),
      });
      const { config, secrets } = buildConfigJson({
        providers: { anvil: chain.anvil.url },
        deployment: chain.deployment,
        apiUrl: api.url,
      });
      const dir = mkdtempSync(join(tmpdir(), 'usage-heartbeat-'));
      const files = writeNodeFiles(dir, withHeartbeat(config, secrets, url));
      await run(
        process.execPath,
        [...ORACLE_NODE_ARGS, 'coordinator', ...files.args, '--cache-dir', dir, '--heartbeat-usage'],
        {
          cwd: repoRoot,
          env: { ...process.env, ORACLE_NODE_WORKER_TEMPLATE: '' },
        },
      );
      await waitForMined(chain.anvil.url);
      for (const id of fulfilled) expect((await requestEvents(chain.deployment, id)).fulfilled, id).to.have.length(1);

      expect(bodies).to.have.length(1);
      const { payload, signature } = JSON.parse(bodies[0]!) as { payload: string; signature: string };
      expect(verifyMessage(payload, signature)).to.equal(NODE_ADDRESS);
      const parsed = JSON.parse(payload) as Record<string, unknown>;
      // The reference's keys first, in its order; the counts after them.
      expect(Object.keys(parsed)).to.deep.equal([
        'timestamp',
        'stage',
        'cloud_provider',
        'deployment_id',
        'http_gateway_url',
        'http_signed_data_gateway_url',
        'oev_gateway_url',
        'last_cycle',
      ]);
      const lastCycle = parsed.last_cycle as LastCycleCounts;
      expect(lastCycle.duration_ms).to.be.a('number');
      expect(lastCycle.requests.fulfilled).to.equal(2);
      // The 500 is failed on chain or left open for a later cycle: either way it is one request and one 5xx call.
      expect(lastCycle.requests.failed + lastCycle.requests.deferred + lastCycle.requests.skipped).to.equal(1);
      expect(lastCycle.requests.errors).to.equal(0);
      expect(lastCycle.api_calls).to.deep.equal({
        '2xx': 2,
        '3xx': 0,
        '4xx': 0,
        '5xx': 1,
        no_response: 0,
        failed: 0,
        deferred: 0,
      });
    } finally {
      await close();
    }
  });

  it('`start --metrics-top-sponsors 0 --heartbeat-usage` counts every sponsor as other and signs the counts', async () => {
    const { bodies, url, close } = await startHeartbeatReceiver();
    const metricsPort = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'usage-start-'));
    const { config, secrets } = buildConfigJson({
      providers: { anvil: chain.anvil.url },
      deployment: chain.deployment,
      apiUrl: api.url,
    });
    const files = writeNodeFiles(dir, withHeartbeat(config, secrets, url));
    const child = spawnOracleNode([
      'start',
      ...files.args,
      '--interval-ms',
      '300',
      '--port',
      '0',
      '--metrics-port',
      String(metricsPort),
      '--cache-dir',
      dir,
      '--metrics-top-sponsors',
      '0',
      '--heartbeat-usage',
    ]);
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      const sponsor = await createSponsor(chain.deployment, 'usage-start');
      const id = await requestPrice(chain.deployment, sponsor);
      await waitFor(
        async () => (await requestEvents(chain.deployment, id)).fulfilled.length === 1,
        60_000,
        'fulfilment',
      );
      const metrics = await waitFor(
        async () => {
          const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
          return text.includes('node_sponsor_fulfilments_total{chain_id="31337",sponsor="other",outcome="fulfilled"} 1')
            ? text
            : undefined;
        },
        30_000,
        'the fulfilment on /metrics',
      );
      expect(metrics).to.include('node_api_calls_total{ois="Test API",endpoint="price",outcome="2xx"} 1');
      expect(metrics).not.to.include(sponsor.address.toLowerCase());
      const counted = await waitFor(
        () =>
          bodies
            .map((body) => JSON.parse(body) as { payload: string; signature: string })
            .find(
              (body) =>
                (JSON.parse(body.payload) as { last_cycle?: LastCycleCounts }).last_cycle?.requests.fulfilled === 1,
            ),
        30_000,
        'a heartbeat with the fulfilment counted',
      );
      expect(verifyMessage(counted.payload, counted.signature)).to.equal(NODE_ADDRESS);
    } finally {
      child.kill('SIGTERM');
      await exited;
      await close();
    }
  });
});

/** A heartbeat endpoint on loopback that keeps every body it is sent. */
async function startHeartbeatReceiver(): Promise<{ bodies: string[]; url: string; close: () => Promise<void> }> {
  const bodies: string[] = [];
  const receiver: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      bodies.push(body);
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  return {
    bodies,
    url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/heartbeat`,
    close: async () => {
      receiver.closeAllConnections();
      await new Promise((resolve) => receiver.close(resolve));
    },
  };
}

/** The node's files with the heartbeat on, to `url`, its URL and key from secrets.env as an operator would. */
function withHeartbeat(config: Record<string, unknown>, secrets: Record<string, string>, url: string) {
  (config.nodeSettings as Record<string, unknown>).heartbeat = {
    enabled: true,
    url: `\${HEARTBEAT_URL}`,
    apiKey: `\${HEARTBEAT_KEY}`,
  };
  return {
    config,
    secrets: { ...secrets, HEARTBEAT_URL: url, HEARTBEAT_KEY: 'heartbeat-api-key-0123456789-abcdefghij' },
  };
}
