// The coordinator run's hard end and SIGTERM on anvil through the real AirnodeRrpV0 (docs/chain-cycle.md, "The
// window"): an API that never answers makes the run send nothing after its deadline, return without waiting for the
// call, and leave the request open for the next window; SIGTERM to a running `oracle-node coordinator --window` sends
// nothing more and writes the report. Also the request log of a window: each request's latest outcome.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { ProviderMemory } from '../../../src/chain/provider-health.js';
import { mergeRequestLog } from '../../../src/contract/request-log.js';
import { WorkDeadline } from '../../../src/node/deadline.js';
import { InProcessExecutor } from '../../../src/node/executor.js';
import { silentLogger } from '../../../src/node/logger.js';
import { cycleRequestRecords } from '../../../src/node/request-log.js';
import { runWindow } from '../../../src/node/window.js';
import { spawnOracleNode } from '../../support/binary.js';
import { rpc, setBalance, startTestChain, waitForMined } from '../../support/chain.js';
import {
  type ApiServer,
  buildConfig,
  buildConfigJson,
  createSponsor,
  NODE_ADDRESS,
  requestEvents,
  requestPrice,
  startApiServer,
  wallets,
  writeNodeFiles,
} from '../../support/harness.js';
import { type RecordingProxy, startRecordingProxy } from '../../support/rpc-proxy.js';

const POLL_MS = 1000;

