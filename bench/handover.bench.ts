// The coordinator hand-over (issue 36, item 1): windows that overlap as the operator's CronJob runs them and hand the
// node's coordinator Lease over (src/node/kubernetes/handover.ts). A short schedule is played by starting one
// `oracle-node coordinator --window <period + allowance> --poll-interval 1 --handover-lease bench-coordinator` every
// period, each as its own process, with the Lease on a real apiserver (KUBECONFIG: the test control plane,
// `make cluster-up`), against anvil (instant mining) with the published AirnodeRrpV0 and the loopback API stand-in.
// Requests are made at random moments (seeded) over the whole run. Measured from outside the node:
//   - the longest time between two polls (head reads, eth_blockNumber at each process's recording proxy) across all
//     runs, and the time without a poll at each hand-over (the last poll of one window to the first of the next);
//   - each request's time from its block to its fulfilment's block being seen (a watcher polls anvil every 100 ms);
//   - fulfilment transactions per request (the raw transactions at the proxies).
// What this does not have is the pod around each run (kwok runs none): a pod's start-up happens, on Kubernetes,
// while the previous window still polls (the hand-over allowance), so it is not in the gap.
// --no-handover plays the schedule before the hand-over instead: windows ending 15 s before the next run starts
// (the old COORDINATOR_WINDOW_MARGIN_SECONDS), no Lease.
//   node --import tsx bench/handover.bench.ts [--period 20] [--allowance 10] [--runs 9] [--requests 30] [--seed 36]
//     [--poll 1] [--no-handover]
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { id } from 'ethers';
import { ORACLE_NODE_ARGS, repoRoot } from '../test/support/binary.js';
import { rpc, setBalance, startTestChain } from '../test/support/chain.js';
import {
  buildConfigJson,
  createSponsor,
  NODE_ADDRESS,
  requestPrice,
  startApiServer,
  writeNodeFiles,
} from '../test/support/harness.js';
import { seededRandom } from '../test/support/random.js';
import { type RecordingProxy, startRecordingProxy } from '../test/support/rpc-proxy.js';
import { loadAverage, machine, table } from './report.js';

const { values: args } = parseArgs({
  options: {
    period: { type: 'string', default: '20' },
    allowance: { type: 'string', default: '10' },
    runs: { type: 'string', default: '9' },
    requests: { type: 'string', default: '30' },
    seed: { type: 'string', default: '36' },
    poll: { type: 'string', default: '1' },
    'no-handover': { type: 'boolean', default: false },
  },
});
const period = Number(args.period);
const allowance = Number(args.allowance);
const runs = Number(args.runs);
const requestCount = Number(args.requests);
const poll = Number(args.poll);
const LEASE = 'bench-coordinator';
const handover = !args['no-handover'];
/** Before the hand-over, a window ended this long before the next tick. */
const OLD_MARGIN_SECONDS = 15;
/** FulfilledRequest(address indexed airnode, bytes32 indexed requestId, bytes data) of AirnodeRrpV0. */
const FULFILLED_TOPIC = id('FulfilledRequest(address,bytes32,bytes)');

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const kubeConfig = new KubeConfig();
kubeConfig.loadFromDefault();
const core = kubeConfig.makeApiClient(CoreV1Api);
const namespace = `handover-bench-${Date.now().toString(36)}`;
await core.createNamespace({ body: { metadata: { name: namespace } } });

const chain = await startTestChain();
const api = await startApiServer();
await setBalance(chain.anvil.url, NODE_ADDRESS, 10n ** 20n);
const sponsors = await Promise.all([0, 1, 2].map((i) => createSponsor(chain.deployment, `handover-bench-${i}`)));
const dir = mkdtempSync(join(tmpdir(), 'handover-bench-'));
const load = { before: loadAverage() };

type Run = { index: number; child: ChildProcess; proxy: RecordingProxy; polls: number[]; exited: Promise<void> };
const started: Run[] = [];

