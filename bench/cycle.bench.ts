// Request-response cycle benchmark: N pending requests (default 1,000 from 50 sponsors) on anvil, served by this
// node and, from the same chain snapshot and the same API, by the reference node (@api3/airnode-node 0.15.0 local
// handlers). Each cycle runs in its own process, each side from its built package as a user runs it: ours the
// `oracle-node coordinator` binary (dist/cli/index.js through its #! line), the reference `startCoordinator()` of
// its published dist/ in a plain Node script (neither under tsx). The time measured is from the first cycle's
// spawn until every request is answered ON CHAIN (fulfilled or failed events for all N, the pool empty): a node
// runs further cycles (as its every-minute schedule would, without the wait) until then, up to --cap seconds.
// Rounds are interleaved (the order alternates) and each starts from the same snapshot. A recording JSON-RPC proxy
// in front of anvil counts calls by method and checks that each sponsor wallet's transactions were sent in nonce
// order and mined without gaps. Writes the "Request-response cycle" section of docs/benchmarks.md.
// Needs `make build` (dist/cli/index.js): `make bench` builds first.
//   node --import tsx bench/cycle.bench.ts [--requests 1000] [--sponsors 50] [--runs 3] [--cap 300] [--no-reference]
//     [--only ours|reference] [--logs DIR: each cycle's stderr] [--profile DIR: a CPU profile of each cycle]
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { rpc, startTestChain, waitForMined } from '../test/support/chain.js';
import { buildConfigJson, startApiServer } from '../test/support/harness.js';
import { checkNonceOrder, type NonceReport, startRecordingProxy } from '../test/support/rpc-proxy.js';
import { loadAverage, machine, median, table, writeSection } from './report.js';
import {
  answeredCount,
  type CycleFiles,
  makeRequestBurst,
  ourCli,
  runNodeCycle,
  writeCycleFiles,
} from './support/nodes.js';

const { values: args } = parseArgs({
  options: {
    requests: { type: 'string', default: '1000' },
    sponsors: { type: 'string', default: '50' },
    runs: { type: 'string', default: '3' },
    cap: { type: 'string', default: '300' },
    'no-write': { type: 'boolean', default: false },
    'no-reference': { type: 'boolean', default: false },
    only: { type: 'string' },
    logs: { type: 'string' },
    profile: { type: 'string' },
  },
});

type ChildResult = { wallMs: number; maxRssMb: number; phases?: Record<string, unknown> };

let logSeq = 0;
/** One cycle of one node in its own process (bench/support/nodes.ts), with our cycle's phases from its summary. */
async function runNode(kind: 'ours' | 'reference', files: CycleFiles): Promise<ChildResult> {
  const { wallMs, maxRssMb, stdout, stderr } = await runNodeCycle(kind, files, {
    ...(args['profile'] ? { nodeOptions: `--cpu-prof --cpu-prof-dir=${resolve(args['profile'])}` } : {}),
    referenceLogs: Boolean(args['logs']),
  });
  if (args['logs']) writeFileSync(join(args['logs'], `${kind}-${logSeq++}.log`), `${stdout}\n${stderr}`);
  let phases: Record<string, unknown> | undefined;
  if (kind === 'ours') {
    const summary = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      timings: { discoveryMs: number; shardsMs: number };
      results: { ok: boolean; output?: { timings: { apiMs: number; planMs: number; sendMs: number } } }[];
    };
    const shardTimings = summary.results.flatMap((r) => (r.ok && r.output ? [r.output.timings] : []));
    const slowest = (key: 'apiMs' | 'planMs' | 'sendMs') => Math.max(0, ...shardTimings.map((t) => t[key]));
    phases = {
      discoveryMs: summary.timings.discoveryMs,
      shardsMs: summary.timings.shardsMs,
      slowestShardApiMs: Math.round(slowest('apiMs')),
      slowestShardPlanMs: Math.round(slowest('planMs')),
      slowestShardSendMs: Math.round(slowest('sendMs')),
    };
  }
  return { wallMs, maxRssMb, ...(phases ? { phases } : {}) };
}

