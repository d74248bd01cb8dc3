// Transient API failures on anvil with the real AirnodeRrpV0 (docs/chain-cycle.md, "When the API fails for a while"):
// a 429 or a 503 leaves the request open, it is called again after its back-off and never sooner than the API's
// Retry-After, and it is fulfilled by one transaction; a request past its retry window is failed once, with the API's
// own error; permanent failures, and a window of 0, fail at once as the reference does. First on the test's clock
// (src/node/window.ts through test/support/window.ts), then through the binaries (`coordinator --window`, `start`).
import { type ChildProcess, execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { ApiRetries } from '../../../src/node/api-retries.js';
import { cycleReport } from '../../../src/node/kubernetes/cycle-report.js';
import { cycleMetrics } from '../../../src/node/metrics.js';
import { FileRequestLog } from '../../../src/node/request-log.js';
import { createMetricsRegistry } from '../../../src/observability/index.js';
import { setApiBudgets } from '../../../src/ois/index.js';
import { ORACLE_NODE_ARGS, repoRoot, spawnOracleNode } from '../../support/binary.js';
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
  writeNodeFiles,
} from '../../support/harness.js';
import { type RecordingProxy, startRecordingProxy } from '../../support/rpc-proxy.js';
import { waitFor } from '../../support/wait.js';
import { runTestWindow } from '../../support/window.js';

type Refusal = { status: number; headers?: Record<string, string> } | undefined;

