// `validate` benchmark: the `oracle-node validate` command against the reference validator's command
// (@api3/airnode-validator 0.15.0, `airnode-validator -c -s`) on the same generated config: 100 OIS x 50
// endpoints, an rrp AND an http trigger for every endpoint (10,000 triggers), 100 apiCredentials, 20 chains.
// Each run is one process of the installed binary (its #! line included), as a user runs it: wall time from spawn
// to exit (module loading included), its CPU time (user + system) and its peak RSS (getrusage, reported by a
// preloaded exit hook). The CPU time depends far less on the shared machine's load than the wall time. Rounds are interleaved (the order alternates
// each round) so that the shared machine's load falls on both sides alike; medians and their ratio are reported
// and written to the "Config validation" section of docs/benchmarks.md.
//   node --import tsx bench/config-validate.bench.ts [--rounds 7] [--ois 100] [--endpoints 50] [--chains 20]
// Needs `make build` (dist/cli/index.js): `make bench` builds first.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { deriveEndpointId } from '../src/protocol/ids.js';
import { loadAverage, machine, median, table, writeSection } from './report.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '7' },
    ois: { type: 'string', default: '100' },
    endpoints: { type: 'string', default: '50' },
    chains: { type: 'string', default: '20' },
    'no-write': { type: 'boolean', default: false },
  },
});
const ROUNDS = Number(args.rounds);
const OIS_COUNT = Number(args.ois);
const ENDPOINTS = Number(args.endpoints);
const CHAINS = Number(args.chains);

const root = resolve(import.meta.dirname, '..');
const require = createRequire(import.meta.url);
const ourCli = join(root, 'dist/cli/index.js');
const referenceCli = join(
  dirname(require.resolve('@api3/airnode-validator/package.json')),
  (require('@api3/airnode-validator/package.json') as { bin: Record<string, string> }).bin['airnode-validator']!,
);

const fixtures = new URL('../test/fixtures/airnode/', import.meta.url);
const secretsText = readFileSync(new URL('node/secrets.example.env', fixtures), 'utf8');
const base = JSON.parse(readFileSync(new URL('node/config.example.json', fixtures), 'utf8'));

/** A large valid config built from the reference example: every endpoint has an rrp and an http trigger. */
function generateConfig(oisCount: number, endpointsPerOis: number, chainCount: number) {
  const config = structuredClone(base);
  const chain = base.chains[0];
  config.chains = Array.from({ length: chainCount }, (_, i) => ({
    ...structuredClone(chain),
    id: String(31337 + i),
    providers: { a: { url: '$' + '{PROVIDER_URL}' }, b: { url: `http://127.0.0.1:${8545 + i}` } },
  }));
  const ois = base.ois[0];
  config.ois = [];
  config.triggers = { rrp: [], http: [], httpSignedData: [] };
  config.apiCredentials = [];
  for (let o = 0; o < oisCount; o++) {
    const title = `Generated API ${o}`;
    const paths: Record<string, unknown> = {};
    const endpoints = [];
    for (let e = 0; e < endpointsPerOis; e++) {
      const path = `/convert/${e}/{coin}`;
      paths[path] = {
        get: {
          parameters: [
            ...structuredClone(ois.apiSpecifications.paths['/convert'].get.parameters),
            { in: 'path', name: 'coin' },
          ],
        },
      };
      const endpoint = structuredClone(ois.endpoints[0]);
      endpoint.name = `endpoint${e}`;
      endpoint.operation.path = path;
      endpoint.parameters.push({ name: 'coin', operationParameter: { in: 'path', name: 'coin' } });
      endpoints.push(endpoint);
      const trigger = {
        endpointId: deriveEndpointId(title, endpoint.name),
        oisTitle: title,
        endpointName: endpoint.name,
      };
      config.triggers.rrp.push({ ...trigger, cacheResponses: false });
      config.triggers.http.push(trigger);
    }
    config.ois.push({
      ...structuredClone(ois),
      title,
      apiSpecifications: { ...structuredClone(ois.apiSpecifications), paths },
      endpoints,
    });
    config.apiCredentials.push({ ...base.apiCredentials[0], oisTitle: title });
  }
  return config;
}

// Loaded with --require into each measured process: prints its peak RSS (KiB) and CPU time (µs) on stderr as it
// exits.
const PEAK_RSS_HOOK = `process.on('exit', () => { const u = process.resourceUsage(); process.stderr.write('\\nPEAK_RSS_KIB ' + u.maxRSS + ' CPU_US ' + (u.userCPUTime + u.systemCPUTime) + '\\n'); });\n`;

type Run = { ms: number; cpuMs: number; peakRssMiB: number };

