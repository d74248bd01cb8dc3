// A coordinator window's workers on anvil (real AirnodeRrpV0, a real API server): real `oracle-node worker
// --coordinator` processes that stay for the window take the shards' API calls from the coordinator over HTTP on
// loopback and post the results; the coordinator signs and sends. They hold neither the mnemonic nor a provider URL.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { type Config, validateConfig } from '../../../src/config/index.js';
import { ENV } from '../../../src/contract/pods.js';
import {
  type ApiShardInput,
  parseShardOutput,
  SHARD_FORMAT,
  WINDOW_COORDINATOR_URL_ENV,
  WINDOW_CREDENTIAL_ENV,
  WINDOW_PATHS,
} from '../../../src/contract/shard.js';
import { MemoryResponseCache } from '../../../src/node/cache.js';
import { type CycleSummary, runCycle } from '../../../src/node/cycle.js';
import { type ApiShardResult, type ApiWorkers, WorkerExecutor } from '../../../src/node/executor.js';
import { silentLogger } from '../../../src/node/logger.js';
import { WindowWorkers } from '../../../src/node/window-workers.js';
import { spawnOracleNode } from '../../support/binary.js';
import { rpc, startTestChain, waitForMined } from '../../support/chain.js';
import {
  type ApiServer,
  buildConfigJson,
  createSponsor,
  int256,
  requestEvents,
  requestPrice,
  startApiServer,
  wallets,
  writeNodeFiles,
} from '../../support/harness.js';
import { waitFor } from '../../support/wait.js';

/** Counts the runs that went to the per-poll fallback (the worker Jobs on Kubernetes). */
class CountingFallback implements ApiWorkers {
  runs = 0;
  async run(shards: ApiShardInput[]): Promise<ApiShardResult[]> {
    this.runs++;
    return shards.map(() => ({ ok: false, error: 'the fallback was used' }));
  }
}

