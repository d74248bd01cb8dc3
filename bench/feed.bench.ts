// Airnode feed: `oracle-node feed` (dist/cli/index.js) beside the reference @api3/airnode-feed 3.3.0 (its dist
// entry), each on the same config.json: N templates (one signedApiUpdate each, as the reference requires for
// templates whose `_path` differs), fetchInterval 5 s, one real @api3/signed-api 3.3.0 on loopback (a fresh one per
// run), a loopback API whose answer is the time it answered (ms). Each run lasts --seconds; then SIGTERM.
//
// Measured: the feed process's CPU (user + system) and peak RSS at exit (bench/support/process-usage.ts's hook), the
// template updates the API answered (one API call per template update), the values the Signed API accepted (a counting
// proxy in front of it adds up the `count` of its answers), the distinct values seen served by polling
// GET /delayed/{airnode} every --poll-ms, and the time from the API's answer to the value being seen served.
// Also the steady cost: the process's CPU (/proc/PID/stat) and the API calls from --steady-after seconds to the end,
// start-up and the first round of fetches apart.
//   node --import tsx bench/feed.bench.ts [--seconds 30] [--templates 100,1000] [--poll-ms 250] [--steady-after 10]
//     [--only reference|oracle-node]
// Needs `make build` (dist/cli/index.js).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { feedSigner } from '../src/feed/signing.js';
import { encodeParameters } from '../src/ois/abi.js';
import { deriveTemplateIdV1 } from '../src/protocol/ids.js';
import { TEST_MNEMONIC } from '../test/support/chain.js';
import { buildFeedConfig, FEED_ENDPOINT_ID, feedSecrets, served, startSignedApi } from '../test/support/feed.js';
import { loadAverage, machine, median, table, writeSection } from './report.js';
import { USAGE_HOOK, usageReports } from './support/process-usage.js';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '30' },
    templates: { type: 'string', default: '100,1000' },
    'poll-ms': { type: 'string', default: '250' },
    'steady-after': { type: 'string', default: '10' },
    only: { type: 'string' },
    // Extra Node options for the oracle-node process only, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`.
    'node-options': { type: 'string', default: '' },
  },
});
const SECONDS = Number(args.seconds);
const SIZES = args.templates.split(',').map(Number);
const POLL_MS = Number(args['poll-ms']);
const STEADY_AFTER_S = Number(args['steady-after']);
const FETCH_INTERVAL = 5;
const AUTH_TOKEN = 'bench-token-0123456789';
const root = join(import.meta.dirname, '..');
const airnode = feedSigner(TEST_MNEMONIC).address;

type Run = {
  implementation: string;
  templates: number;
  cpuMs: number;
  peakRssMiB: number;
  apiCalls: number;
  /** Values the Signed API accepted (the sum of `count` in its answers), the feed's last push at SIGTERM included. */
  accepted: number;
  /** POSTs the feed made to the Signed API. */
  posts: number;
  served: number;
  latenciesMs: number[];
  /** CPU ms and API calls from STEADY_AFTER_S to the end. */
  steady: { cpuMs: number; apiCalls: number } | undefined;
};

/** A process's CPU so far (user + system, ms) from /proc; undefined where there is none. */
function processCpuMs(pid: number | undefined): number | undefined {
  try {
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th, in clock ticks (100 Hz).
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return undefined;
  }
}

