// Sending at the edges (issue 44, items 1, 11 and 12) on anvil through the real AirnodeRrpV0, with the hand-over's
// Lease rules (src/node/kubernetes/handover.ts) on an in-memory Lease API: a holder that loses the Lease while a slow
// provider that refuses batches holds its first send sends nothing more; a provider that refuses batches in any shape
// gets the fulfilments one at a time, refused as a batch once; a transaction stuck across runs shorter than the stuck
// rule is replaced once, the sightings handed over with the Lease.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { pino } from 'pino';
import { PendingSightings, STUCK_AFTER_BLOCKS } from '../../../src/chain/pending.js';
import { ProviderMemory } from '../../../src/chain/provider-health.js';
import { LEASE_LOST } from '../../../src/cli/coordinator.js';
import { type CycleSummary, runCycle } from '../../../src/node/cycle.js';
import { WorkDeadline } from '../../../src/node/deadline.js';
import { InProcessExecutor } from '../../../src/node/executor.js';
import { acquireHandoverLease, type HeldLease } from '../../../src/node/kubernetes/handover.js';
import { silentLogger } from '../../../src/node/logger.js';
import { spawnOracleNode } from '../../support/binary.js';
import { mineBlocks, rpc, setBalance, startTestChain, waitForMined } from '../../support/chain.js';
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
import { MemoryLeases } from '../../support/leases.js';
import { type BatchRefusal, type RecordingProxy, startRecordingProxy } from '../../support/rpc-proxy.js';
import { waitFor } from '../../support/wait.js';

const logger = pino({ level: 'silent' });
/** Short Lease timings: a holder cut off from the Lease API stops 600 ms after its last renewal. */
const timing = { leaseDurationMs: 1_000, renewDeadlineMs: 600, renewPeriodMs: 100, waitPollMs: 20 };
/** How late the slow provider answers each transaction (the figure). */
const SEND_ANSWER_DELAY_MS = 1_000;

