// `validate` benchmark: the `oracle-node validate` command against the reference validator's command
// (@api3/airnode-validator 0.15.0, `airnode-validator -c -s`) on the same generated configs, one per shape of the
// same size class (see SHAPES): the repository's own (100 OIS x 50 endpoints, an rrp AND an http trigger for every
// endpoint, 20 chains), few OIS with many endpoints, many OIS with few endpoints, many chains with many authorizers.
// Each run is one process of the installed binary (its #! line included), as a user runs it: wall time from spawn
// to exit (module loading included), its CPU time (user + system) and its peak RSS (getrusage, reported by a
// preloaded exit hook). The CPU time depends far less on the shared machine's load than the wall time. Rounds are interleaved (the order alternates
// each round) so that the shared machine's load falls on both sides alike; medians and their ratio are reported
// and written to the "Config validation" section of docs/benchmarks.md.
//   node --import tsx bench/config-validate.bench.ts [--rounds 5] [--shape <name>]
// Needs `make build` (dist/cli/index.js): `make bench` builds first.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadAverage, machine, median, table, writeSection } from './report.js';
import { generateConfig, referenceValidatorCli, SHAPES, type Shape, secretsText } from './support/config-shapes.js';
import { USAGE_HOOK, usageReports } from './support/process-usage.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    shape: { type: 'string' },
    'no-write': { type: 'boolean', default: false },
  },
});
const ROUNDS = Number(args.rounds);

const root = resolve(import.meta.dirname, '..');
const ourCli = join(root, 'dist/cli/index.js');

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
  const [usage] = usageReports(child.stderr);
  if (child.status !== 0 || !usage) {
    throw new Error(
      `${command.join(' ')} exited ${child.status}: ${child.stdout.slice(0, 2000)} ${child.stderr.slice(0, 2000)}`,
    );
  }
  return { ms, ...usage };
}

type ShapeResult = {
  shape: Shape;
  sizeMiB: number;
  triggers: number;
  ours: Run[];
  reference: Run[];
};

/** One shape: the config written once, then ROUNDS interleaved runs of each side (the order alternates). */
function measureShape(shape: Shape, dir: string, secretsFile: string, hook: string): ShapeResult {
  const config = generateConfig(shape);
  const text = JSON.stringify(config);
  const triggers = config.triggers.rrp.length + config.triggers.http.length + config.triggers.httpSignedData.length;
  const configFile = join(dir, `config-${shape.name}.json`);
  writeFileSync(configFile, text);
  const sizeMiB = text.length / 2 ** 20;
  console.log(`shape ${shape.name}: ${shape.description}; ${triggers} triggers, ${sizeMiB.toFixed(2)} MiB`);
  const ours: Run[] = [];
  const reference: Run[] = [];
  const commands = { ours: [ourCli, 'validate'], reference: [referenceValidatorCli] };
  runOnce(commands.ours, configFile, secretsFile, hook); // warms the file cache for both
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? (['ours', 'reference'] as const) : (['reference', 'ours'] as const);
    for (const side of order) {
      const run = runOnce(commands[side], configFile, secretsFile, hook);
      (side === 'ours' ? ours : reference).push(run);
      console.log(
        `  round ${round + 1} ${side}: ${run.ms.toFixed(0)} ms (CPU ${run.cpuMs.toFixed(0)} ms), peak RSS ${run.peakRssMiB.toFixed(0)} MiB`,
      );
    }
  }
  return { shape, sizeMiB, triggers, ours, reference };
}

function main(): void {
  if (!existsSync(ourCli)) throw new Error(`${ourCli} is missing: run make build first`);
  const shapes = args.shape ? SHAPES.filter((shape) => shape.name === args.shape) : SHAPES;
  if (shapes.length === 0) throw new Error(`unknown shape ${args.shape}: ${SHAPES.map((s) => s.name).join(', ')}`);
  const dir = mkdtempSync(join(tmpdir(), 'config-bench-'));
  const secretsFile = join(dir, 'secrets.env');
  const hook = join(dir, 'peak-rss.cjs');
  writeFileSync(secretsFile, secretsText);
  writeFileSync(hook, USAGE_HOOK);
  console.log(`machine: ${machine()}; load average ${loadAverage()} at the start; ${ROUNDS} interleaved rounds`);
  const loadBefore = loadAverage();
  const results: ShapeResult[] = [];
  try {
    for (const shape of shapes) results.push(measureShape(shape, dir, secretsFile, hook));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const loadAfter = loadAverage();
  const rows = results.map(({ shape, sizeMiB, triggers, ours, reference }) => {
    const oursMs = median(ours.map((r) => r.ms));
    const referenceMs = median(reference.map((r) => r.ms));
    const oursCpu = median(ours.map((r) => r.cpuMs));
    const referenceCpu = median(reference.map((r) => r.cpuMs));
    const ratios = ours.map((r, i) => reference[i]!.ms / r.ms);
    console.log(
      `${shape.name}: ours ${oursMs.toFixed(0)} ms, reference ${referenceMs.toFixed(0)} ms: ${(referenceMs / oursMs).toFixed(2)}x (per round ${ratios.map((r) => r.toFixed(1)).join(', ')}); CPU ${(referenceCpu / oursCpu).toFixed(2)}x`,
    );
    return [
      `${shape.name}: ${shape.description}`,
      `${sizeMiB.toFixed(2)} MiB, ${triggers.toLocaleString('en-US')} triggers`,
      `${oursMs.toFixed(0)} ms`,
      `${referenceMs.toFixed(0)} ms`,
      `**${(referenceMs / oursMs).toFixed(1)}x**`,
      `${Math.min(...ratios).toFixed(1)}x-${Math.max(...ratios).toFixed(1)}x`,
      `${oursCpu.toFixed(0)} / ${referenceCpu.toFixed(0)} ms: ${(referenceCpu / oursCpu).toFixed(1)}x`,
      `${Math.max(...ours.map((r) => r.peakRssMiB)).toFixed(0)} / ${Math.max(...reference.map((r) => r.peakRssMiB)).toFixed(0)} MiB`,
    ];
  });
  if (args['no-write'] || args.shape) return;
  writeSection('Config validation', [
    `Machine: ${machine()}, shared with other engineers' builds and tests (load average ${loadBefore} before and ${loadAfter} after the run). ${new Date().toISOString().slice(0, 10)}.`,
    `Command: \`node --import tsx bench/config-validate.bench.ts --rounds ${ROUNDS}\` (run by \`make bench\`, after \`make build\`).`,
    '',
    'Input: generated valid configs of one size class in four shapes, built from the reference `node/config.example.json`. ' +
      'Each run is one process of the installed binary, as a user runs it: ours `oracle-node validate -c config.json -s secrets.env` ' +
      "(`dist/cli/index.js`, whose `#!` line caps V8's young generation at 8 MiB per semi-space), " +
      'the reference `@api3/airnode-validator` 0.15.0 `airnode-validator -c config.json -s secrets.env` (zod 3, ethers 5). ' +
      "Wall time is from spawn to exit (Node start and module loading included); CPU is the process's user + system time and peak RSS its maxrss (getrusage, at exit). " +
      `${ROUNDS} rounds per shape, ours and the reference alternating which goes first; medians, and the ratio of the medians (reference ÷ ours).`,
    '',
    ...table(
      [
        'shape',
        'size',
        'ours (median)',
        'reference (median)',
        'reference ÷ ours',
        'per round',
        'CPU ours / reference',
        'peak RSS ours / reference',
      ],
      [false, false, true, true, true, false, false, false],
      rows,
    ),
  ]);
}

main();