async function main(): Promise<void> {
  const requests = Number(args.requests);
  const sponsorCount = Number(args.sponsors);
  const runs = Number(args.runs);
  const { anvil, deployment } = await startTestChain({ accounts: 10 });
  const api = await startApiServer();
  const proxy = await startRecordingProxy(anvil.url);
  try {
    await makeRequestBurst(anvil.url, deployment, requests, sponsorCount);

    const dir = mkdtempSync(join(tmpdir(), 'cycle-bench-'));
    const { config: configJson, secrets } = buildConfigJson({
      providers: { local: proxy.url },
      deployment,
      apiUrl: api.url,
      fulfillmentGasLimit: 500_000,
      maxConcurrency: Math.max(requests, 100),
      gasPriceOracle: [{ gasPriceStrategy: 'constantGasPrice', gasPrice: { value: 10, unit: 'gwei' } }],
    });
    if (args['logs']) (configJson['nodeSettings'] as Record<string, unknown>)['logLevel'] = 'INFO';
    const files = writeCycleFiles(dir, configJson, secrets, args['logs'] ? 'INFO' : 'ERROR');

    type Round = {
      kind: 'ours' | 'reference';
      totalMs: number;
      cycles: number;
      cycleMs: number[];
      maxRssMb: number;
      rpcCalls: number;
      byMethod: Record<string, number>;
      fulfilled: number;
      failed: number;
      failures: Record<string, number>;
      nonces: NonceReport;
      /** Blocks the chain mined in the round (anvil mines on arrival: several ready transactions can share one). */
      blocks: number;
      phases?: Record<string, unknown>;
      error?: string;
    };
    const capMs = Number(args.cap) * 1000;
    /** Cycles of one node from the snapshot until all requests are answered on chain (or the cap). */
    const measure = async (kind: 'ours' | 'reference'): Promise<Round> => {
      const snapshot = await rpc<string>(anvil.url, 'evm_snapshot');
      const firstBlock = Number(await rpc<string>(anvil.url, 'eth_blockNumber'));
      proxy.reset();
      const start = performance.now();
      const cycleMs: number[] = [];
      let maxRssMb = 0;
      let phases: Record<string, unknown> | undefined;
      let answered = { fulfilled: 0, failed: 0, failures: {} as Record<string, number> };
      let error: string | undefined;
      try {
        while (performance.now() - start < capMs) {
          const result = await runNode(kind, files);
          cycleMs.push(result.wallMs);
          maxRssMb = Math.max(maxRssMb, result.maxRssMb);
          phases ??= result.phases;
          await waitForMined(anvil.url, 120_000);
          answered = await answeredCount(anvil.url, deployment.AirnodeRrpV0);
          if (answered.fulfilled + answered.failed >= requests) break;
        }
      } catch (caught) {
        error = (caught as Error).message.slice(0, 300);
      }
      const totalMs = performance.now() - start;
      const nonces = await checkNonceOrder(anvil.url, proxy.sent);
      const blocks = Number(await rpc<string>(anvil.url, 'eth_blockNumber')) - firstBlock;
      const byMethod = Object.fromEntries(proxy.counts);
      const rpcCalls = [...proxy.counts.values()].reduce((a, b) => a + b, 0);
      await rpc(anvil.url, 'evm_revert', [snapshot]);
      const round: Round = {
        kind,
        totalMs,
        cycles: cycleMs.length,
        cycleMs,
        maxRssMb,
        rpcCalls,
        byMethod,
        ...answered,
        nonces,
        blocks,
        ...(phases ? { phases } : {}),
        ...(error ? { error } : {}),
      };
      process.stderr.write(
        `${kind}: ${(totalMs / 1000).toFixed(1)} s, ${round.cycles} cycle(s) [${cycleMs.map((m) => (m / 1000).toFixed(1)).join(', ')} s], ` +
          `${answered.fulfilled} fulfilled, ${answered.failed} failed, ${rpcCalls} RPC calls, peak RSS ${maxRssMb.toFixed(0)} MB, ` +
          `nonce order: ${nonces.outOfOrder.length} out of order, ${nonces.gaps.length} gaps, ${nonces.queued} queued, ${blocks} blocks${error ? `; error ${error}` : ''}\n`,
      );
      return round;
    };

    const withReference = !args['no-reference'] && args.only !== 'ours';
    const rounds: Round[] = [];
    const loadBefore = loadAverage();
    for (let run = 0; run < runs; run++) {
      const order: ('ours' | 'reference')[] = withReference
        ? run % 2 === 0
          ? ['ours', 'reference']
          : ['reference', 'ours']
        : args.only === 'reference'
          ? ['reference']
          : ['ours'];
      for (const kind of order) rounds.push(await measure(kind));
    }
    const loadAfter = loadAverage();
    const of = (kind: string) => rounds.filter((r) => r.kind === kind);
    const ours = of('ours');
    const reference = of('reference');
    const medianMs = (list: Round[]) => median(list.map((r) => r.totalMs));
    const ratio = reference.length && ours.length ? medianMs(reference) / medianMs(ours) : undefined;
    const pairRatios = ours.map((o, i) => (reference[i] ? reference[i]!.totalMs / o.totalMs : Number.NaN));
    console.log(
      JSON.stringify(
        { machine: machine(), requests, sponsors: sponsorCount, runs, ratio, pairRatios, rounds },
        null,
        2,
      ),
    );
    if (args['no-write']) return;
    const describe = (list: Round[]) =>
      list
        .map(
          (r) =>
            `${(r.totalMs / 1000).toFixed(1)} s (${r.cycles} cycle${r.cycles === 1 ? '' : 's'}, ${r.fulfilled} fulfilled${r.failed ? `, ${r.failed} failed` : ''}${r.fulfilled + r.failed < requests ? `, ${requests - r.fulfilled - r.failed} unanswered at the cap` : ''})`,
        )
        .join('; ');
    const nonceLine = (list: Round[]) =>
      list.every((r) => r.nonces.outOfOrder.length === 0 && r.nonces.gaps.length === 0 && r.nonces.queued === 0)
        ? 'in order, no gaps'
        : list
            .map(
              (r) =>
                `${r.nonces.outOfOrder.length} out of order / ${r.nonces.gaps.length} gaps / ${r.nonces.queued} queued`,
            )
            .join('; ');
    const methods = (r: Round | undefined) =>
      r
        ? Object.entries(r.byMethod)
            .sort((a, b) => b[1] - a[1])
            .map(([m, n]) => `\`${m}\` ${n}`)
            .join(', ')
        : '';
    const phases = ours[0]?.phases as Record<string, number> | undefined;
    writeSection('Request-response cycle', [
      `Machine: ${machine()}, shared with other engineers' builds and tests (1-minute load average ${loadBefore.split(' / ')[0]} before and ${loadAfter.split(' / ')[0]} after). ${new Date().toISOString().slice(0, 10)}.`,
      `Command: \`node --import tsx bench/cycle.bench.ts --requests ${requests} --sponsors ${sponsorCount} --runs ${runs} --cap ${args.cap}\` (run by \`make bench\`).`,
      '',
      `Setup: anvil with the published AirnodeRrpV0 (instant mining: a block as soon as transactions are ready, unchanged), ${requests} \`makeFullRequest\`s from ${sponsorCount} sponsors mined in a burst, ` +
        'the loopback API stand-in, `fulfillmentGasLimit` 500 000, `constantGasPrice` 10 gwei. Each round starts from the same chain snapshot. ' +
        'A node runs one cycle per process, each from its built package as a user runs it (ours the `oracle-node coordinator` binary, ' +
        '`dist/cli/index.js`, in-process shards; the reference `@api3/airnode-node` 0.15.0 `startCoordinator()` of its local handlers from its ' +
        '`dist/`, in plain Node; neither under tsx) and runs further cycles until every request is answered on chain (fulfilled or failed events ' +
        `for all ${requests}, nothing pending), up to ${args.cap} s. **Time = first cycle's spawn to all answered on chain**, measured by the parent ` +
        '(process start and module loading included, the mining of the last transactions included). Rounds are interleaved, the order alternating. ' +
        'Every RPC call of both goes through a recording proxy in the benchmark process (it decodes the transactions after the round, not in their path).',
      '',
      ...table(
        [
          '',
          'median to all answered',
          'rounds',
          'RPC calls (first round)',
          'blocks mined (first round)',
          'peak RSS of a cycle',
          'nonces on chain',
        ],
        [false, true, false, true, true, true, false],
        [
          [
            'ours',
            `${(medianMs(ours) / 1000).toFixed(1)} s`,
            describe(ours),
            String(ours[0]?.rpcCalls ?? ''),
            String(ours[0]?.blocks ?? ''),
            `${Math.max(...ours.map((r) => r.maxRssMb)).toFixed(0)} MB`,
            nonceLine(ours),
          ],
          ...(reference.length
            ? [
                [
                  'reference 0.15.0',
                  `${(medianMs(reference) / 1000).toFixed(1)} s`,
                  describe(reference),
                  String(reference[0]?.rpcCalls ?? ''),
                  String(reference[0]?.blocks ?? ''),
                  `${Math.max(...reference.map((r) => r.maxRssMb)).toFixed(0)} MB`,
                  nonceLine(reference),
                ],
              ]
            : []),
        ],
      ),
      '',
      ratio
        ? `Ratio of the medians: ours is **${ratio.toFixed(1)}x faster** to all answered on chain (per round ${pairRatios.map((r) => `${r.toFixed(1)}x`).join(', ')}).`
        : 'No reference in this run.',
      '',
      `RPC calls by method, first round — ours: ${methods(ours[0])}.${reference[0] ? ` Reference: ${methods(reference[0])}.` : ''}`,
      '',
      phases
        ? `Our first cycle by phase (cycle summary timings): discovery ${phases['discoveryMs']} ms, shards ${phases['shardsMs']} ms; ` +
          `in the slowest shard the API calls ${phases['slowestShardApiMs']} ms, planning (one static call per request, each as soon as its API answer is in, ` +
          `so this overlaps the API calls) ${phases['slowestShardPlanMs']} ms, sending (one batch) ${phases['slowestShardSendMs']} ms.`
        : '',
    ]);
  } finally {
    await proxy.close();
    await api.close();
    await anvil.stop();
  }
}

if (!existsSync(ourCli)) throw new Error(`${ourCli} is missing: run make build first`);
await main();
