// The node's commands end to end on anvil: `coordinator` (one cycle), `worker` (one shard's API calls, from a file
// and from stdin) and `start` (the local deployment: cycles on an interval, graceful shutdown, start-up errors), and
// each one's rate budget (--api-rate-limit): a call waits for its turn only within its run, else it is deferred.
import { type ChildProcess, execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { WORKER_DEADLINE_AT_ENV } from '../../../src/contract/shard.js';
import { planChainShards } from '../../../src/node/cycle.js';
import { apiRequestOf, apiShardInput } from '../../../src/node/executor.js';
import { silentLogger } from '../../../src/node/logger.js';
import { DEFERRED_PREFIX } from '../../../src/ois/deferral.js';
import { ORACLE_NODE_ARGS, repoRoot, spawnOracleNode } from '../../support/binary.js';
import { freePort, startTestChain, waitForMined } from '../../support/chain.js';
import {
  type ApiServer,
  buildConfig,
  buildConfigJson,
  createSponsor,
  ENDPOINTS,
  encodeCoin,
  int256,
  makeFullRequest,
  type NodeFiles,
  OIS_TITLE,
  requestEvents,
  requestPrice,
  startApiServer,
  wallets,
  writeNodeFiles,
} from '../../support/harness.js';

const run = promisify(execFile);

describe('oracle-node coordinator, worker and start (anvil, real AirnodeRrpV0)', () => {
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  let api: ApiServer;
  let dir: string;
  let nodeFiles: NodeFiles;

  before(async () => {
    chain = await startTestChain();
    api = await startApiServer();
    dir = mkdtempSync(join(tmpdir(), 'coordinator-cli-'));
    const { config, secrets } = buildConfigJson({
      providers: { anvil: chain.anvil.url },
      deployment: chain.deployment,
      apiUrl: api.url,
    });
    nodeFiles = writeNodeFiles(dir, { config, secrets });
  });

  const configArgs = () => nodeFiles.args;
  /** Makes an ETH price request from `sponsor` and waits until the node under test has fulfilled it once. */
  const requestFulfilled = async (sponsor: Awaited<ReturnType<typeof createSponsor>>) => {
    const requestId = await requestPrice(chain.deployment, sponsor);
    await until(
      async () => (await requestEvents(chain.deployment, requestId)).fulfilled.length === 1,
      'the fulfilment',
    );
  };
  /**
   * A request to the `dynamic` endpoint, which no other test calls: a budget on it (BUDGET) counts this test's calls
   * alone, whatever other requests are open on the chain.
   */
  const requestBudgeted = (sponsor: Awaited<ReturnType<typeof createSponsor>>) =>
    makeFullRequest(chain.deployment, {
      endpointId: ENDPOINTS.dynamic,
      sponsor: sponsor.address,
      sponsorWallet: sponsor.sponsorWallet,
      parameters: encodeCoin('ETH', [
        { name: '_type', type: 'string', value: 'int256' },
        { name: '_path', type: 'string', value: 'price' },
      ]),
    });
  const BUDGET = `${OIS_TITLE}/dynamic`;
  const cli = (...args: string[]) => run(process.execPath, [...ORACLE_NODE_ARGS, ...args], { cwd: repoRoot });
  const spawnCli = (...args: string[]) => spawnOracleNode(args);
  const exited = (child: ChildProcess) =>
    new Promise<number | null>((resolve) => {
      if (child.exitCode !== null) resolve(child.exitCode);
      else child.once('exit', (code) => resolve(code));
    });
  const output = (child: ChildProcess) => {
    const text = { stdout: '', stderr: '' };
    child.stdout?.on('data', (c) => {
      text.stdout += c;
    });
    child.stderr?.on('data', (c) => {
      text.stderr += c;
    });
    return text;
  };
  async function until(condition: () => Promise<boolean>, what: string): Promise<void> {
    for (let i = 0; i < 600; i++) {
      if (await condition()) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  after(async () => {
    await api?.close();
    await chain?.anvil.stop();
  });

  it('fulfils a full request in one cycle and prints a JSON summary', async () => {
    const sponsor = await createSponsor(chain.deployment, 'cli');
    const requestId = await requestPrice(chain.deployment, sponsor);
    const { stdout } = await cli('coordinator', ...configArgs(), '--cache-dir', join(dir, 'cache'));
    await waitForMined(chain.anvil.url);
    const summary = JSON.parse(stdout) as {
      transactions: { fulfilled: number };
      requests: { discovered: number };
      sponsorWallets: { chainId: string; sponsorWallet: string; balanceWei: string }[];
      gasPrices: { chainId: string; gasPriceWei: string }[];
    };
    expect(summary.requests.discovered).to.equal(1);
    // The price the fulfilment was sent at (anvil's recommendation x 1.1), for the operator's gas price gauge.
    expect(summary.gasPrices).to.have.length(1);
    expect(summary.gasPrices[0]!.chainId).to.equal(String(chain.deployment.chainId));
    expect(BigInt(summary.gasPrices[0]!.gasPriceWei) > 0n).to.equal(true);
    expect(summary.transactions.fulfilled).to.equal(1);
    // The wallet paid for the fulfilment: its balance is reported, below the 10 ETH it was funded with.
    expect(summary.sponsorWallets).to.have.length(1);
    expect(summary.sponsorWallets[0]!.sponsorWallet).to.equal(sponsor.sponsorWallet);
    expect(BigInt(summary.sponsorWallets[0]!.balanceWei) < 10n ** 19n).to.equal(true);
    expect(BigInt(summary.sponsorWallets[0]!.balanceWei) > 0n).to.equal(true);
    const events = await requestEvents(chain.deployment, requestId);
    expect(events.failed).to.deep.equal([]);
    expect(events.fulfilled).to.have.length(1);
    expect(events.fulfilled[0]!.data).to.equal(int256(3000250000n));
  });

  it('`coordinator --window` keeps polling after its first cycle and prints one summary for the window', async () => {
    const sponsor = await createSponsor(chain.deployment, 'cli-window');
    const running = cli(
      'coordinator',
      ...configArgs(),
      '--cache-dir',
      join(dir, 'cache'),
      '--window',
      '3',
      '--poll-interval',
      '0.2',
    );
    // Made while the window runs: whichever of its cycles sees it first serves it, once.
    const requestId = await requestPrice(chain.deployment, sponsor);
    const { stdout } = await running;
    await waitForMined(chain.anvil.url);
    const summary = JSON.parse(stdout) as { transactions: { fulfilled: number }; window: { polls: number } };
    expect(summary.transactions.fulfilled).to.equal(1);
    expect(summary.window.polls).to.be.greaterThan(0);
    expect((await requestEvents(chain.deployment, requestId)).fulfilled).to.have.length(1);
    for (const bad of [
      ['--window', '0'],
      ['--window', 'x'],
      ['--poll-interval', '1'],
      // A hand-over Lease needs a window (and POD_NAMESPACE, unset here).
      ['--handover-lease', 'node-coordinator'],
      ['--window', '3', '--handover-lease', 'node-coordinator'],
    ]) {
      const failed = await cli('coordinator', ...configArgs(), ...bad).catch(
        (error: { code: number; stderr: string }) => error,
      );
      expect(failed).to.include({ code: 2 });
    }
    // No credentials to reach the Lease with: a usage error, not a run that silently sends nothing.
    const noCredentials = spawnOracleNode(
      ['coordinator', ...configArgs(), '--window', '3', '--handover-lease', 'node-coordinator'],
      { env: { ...process.env, POD_NAMESPACE: 'ns', KUBECONFIG: join(dir, 'no-such.kubeconfig') } },
    );
    const noCredentialsIo = output(noCredentials);
    expect(await exited(noCredentials)).to.equal(2);
    expect(noCredentialsIo.stderr).to.include('--handover-lease: cannot reach the Lease');
  });

  it('takes secret values from the environment without -s, and exits 2 on an unreadable config', async () => {
    const sponsor = await createSponsor(chain.deployment, 'env-secrets');
    const requestId = await requestPrice(chain.deployment, sponsor);
    const { secrets } = buildConfigJson({
      providers: { anvil: chain.anvil.url },
      deployment: chain.deployment,
      apiUrl: api.url,
    });
    const child = spawnOracleNode(['coordinator', '-c', join(dir, 'config.json'), '--cache-dir', join(dir, 'cache')], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...secrets },
    });
    const io = output(child);
    expect(await exited(child)).to.equal(0);
    expect(JSON.parse(io.stdout).transactions.fulfilled).to.equal(1);
    await waitForMined(chain.anvil.url);
    expect((await requestEvents(chain.deployment, requestId)).fulfilled).to.have.length(1);

    const missing = spawnCli('coordinator', '-c', join(dir, 'does-not-exist.json'));
    const missingIo = output(missing);
    expect(await exited(missing)).to.equal(2);
    expect(missingIo.stderr).to.include('Cannot read config file');
  });

  it('`coordinator --api-rate-limit`: a call over the budget waits for its turn within the run, and both are served', async () => {
    const sponsor = await createSponsor(chain.deployment, 'budget-wait');
    const ids = [await requestBudgeted(sponsor), await requestBudgeted(sponsor)];
    // One call a second: the shard's two calls start together, the second waits for its turn (a run by hand, one
    // cycle: nothing ends it sooner than the longest wait).
    const { stdout } = await cli(
      'coordinator',
      ...configArgs(),
      '--cache-dir',
      join(dir, 'cache'),
      '--api-rate-limit',
      `${BUDGET}=1/s`,
    );
    await waitForMined(chain.anvil.url);
    expect(JSON.parse(stdout).transactions.fulfilled).to.equal(2);
    for (const id of ids) expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
    const refused = await cli('coordinator', ...configArgs(), '--api-rate-limit', `${OIS_TITLE}/nope=1/s`).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(refused).to.include({ code: 2 });
    expect((refused as { stderr: string }).stderr).to.contain(
      `--api-rate-limit '${OIS_TITLE}/nope=1/s': OIS '${OIS_TITLE}' has no endpoint named 'nope'`,
    );
  });

  it('`coordinator --window --api-rate-limit`: a call whose turn comes after the window is deferred, its request left open', async () => {
    const sponsor = await createSponsor(chain.deployment, 'budget-window');
    const ids = [await requestBudgeted(sponsor), await requestBudgeted(sponsor)];
    // One call a minute: the second call's turn is a minute away, past the window's end, so it is not waited for: each
    // poll defers it (never fail()), and the run ends with its window.
    const { stdout } = await cli(
      'coordinator',
      ...configArgs(),
      '--cache-dir',
      join(dir, 'cache'),
      '--window',
      '2',
      '--poll-interval',
      '0.2',
      '--details',
      '--api-rate-limit',
      `${BUDGET}=1/m`,
    );
    await waitForMined(chain.anvil.url);
    const summary = JSON.parse(stdout) as { transactions: { fulfilled: number; failed: number } };
    expect(summary.transactions).to.include({ fulfilled: 1, failed: 0 });
    expect(stdout).to.contain(`over the rate budget of ${OIS_TITLE}`);
    const events = await Promise.all(ids.map((id) => requestEvents(chain.deployment, id)));
    expect(events.flatMap((e) => e.failed)).to.deep.equal([]);
    expect(events.map((e) => e.fulfilled.length).sort()).to.deep.equal([0, 1]);
    // The next run (a new process: a new budget) finds it open and serves it.
    await cli('coordinator', ...configArgs(), '--cache-dir', join(dir, 'cache'));
    await waitForMined(chain.anvil.url);
    for (const id of ids) expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
  });

  it("`worker --shard` in a Job: a call whose turn comes after the Job's deadline is deferred in time, not killed with the pod", async function () {
    // Without the cap the second call would wait its minute for a turn: past this test's timeout, as past the Job's.
    this.timeout(30_000);
    const sponsor = await createSponsor(chain.deployment, 'budget-worker');
    const ids = [await requestBudgeted(sponsor), await requestBudgeted(sponsor)];
    const config = buildConfig({
      providers: { anvil: chain.anvil.url },
      deployment: chain.deployment,
      apiUrl: api.url,
    });
    const shard = (
      await planChainShards(config, config.chains[0]!, {
        executor: { run: async () => [] },
        logger: silentLogger,
        wallets,
      })
    ).shards.find((s) => s.sponsorWallet === sponsor.sponsorWallet)!;
    writeFileSync(
      join(dir, 'budget-shard.json'),
      JSON.stringify(apiShardInput(shard, shard.apiCalls.map(apiRequestOf))),
    );
    // The Job's deadline as the coordinator writes it (job-executor.ts): 20 s from now, so the wait may last 15.
    const child = spawnOracleNode(
      ['worker', '--shard', join(dir, 'budget-shard.json'), ...configArgs(), '--api-rate-limit', `${BUDGET}=1/m`],
      { env: { ...process.env, [WORKER_DEADLINE_AT_ENV]: String(Date.now() + 20_000) } },
    );
    const io = output(child);
    expect(await exited(child), io.stderr).to.equal(0);
    const results = (
      JSON.parse(io.stdout) as { results: { id: string; result: { success: boolean; errorMessage?: string } }[] }
    ).results;
    expect(results.map((r) => r.id).sort()).to.deep.equal([...ids].sort());
    expect(results.filter((r) => r.result.success)).to.have.length(1);
    const deferred = results.find((r) => !r.result.success)!;
    expect(deferred.result.errorMessage).to.match(
      new RegExp(`^${DEFERRED_PREFIX}over the rate budget of ${OIS_TITLE}`),
    );
    // The worker sends nothing; the coordinator's next run serves both (no budget given to it here).
    await cli('coordinator', ...configArgs(), '--cache-dir', join(dir, 'cache'));
    await waitForMined(chain.anvil.url);
    for (const id of ids) expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
  });

  it("calls one shard's APIs with `worker`, from a file and from stdin; the shard is plain JSON without secrets", async () => {
    const sponsor = await createSponsor(chain.deployment, 'worker');
    const first = await requestPrice(chain.deployment, sponsor, 'BTC');
    const config = buildConfig({
      providers: { anvil: chain.anvil.url },
      deployment: chain.deployment,
      apiUrl: api.url,
    });
    const plan = async () => {
      const shard = (
        await planChainShards(config, config.chains[0]!, {
          executor: { run: async () => [] },
          logger: silentLogger,
          wallets,
        })
      ).shards.find((s) => s.sponsorWallet === sponsor.sponsorWallet)!;
      return apiShardInput(shard, shard.apiCalls.map(apiRequestOf));
    };
    const shard = await plan();
    const text = JSON.stringify(shard);
    expect(text).to.not.include(chain.anvil.url);
    expect(text).to.not.include('achieve climb');
    writeFileSync(join(dir, 'shard.json'), text);
    const { stdout } = await cli('worker', '--shard', join(dir, 'shard.json'), ...configArgs());
    // The encoded answer, unsigned: the coordinator signs and sends.
    expect(JSON.parse(stdout).results).to.deep.equal([
      {
        id: first,
        result: { success: true, encodedValue: int256(65000500000n) },
        api: JSON.parse(stdout).results[0].api,
      },
    ]);
    expect(JSON.parse(stdout).results[0].api.outcome).to.equal('2xx');

    const second = await requestPrice(chain.deployment, sponsor);
    const child = spawnCli('worker', '--shard', '-', ...configArgs());
    const io = output(child);
    child.stdin?.end(JSON.stringify(await plan()));
    expect(await exited(child)).to.equal(0);
    const results = JSON.parse(io.stdout).results as { id: string; result: { success: boolean } }[];
    expect(results.map((r) => [r.id, r.result.success])).to.deep.equal([
      [first, true],
      [second, true],
    ]);
    // Nothing was sent: the requests still await fulfilment.
    expect(await requestEvents(chain.deployment, second)).to.deep.equal({ fulfilled: [], failed: [] });
  });

  it('`start` serves requests on its interval, survives a dead provider and stops on SIGTERM', async () => {
    const deadUrl = `http://127.0.0.1:${await freePort()}`;
    const { config, secrets } = buildConfigJson({
      providers: { dead: deadUrl, anvil: chain.anvil.url },
      deployment: chain.deployment,
      apiUrl: api.url,
    });
    (config['nodeSettings'] as { logLevel: string }).logLevel = 'INFO';
    const startFiles = writeNodeFiles(dir, { config, secrets }, 'start-');
    const child = spawnCli(
      'start',
      ...startFiles.args,
      '--interval-ms',
      '300',
      '--port',
      '0',
      '--cache-dir',
      join(dir, 'cache'),
    );
    const io = output(child);
    try {
      const sponsor = await createSponsor(chain.deployment, 'start');
      await requestFulfilled(sponsor);
      await until(async () => /provider unavailable this cycle/.test(io.stderr), 'the dead provider log');
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited(child)).to.equal(0);
    expect(io.stderr).to.include('node stopped');
    expect(io.stderr).to.not.include('achieve climb');
  });

  it('`start --poll-interval` serves a request made after its cycle by a poll, long before the next cycle', async () => {
    const { config, secrets } = buildConfigJson({
      providers: { anvil: chain.anvil.url },
      deployment: chain.deployment,
      apiUrl: api.url,
    });
    (config['nodeSettings'] as { logLevel: string }).logLevel = 'INFO';
    const pollFiles = writeNodeFiles(dir, { config, secrets }, 'poll-');
    // The next cycle is ten minutes away: only a poll can serve the request within the test.
    const child = spawnCli(
      'start',
      ...pollFiles.args,
      '--interval-ms',
      '600000',
      '--poll-interval',
      '0.2',
      '--no-gateway',
      '--cache-dir',
      join(dir, 'cache'),
    );
    const io = output(child);
    try {
      await until(async () => /cycle finished/.test(io.stderr), 'the first cycle');
      const sponsor = await createSponsor(chain.deployment, 'start-poll');
      await requestFulfilled(sponsor);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited(child)).to.equal(0);
    expect(io.stderr).to.include('node stopped');
  });

  it("`start --poll-interval` puts a served request's latency and the windows' polls on its /metrics", async () => {
    const { config, secrets } = buildConfigJson({
      providers: { anvil: chain.anvil.url },
      deployment: chain.deployment,
      apiUrl: api.url,
    });
    (config['nodeSettings'] as { logLevel: string }).logLevel = 'INFO';
    const latencyFiles = writeNodeFiles(dir, { config, secrets }, 'latency-');
    const metricsPort = await freePort();
    const sponsor = await createSponsor(chain.deployment, 'start-latency');
    // Windows of 6 s: the request is made as one begins, so the same window sees its fulfilment mined.
    const child = spawnCli(
      'start',
      ...latencyFiles.args,
      '--interval-ms',
      '6000',
      '--poll-interval',
      '0.2',
      '--port',
      '0',
      '--metrics-port',
      String(metricsPort),
      '--cache-dir',
      join(dir, 'cache'),
    );
    const io = output(child);
    const windowsFinished = () => io.stderr.split('window finished').length - 1;
    const metric = async (series: string) => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      return line === undefined ? undefined : Number(line.split(' ')[1]);
    };
    try {
      await until(async () => windowsFinished() >= 1, 'the first window to end');
      const seen = windowsFinished();
      await requestFulfilled(sponsor);
      await until(async () => windowsFinished() > seen, 'the window that served it to end');
      await until(
        async () => (await metric('node_request_latency_seconds_count{stage="inclusion"}')) === 1,
        'the inclusion latency on /metrics',
      );
      expect(await metric('node_request_latency_seconds_count{stage="submission"}')).to.equal(1);
      expect(await metric('node_window_polls_total')).to.be.greaterThan(0);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited(child)).to.equal(0);
  });

  it('`start --api-rate-limit`: a cycle defers a call over the budget to a later cycle, never fail(); a wrong flag is refused', async () => {
    const { config, secrets } = buildConfigJson({
      providers: { anvil: chain.anvil.url },
      deployment: chain.deployment,
      apiUrl: api.url,
    });
    (config['nodeSettings'] as { logLevel: string }).logLevel = 'INFO';
    const budgetFiles = writeNodeFiles(dir, { config, secrets }, 'budget-');
    const wrong = spawnCli('start', ...budgetFiles.args, '--no-gateway', '--api-rate-limit', 'Elsewhere=1/s');
    const wrongIo = output(wrong);
    expect(await exited(wrong)).to.equal(2);
    expect(wrongIo.stderr).to.contain("--api-rate-limit 'Elsewhere=1/s': the config has no OIS titled 'Elsewhere'");

    const sponsor = await createSponsor(chain.deployment, 'budget-start');
    const ids = [await requestBudgeted(sponsor), await requestBudgeted(sponsor)];
    const child = spawnCli(
      'start',
      ...budgetFiles.args,
      '--interval-ms',
      '300',
      '--no-gateway',
      '--cache-dir',
      join(dir, 'cache'),
      '--api-rate-limit',
      `${BUDGET}=1/m`,
    );
    const io = output(child);
    const cycles = () => io.stderr.split('cycle finished').length - 1;
    try {
      await until(
        async () =>
          (await Promise.all(ids.map((id) => requestEvents(chain.deployment, id)))).some((e) => e.fulfilled.length),
        'one of the two served',
      );
      // Three cycles more, each deferring the other call (its turn is a minute away, past every 300 ms cycle).
      const seen = cycles();
      await until(async () => cycles() >= seen + 3, 'three more cycles');
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited(child)).to.equal(0);
    await waitForMined(chain.anvil.url);
    const events = await Promise.all(ids.map((id) => requestEvents(chain.deployment, id)));
    expect(
      events.flatMap((e) => e.failed),
      'no fail() for a deferred call',
    ).to.deep.equal([]);
    expect(events.map((e) => e.fulfilled.length).sort()).to.deep.equal([0, 1]);
    // A later start without the budget serves the one left open.
    const after = spawnCli(
      'start',
      ...budgetFiles.args,
      '--interval-ms',
      '300',
      '--no-gateway',
      '--cache-dir',
      join(dir, 'cache'),
    );
    output(after);
    try {
      await until(
        async () =>
          (await Promise.all(ids.map((id) => requestEvents(chain.deployment, id)))).every(
            (e) => e.fulfilled.length === 1,
          ),
        'the one left open served',
      );
    } finally {
      after.kill('SIGTERM');
    }
    expect(await exited(after)).to.equal(0);
  });

  it('`start` refuses a bad config and a gateway port in use with a clear message', async () => {
    writeFileSync(join(dir, 'bad.json'), JSON.stringify({ chains: [] }));
    const bad = spawnCli('start', '-c', join(dir, 'bad.json'));
    const badIo = output(bad);
    expect(await exited(bad)).to.equal(1);
    expect(badIo.stderr).to.include('The configuration is not valid');

    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '0.0.0.0', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const busy = spawnCli('start', ...configArgs(), '--port', String(port), '--cache-dir', join(dir, 'cache'));
      const busyIo = output(busy);
      expect(await exited(busy)).to.equal(1);
      expect(busyIo.stderr).to.include(`port ${port} is already in use`);
    } finally {
      blocker.close();
    }
  });
});