describe("a coordinator window's workers (anvil, real worker processes over loopback HTTP)", function () {
  this.timeout(90_000);
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  let api: ApiServer;
  let configPath: string;
  let rawConfig: Record<string, unknown>;
  let secrets: Record<string, string>;
  let sponsorSeq = 0;
  /** Gates of the API's answers by coin, and the calls held at them now (and at most). */
  const gates = new Map<string, () => void>();
  const held = { now: 0, max: 0 };
  let holding: ((coin: string) => boolean) | undefined;
  const children: ChildProcess[] = [];
  let pool: WindowWorkers | undefined;

  before(async () => {
    chain = await startTestChain();
    api = await startApiServer({
      hold: (coin) => {
        if (!holding?.(coin)) return undefined;
        held.now++;
        held.max = Math.max(held.max, held.now);
        return new Promise<void>((resolve) => gates.set(coin, resolve)).then(() => {
          held.now--;
        });
      },
    });
    const built = buildConfigJson({
      providers: { anvil: chain.anvil.url },
      deployment: chain.deployment,
      apiUrl: api.url,
      fulfillmentGasLimit: 200_000,
      maxConcurrency: 2,
    });
    rawConfig = built.config;
    secrets = built.secrets;
    configPath = writeNodeFiles(mkdtempSync(join(tmpdir(), 'window-workers-')), built).config;
  });
  afterEach(async () => {
    holding = undefined;
    for (const open of gates.values()) open();
    gates.clear();
    await pool?.stop();
    pool = undefined;
    for (const child of children.splice(0))
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  after(async () => {
    await api?.close();
    await chain?.anvil.stop();
  });

  function config(): Config {
    const validated = validateConfig(rawConfig, secrets);
    if (!validated.ok || !validated.config) throw new Error(JSON.stringify(validated.errors));
    return validated.config;
  }

  /** A worker pod's process: its config, its secret scope (no mnemonic, no provider), the coordinator and credential. */
  const stdoutOf = new Map<ChildProcess, string>();
  function spawnWorker(url: string, credential: string): ChildProcess {
    const child = spawnOracleNode(['worker', '--coordinator', '-c', configPath], {
      env: {
        PATH: process.env['PATH'] ?? '',
        [ENV.secretScope]: 'worker',
        [WINDOW_COORDINATOR_URL_ENV]: url,
        [WINDOW_CREDENTIAL_ENV]: credential,
      },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    stdoutOf.set(child, '');
    child.stdout!.on('data', (chunk) => stdoutOf.set(child, stdoutOf.get(child) + String(chunk)));
    children.push(child);
    return child;
  }

  /** The window's pool on loopback with `count` worker processes, once they all wait for work. */
  async function startPool(count: number, options: { leaseMs?: number; workerGoneMs?: number } = {}) {
    const fallback = new CountingFallback();
    const started = new WindowWorkers({ fallback, logger: silentLogger, ...options });
    pool = started;
    let credential = '';
    const url = await started.start({
      host: '127.0.0.1',
      port: 0,
      launch: async (coordinatorUrl, given) => {
        credential = given;
        for (let i = 0; i < count; i++) spawnWorker(coordinatorUrl, given);
      },
    });
    await waitFor(() => started.waitingWorkers === count, 30_000, 'the workers ask for work');
    return { pool: started, fallback, url, credential };
  }

  async function poll(workers: ApiWorkers, cfg = config()): Promise<CycleSummary> {
    const executor = new WorkerExecutor(
      { config: cfg, wallets, logger: silentLogger, cache: new MemoryResponseCache() },
      workers,
    );
    const summary = await runCycle(cfg, { executor, logger: silentLogger, wallets, discoveryTimeoutMs: 10_000 });
    await waitForMined(chain.anvil.url);
    return summary;
  }

  async function request(coin = 'ETH') {
    const sponsor = await createSponsor(chain.deployment, `window-workers-${sponsorSeq++}`);
    return { id: await requestPrice(chain.deployment, sponsor, coin), sponsor };
  }

  const transactionCount = async (address: string) =>
    Number(await rpc<string>(chain.anvil.url, 'eth_getTransactionCount', [address, 'latest']));

  it('serves the requests of several polls through one worker process that stays, never the fallback', async () => {
    const { pool, fallback } = await startPool(1);
    const [worker] = children;
    for (const coin of ['ETH', 'BTC']) {
      const { id } = await request(coin);
      const summary = await poll(pool);
      expect(summary.shards).to.deep.equal({ total: 1, failed: 0 });
      const [fulfilled] = (await requestEvents(chain.deployment, id)).fulfilled;
      expect(fulfilled, `${coin} fulfilled on chain`).to.not.equal(undefined);
      expect(BigInt(fulfilled!.data) > 0n).to.equal(true);
    }
    expect(pool.runs).to.deep.equal({ fallback: 0, window: 2 });
    expect(fallback.runs).to.equal(0);
    expect(children, 'no new process per poll').to.have.length(1);
    expect(worker!.exitCode, 'the worker is still there').to.equal(null);
    // Like a per-shard worker, it prints each output: its pod's log shows what it answered, and nothing was sent.
    const printed = stdoutOf.get(worker!)!.trim().split('\n');
    expect(printed.map((line) => parseShardOutput(line)?.results[0]?.api.outcome)).to.deep.equal(['2xx', '2xx']);
    // The window's end: the worker is told so and exits 0.
    const exited = new Promise<number | null>((resolve) => worker!.once('exit', resolve));
    await pool.stop();
    expect(await exited).to.equal(0);
  });

  it("holds the chain's maxConcurrency over the window: never more API calls at once, a worker left idle", async () => {
    const { pool } = await startPool(3);
    const coins = ['AAA', 'BBB', 'CCC', 'DDD'];
    holding = (coin) => coins.includes(coin);
    const requests = [];
    for (const coin of coins) requests.push(await request(coin));
    held.max = 0;
    // maxConcurrency 2: each poll plans two of them (the chain limit) and runs them at once on two of the three
    // workers; the third waits for work. The next poll takes the other two.
    for (const _ of [1, 2]) {
      const polled = poll(pool);
      await waitFor(() => held.now === 2 && pool.waitingWorkers === 1, 30_000, 'two calls held, a worker idle');
      for (const [coin, open] of [...gates.entries()]) {
        gates.delete(coin);
        open();
      }
      const summary = await polled;
      expect(summary.shards).to.deep.equal({ total: 2, failed: 0 });
    }
    expect(held.max).to.equal(2);
    expect(pool.runs).to.deep.equal({ fallback: 0, window: 2 });
    for (const { id } of requests) expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
  });

  it('a worker killed mid-task: nothing is sent, its task goes back once, and the next poll serves the request once', async () => {
    const { pool, url, credential } = await startPool(1, { leaseMs: 1_000, workerGoneMs: 2_000 });
    const { id, sponsor } = await request('DOGE');
    const nonce = await transactionCount(sponsor.sponsorWallet);
    holding = (coin) => coin === 'DOGE';
    const polled = poll(pool);
    // The worker is calling the API for its task: it dies there (a pod killed, OOM).
    await waitFor(() => held.now === 1, 30_000, 'the worker calls the API');
    children[0]!.kill('SIGKILL');
    const failed = await polled;
    expect(failed.shards).to.deep.equal({ total: 1, failed: 1 });
    expect(await requestEvents(chain.deployment, id)).to.deep.equal({ fulfilled: [], failed: [] });
    expect(await transactionCount(sponsor.sponsorWallet)).to.equal(nonce);
    // The Job controller starts a new pod; the next poll serves the request, once.
    holding = undefined;
    for (const open of gates.values()) open();
    spawnWorker(url, credential);
    await waitFor(() => pool.waitingWorkers === 1, 30_000, 'the new worker asks for work');
    const served = await poll(pool);
    expect(served.shards).to.deep.equal({ total: 1, failed: 0 });
    expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
    expect(await transactionCount(sponsor.sponsorWallet)).to.equal(nonce + 1);
    expect(pool.tasksPutBack, "the dead worker's task went back to the queue once").to.equal(1);
  });

  it('ignores a result posted for a task not given to its poster, and results for requests its task did not carry', async () => {
    const fallback = new CountingFallback();
    pool = new WindowWorkers({ fallback, logger: silentLogger, leaseMs: 2_000, workerGoneMs: 3_000 });
    let credential = '';
    const url = await pool.start({
      host: '127.0.0.1',
      port: 0,
      launch: async (_, given) => {
        credential = given;
      },
    });
    // A compromised worker: it holds the window's credential and speaks the protocol by hand.
    const headers = { authorization: `Bearer ${credential}` };
    const next = () => fetch(`${url}${WINDOW_PATHS.next}`, { headers });
    const postResult = (task: string, results: { id: string; value: bigint }[]) =>
      fetch(`${url}${WINDOW_PATHS.result(task)}`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({
          format: SHARD_FORMAT,
          apiMs: 1,
          results: results.map(({ id, value }) => ({
            id,
            result: { success: true, encodedValue: int256(value) },
            api: { outcome: '2xx', durationMs: 1 },
          })),
        }),
      });
    const waiting = [next(), next()];
    await waitFor(() => pool!.waitingWorkers === 2, 10_000, 'the compromised worker waits');
    const honest = await request();
    const victim = await request();
    const victimNonce = await transactionCount(victim.sponsor.sponsorWallet);
    const polled = poll(pool);
    const tasks = await Promise.all(
      waiting.map(async (response) => (await response).json() as Promise<{ task: string; shard: ApiShardInput }>),
    );
    const mine = tasks.find((t) => t.shard.requests[0]!.id === honest.id)!;
    // A task id it was not given: refused.
    const forgedTask = await postResult('0'.repeat(32), [{ id: honest.id, value: 666n }]);
    expect(forgedTask.status).to.equal(404);
    // Its own task, answered with the victim's request (given to no one else) too: only its own request is taken.
    const own = await postResult(mine.task, [
      { id: victim.id, value: 666n },
      { id: honest.id, value: 42n },
    ]);
    expect(own.status).to.equal(204);
    // It keeps the victim's task and never answers it (it vanishes): the victim's shard fails.
    await polled;
    expect((await requestEvents(chain.deployment, honest.id)).fulfilled.map((f) => f.data)).to.deep.equal([
      int256(42n),
    ]);
    expect(await requestEvents(chain.deployment, victim.id)).to.deep.equal({ fulfilled: [], failed: [] });
    expect(await transactionCount(victim.sponsor.sponsorWallet)).to.equal(victimNonce);
    expect(pool.refusedResults).to.equal(1);
  });

  it('a run before any worker is there goes to the per-poll fallback, as without window workers', async () => {
    const fallback = new CountingFallback();
    pool = new WindowWorkers({ fallback, logger: silentLogger });
    await pool.start({ host: '127.0.0.1', port: 0 });
    const { id, sponsor } = await request();
    const nonce = await transactionCount(sponsor.sponsorWallet);
    const summary = await poll(pool);
    expect(fallback.runs).to.equal(1);
    // Every shard of the poll (the earlier test's victim too) went to the fallback, which fails them here.
    expect(summary.shards.failed).to.equal(summary.shards.total);
    expect(await requestEvents(chain.deployment, id)).to.deep.equal({ fulfilled: [], failed: [] });
    expect(await transactionCount(sponsor.sponsorWallet)).to.equal(nonce);
  });
});