/** The API: every asset's price is the time of the answer in ms, so a served value tells when it was fetched. */
async function startClockApi() {
  let calls = 0;
  const server = createServer((_request, response) => {
    calls++;
    const now = Date.now();
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ now }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls: () => calls,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Between the feed and the Signed API: forwards each POST and adds up the values the Signed API accepted. */
async function startCountingProxy(signedApiUrl: string) {
  let accepted = 0;
  let posts = 0;
  const server = createServer((request, response) => {
    posts++;
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', async () => {
      try {
        const answer = await fetch(`${signedApiUrl}${request.url}`, {
          method: request.method ?? 'POST',
          headers: {
            'content-type': 'application/json',
            ...(request.headers.authorization ? { authorization: request.headers.authorization } : {}),
          },
          body: Buffer.concat(chunks),
        });
        const text = await answer.text();
        // The Signed API files each value twice (its beacon and its OEV beacon) and counts both.
        if (answer.ok) accepted += (JSON.parse(text) as { count: number }).count / 2;
        response.writeHead(answer.status, { 'content-type': 'application/json' }).end(text);
      } catch {
        response.writeHead(502).end('{}');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    accepted: () => accepted,
    posts: () => posts,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function runOnce(implementation: 'oracle-node' | 'reference', templates: number): Promise<Run> {
  const api = await startClockApi();
  const signedApi = await startSignedApi(airnode, AUTH_TOKEN);
  const dir = mkdtempSync(join(tmpdir(), 'feed-bench-'));
  const proxy = await startCountingProxy(signedApi.url);
  const config = benchConfig(api.url, proxy.url, templates);
  mkdirSync(join(dir, 'config'));
  writeFileSync(join(dir, 'config', 'airnode-feed.json'), JSON.stringify(config));
  writeFileSync(join(dir, 'config', 'secrets.env'), feedSecrets(TEST_MNEMONIC, 'bench-api-key-0123'));
  const hook = join(dir, 'usage.cjs');
  // The reference has no SIGTERM handler (a signal would end it without its exit event): exit on it, for the report.
  writeFileSync(
    hook,
    implementation === 'reference' ? `process.on('SIGTERM', () => process.exit(0));\n${USAGE_HOOK}` : USAGE_HOOK,
  );
  const env = {
    PATH: process.env.PATH ?? '',
    NODE_OPTIONS: `--require ${hook}${implementation === 'oracle-node' && args['node-options'] ? ` ${args['node-options']}` : ''}`,
    LOG_LEVEL: 'warn',
    LOG_HEARTBEAT: 'false',
  };
  const child: ChildProcess =
    implementation === 'reference'
      ? spawn(process.execPath, [join(root, 'node_modules/@api3/airnode-feed/dist/src/index.js')], { cwd: dir, env })
      : // The installed binary as users run it, through its #! line.
        spawn(
          join(root, 'dist/cli/index.js'),
          [
            'feed',
            '-c',
            join(dir, 'config', 'airnode-feed.json'),
            '-s',
            join(dir, 'config', 'secrets.env'),
            '--metrics-port',
            '0',
          ],
          { cwd: dir, env },
        );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.stdout?.resume();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const seen = new Map<string, string>();
  const latenciesMs: number[] = [];
  const startedAt = Date.now();
  const deadline = startedAt + SECONDS * 1000;
  let steadyFrom: { cpuMs: number; apiCalls: number } | undefined;
  while (Date.now() < deadline) {
    if (!steadyFrom && Date.now() - startedAt >= STEADY_AFTER_S * 1000) {
      const cpuMs = processCpuMs(child.pid);
      if (cpuMs !== undefined) steadyFrom = { cpuMs, apiCalls: api.calls() };
    }
    const polledAt = Date.now();
    for (const entry of Object.values(await served(signedApi.url, '/delayed', airnode))) {
      if (seen.get(entry.templateId) === entry.encodedValue) continue;
      seen.set(entry.templateId, entry.encodedValue);
      latenciesMs.push(polledAt - Number(BigInt(entry.encodedValue)));
    }
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, POLL_MS - (Date.now() - polledAt))));
  }
  const cpuAtEnd = processCpuMs(child.pid);
  const steady =
    steadyFrom && cpuAtEnd !== undefined
      ? { cpuMs: cpuAtEnd - steadyFrom.cpuMs, apiCalls: api.calls() - steadyFrom.apiCalls }
      : undefined;
  child.kill('SIGTERM');
  await exited;
  const apiCalls = api.calls();
  const accepted = proxy.accepted();
  const posts = proxy.posts();
  await proxy.close();
  await signedApi.stop();
  await api.close();
  rmSync(dir, { recursive: true, force: true });
  const usage = usageReports(stderr)[0];
  if (!usage) throw new Error(`${implementation} reported no usage: ${stderr.slice(-2000)}`);
  return {
    implementation,
    templates,
    ...usage,
    apiCalls,
    accepted,
    posts,
    served: latenciesMs.length,
    latenciesMs,
    steady,
  };
}

/**
 * The feed config: N templates of one endpoint, each with its own `asset` query parameter (so its own template id
 * and API call), all reading `now` (ms) from the answer, times 1.
 */
function benchConfig(apiUrl: string, signedApiUrl: string, count: number): Record<string, unknown> {
  const base = buildFeedConfig({
    apiUrl,
    assets: [],
    fetchInterval: FETCH_INTERVAL,
    signedApis: [{ name: 'bench', url: signedApiUrl, authToken: AUTH_TOKEN }],
  });
  const ois = structuredClone(
    (base.ois as { endpoints: { parameters: unknown[] }[]; apiSpecifications: { paths: unknown } }[])[0]!,
  );
  ois.apiSpecifications.paths = { '/prices': { get: { parameters: [{ in: 'query', name: 'asset' }] } } };
  ois.endpoints[0]!.parameters = [{ name: 'asset', operationParameter: { name: 'asset', in: 'query' } }];
  const templates: Record<string, unknown> = {};
  const signedApiUpdates = [];
  for (let i = 0; i < count; i++) {
    const parameters = [
      { type: 'string32', name: 'asset', value: `a${i}` },
      { type: 'string32', name: '_type', value: 'int256' },
      { type: 'string32', name: '_path', value: 'now' },
      { type: 'string32', name: '_times', value: '1' },
    ];
    const encoded = encodeParameters(parameters.map((p) => ({ ...p, type: 'string32' as const })));
    const templateId = deriveTemplateIdV1(FEED_ENDPOINT_ID, encoded);
    templates[templateId] = { endpointId: FEED_ENDPOINT_ID, parameters };
    signedApiUpdates.push({ templateIds: [templateId], fetchInterval: FETCH_INTERVAL });
  }
  return { ...base, ois: [ois], templates, triggers: { signedApiUpdates } };
}

const runs: Run[] = [];
for (const templates of SIZES) {
  for (const implementation of ['reference', 'oracle-node'] as const) {
    if (args.only && args.only !== implementation) continue;
    const run = await runOnce(implementation, templates);
    runs.push(run);
    console.log(
      `${implementation} ${templates} templates: ${run.cpuMs.toFixed(0)} ms CPU, ${run.peakRssMiB.toFixed(0)} MiB, ` +
        `${run.apiCalls} API calls, ${run.posts} POSTs, ${run.accepted} accepted, ${run.served} served, median ${median(run.latenciesMs).toFixed(0)} ms, ` +
        `steady ${steadyPerUpdate(run)} ms/update`,
    );
  }
}

/** CPU ms per update from STEADY_AFTER_S to the end. */
function steadyPerUpdate(run: Run): string {
  return run.steady ? (run.steady.cpuMs / Math.max(1, run.steady.apiCalls)).toFixed(3) : '-';
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? Number.NaN;
};
const rows = runs.map((run) => [
  run.implementation,
  String(run.templates),
  run.cpuMs.toFixed(0),
  (run.cpuMs / Math.max(1, run.apiCalls)).toFixed(3),
  steadyPerUpdate(run),
  run.peakRssMiB.toFixed(0),
  String(run.apiCalls),
  `${run.accepted} (${((100 * run.accepted) / Math.max(1, run.apiCalls)).toFixed(0)} %)`,
  String(run.posts),
  String(run.served),
  median(run.latenciesMs).toFixed(0),
  percentile(run.latenciesMs, 95).toFixed(0),
]);
writeSection('Airnode feed (fetch, sign, push to a Signed API)', [
  `Command: \`node --import tsx bench/feed.bench.ts --seconds ${SECONDS} --templates ${SIZES.join(',')} --poll-ms ${POLL_MS} --steady-after ${STEADY_AFTER_S}\` (after \`make build\`). ` +
    `Machine: ${machine()}; load average at the end ${loadAverage()} (shared with other jobs: figures are indicative).`,
  '',
  `Each run: one feed process on the same config.json (N templates, one signedApiUpdate each, fetchInterval ${FETCH_INTERVAL} s), ` +
    `a fresh real @api3/signed-api 3.3.0 on loopback, ${SECONDS} s, then SIGTERM. CPU (user + system) and peak RSS are the feed ` +
    'process\'s own at exit, start-up included; "per update" divides the CPU by the template updates fetched (one API call ' +
    `each); "after ${STEADY_AFTER_S} s" divides the CPU used from then to the end (/proc) by the updates fetched meanwhile, ` +
    'start-up and the first round of fetches apart. "Accepted" adds up the `count` of the Signed API\'s answers (a counting proxy in front of it; the last push at ' +
    `SIGTERM included). "Seen served" counts the distinct values a poll of GET /delayed every ${POLL_MS} ms saw (a value ` +
    "replaced between two polls, or fetched in the last moments, is not seen); the latency is from the API's answer " +
    `(its value is the time) to the poll that first saw it served (${POLL_MS} ms resolution).`,
  '',
  ...table(
    [
      'feed',
      'templates',
      'CPU ms',
      'CPU ms / update',
      `after ${STEADY_AFTER_S} s, CPU ms / update`,
      'peak RSS MiB',
      'updates fetched',
      'accepted by the Signed API',
      'POSTs',
      'values seen served',
      'fetch to served, median ms',
      'p95 ms',
    ],
    [false, true, true, true, true, true, true, true, true, true, true, true],
    rows,
  ),
  '',
  ...ratios(),
  '',
  'At 1,000 templates every 5 s (200 values a second, two signatures each for the Signed API to verify in JavaScript) ' +
    "the Signed API shares the 2 cores with both processes and the machine's other jobs: when it falls behind, the " +
    'reference waits for it before its next fetch (fewer updates fetched), while `oracle-node feed` keeps fetching on ' +
    'time and each pusher sends the newest value of each template (a value replaced before it was sent is not sent).',
]);

/** oracle-node against the reference at each size: CPU per update and peak RSS, as ratios. */
function ratios(): string[] {
  return SIZES.flatMap((templates) => {
    const ours = runs.find((run) => run.templates === templates && run.implementation === 'oracle-node');
    const theirs = runs.find((run) => run.templates === templates && run.implementation === 'reference');
    if (!ours || !theirs) return [];
    const perUpdate = (run: Run) => run.cpuMs / Math.max(1, run.apiCalls);
    const steady =
      ours.steady && theirs.steady
        ? ` (after ${STEADY_AFTER_S} s: ${(Number(steadyPerUpdate(ours)) / Number(steadyPerUpdate(theirs))).toFixed(2)}x)`
        : '';
    return [
      `- ${templates} templates: CPU per update ${(perUpdate(ours) / perUpdate(theirs)).toFixed(2)}x the reference's${steady}, ` +
        `peak RSS ${(ours.peakRssMiB / theirs.peakRssMiB).toFixed(2)}x, updates accepted ` +
        `${((100 * ours.accepted) / Math.max(1, ours.apiCalls)).toFixed(0)} % against ` +
        `${((100 * theirs.accepted) / Math.max(1, theirs.apiCalls)).toFixed(0)} %.`,
    ];
  });
}
process.exit(0);