describe('sending at the edges: a stop, a provider that refuses batches, stuck across hand-overs (anvil)', function () {
  this.timeout(120_000);
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  let api: ApiServer;
  const proxies: RecordingProxy[] = [];

  before(async () => {
    chain = await startTestChain();
    api = await startApiServer();
    await setBalance(chain.anvil.url, NODE_ADDRESS, 10n ** 20n);
  });
  afterEach(async () => {
    for (const proxy of proxies.splice(0)) await proxy.close();
  });
  after(async () => {
    await api?.close();
    await chain?.anvil.stop();
  });

  /** A provider of its own (the refusal of batches is remembered per provider URL). */
  async function provider(): Promise<RecordingProxy> {
    const proxy = await startRecordingProxy(chain.anvil.url);
    proxies.push(proxy);
    return proxy;
  }
  const constantPrice = [{ gasPriceStrategy: 'constantGasPrice', gasPrice: { value: 10, unit: 'gwei' } }];
  const configFor = (proxy: RecordingProxy) =>
    buildConfig({
      providers: { only: proxy.url },
      deployment: chain.deployment,
      apiUrl: api.url,
      gasPriceOracle: constantPrice,
    });
  /** One coordinator run's cycle: its own deadline and sightings of pending transactions, as a process has. */
  const cycle = (
    config: ReturnType<typeof configFor>,
    run: { deadline?: WorkDeadline; sightings?: PendingSightings } = {},
  ) =>
    runCycle(config, {
      executor: new InProcessExecutor({
        config,
        wallets,
        logger: silentLogger,
        ...(run.deadline ? { deadline: run.deadline } : {}),
        pendingSightings: run.sightings ?? new PendingSightings(),
      }),
      logger: silentLogger,
      wallets,
      providerMemory: new ProviderMemory(),
    });
  const outcomesOf = (summary: CycleSummary, ids: string[]) =>
    ids.map((id) => summary.results.flatMap((r) => (r.ok ? r.output.outcomes : [])).find((o) => o.id === id)!);
  const sentBy = (proxy: RecordingProxy, wallet: string) => proxy.sent.filter((tx) => tx.from === wallet);
  /** Takes the Lease as `oracle-node coordinator --handover-lease` does: its loss, or its lapse, stops the deadline. */
  async function holdLease(
    leases: MemoryLeases,
    identity: string,
    deadline: WorkDeadline,
    options: { store?: ReturnType<MemoryLeases['client']>; sightings?: PendingSightings } = {},
  ): Promise<HeldLease> {
    const held = await acquireHandoverLease({
      namespace: 'ns',
      name: 'node-coordinator',
      logger,
      waitUntil: Date.now() + 60_000,
      signal: deadline.signal,
      onLost: () => deadline.stop(LEASE_LOST),
      identity,
      store: options.store ?? leases.client(),
      timing,
      ...(options.sightings ? { sightings: options.sightings } : {}),
    });
    if (!held) throw new Error(`${identity} did not get the lease`);
    deadline.stopUnless(() => held.held(), LEASE_LOST);
    return held;
  }

  it('a holder that loses the Lease while a slow provider that refuses batches holds its first send sends nothing more; the next holder serves the rest once', async () => {
    const proxy = await provider();
    proxy.refuseBatches('per-entry');
    const sponsor = await createSponsor(chain.deployment, 'stop-lease-lost');
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await requestPrice(chain.deployment, sponsor));
    const leases = new MemoryLeases();
    const store = leases.client();
    const deadline = new WorkDeadline(undefined);
    const held = await holdLease(leases, 'holder', deadline, { store });
    // The first transaction reaches the chain; its answer comes a second late, and meanwhile the Lease API is cut off:
    // the holder's renewals fail and the Lease is lost 600 ms after the last one.
    let lostAt: number | undefined;
    deadline.signal.addEventListener('abort', () => {
      lostAt = Date.now();
    });
    proxy.setFault(({ method }) => {
      if (method !== 'eth_sendRawTransaction') return undefined;
      store.down = true;
      return { delayMs: SEND_ANSWER_DELAY_MS };
    });
    const summary = await cycle(configFor(proxy), { deadline });
    expect(deadline.reason).to.equal(LEASE_LOST);
    expect(lostAt).to.be.a('number');
    // Nothing reached the provider after the stop: the one transaction it had before.
    const sent = sentBy(proxy, sponsor.sponsorWallet);
    expect(sent).to.have.length(1);
    expect(sent.filter((tx) => tx.at >= lostAt!)).to.deep.equal([]);
    const outcomes = outcomesOf(summary, ids);
    expect(outcomes.map((o) => o.outcome)).to.deep.equal(['fulfilled', 'skipped', 'skipped', 'skipped']);
    for (const o of outcomes.slice(1))
      expect(o.reason).to.equal(`not sent: ${LEASE_LOST}; left open for the next window`);
    await held.release();

    // The next holder, once the lost one's lease has run out, serves the three left open, each once.
    proxy.setFault(undefined);
    const next = new WorkDeadline(undefined);
    const nextHeld = await holdLease(leases, 'next', next);
    const served = await cycle(configFor(proxy), { deadline: next });
    await nextHeld.release();
    expect(outcomesOf(served, ids.slice(1)).map((o) => o.outcome)).to.deep.equal([
      'fulfilled',
      'fulfilled',
      'fulfilled',
    ]);
    await waitForMined(chain.anvil.url);
    for (const id of ids) expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
    expect(sentBy(proxy, sponsor.sponsorWallet).map((tx) => tx.nonce)).to.deep.equal([0, 1, 2, 3]);
  });

  it('SIGTERM to `oracle-node coordinator --window` at its first send to a slow provider that refuses batches: nothing reaches the provider after it', async () => {
    const proxy = await provider();
    proxy.refuseBatches('per-entry');
    const sponsor = await createSponsor(chain.deployment, 'stop-sigterm');
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await requestPrice(chain.deployment, sponsor));
    const dir = mkdtempSync(join(tmpdir(), 'send-stop-'));
    const { config, secrets } = buildConfigJson({
      providers: { only: proxy.url },
      deployment: chain.deployment,
      apiUrl: api.url,
      gasPriceOracle: constantPrice,
    });
    (config['nodeSettings'] as { logLevel: string }).logLevel = 'WARN';
    const files = writeNodeFiles(dir, { config, secrets });
    const child: ChildProcess = spawnOracleNode(
      ['coordinator', ...files.args, '--cache-dir', join(dir, 'cache'), '--window', '60', '--poll-interval', '1'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr?.on('data', (chunk) => {
      stderr += chunk;
    });
    child.stdout?.resume();
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    let terminated = false;
    proxy.setFault(({ method }) => {
      if (method !== 'eth_sendRawTransaction') return undefined;
      if (!terminated) {
        terminated = true;
        child.kill('SIGTERM');
      }
      return { delayMs: SEND_ANSWER_DELAY_MS };
    });
    expect(await exited, stderr).to.equal(0);
    expect(stderr).to.include('SIGTERM: nothing new is sent');
    // The one whose arrival sent the SIGTERM, and nothing after it.
    expect(sentBy(proxy, sponsor.sponsorWallet)).to.have.length(1);
    // The three left open are served by the next run, once each.
    proxy.setFault(undefined);
    await cycle(configFor(proxy));
    await waitForMined(chain.anvil.url);
    for (const id of ids) expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
  });

  const refusals: [string, BatchRefusal][] = [
    ['each call answered with -32600 "batch requests are not supported"', 'per-entry'],
    ['one error of id null in an array', 'null-id'],
    ['HTTP 413 with a plain-text body', { status: 413 }],
  ];
  for (const [shape, refusal] of refusals) {
    it(`a provider that refuses batches (${shape}) gets the fulfilments one at a time, refused as a batch once`, async () => {
      const proxy = await provider();
      proxy.refuseBatches(refusal);
      const sponsor = await createSponsor(chain.deployment, `refuses-${JSON.stringify(refusal)}`);
      const config = configFor(proxy);
      const first: string[] = [];
      for (let i = 0; i < 4; i++) first.push(await requestPrice(chain.deployment, sponsor));
      const summary = await cycle(config);
      expect(outcomesOf(summary, first).map((o) => [o.outcome, o.nonce])).to.deep.equal(
        [0, 1, 2, 3].map((nonce) => ['fulfilled', nonce]),
      );
      // Later cycles of the same run (a window's polls) send one at a time at once: no batch is tried again.
      const second: string[] = [];
      for (let i = 0; i < 4; i++) second.push(await requestPrice(chain.deployment, sponsor));
      await cycle(config);
      await waitForMined(chain.anvil.url);
      for (const id of [...first, ...second])
        expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
      expect(proxy.refusedBatches).to.equal(1);
      expect(sentBy(proxy, sponsor.sponsorWallet).map((tx) => tx.nonce)).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7]);
    });
  }

  it('a transaction stuck across runs shorter than the stuck rule is replaced once, the sightings handed over with the Lease', async () => {
    const proxy = await provider();
    const sponsor = await createSponsor(chain.deployment, 'stuck-across-hand-overs');
    const id = await requestPrice(chain.deployment, sponsor);
    const config = configFor(proxy);
    const leases = new MemoryLeases();
    /** One coordinator process: it takes the Lease (and the last holder's sightings), runs one cycle, hands over. */
    const coordinatorRun = async (name: string) => {
      const sightings = new PendingSightings();
      const deadline = new WorkDeadline(undefined);
      const held = await holdLease(leases, name, deadline, { sightings });
      const summary = await cycle(config, { deadline, sightings });
      await held.release();
      return outcomesOf(summary, [id])[0]!;
    };
    /** A block that leaves the pending fulfilment in the pool (too small for it). */
    const mineWithoutIt = async () => {
      await rpc(chain.anvil.url, 'evm_setBlockGasLimit', ['0xc350']);
      await mineBlocks(chain.anvil.url, 1);
      await rpc(chain.anvil.url, 'evm_setBlockGasLimit', ['0x5f5e100']);
    };
    await rpc(chain.anvil.url, 'evm_setAutomine', [false]);
    const runs: { outcome: string; replacement?: boolean; reason?: string }[] = [];
    try {
      runs.push(await coordinatorRun('run-0'));
      // Each later run sees one block more, fewer than STUCK_AFTER_BLOCKS of its own.
      for (let i = 1; i <= STUCK_AFTER_BLOCKS + 1; i++) {
        await mineWithoutIt();
        runs.push(await coordinatorRun(`run-${i}`));
      }
      await rpc(chain.anvil.url, 'evm_mine', []);
    } finally {
      await rpc(chain.anvil.url, 'evm_setBlockGasLimit', ['0x5f5e100']);
      await rpc(chain.anvil.url, 'evm_setAutomine', [true]);
    }
    const summary = runs.map((o) => (o.outcome === 'fulfilled' ? (o.replacement ? 'replaced' : 'sent') : o.outcome));
    // Sent, left alone while seen pending for 1 and 2 blocks, replaced at 3 (by a run that saw it once), then left
    // alone again: the replacement has its own blocks.
    expect(summary).to.deep.equal(['sent', 'skipped', 'skipped', 'replaced', 'skipped']);
    expect(runs[1]!.reason).to.match(/seen pending by this coordinator for 1 block/);
    await waitFor(
      async () => (await requestEvents(chain.deployment, id)).fulfilled.length === 1,
      30_000,
      'the fulfilment mined',
    );
    expect(
      Number(await rpc<string>(chain.anvil.url, 'eth_getTransactionCount', [sponsor.sponsorWallet, 'latest'])),
    ).to.equal(1);
  });

  it('without the Lease (one cycle a run), the sightings go to the next run through the cache directory: replaced once', async () => {
    const proxy = await provider();
    const sponsor = await createSponsor(chain.deployment, 'stuck-one-shot');
    const id = await requestPrice(chain.deployment, sponsor);
    const dir = mkdtempSync(join(tmpdir(), 'send-stop-one-shot-'));
    const { config, secrets } = buildConfigJson({
      providers: { only: proxy.url },
      deployment: chain.deployment,
      apiUrl: api.url,
      gasPriceOracle: constantPrice,
    });
    const files = writeNodeFiles(dir, { config, secrets });
    /** `oracle-node coordinator` as a `pollInterval: 0` CronJob runs it: one cycle, one process. */
    const oneShot = async () => {
      const child = spawnOracleNode(['coordinator', ...files.args, '--cache-dir', join(dir, 'cache')], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout?.on('data', (chunk) => {
        stdout += chunk;
      });
      child.stderr?.on('data', (chunk) => {
        stderr += chunk;
      });
      const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
      expect(code, stderr).to.equal(0);
      const { transactions } = JSON.parse(stdout.trim()) as { transactions: Record<string, number> };
      return transactions.replaced
        ? 'replaced'
        : transactions.fulfilled
          ? 'sent'
          : transactions.skipped
            ? 'skipped'
            : '?';
    };
    const mineWithoutIt = async () => {
      await rpc(chain.anvil.url, 'evm_setBlockGasLimit', ['0xc350']);
      await mineBlocks(chain.anvil.url, 1);
      await rpc(chain.anvil.url, 'evm_setBlockGasLimit', ['0x5f5e100']);
    };
    await rpc(chain.anvil.url, 'evm_setAutomine', [false]);
    const runs: string[] = [];
    try {
      runs.push(await oneShot());
      for (let i = 1; i <= STUCK_AFTER_BLOCKS + 1; i++) {
        await mineWithoutIt();
        runs.push(await oneShot());
      }
      await rpc(chain.anvil.url, 'evm_mine', []);
    } finally {
      await rpc(chain.anvil.url, 'evm_setBlockGasLimit', ['0x5f5e100']);
      await rpc(chain.anvil.url, 'evm_setAutomine', [true]);
    }
    expect(runs).to.deep.equal(['sent', 'skipped', 'skipped', 'replaced', 'skipped']);
    await waitFor(
      async () => (await requestEvents(chain.deployment, id)).fulfilled.length === 1,
      30_000,
      'the fulfilment mined',
    );
  });
});