describe("the coordinator run's hard end and SIGTERM (anvil, real AirnodeRrpV0)", () => {
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  let api: ApiServer;
  let proxy: RecordingProxy;
  /** While set, the API holds every price call unanswered; each held call's release. */
  let holding = false;
  const held: (() => void)[] = [];

  before(async () => {
    chain = await startTestChain();
    api = await startApiServer({
      hold: () => (holding ? new Promise<void>((release) => held.push(release)) : undefined),
    });
    proxy = await startRecordingProxy(chain.anvil.url);
    await setBalance(chain.anvil.url, NODE_ADDRESS, 10n ** 20n);
  });
  afterEach(() => {
    holding = false;
    proxy.setFault(undefined);
    for (const release of held.splice(0)) release();
  });
  after(async () => {
    await proxy?.close();
    await api?.close();
    await chain?.anvil.stop();
  });

  const config = () =>
    buildConfig({ providers: { counted: proxy.url }, deployment: chain.deployment, apiUrl: api.url });
  const deps = (cfg: ReturnType<typeof config>, deadline?: WorkDeadline) => ({
    executor: new InProcessExecutor({ config: cfg, wallets, logger: silentLogger, ...(deadline ? { deadline } : {}) }),
    logger: silentLogger,
    wallets,
    providerMemory: new ProviderMemory(),
  });
  const transactionCount = async (address: string) =>
    Number(await rpc<string>(chain.anvil.url, 'eth_getTransactionCount', [address, 'pending']));
  const priceCalls = () => api.calls.filter((call) => call.path === '/price').length;
  async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
    for (let i = 0; i < 600; i++) {
      if (await condition()) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  it('a request skipped in one poll and fulfilled in a later one is recorded as fulfilled', async () => {
    const sponsor = await createSponsor(chain.deployment, 'log-latest');
    const id = await requestPrice(chain.deployment, sponsor);
    // The first cycle sees a pending transaction of the wallet it did not send: it waits (skipped).
    proxy.setFault(({ method, params }) =>
      method === 'eth_getTransactionCount' && params[1] === 'pending'
        ? { result: (upstream) => `0x${(Number(upstream) + 1).toString(16)}` }
        : undefined,
    );
    let now = 0;
    const summary = await runWindow(config(), deps(config()), {
      windowMs: POLL_MS,
      pollIntervalMs: POLL_MS,
      now: () => now,
      sleep: async (ms) => {
        // The pending transaction is gone; a new block makes the poll run the cycle again.
        proxy.setFault(undefined);
        await rpc(chain.anvil.url, 'evm_mine', []);
        now += ms;
      },
    });
    expect(summary.transactions).to.include({ skipped: 1, fulfilled: 1 });
    await waitForMined(chain.anvil.url);
    expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
    // The window's request log, as the coordinator stores it after the window.
    const log = mergeRequestLog([], cycleRequestRecords(summary, { time: new Date(0) }));
    const record = log.find((r) => r.requestId === id.toLowerCase());
    expect(record).to.include({ state: 'fulfilled' });
    expect(record!.transaction?.hash).to.be.a('string');
  });

  it("an API that never answers: nothing is sent after the window's hard end, the window returns, and the next window serves the request", async () => {
    const sponsor = await createSponsor(chain.deployment, 'hard-end');
    const id = await requestPrice(chain.deployment, sponsor);
    holding = true;
    const callsBefore = priceCalls();
    const cfg = config();
    // The window has no polls; its hard end comes while the API call is held.
    const deadline = WorkDeadline.after(1_500);
    const summary = await runWindow(cfg, deps(cfg, deadline), {
      windowMs: 0,
      pollIntervalMs: POLL_MS,
      deadline,
    });
    // Returned without the API's answer: every call it made is still held.
    expect(held).to.have.length(priceCalls() - callsBefore);
    expect(deadline.stopped).to.equal(true);
    expect(summary.transactions).to.include({ fulfilled: 0, failed: 0, skipped: 1 });
    expect(await transactionCount(sponsor.sponsorWallet)).to.equal(0);
    const [record] = cycleRequestRecords(summary, { time: new Date(0) });
    expect(record).to.include({ requestId: id.toLowerCase(), state: 'skipped' });
    expect(record!.reason).to.include('hard end');
    // The API answers only now, after the hard end: still nothing is sent, and the request is open.
    for (const release of held.splice(0)) release();
    holding = false;
    await new Promise((resolve) => setImmediate(resolve));
    expect(await transactionCount(sponsor.sponsorWallet)).to.equal(0);
    expect(await requestEvents(chain.deployment, id)).to.deep.equal({ fulfilled: [], failed: [] });

    const next = await runWindow(cfg, deps(cfg), { windowMs: 0, pollIntervalMs: POLL_MS });
    expect(next.transactions).to.include({ fulfilled: 1, failed: 0 });
    await waitForMined(chain.anvil.url);
    expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
    expect(await transactionCount(sponsor.sponsorWallet)).to.equal(1);
  });

  /** `oracle-node coordinator --window` as the operator's pod runs it, against the test chain and API. */
  function spawnWindow(window: string) {
    const dir = mkdtempSync(join(tmpdir(), 'coordinator-deadline-'));
    const { config: json, secrets } = buildConfigJson({
      providers: { anvil: chain.anvil.url },
      deployment: chain.deployment,
      apiUrl: api.url,
    });
    (json['nodeSettings'] as { logLevel: string }).logLevel = 'WARN';
    const files = writeNodeFiles(dir, { config: json, secrets });
    const child = spawnOracleNode(
      ['coordinator', ...files.args, '--cache-dir', join(dir, 'cache'), '--window', window, '--poll-interval', '1'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const io = { stdout: '', stderr: '' };
    child.stdout?.on('data', (chunk) => {
      io.stdout += chunk;
    });
    child.stderr?.on('data', (chunk) => {
      io.stderr += chunk;
    });
    const requestLog = () =>
      JSON.parse(readFileSync(join(dir, 'cache', 'requests.json'), 'utf8')) as { requestId: string }[];
    return { child, io, exited: exitOf(child), requestLog };
  }

  it("`oracle-node coordinator --window` with an API that never answers exits at the window's hard end, having sent nothing", async () => {
    const sponsor = await createSponsor(chain.deployment, 'cli-hard-end');
    const id = await requestPrice(chain.deployment, sponsor);
    holding = true;
    const calls = priceCalls();
    // A 1 s window: its hard end 5 s later, while the API call is still held.
    const run = spawnWindow('1');
    expect(await run.exited, run.io.stderr).to.equal(0);
    // It did not wait for the API (its own timeouts are 10 s and 20 s): the call is still held.
    expect(held).to.have.length(priceCalls() - calls);
    expect(held.length).to.be.greaterThan(0);
    expect(JSON.parse(run.io.stdout.trim()).transactions).to.include({ fulfilled: 0, failed: 0, skipped: 1 });
    expect(run.io.stderr).to.include("the window's hard end: nothing new is sent");
    expect(run.requestLog().find((record) => record.requestId === id.toLowerCase())).to.include({ state: 'skipped' });
    for (const release of held.splice(0)) release();
    holding = false;
    expect(await transactionCount(sponsor.sponsorWallet)).to.equal(0);
    expect(await requestEvents(chain.deployment, id)).to.deep.equal({ fulfilled: [], failed: [] });
    // The next run serves it.
    const next = spawnWindow('1');
    expect(await next.exited, next.io.stderr).to.equal(0);
    await waitForMined(chain.anvil.url);
    expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
  });

  it('SIGTERM to `oracle-node coordinator --window` mid-cycle: nothing sent after it, the report written, exit 0', async () => {
    const sponsor = await createSponsor(chain.deployment, 'sigterm');
    const id = await requestPrice(chain.deployment, sponsor);
    holding = true;
    const calls = priceCalls();
    const { child, io, exited, requestLog } = spawnWindow('60');
    try {
      // The first cycle is in flight: its API call is held.
      await until(() => priceCalls() > calls, 'the API call');
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, io.stderr).to.equal(0);
    // It did not wait for the API (its own timeouts are 10 s and 20 s): the call is still held.
    expect(held.length).to.be.greaterThan(0);
    expect(io.stderr).to.include('SIGTERM: nothing new is sent');
    expect(JSON.parse(io.stdout.trim()).transactions).to.include({ fulfilled: 0, failed: 0, skipped: 1 });
    expect(requestLog().find((record) => record.requestId === id.toLowerCase())).to.include({ state: 'skipped' });
    for (const release of held.splice(0)) release();
    expect(await transactionCount(sponsor.sponsorWallet)).to.equal(0);
    expect(await requestEvents(chain.deployment, id)).to.deep.equal({ fulfilled: [], failed: [] });
  });
});

function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
}