async function startRun(index: number): Promise<Run> {
  const proxy = await startRecordingProxy(chain.anvil.url);
  const polls: number[] = [];
  proxy.setFault(({ method }) => {
    if (method === 'eth_blockNumber') polls.push(Date.now());
    return undefined;
  });
  const { config, secrets } = buildConfigJson({
    providers: { local: proxy.url },
    deployment: chain.deployment,
    apiUrl: api.url,
  });
  const files = writeNodeFiles(dir, { config, secrets }, `run${index}-`);
  const child = spawn(
    process.execPath,
    [
      ...ORACLE_NODE_ARGS,
      'coordinator',
      ...files.args,
      '--cache-dir',
      join(dir, `run${index}-cache`),
      '--window',
      String(handover ? period + allowance : period - OLD_MARGIN_SECONDS),
      '--poll-interval',
      String(poll),
      ...(handover ? ['--handover-lease', LEASE] : []),
    ],
    { cwd: repoRoot, stdio: ['ignore', 'ignore', 'ignore'], env: { ...process.env, POD_NAMESPACE: namespace } },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { index, child, proxy, polls, exited };
}

// The fulfilments as a watcher sees them (every 100 ms), by request id.
const fulfilledSeenAt = new Map<string, number>();
let watching = true;
const watcher = (async () => {
  let from = Number(await rpc<string>(chain.anvil.url, 'eth_blockNumber'));
  while (watching) {
    const head = Number(await rpc<string>(chain.anvil.url, 'eth_blockNumber'));
    if (head >= from) {
      const logs = await rpc<{ topics: string[] }[]>(chain.anvil.url, 'eth_getLogs', [
        {
          address: chain.deployment.AirnodeRrpV0,
          fromBlock: `0x${from.toString(16)}`,
          toBlock: `0x${head.toString(16)}`,
          topics: [FULFILLED_TOPIC],
        },
      ]);
      const now = Date.now();
      for (const log of logs) if (!fulfilledSeenAt.has(log.topics[2]!)) fulfilledSeenAt.set(log.topics[2]!, now);
      from = head + 1;
    }
    await sleep(100);
  }
})();

const t0 = Date.now();
// The "CronJob": one run per period.
const scheduler = (async () => {
  for (let index = 0; index < runs; index++) {
    await sleep(Math.max(0, t0 + index * period * 1000 - Date.now()));
    started.push(await startRun(index));
  }
})();
// Requests at random moments from the first window's start-up to the last one's scheduled end.
const rand = seededRandom(Number(args.seed));
const moments = Array.from({ length: requestCount }, () => 3_000 + rand() * (runs * period - 3) * 1000).sort(
  (a, b) => a - b,
);
const requests: { id: string; madeAt: number }[] = [];
for (const [i, moment] of moments.entries()) {
  await sleep(Math.max(0, t0 + moment - Date.now()));
  const id = await requestPrice(chain.deployment, sponsors[i % sponsors.length]!);
  requests.push({ id, madeAt: Date.now() });
}
await scheduler;
await Promise.all(started.map((run) => run.exited));
await sleep(500);
watching = false;
await watcher;

// Polls: the longest gap across all runs, and at each hand-over.
const allPolls = started.flatMap((run) => run.polls).sort((a, b) => a - b);
let longest = 0;
for (let i = 1; i < allPolls.length; i++) longest = Math.max(longest, allPolls[i]! - allPolls[i - 1]!);
const handovers: number[] = [];
for (let i = 1; i < started.length; i++) {
  const previous = started[i - 1]!.polls;
  const next = started[i]!.polls;
  if (previous.length > 0 && next.length > 0) handovers.push(Math.min(...next) - Math.max(...previous));
}
const latencies = requests.map((r) => (fulfilledSeenAt.get(r.id) ?? Number.NaN) - r.madeAt);
const fulfilled = latencies.filter((l) => Number.isFinite(l));
const sends = started.reduce((sum, run) => sum + run.proxy.sent.length, 0);
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

process.stdout.write(
  [
    `Machine: ${machine()}; load ${load.before} before, ${loadAverage()} after; ${new Date().toISOString().slice(0, 10)}.`,
    `Command: \`node --import tsx bench/handover.bench.ts --period ${period} --allowance ${allowance} --runs ${runs} --requests ${requestCount} --seed ${args.seed} --poll ${poll}${handover ? '' : ' --no-handover'}\``,
    '',
    ...table(
      ['measure', 'result'],
      [false, false],
      [
        [handover ? 'runs (windows), hand-overs' : 'runs (windows), gaps', `${started.length}, ${handovers.length}`],
        ['polls in all (head reads)', String(allPolls.length)],
        ['longest time between two polls, whole run', seconds(longest)],
        [
          handover ? 'time without a poll at a hand-over: p50 / max' : 'time without a poll between windows: p50 / max',
          `${seconds(percentile(handovers, 50))} / ${seconds(Math.max(...handovers))}`,
        ],
        ['requests fulfilled', `${fulfilled.length} / ${requests.length}`],
        ['fulfilment transactions sent', String(sends)],
        [
          'request mined -> fulfilment seen: p50 / max',
          `${seconds(percentile(fulfilled, 50))} / ${seconds(Math.max(...fulfilled))}`,
        ],
      ],
    ),
    '',
  ].join('\n'),
);

for (const run of started) await run.proxy.close();
await api.close();
await chain.anvil.stop();
await core.deleteNamespace({ name: namespace });
