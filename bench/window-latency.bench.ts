// Window latency (issue 26, "Seconds, not a minute"): how long a request waits for its fulfilment on chain when the
// node polls every second (`oracle-node start --poll-interval 1`, each minute a window: src/node/window.ts) and,
// beside it, when it runs the one-shot minute cycle (`oracle-node start`, no polls). anvil mines a block every 3 s
// or every 12 s (interval mining, block timestamps from the wall clock) with the published AirnodeRrpV0; requests
// are made at random moments (seeded, the same moments for both schedules) from a few sponsors, after the node's
// first cycle. Everything is measured from the chain, not from the node's counters:
//   - latency: the request's block to its fulfilment's block, by block timestamps, and by wall time (a watcher
//     polls anvil every 100 ms and notes when it first sees each block); the send (the fulfilment's arrival at the
//     recording proxy in front of anvil) is noted too, to show where the time goes;
//   - sends per request: the fulfilment transactions in anvil's blocks (sent from a sponsor wallet to the RRP) plus
//     those left in its pool, and the raw transactions that reached the proxy;
//   - RPC calls per idle poll: a window with no request (`oracle-node coordinator --window`), its calls counted at
//     the proxy less those of a one-shot cycle on the same chain, over the window's own count of polls (cross-check:
//     its eth_blockNumber calls at the proxy).
// The node runs from its built package in its own process, as a user runs it. Writes the "Window latency" section of
// docs/benchmarks.md. Needs `make build`; `make bench` builds first.
//   node --import tsx bench/window-latency.bench.ts [--block-times 3,12] [--duration 60] [--requests 10]
//     [--sponsors 4] [--idle 12] [--seed 26] [--no-minute] [--workers] [--no-write]
// A short run: --block-times 3 --duration 20 --requests 4 --idle 10 --no-minute (about a minute).
// --workers measures instead a window whose API calls go to worker processes (bench/support/window-workers.ts: one
// built `oracle-node worker --shard -` per shard, as the operator's worker Jobs without the pod start-up) and writes
// the "Window latency through worker processes" section. --window-workers measures a window whose API calls go to
// worker processes that stay for the window (`oracle-node worker --coordinator`, src/node/window-workers.ts) and
// writes the "Window latency through window workers" section.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { Contract, Interface, NonceManager, Wallet } from 'ethers';
import {
  compileRequester,
  DEPLOYER_PRIVATE_KEY,
  type Deployment,
  protocolArtifacts,
  rpc,
  startTestChain,
  testProvider,
} from '../test/support/chain.js';
import {
  buildConfigJson,
  createSponsor,
  ENDPOINTS,
  encodeCoin,
  NODE_ADDRESS,
  startApiServer,
} from '../test/support/harness.js';
import { seededRandom } from '../test/support/random.js';
import { type RecordingProxy, startRecordingProxy } from '../test/support/rpc-proxy.js';
import { loadAverage, machine, table, writeSection } from './report.js';
import { type CycleFiles, ourCli, repoRoot, writeCycleFiles } from './support/nodes.js';