function runOnce(command: string[], configFile: string, secretsFile: string, hook: string): Run {
  const start = performance.now();
  // Both binaries run through their own `#!/usr/bin/env` lines, as installed; the hook rides in NODE_OPTIONS.
  const [binary, ...rest] = command;
  const child = spawnSync(binary!, [...rest, '-c', configFile, '-s', secretsFile], {
    env: { ...process.env, NODE_OPTIONS: `--require ${hook}` },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const ms = performance.now() - start;
  const peak = /PEAK_RSS_KIB (\d+) CPU_US (\d+)/.exec(child.stderr);
  if (child.status !== 0 || !peak) {
    throw new Error(
      `${command.join(' ')} exited ${child.status}: ${child.stdout.slice(0, 2000)} ${child.stderr.slice(0, 2000)}`,
    );
  }
  return { ms, cpuMs: Number(peak[2]) / 1000, peakRssMiB: Number(peak[1]) / 1024 };
}

function main(): void {
  if (!existsSync(ourCli)) throw new Error(`${ourCli} is missing: run make build first`);
  const config = generateConfig(OIS_COUNT, ENDPOINTS, CHAINS);
  const text = JSON.stringify(config);
  const triggers = config.triggers.rrp.length + config.triggers.http.length;
  const dir = mkdtempSync(join(tmpdir(), 'config-bench-'));
  const configFile = join(dir, 'config.json');
  const secretsFile = join(dir, 'secrets.env');
  const hook = join(dir, 'peak-rss.cjs');
  writeFileSync(configFile, text);
  writeFileSync(secretsFile, secretsText);
  writeFileSync(hook, PEAK_RSS_HOOK);
  const sizeMiB = text.length / 2 ** 20;
  console.log(
    `config: ${OIS_COUNT} OIS x ${ENDPOINTS} endpoints, ${triggers} triggers, ${CHAINS} chains, ${sizeMiB.toFixed(2)} MiB`,
  );
  console.log(`machine: ${machine()}; load average ${loadAverage()} at the start; ${ROUNDS} interleaved rounds`);
  const loadBefore = loadAverage();
  const ours: Run[] = [];
  const reference: Run[] = [];
  try {
    const commands = { ours: [ourCli, 'validate'], reference: [referenceCli] };
    runOnce(commands.ours, configFile, secretsFile, hook); // warms the file cache for both
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (['ours', 'reference'] as const) : (['reference', 'ours'] as const);
      for (const side of order) {
        const run = runOnce(commands[side], configFile, secretsFile, hook);
        (side === 'ours' ? ours : reference).push(run);
        console.log(
          `round ${round + 1} ${side}: ${run.ms.toFixed(0)} ms (CPU ${run.cpuMs.toFixed(0)} ms), peak RSS ${run.peakRssMiB.toFixed(0)} MiB`,
        );
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const loadAfter = loadAverage();
  const oursMs = median(ours.map((r) => r.ms));
  const referenceMs = median(reference.map((r) => r.ms));
  const oursCpu = median(ours.map((r) => r.cpuMs));
  const referenceCpu = median(reference.map((r) => r.cpuMs));
  const ratios = ours.map((r, i) => reference[i]!.ms / r.ms);
  const oursRss = Math.max(...ours.map((r) => r.peakRssMiB));
  const referenceRss = Math.max(...reference.map((r) => r.peakRssMiB));
  console.log(`median: ours ${oursMs.toFixed(0)} ms, reference ${referenceMs.toFixed(0)} ms`);
  console.log(
    `reference / ours: ${(referenceMs / oursMs).toFixed(2)}x (per round ${ratios.map((r) => r.toFixed(1)).join(', ')})`,
  );
  console.log(
    `CPU (user + system) medians: ours ${oursCpu.toFixed(0)} ms, reference ${referenceCpu.toFixed(0)} ms: ${(referenceCpu / oursCpu).toFixed(2)}x`,
  );
  console.log(`peak RSS (max over runs): ours ${oursRss.toFixed(0)} MiB, reference ${referenceRss.toFixed(0)} MiB`);
  if (args['no-write']) return;
  const runs = (list: Run[]) => list.map((r) => r.ms.toFixed(0)).join(', ');
  writeSection('Config validation', [
    `Machine: ${machine()}, shared with other engineers' builds and tests (1-minute load average ${loadBefore.split(' / ')[0]} before and ${loadAfter.split(' / ')[0]} after the run; 1 / 5 / 15 min after: ${loadAfter}). ${new Date().toISOString().slice(0, 10)}.`,
    `Command: \`node --import tsx bench/config-validate.bench.ts --rounds ${ROUNDS}\` (run by \`make bench\`, after \`make build\`).`,
    '',
    `Input: a generated valid config, ${OIS_COUNT} OIS x ${ENDPOINTS} endpoints with an rrp and an http trigger for every endpoint ` +
      `(${triggers.toLocaleString('en-US')} triggers), ${OIS_COUNT} apiCredentials, ${CHAINS} chains: ${sizeMiB.toFixed(2)} MiB of JSON, built from the ` +
      'reference `node/config.example.json`. Each run is one process of the installed binary, as a user runs it: ours `oracle-node validate -c config.json -s secrets.env` ' +
      "(`dist/cli/index.js`, whose `#!` line caps V8's young generation at 8 MiB per semi-space), " +
      'the reference `@api3/airnode-validator` 0.15.0 `airnode-validator -c config.json -s secrets.env` (zod 3, ethers 5). ' +
      "Wall time is from spawn to exit (Node start and module loading included); CPU is the process's user + system time and peak RSS its maxrss (getrusage, at exit). " +
      `${ROUNDS} rounds, ours and the reference alternating which goes first.`,
    '',
    ...table(
      ['', 'median', 'runs (ms)', 'CPU median', 'peak RSS (max of runs)'],
      [false, true, false, true, true],
      [
        ['ours', `${oursMs.toFixed(0)} ms`, runs(ours), `${oursCpu.toFixed(0)} ms`, `${oursRss.toFixed(0)} MiB`],
        [
          'reference',
          `${referenceMs.toFixed(0)} ms`,
          runs(reference),
          `${referenceCpu.toFixed(0)} ms`,
          `${referenceRss.toFixed(0)} MiB`,
        ],
      ],
    ),
    '',
    `Ratio of the medians: ours is **${(referenceMs / oursMs).toFixed(1)}x faster**; per round ${Math.min(...ratios).toFixed(1)}x-${Math.max(...ratios).toFixed(1)}x. ` +
      `CPU time (user + system), which the machine's load moves far less: ${(referenceCpu / oursCpu).toFixed(1)}x.`,
  ]);
}

main();