describe('transient API failures leave the request open (anvil, real AirnodeRrpV0)', () => {
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  let proxy: RecordingProxy;
  let api: ApiServer;
  /** What the API answers to a call for each coin (undefined: the price); set by each test. */
  let refuse: (coin: string) => Refusal = () => undefined;
  /** The clock of each call of /price, by coin: the window's (ms) in a window, the wall clock's for the binaries. */
  const callTimes = new Map<string, number[]>();
  let clock: () => number = () => 0;
  let windowNow = 0;

  before(async () => {
    chain = await startTestChain();
    proxy = await startRecordingProxy(chain.anvil.url);
    api = await startApiServer({
      refuse: (coin) => {
        callTimes.set(coin, [...(callTimes.get(coin) ?? []), clock()]);
        return refuse(coin);
      },
    });
    await setBalance(chain.anvil.url, NODE_ADDRESS, 10n ** 20n);
  });
  after(async () => {
    setApiBudgets([]);
    await proxy?.close();
    await api?.close();
    await chain?.anvil.stop();
  });
  beforeEach(() => {
    callTimes.clear();
    windowNow = 0;
    clock = () => windowNow;
    refuse = () => undefined;
    // The process's pauses (an API's Retry-After) on the window's clock too.
    setApiBudgets([], { now: () => windowNow });
  });

  const sendsFrom = (wallet: string) => proxy.sent.filter((tx) => tx.from.toLowerCase() === wallet.toLowerCase());
  /** The latest block's timestamp (ms): the retries' wall clock starts there, so a request's age is the window's. */
  const chainTimeMs = async () =>
    Number((await rpc<{ timestamp: string }>(chain.anvil.url, 'eth_getBlockByNumber', ['latest', false])).timestamp) *
    1000;
  /** Retries on the window's clock, with a wall clock that starts at the request's block. */
  const retriesFrom = async (windowSeconds: number) => {
    const epochStartMs = await chainTimeMs();
    return new ApiRetries(windowSeconds, { monotonic: () => windowNow, epochMs: () => epochStartMs + windowNow });
  };
  /** Each poll mines a block first (a deferred request is retried by a poll that finds a new block). */
  const polls = (count: number, at: Record<number, () => Promise<void> | void> = {}) =>
    Array.from({ length: count }, (_, i) => async () => {
      await at[i + 1]?.();
      await waitForMined(chain.anvil.url);
      await rpc(chain.anvil.url, 'evm_mine', []);
    });
  async function window(retries: ApiRetries, steps: (() => Promise<void>)[]) {
    const config = buildConfig({ providers: { counted: proxy.url }, deployment: chain.deployment, apiUrl: api.url });
    const summary = await runTestWindow(config, steps, {
      context: { apiRetries: retries },
      deps: { apiRetries: retries },
      onTick: (now) => {
        windowNow = now;
      },
    });
    await waitForMined(chain.anvil.url);
    return summary;
  }

  it('a 503 for a spell: no fail(), no call before the back-off, then one fulfilment', async () => {
    const sponsor = await createSponsor(chain.deployment, 'retry-503');
    const id = await requestPrice(chain.deployment, sponsor);
    let spell = true;
    refuse = () => (spell ? { status: 503 } : undefined);
    const retries = await retriesFrom(300);
    // The spell ends before the third poll; the back-off after the first failure is 5 s.
    const summary = await window(
      retries,
      polls(8, {
        3: () => {
          spell = false;
        },
      }),
    );
    const events = await requestEvents(chain.deployment, id);
    expect(events.failed, 'no fail() while the API fails for now').to.deep.equal([]);
    expect(events.fulfilled).to.have.length(1);
    expect(sendsFrom(sponsor.sponsorWallet)).to.have.length(1);
    // Two attempts at the first cycle (the engine's immediate second one), then nothing until the back-off is over.
    expect(callTimes.get('ETH')).to.deep.equal([0, 0, 5000]);
    expect(summary.transactions).to.include({ fulfilled: 1, failed: 0 });
    expect(summary.transactions.deferred).to.equal(1);
    // The deferral is counted by OIS and status class (what `start` serves on /metrics).
    const registry = createMetricsRegistry();
    cycleMetrics(registry).observe(summary, 1);
    expect(await registry.metrics()).to.match(/^node_api_deferrals_total\{ois="[^"]+",status_class="5xx"\} 1$/m);
    // And in the cycle report the operator turns into oracle_node_api_deferrals_total.
    expect(cycleReport(summary).apiDeferrals).to.deep.equal([{ ois: 'Test API', statusClass: '5xx', count: 1 }]);
  });

  it('on a chain without new blocks, the retry runs when it is due all the same, and then polls are idle again', async () => {
    const sponsor = await createSponsor(chain.deployment, 'retry-no-blocks');
    const id = await requestPrice(chain.deployment, sponsor);
    let failures = 2;
    refuse = () => (failures-- > 0 ? { status: 503 } : undefined);
    const retries = await retriesFrom(300);
    // No poll mines a block: only the fulfilment's own block moves the head.
    const quiet = Array.from({ length: 10 }, () => async () => waitForMined(chain.anvil.url));
    const summary = await window(retries, quiet);
    expect(callTimes.get('ETH')).to.deep.equal([0, 0, 5000]);
    expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
    expect(sendsFrom(sponsor.sponsorWallet)).to.have.length(1);
    // The cycle at 5 s, and the one after the fulfilment's block; the others only asked for the head.
    expect(summary.window.idlePolls).to.be.at.least(7);
  });

  it('a 429 naming Retry-After: no call of that API before it, not even for a new request; both fulfilled once', async () => {
    const first = await createSponsor(chain.deployment, 'retry-429-a');
    const second = await createSponsor(chain.deployment, 'retry-429-b');
    const firstId = await requestPrice(chain.deployment, first, 'ETH');
    let limited = true;
    refuse = () => (limited ? { status: 429, headers: { 'Retry-After': '3' } } : undefined);
    const retries = await retriesFrom(300);
    let secondId = '';
    const summary = await window(
      retries,
      polls(8, {
        1: async () => {
          secondId = await requestPrice(chain.deployment, second, 'BTC');
        },
        2: () => {
          limited = false;
        },
      }),
    );
    // The first request: one attempt (its second waits for the pause, so is not sent), then after its back-off.
    expect(callTimes.get('ETH')).to.deep.equal([0, 5000]);
    // The second, made during the pause, is first called when the 3 s the API named are over.
    expect(callTimes.get('BTC')).to.deep.equal([3000]);
    for (const [id, sponsor] of [
      [firstId, first],
      [secondId, second],
    ] as const) {
      const events = await requestEvents(chain.deployment, id);
      expect(events.failed).to.deep.equal([]);
      expect(events.fulfilled).to.have.length(1);
      expect(sendsFrom(sponsor.sponsorWallet)).to.have.length(1);
    }
    expect(summary.transactions).to.include({ fulfilled: 2, failed: 0 });
  });

  it('a request still failing when its retry window is over is failed once, with the API’s own error, without another call', async () => {
    const sponsor = await createSponsor(chain.deployment, 'retry-window-over');
    const id = await requestPrice(chain.deployment, sponsor);
    refuse = () => ({ status: 500 });
    const retries = await retriesFrom(8);
    const summary = await window(retries, polls(12));
    expect(await requestEvents(chain.deployment, id)).to.deep.equal({
      fulfilled: [],
      failed: [{ message: 'API call failed with status code 500' }],
    });
    expect(sendsFrom(sponsor.sponsorWallet)).to.have.length(1);
    // At 0 and after the 5 s back-off (two attempts each); the next back-off (10 s) ends past the window (8 s).
    expect(callTimes.get('ETH')).to.deep.equal([0, 0, 5000, 5000]);
    expect(summary.transactions).to.include({ failed: 1, deferred: 2 });
  });

  it('a permanent failure (404) fails at once, and so does a 503 with a retry window of 0 (the reference)', async () => {
    const permanent = await createSponsor(chain.deployment, 'retry-404');
    const permanentId = await requestPrice(chain.deployment, permanent, 'ETH');
    refuse = () => ({ status: 404 });
    await window(await retriesFrom(300), polls(1));
    expect((await requestEvents(chain.deployment, permanentId)).failed).to.deep.equal([
      { message: 'API call failed with status code 404' },
    ]);
    const off = await createSponsor(chain.deployment, 'retry-off');
    const offId = await requestPrice(chain.deployment, off, 'ETH');
    refuse = () => ({ status: 503 });
    await window(await retriesFrom(0), polls(1));
    expect((await requestEvents(chain.deployment, offId)).failed).to.deep.equal([
      { message: 'API call failed with status code 503' },
    ]);
  });

  describe('through the binaries', () => {
    let dir: string;
    let miner: ReturnType<typeof setInterval> | undefined;
    before(() => {
      dir = mkdtempSync(join(tmpdir(), 'api-retries-'));
    });
    beforeEach(() => {
      clock = () => performance.now();
      // Blocks keep coming, as on a live chain: each poll finds a new one and may retry.
      miner = setInterval(() => void rpc(chain.anvil.url, 'evm_mine', []).catch(() => undefined), 300);
    });
    afterEach(() => clearInterval(miner));

    const nodeFiles = (prefix: string, logLevel = 'WARN') => {
      const { config, secrets } = buildConfigJson({
        providers: { anvil: chain.anvil.url },
        deployment: chain.deployment,
        apiUrl: api.url,
      });
      (config['nodeSettings'] as { logLevel: string }).logLevel = logLevel;
      return writeNodeFiles(dir, { config, secrets }, prefix).args;
    };
    const transactionsOf = async (wallet: string) =>
      Number(await rpc<string>(chain.anvil.url, 'eth_getTransactionCount', [wallet, 'latest']));
    const exited = (child: ChildProcess) =>
      new Promise<number | null>((resolve) => {
        if (child.exitCode !== null) resolve(child.exitCode);
        else child.once('exit', (code) => resolve(code));
      });
    const settled = (id: string) =>
      waitFor(
        async () => {
          const events = await requestEvents(chain.deployment, id);
          return events.fulfilled.length + events.failed.length > 0 ? events : undefined;
        },
        60_000,
        `request ${id} answered on chain`,
      );

    it('`coordinator --window`: 503 twice, then 429 with Retry-After, then the price: fulfilled once, never before the wait', async () => {
      const sponsor = await createSponsor(chain.deployment, 'retry-coordinator');
      const id = await requestPrice(chain.deployment, sponsor);
      const answers: Refusal[] = [{ status: 503 }, { status: 503 }, { status: 429, headers: { 'Retry-After': '2' } }];
      refuse = () => answers.shift();
      const child = spawnOracleNode([
        'coordinator',
        ...nodeFiles('coordinator-'),
        '--cache-dir',
        join(dir, 'coordinator-cache'),
        '--window',
        '60',
        '--poll-interval',
        '0.3',
        '--api-retry-window',
        '120',
      ]);
      try {
        const events = await settled(id);
        expect(events).to.deep.equal({ fulfilled: events.fulfilled, failed: [] });
        expect(events.fulfilled).to.have.length(1);
      } finally {
        child.kill('SIGTERM');
      }
      expect(await exited(child)).to.equal(0);
      const times = callTimes.get('ETH')!;
      // 503, 503 (one cycle), 429 after the back-off, then the price: never sooner than the 2 s the 429 named.
      expect(times).to.have.length(4);
      expect(times[3]! - times[2]!).to.be.at.least(2000);
      expect(await transactionsOf(sponsor.sponsorWallet), 'one transaction for the request').to.equal(1);
    });

    it('the next `coordinator` run calls no API before the Retry-After the last run was given (the cache directory carries it)', async () => {
      const sponsor = await createSponsor(chain.deployment, 'retry-next-run');
      const id = await requestPrice(chain.deployment, sponsor);
      refuse = () => ({ status: 429, headers: { 'Retry-After': '600' } });
      const cacheDir = join(dir, 'next-run-cache');
      const coordinator = (...more: string[]) =>
        promisify(execFile)(
          process.execPath,
          [...ORACLE_NODE_ARGS, 'coordinator', ...nodeFiles('next-run-'), '--cache-dir', cacheDir, ...more],
          { cwd: repoRoot },
        );
      await coordinator();
      expect(callTimes.get('ETH'), 'the first run met the 429').to.have.length(1);
      await coordinator();
      expect(callTimes.get('ETH'), 'the second run did not call the API').to.have.length(1);
      expect(await requestEvents(chain.deployment, id)).to.deep.equal({ fulfilled: [], failed: [] });
      const record = (await new FileRequestLog(cacheDir).read()).find((entry) => entry.requestId === id);
      expect(record?.state).to.equal('deferred');
      expect(record?.reason).to.match(/^deferred: 429, retry at /);
      // Ended here, so that no later test's node finds it open: a run without its retries and a window of 0 fails it.
      await coordinator('--api-retry-window', '0', '--cache-dir', join(dir, 'next-run-fresh'));
      expect((await requestEvents(chain.deployment, id)).failed).to.have.length(1);
    });

    it('`start --poll-interval`: a request whose API fails for good is failed once after its window; one in a 503 spell is fulfilled; the log says deferred', async () => {
      const spell = await createSponsor(chain.deployment, 'retry-start-spell');
      const broken = await createSponsor(chain.deployment, 'retry-start-broken');
      let spellCalls = 0;
      refuse = (coin) => (coin === 'BTC' ? { status: 500 } : ++spellCalls <= 2 ? { status: 503 } : undefined);
      const cacheDir = join(dir, 'start-cache');
      const child = spawnOracleNode([
        'start',
        ...nodeFiles('start-', 'INFO'),
        '--interval-ms',
        '600000',
        '--poll-interval',
        '0.3',
        '--no-gateway',
        '--cache-dir',
        cacheDir,
        '--api-retry-window',
        // Long enough for the spell's retry (5 s after its first call) under load; the broken one fails after it.
        '15',
      ]);
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      // The window counts from the request's block: the requests are made once the node runs, however slow its start.
      await waitFor(() => stderr.includes('cycle finished'), 60_000, 'the first cycle of start');
      const spellId = await requestPrice(chain.deployment, spell, 'ETH');
      const brokenId = await requestPrice(chain.deployment, broken, 'BTC');
      try {
        // While the API fails for now, the request log says so, and when it is tried again.
        const deferred = await waitFor(
          async () =>
            (await new FileRequestLog(cacheDir).read()).find(
              (record) => record.requestId === spellId && record.state === 'deferred',
            ),
          30_000,
          'the deferred request in the request log',
        );
        expect(deferred.reason).to.match(/^deferred: 503, retry at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/);
        expect((await settled(brokenId)).failed).to.deep.equal([{ message: 'API call failed with status code 500' }]);
        expect((await settled(spellId)).fulfilled).to.have.length(1);
      } finally {
        child.kill('SIGTERM');
      }
      expect(await exited(child)).to.equal(0);
      expect((await requestEvents(chain.deployment, spellId)).failed).to.deep.equal([]);
      expect((await requestEvents(chain.deployment, brokenId)).fulfilled).to.deep.equal([]);
      for (const wallet of [spell.sponsorWallet, broken.sponsorWallet])
        expect(await transactionsOf(wallet), 'one transaction per request').to.equal(1);
    });

    /** An API with a quota: at most `calls` arrivals within any `windowMs`, else 429 naming a second. */
    const quota = (calls: number, windowMs: number) => {
      const arrivals: number[] = [];
      const refused = { count: 0 };
      refuse = () => {
        const now = performance.now();
        while (arrivals.length > 0 && arrivals[0]! <= now - windowMs) arrivals.shift();
        if (arrivals.length >= calls) {
          refused.count++;
          return { status: 429, headers: { 'Retry-After': '1' } };
        }
        arrivals.push(now);
        return undefined;
      };
      return refused;
    };
    const burst = async (name: string, count: number) => {
      const made: { id: string; wallet: string }[] = [];
      for (let i = 0; i < count; i++) {
        const sponsor = await createSponsor(chain.deployment, `${name}-${i}`);
        made.push({ id: await requestPrice(chain.deployment, sponsor), wallet: sponsor.sponsorWallet });
      }
      return made;
    };
    const allFulfilledOnce = async (made: { id: string; wallet: string }[]) => {
      for (const { id, wallet } of made) {
        const events = await settled(id);
        expect(events.failed, id).to.deep.equal([]);
        expect(events.fulfilled, id).to.have.length(1);
        expect(await transactionsOf(wallet), `one transaction for ${id}`).to.equal(1);
      }
    };

    for (const command of ['coordinator --window', 'start --poll-interval'] as const)
      it(`\`${command} --api-rate-limit\`: a burst of requests within the API's quota: it never answers 429, and every request is fulfilled once`, async () => {
        // The API allows 2 calls in any 0.5 s, the budget 2 in any second: half a second for a call's way there under load.
        const refused = quota(2, 500);
        const made = await burst(`budget-${command.split(' ')[0]}`, 8);
        const args =
          command === 'start --poll-interval'
            ? [
                'start',
                ...nodeFiles('budget-start-'),
                '--interval-ms',
                '600000',
                '--poll-interval',
                '0.3',
                '--no-gateway',
              ]
            : ['coordinator', ...nodeFiles('budget-coordinator-'), '--window', '60', '--poll-interval', '0.3'];
        const child = spawnOracleNode([
          ...args,
          '--cache-dir',
          join(dir, `budget-${command.split(' ')[0]}-cache`),
          '--api-rate-limit',
          'Test API=2/s',
        ]);
        try {
          await allFulfilledOnce(made);
        } finally {
          child.kill('SIGTERM');
        }
        expect(await exited(child)).to.equal(0);
        expect(refused.count, 'answers 429 of the API').to.equal(0);
        expect(callTimes.get('ETH')).to.have.length(8);
      });

    it('without a budget the same burst meets the quota (429s), and part 1 still fulfils every request once, none failed', async () => {
      const refused = quota(2, 500);
      const made = await burst('no-budget', 6);
      const child = spawnOracleNode([
        'coordinator',
        ...nodeFiles('no-budget-'),
        '--window',
        '60',
        '--poll-interval',
        '0.3',
        '--cache-dir',
        join(dir, 'no-budget-cache'),
      ]);
      try {
        await allFulfilledOnce(made);
      } finally {
        child.kill('SIGTERM');
      }
      expect(await exited(child)).to.equal(0);
      expect(refused.count, 'the quota was met').to.be.above(0);
    });
  });
});