/** The built CLI's #! line runs `node`: this one (Node 24) comes first on the PATH. */
const CLI_ENV = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env['PATH'] ?? ''}` };

const { values: args } = parseArgs({
  options: {
    'block-times': { type: 'string', default: '3,12' },
    duration: { type: 'string', default: '60' },
    requests: { type: 'string', default: '10' },
    sponsors: { type: 'string', default: '4' },
    idle: { type: 'string', default: '12' },
    seed: { type: 'string', default: '26' },
    'no-minute': { type: 'boolean', default: false },
    workers: { type: 'boolean', default: false },
    'window-workers': { type: 'boolean', default: false },
    'no-write': { type: 'boolean', default: false },
  },
});

const POLL_SECONDS = 1;
/** The window's workers with --window-workers: as many as the sponsors, each shard one sponsor wallet's calls. */
const WINDOW_WORKERS = 4;
const WATCH_MS = 100;
/** How long after the last request a run waits for its fulfilment: the minute cycle needs up to a minute. */
const DRAIN_MS = 150_000;
const SETUP_TIMEOUT_MS = 60_000;

type Schedule = 'window' | 'minute' | 'workers' | 'window-workers';

type RequestTiming = {
  id: string;
  madeBlock: number;
  madeTs: number;
  madeSeenAt: number;
  answeredBlock?: number;
  answeredTs?: number;
  answeredSeenAt?: number;
  answerTx?: string;
  failed?: boolean;
};

type Run = {
  blockTime: number;
  schedule: Schedule;
  requests: RequestTiming[];
  /** Block-timestamp seconds, wall seconds (seen to seen), wall seconds from the request's block seen to the send. */
  chain: number[];
  wall: number[];
  toSend: number[];
  minedSends: number;
  pendingSends: number;
  proxySends: number;
  rpcCalls: number;
  blockNumberCalls: number;
  /** The window's own counts, from its log lines ("window finished"). */
  polls: number;
  idlePolls: number;
  wallMs: number;
};

const percentile = (values: number[], p: number): number => {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const rrpInterface = new Interface(protocolArtifacts.AirnodeRrpV0().abi);
const TOPICS = {
  made: rrpInterface.getEvent('MadeFullRequest')!.topicHash,
  fulfilled: rrpInterface.getEvent('FulfilledRequest')!.topicHash,
  failed: rrpInterface.getEvent('FailedRequest')!.topicHash,
};

type Block = { number: string; timestamp: string; transactions: { hash: string; from: string; to: string | null }[] };
type Log = { topics: string[]; transactionHash: string; blockNumber: string };

/**
 * Watches anvil directly (not through the proxy) every 100 ms: for each new block, the wall time it was first
 * seen, its timestamp, its fulfilment transactions (from a sponsor wallet to the RRP) and the node's request logs.
 */
class ChainWatcher {
  readonly requests = new Map<string, RequestTiming>();
  fulfilmentTxs = 0;
  private last: number;
  private stopped = false;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly url: string,
    private readonly rrp: string,
    private readonly sponsorWallets: Set<string>,
    head: number,
  ) {
    this.last = head;
  }

  start(): void {
    this.loop = (async () => {
      while (!this.stopped) {
        const head = Number(await rpc<string>(this.url, 'eth_blockNumber'));
        const seenAt = performance.now();
        for (let n = this.last + 1; n <= head; n++) await this.read(n, seenAt);
        this.last = Math.max(this.last, head);
        await sleep(WATCH_MS);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  private async read(number: number, seenAt: number): Promise<void> {
    const hex = `0x${number.toString(16)}`;
    const block = await rpc<Block>(this.url, 'eth_getBlockByNumber', [hex, true]);
    const ts = Number(block.timestamp);
    for (const tx of block.transactions)
      if (this.sponsorWallets.has(tx.from.toLowerCase()) && tx.to?.toLowerCase() === this.rrp.toLowerCase())
        this.fulfilmentTxs++;
    const logs = await rpc<Log[]>(this.url, 'eth_getLogs', [{ address: this.rrp, fromBlock: hex, toBlock: hex }]);
    for (const log of logs) {
      const id = log.topics[2];
      if (!id || log.topics[1]?.toLowerCase() !== `0x${NODE_ADDRESS.slice(2).toLowerCase().padStart(64, '0')}`)
        continue;
      if (log.topics[0] === TOPICS.made)
        this.requests.set(id, { id, madeBlock: number, madeTs: ts, madeSeenAt: seenAt });
      else if (log.topics[0] === TOPICS.fulfilled || log.topics[0] === TOPICS.failed) {
        const request = this.requests.get(id);
        if (!request || request.answeredBlock !== undefined) continue;
        Object.assign(request, {
          answeredBlock: number,
          answeredTs: ts,
          answeredSeenAt: seenAt,
          answerTx: log.transactionHash,
          failed: log.topics[0] === TOPICS.failed,
        });
      }
    }
  }
}

/**
 * `oracle-node start` from the built package, as a user runs it, or the coordinator with worker processes; its log
 * lines (INFO) kept for the window's counts.
 */
function startNode(
  files: CycleFiles,
  cacheDir: string,
  schedule: Schedule,
): { child: ChildProcess; log: () => string } {
  const [command, ...args] =
    schedule === 'workers' || schedule === 'window-workers'
      ? [
          process.execPath,
          '--import',
          'tsx',
          'bench/support/window-workers.ts',
          files.config,
          files.secrets,
          String(POLL_SECONDS),
          '60',
          ...(schedule === 'window-workers' ? ['stay', String(WINDOW_WORKERS)] : []),
        ]
      : [
          ourCli,
          'start',
          '-c',
          files.config,
          '-s',
          files.secrets,
          '--no-gateway',
          '--interval-ms',
          '60000',
          '--cache-dir',
          cacheDir,
          ...(schedule === 'window' ? ['--poll-interval', String(POLL_SECONDS)] : []),
        ];
  const child = spawn(command!, args, {
    cwd: repoRoot,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: CLI_ENV,
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return { child, log: () => stderr };
}

async function stopNode(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await Promise.race([exited, sleep(90_000)]);
  if (child.exitCode === null) child.kill('SIGKILL');
}

/** The window's own counts from its "window finished" log lines. */
function windowCounts(log: string): { polls: number; idlePolls: number } {
  let polls = 0;
  let idlePolls = 0;
  for (const line of log.split('\n')) {
    if (!line.includes('window finished')) continue;
    try {
      const entry = JSON.parse(line) as { polls?: number; idlePolls?: number };
      polls += entry.polls ?? 0;
      idlePolls += entry.idlePolls ?? 0;
    } catch {
      // not a JSON line
    }
  }
  return { polls, idlePolls };
}

type Setup = {
  anvilUrl: string;
  deployment: Deployment;
  proxy: RecordingProxy;
  files: CycleFiles;
  dir: string;
  sponsors: { address: string; sponsorWallet: string }[];
  requester: Contract;
};

/** One schedule on the running chain: the node, the requests at their moments, until all are answered. */
async function measure(setup: Setup, blockTime: number, schedule: Schedule, moments: number[]): Promise<Run> {
  const { anvilUrl, deployment, proxy, files, dir, sponsors, requester } = setup;
  const head = Number(await rpc<string>(anvilUrl, 'eth_blockNumber'));
  const watcher = new ChainWatcher(
    anvilUrl,
    deployment.AirnodeRrpV0,
    new Set(sponsors.map((s) => s.sponsorWallet.toLowerCase())),
    head,
  );
  proxy.reset();
  const node = startNode(files, join(dir, `cache-${schedule}-${blockTime}`), schedule);
  const started = performance.now();
  try {
    // The node's first cycle is done once it read the logs; the requests come after it.
    while (!(proxy.counts.get('eth_getLogs') ?? 0)) {
      if (node.child.exitCode !== null) throw new Error(`node exited: ${node.log().slice(-2000)}`);
      if (performance.now() - started > 60_000) throw new Error('the node did not start its first cycle');
      await sleep(50);
    }
    await sleep(1000);
    watcher.start();
    const t0 = performance.now();
    const made: Promise<unknown>[] = [];
    for (const [i, moment] of moments.entries()) {
      await sleep(Math.max(0, t0 + moment * 1000 - performance.now()));
      const sponsor = sponsors[i % sponsors.length]!;
      made.push(
        requester.getFunction('makeFull')(
          NODE_ADDRESS,
          ENDPOINTS.price,
          sponsor.address,
          sponsor.sponsorWallet,
          encodeCoin(i % 2 ? 'BTC' : 'ETH'),
          { gasLimit: 300_000 },
        ),
      );
    }
    await Promise.all(made);
    const deadline = performance.now() + DRAIN_MS;
    while (performance.now() < deadline) {
      const all = [...watcher.requests.values()];
      if (all.length >= moments.length && all.every((r) => r.answeredBlock !== undefined)) break;
      await sleep(200);
    }
    // One more block: a second transaction for a request, sent by the poll after the fulfilment, would show now
    // (the pool is read too).
    await sleep(blockTime * 1000 + 500);
  } finally {
    await stopNode(node.child);
    await watcher.stop();
  }
  const wallMs = performance.now() - started;
  const pool = await rpc<{ pending: Record<string, Record<string, unknown>> }>(anvilUrl, 'txpool_content');
  const wallets = new Set(sponsors.map((s) => s.sponsorWallet.toLowerCase()));
  const pendingSends = Object.entries(pool.pending)
    .filter(([from]) => wallets.has(from.toLowerCase()))
    .reduce((n, [, byNonce]) => n + Object.keys(byNonce).length, 0);
  const sent = proxy.sent;
  const sentAt = new Map(sent.map((tx) => [tx.hash.toLowerCase(), tx.at]));
  // The proxy notes Date.now(); the watcher performance.now(): one offset between them.
  const clockOffset = Date.now() - performance.now();
  const requests = [...watcher.requests.values()];
  const answered = requests.filter((r) => r.answeredBlock !== undefined);
  const run: Run = {
    blockTime,
    schedule,
    requests,
    chain: answered.map((r) => r.answeredTs! - r.madeTs),
    wall: answered.map((r) => (r.answeredSeenAt! - r.madeSeenAt) / 1000),
    toSend: answered.flatMap((r) => {
      const at = sentAt.get(r.answerTx!.toLowerCase());
      return at === undefined ? [] : [(at - clockOffset - r.madeSeenAt) / 1000];
    }),
    minedSends: watcher.fulfilmentTxs,
    pendingSends,
    proxySends: sent.filter((tx) => !tx.rejected).length,
    rpcCalls: [...proxy.counts.values()].reduce((a, b) => a + b, 0),
    blockNumberCalls: proxy.counts.get('eth_blockNumber') ?? 0,
    ...windowCounts(node.log()),
    wallMs,
  };
  process.stderr.write(
    `${blockTime} s blocks, ${schedule}: ${answered.length}/${moments.length} answered, chain p50 ${percentile(run.chain, 50)} s ` +
      `max ${Math.max(...run.chain)} s, wall p50 ${percentile(run.wall, 50).toFixed(1)} s max ${Math.max(...run.wall).toFixed(1)} s, ` +
      `sends mined ${run.minedSends} pending ${run.pendingSends} at the proxy ${run.proxySends}, ${run.rpcCalls} RPC calls, ` +
      `polls ${run.polls} (idle ${run.idlePolls}), ${(wallMs / 1000).toFixed(0)} s\n`,
  );
  return run;
}

type Idle = { blockTime: number; oneShotCalls: number; windowCalls: number; polls: number; blockNumbers: number };

/** RPC calls per idle poll: a window with no request, less a one-shot cycle, over the window's polls. */
async function measureIdle(setup: Setup, blockTime: number, seconds: number): Promise<Idle> {
  const { proxy, files, dir } = setup;
  const cacheDir = join(dir, `cache-idle-${blockTime}`);
  const coordinator = async (extra: string[]) => {
    proxy.reset();
    const child = spawn(
      ourCli,
      ['coordinator', '-c', files.config, '-s', files.secrets, '--cache-dir', cacheDir, ...extra],
      {
        cwd: repoRoot,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: CLI_ENV,
      },
    );
    let stdout = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr?.resume();
    const code = await new Promise((resolve) => child.once('exit', resolve));
    if (code !== 0) throw new Error(`coordinator exited with ${code}`);
    const summary = JSON.parse(stdout.trim().split('\n').at(-1)!) as { window?: { polls: number } };
    return {
      calls: [...proxy.counts.values()].reduce((a, b) => a + b, 0),
      blockNumbers: proxy.counts.get('eth_blockNumber') ?? 0,
      polls: summary.window?.polls ?? 0,
    };
  };
  // The first run verifies the provider's chain id and remembers it (as CronJob runs do through the ConfigMap).
  await coordinator([]);
  const oneShot = await coordinator([]);
  const window = await coordinator(['--window', String(seconds), '--poll-interval', String(POLL_SECONDS)]);
  const idle = {
    blockTime,
    oneShotCalls: oneShot.calls,
    windowCalls: window.calls,
    polls: window.polls,
    blockNumbers: window.blockNumbers - oneShot.blockNumbers,
  };
  process.stderr.write(
    `${blockTime} s blocks, idle: one-shot ${idle.oneShotCalls} calls, window ${idle.windowCalls} calls over ${idle.polls} polls ` +
      `(${((idle.windowCalls - idle.oneShotCalls) / idle.polls).toFixed(2)} per poll; eth_blockNumber at the proxy ${idle.blockNumbers})\n`,
  );
  return idle;
}

async function forBlockTime(blockTime: number, moments: number[], schedules: Schedule[]) {
  const { anvil, deployment } = await startTestChain({ accounts: 10 });
  const api = await startApiServer();
  const proxy = await startRecordingProxy(anvil.url);
  try {
    const sponsors: { address: string; sponsorWallet: string }[] = [];
    for (let i = 0; i < Number(args.sponsors); i++) {
      // Bounded: a setup that hangs (seen once, before the first sponsor's transaction was mined) fails the run.
      const sponsor = await Promise.race([
        createSponsor(deployment, `latency-${blockTime}-${i}`),
        sleep(SETUP_TIMEOUT_MS).then(() => {
          throw new Error(`creating sponsor ${i} took more than ${SETUP_TIMEOUT_MS / 1000} s`);
        }),
      ]);
      sponsors.push({ address: sponsor.address, sponsorWallet: sponsor.sponsorWallet });
    }
    // From here anvil mines a block every `blockTime` seconds, also when nothing waits (a real chain's rhythm).
    await rpc(anvil.url, 'evm_setAutomine', [false]);
    await rpc(anvil.url, 'evm_setIntervalMining', [blockTime]);
    const dir = mkdtempSync(join(tmpdir(), 'window-latency-'));
    const { config, secrets } = buildConfigJson({
      providers: { local: proxy.url },
      deployment,
      apiUrl: api.url,
      fulfillmentGasLimit: 500_000,
      gasPriceOracle: [{ gasPriceStrategy: 'constantGasPrice', gasPrice: { value: 10, unit: 'gwei' } }],
    });
    (config['nodeSettings'] as Record<string, unknown>)['logLevel'] = 'INFO';
    const files = writeCycleFiles(dir, config, secrets);
    const requester = new Contract(
      deployment.Requester,
      compileRequester().abi,
      new NonceManager(new Wallet(DEPLOYER_PRIVATE_KEY, testProvider(anvil.url))),
    );
    const setup: Setup = { anvilUrl: anvil.url, deployment, proxy, files, dir, sponsors, requester };
    const idle =
      schedules.includes('workers') || schedules.includes('window-workers')
        ? undefined
        : await measureIdle(setup, blockTime, Number(args.idle));
    const runs: Run[] = [];
    for (const schedule of schedules) runs.push(await measure(setup, blockTime, schedule, moments));
    return { idle, runs };
  } finally {
    await proxy.close();
    await api.close();
    await anvil.stop();
  }
}

async function main(): Promise<void> {
  const blockTimes = String(args['block-times']).split(',').map(Number);
  const duration = Number(args.duration);
  const requestCount = Number(args.requests);
  const next = seededRandom(Number(args.seed));
  const moments = Array.from({ length: requestCount }, () => next() * duration).sort((a, b) => a - b);
  const schedules: Schedule[] = args['window-workers']
    ? ['window-workers']
    : args.workers
      ? ['workers']
      : args['no-minute']
        ? ['window']
        : ['window', 'minute'];
  const loadBefore = loadAverage();
  const started = performance.now();
  const results: { idle: Idle | undefined; runs: Run[] }[] = [];
  for (const blockTime of blockTimes) results.push(await forBlockTime(blockTime, moments, schedules));
  const loadAfter = loadAverage();
  const totalS = (performance.now() - started) / 1000;
  const runs = results.flatMap((r) => r.runs);
  console.log(JSON.stringify({ machine: machine(), blockTimes, duration, requestCount, results }, null, 2));
  if (args['no-write']) return;

  const s = (value: number, digits = 0) => (Number.isFinite(value) ? `${value.toFixed(digits)} s` : 'n/a');
  const triple = (values: number[], digits = 0) =>
    `${s(percentile(values, 50), digits)} / ${s(percentile(values, 95), digits)} / ${s(values.length ? Math.max(...values) : Number.NaN, digits)}`;
  const answered = (r: Run) => r.requests.filter((q) => q.answeredBlock !== undefined && !q.failed).length;
  const sends = (r: Run) => r.minedSends + r.pendingSends;
  const rowOf = (r: Run, schedule: string) => [
    `${r.blockTime} s`,
    schedule,
    `${answered(r)} / ${requestCount}`,
    `${sends(r)} (${r.proxySends} at the proxy)`,
    triple(r.chain),
    triple(r.wall, 1),
    triple(r.toSend, 1),
  ];
  const latencyHeader = [
    'blocks',
    'schedule',
    'fulfilled',
    'fulfilment txs',
    'p50 / p95 / max, block timestamps',
    'p50 / p95 / max, wall (seen to seen)',
    'p50 / p95 / max, to the send',
  ];
  if (args['window-workers']) {
    writeSection('Window latency through window workers', [
      `Machine: ${machine()}, shared with other engineers' builds and tests (1-minute load average ${loadBefore.split(' / ')[0]} before and ${loadAfter.split(' / ')[0]} after). ${new Date().toISOString().slice(0, 10)}. Whole run ${totalS.toFixed(0)} s.`,
      `Command: \`node --import tsx bench/window-latency.bench.ts --window-workers --block-times ${blockTimes.join(',')} --duration ${duration} --requests ${requestCount} --sponsors ${args.sponsors} --seed ${args.seed}\`.`,
      '',
      'As "Window latency through worker processes" (the same chain, requests and measures), but each window starts ' +
        `${WINDOW_WORKERS} built \`oracle-node worker --coordinator\` processes at its start that stay for it and take the polls' shards ` +
        "over loopback HTTP, as the operator's coordinator pod starts the window's worker Job (docs/chain-cycle.md, " +
        '"Worker pods that stay for the window"); a poll before the first of them asks for work uses a per-shard process. ' +
        'On pods the same exchange crosses the pod network (a few ms more); the pods start with the window, not with a request.',
      '',
      ...table(
        latencyHeader,
        [false, false, true, true, true, true, true],
        runs.map((r) => rowOf(r, `window, ${POLL_SECONDS} s polls, window workers`)),
      ),
    ]);
    return;
  }
  if (args.workers) {
    writeSection('Window latency through worker processes', [
      `Machine: ${machine()}, shared with three other engineers' builds and tests (1-minute load average ${loadBefore.split(' / ')[0]} before and ${loadAfter.split(' / ')[0]} after). ${new Date().toISOString().slice(0, 10)}. Whole run ${totalS.toFixed(0)} s.`,
      `Command: \`node --import tsx bench/window-latency.bench.ts --workers --block-times ${blockTimes.join(',')} --duration ${duration} --requests ${requestCount} --sponsors ${args.sponsors} --seed ${args.seed}\`.`,
      '',
      'As "Window latency" (the same chain, requests and measures), but the coordinator sends its API calls to worker ' +
        "processes as the operator's coordinator pod sends them to worker Jobs (`bench/support/window-workers.ts`: windows of 60 s with " +
        `${POLL_SECONDS} s polls, back to back, \`WorkerExecutor\`; each busy poll starts one built \`oracle-node worker --shard -\` per shard, ` +
        'the shard on its stdin and its output read from its stdout; the coordinator signs, simulates and sends). What a worker ' +
        "pod adds on top (the Job, the pod's sandbox and container start, the coordinator reading the Job and the pod's log) is " +
        'not here: docs/chain-cycle.md, "Where a request\'s time goes through worker pods".',
      '',
      ...table(
        latencyHeader,
        [false, false, true, true, true, true, true],
        runs.map((r) => rowOf(r, `window, ${POLL_SECONDS} s polls, worker processes`)),
      ),
    ]);
    return;
  }
  const measured = results as { idle: Idle; runs: Run[] }[];
  const idleOf = (blockTime: number) => measured.find((r) => r.idle.blockTime === blockTime)!.idle;
  const perPoll = (idle: Idle) => (idle.windowCalls - idle.oneShotCalls) / idle.polls;
  const rows = runs.map((r) => [
    ...rowOf(r, r.schedule === 'window' ? `window, ${POLL_SECONDS} s polls` : 'minute cycle'),
    r.schedule === 'window'
      ? `${perPoll(idleOf(r.blockTime)).toFixed(2)} (${idleOf(r.blockTime).polls} polls)`
      : `${idleOf(r.blockTime).oneShotCalls} a cycle`,
  ]);
  const goal = (met: boolean) => (met ? 'met' : '**not met**');
  const window3 = runs.find((r) => r.schedule === 'window' && r.blockTime === 3);
  const everyFulfilled = runs.filter((r) => r.schedule === 'window').every((r) => answered(r) === requestCount);
  const oneEach = runs.every((r) => sends(r) === requestCount && r.proxySends === requestCount);
  const idleOk = measured.every((r) => perPoll(r.idle) <= 1.5);
  writeSection('Window latency', [
    `Machine: ${machine()}, shared with three other engineers' builds and tests (1-minute load average ${loadBefore.split(' / ')[0]} before and ${loadAfter.split(' / ')[0]} after). ${new Date().toISOString().slice(0, 10)}. Whole run ${totalS.toFixed(0)} s.`,
    `Command: \`node --import tsx bench/window-latency.bench.ts --block-times ${blockTimes.join(',')} --duration ${duration} --requests ${requestCount} --sponsors ${args.sponsors} --idle ${args.idle} --seed ${args.seed}${args['no-minute'] ? ' --no-minute' : ''}\` (run by \`make bench\`).`,
    '',
    `Setup: anvil with the published AirnodeRrpV0, mining a block every 3 s or every 12 s (interval mining, timestamps from the wall clock), the loopback API stand-in, \`fulfillmentGasLimit\` 500 000, \`constantGasPrice\` 10 gwei. ` +
      `The node is the built \`oracle-node start --no-gateway --interval-ms 60000\`, in its own process, with \`--poll-interval ${POLL_SECONDS}\` (each minute a window, in-process shards) or without it (the one-shot minute cycle). ` +
      `After its first cycle, ${requestCount} \`makeFullRequest\`s from ${args.sponsors} sponsors are made at random moments of ${duration} s (seed ${args.seed}, the same moments for every row). ` +
      'Latency is from the request to its fulfilment, both read from the chain: by the timestamps of their blocks, and by wall time as a watcher polling anvil every 100 ms first saw each block ("seen to seen"); ' +
      '"to the send" is from the request\'s block seen to the fulfilment\'s arrival at the recording proxy in front of anvil. ' +
      "Sends are the fulfilment transactions in anvil's blocks (from a sponsor wallet to the RRP) plus any left in its pool a block after the last fulfilment, beside the raw transactions that reached the proxy. " +
      'Idle calls per poll: a `coordinator --window ' +
      `${args.idle} --poll-interval ${POLL_SECONDS}\` with no request, its calls at the proxy less those of a one-shot \`coordinator\` on the same chain, over the window's own count of polls (new-block polls included: each reads the new block's logs).`,
    '',
    ...table([...latencyHeader, 'RPC calls per idle poll'], [false, false, true, true, true, true, true, true], rows),
    '',
    `Cross-check of the window's own counters against the proxy: ${measured
      .map(
        (r) =>
          `${r.idle.blockTime} s blocks, idle window: ${r.idle.polls} polls counted by the window, ${r.idle.blockNumbers} \`eth_blockNumber\` at the proxy beyond the one-shot cycle's` +
          r.runs
            .filter((run) => run.schedule === 'window')
            .map(
              (run) =>
                `; latency run: ${run.polls} polls (${run.idlePolls} idle) in the windows' log lines, ${run.blockNumberCalls} \`eth_blockNumber\` at the proxy (one per poll and one per window's first cycle), ${run.rpcCalls} calls in all`,
            )
            .join(''),
      )
      .join('. ')}.`,
    '',
    `An idle poll costs one \`eth_blockNumber\`, and one \`eth_getLogs\` more when it finds a new block: in the long run 1 + ${POLL_SECONDS}/B calls a poll with B-second blocks (${blockTimes.map((b) => `${(1 + POLL_SECONDS / b).toFixed(2)} with ${b} s blocks`).join(', ')}); a short idle window lands a few more or fewer polls on new blocks. A served request costs the window up to two \`eth_getBlockByNumber\` more (the timestamps of its block and of its answer's, for the latency metrics).`,
    '',
    '| goal | result |',
    '| --- | --- |',
    `| every request fulfilled (window) | ${goal(everyFulfilled)} |`,
    `| exactly one transaction sent per request | ${goal(oneEach)} (${runs.map((r) => `${sends(r)}/${requestCount}`).join(', ')}) |`,
    window3
      ? `| p50 <= 5 s and max <= 8 s with 3 s blocks and 1 s polls (block timestamps) | ${goal(percentile(window3.chain, 50) <= 5 && Math.max(...window3.chain) <= 8)} (p50 ${s(percentile(window3.chain, 50))}, max ${s(Math.max(...window3.chain))}; wall p50 ${s(percentile(window3.wall, 50), 1)}, max ${s(Math.max(...window3.wall), 1)}) |`
      : '| p50 <= 5 s and max <= 8 s with 3 s blocks | not run (no 3 s blocks) |',
    `| idle <= 1.5 RPC calls per poll | ${goal(idleOk)} (${measured.map((r) => `${r.idle.blockTime} s blocks ${perPoll(r.idle).toFixed(2)}`).join(', ')}) |`,
  ]);
}

if (!existsSync(ourCli)) throw new Error(`${ourCli} is missing: run make build first`);
await main();
