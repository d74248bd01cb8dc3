// The floor of `validate` on one shape (many-chains by default, the one short of 10x the reference): a ladder of
// processes, each doing one more part of what `oracle-node validate` does, interleaved with the reference's
// command on the same config. It answers "how fast could a validator of this architecture be here": Node's start,
// reading and parsing the JSON, loading zod, building the config model (src/config, the one source of truth), the
// model's parse alone, the whole command, and the structural step left (a V8 startup snapshot of the built model,
// started directly and through the launcher an installed bin would need). Each rung is one process, measured as in
// config-validate.bench.ts (CPU of every process of the rung, user + system, from a preloaded exit hook; wall from
// spawn to exit; peak RSS). Writes the "Config validation: the floor" section of docs/benchmarks.md.
//   node --import tsx bench/validate-floor.bench.ts [--rounds 7] [--shape many-chains] [--no-write]
// Needs `make build` (dist/): `make bench` builds first.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { loadAverage, machine, median, table, writeSection } from './report.js';
import {
  exampleConfigUrl,
  generateConfig,
  referenceValidatorCli,
  SHAPES,
  secretsText,
} from './support/config-shapes.js';
import { USAGE_HOOK, usageReports } from './support/process-usage.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '7' },
    shape: { type: 'string', default: 'many-chains' },
    'no-write': { type: 'boolean', default: false },
  },
});
const ROUNDS = Number(args.rounds);
const shape = SHAPES.find((candidate) => candidate.name === args.shape);
if (!shape) throw new Error(`unknown shape ${args.shape}: ${SHAPES.map((s) => s.name).join(', ')}`);

const root = resolve(import.meta.dirname, '..');
const dist = (path: string) => pathToFileURL(join(root, 'dist', path)).href;
// The flag of dist/cli/index.js's #! line, given to every rung that runs our code.
const NODE = [process.execPath, '--max-semi-space-size=8'];

// The rungs' scripts, run as plain Node ES modules against the built dist/ (as `oracle-node` runs). Each loads zod
// as `validate` does, with its English locale only (dist/cli/validate-startup.js).
const ENGLISH_ONLY = `(await import(${JSON.stringify(dist('cli/validate-startup.js'))})).loadEnglishZodLocaleOnly();\n`;
const SCRIPTS = {
  'input.mjs': `const { readFileSync } = process.getBuiltinModule('node:fs');\nJSON.parse(readFileSync(process.argv[2], 'utf8'));\n`,
  'zod.mjs': `${ENGLISH_ONLY}await import(${JSON.stringify(import.meta.resolve('zod'))});\n`,
  'model.mjs': `${ENGLISH_ONLY}await import(${JSON.stringify(dist('config/schema.js'))});\n`,
  // The model's parse alone: the secrets replaced in the text by a plain regular expression (values JSON-escaped),
  // JSON.parse, and fastConfig().safeParse (the generated parsers and every rule of the schema, cross-section rules
  // included); none of validate's own passes (duplicate keys, the secret checks, issue mapping, redaction).
  'model-parse.mjs': `${ENGLISH_ONLY}const { fastConfig } = await import(${JSON.stringify(dist('config/schema.js'))});
const { readFileSync } = process.getBuiltinModule('node:fs');
const secrets = {};
for (const line of readFileSync(process.argv[3], 'utf8').split('\\n')) {
  const match = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
  if (match) secrets[match[1]] = match[2].startsWith('"') ? JSON.parse(match[2]) : match[2];
}
const text = readFileSync(process.argv[2], 'utf8').replace(/\\$\\{([A-Za-z_][A-Za-z0-9_]*)\\}/g, (_, name) => JSON.stringify(secrets[name]).slice(1, -1));
const result = fastConfig().safeParse(JSON.parse(text));
if (!result.success) throw new Error(JSON.stringify(result.error.issues.slice(0, 3)));
`,
};

// The structural step measured: `oracle-node validate` bundled into one CommonJS script (a snapshot cannot load
// ES modules) and a startup snapshot built from it, with the config model built and its parsers generated; the
// snapshot's main function is the command. Not in the product: an installed bin cannot start from a snapshot, so
// the launcher (a second Node process, as a bin would have to be) is measured too.
const SNAPSHOT_ENTRY = `import { startupSnapshot } from 'node:v8';
import { runValidate } from ${JSON.stringify(fileURLToPath(dist('cli/validate-command.js')))};
import { redactStandardStreams } from ${JSON.stringify(fileURLToPath(dist('cli/redacted-streams.js')))};
import { fastConfig } from ${JSON.stringify(fileURLToPath(dist('config/schema.js')))};
fastConfig();
startupSnapshot.setDeserializeMainFunction(async () => {
  redactStandardStreams();
  process.exitCode = await runValidate(process.argv.slice(2));
});
`;
const launcher = (blob: string) => `const { spawnSync } = process.getBuiltinModule('node:child_process');
const child = spawnSync(process.execPath, [...${JSON.stringify([...NODE.slice(1), '--snapshot-blob', blob])}, ...process.argv.slice(2)], { stdio: 'inherit' });
process.exitCode = child.status ?? 1;
`;

async function buildSnapshot(dir: string): Promise<string> {
  const entry = join(dir, 'snapshot-entry.mjs');
  writeFileSync(entry, SNAPSHOT_ENTRY);
  const bundle = join(dir, 'validate-bundle.cjs');
  await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    outfile: bundle,
    logLevel: 'error',
    plugins: [
      {
        // As the resolve hook of validate-startup.ts does for the ES modules: zod's locales, English only.
        name: 'english-zod-locale',
        setup(builder) {
          builder.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (resolveArgs) =>
            resolveArgs.importer.includes('/node_modules/zod/')
              ? { path: fileURLToPath(dist('cli/validate-zod-locales.js')) }
              : undefined,
          );
        },
      },
    ],
  });
  const blob = join(dir, 'validate.blob');
  const made = spawnSync(process.execPath, ['--snapshot-blob', blob, '--build-snapshot', bundle], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`building the snapshot failed: ${made.stderr.slice(0, 2000)}`);
  return blob;
}

type Run = { ms: number; cpuMs: number; peakRssMiB: number };
type Rung = { name: string; what: string; command: string[]; validates?: boolean };

function runOnce(rung: Rung, hook: string): Run {
  const [binary, ...rest] = rung.command;
  const start = performance.now();
  const child = spawnSync(binary!, rest, {
    env: { ...process.env, NODE_OPTIONS: `--require ${hook}` },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const ms = performance.now() - start;
  // One line per process that ran (a launcher and its child both report).
  const reports = usageReports(child.stderr);
  const answered = !rung.validates || child.stdout.includes(' is valid');
  if (child.status !== 0 || reports.length === 0 || !answered) {
    throw new Error(
      `${rung.name} exited ${child.status}: ${child.stdout.slice(0, 2000)} ${child.stderr.slice(0, 2000)}`,
    );
  }
  return {
    ms,
    cpuMs: reports.reduce((sum, report) => sum + report.cpuMs, 0),
    peakRssMiB: Math.max(...reports.map((report) => report.peakRssMiB)),
  };
}

async function main(): Promise<void> {
  if (!existsSync(join(root, 'dist/cli/index.js'))) throw new Error('dist/ is missing: run make build first');
  const dir = mkdtempSync(join(tmpdir(), 'validate-floor-'));
  try {
    const hook = join(dir, 'hook.cjs');
    writeFileSync(hook, USAGE_HOOK);
    for (const [name, text] of Object.entries(SCRIPTS)) writeFileSync(join(dir, name), text);
    const configFile = join(dir, 'config.json');
    const secretsFile = join(dir, 'secrets.env');
    const text = JSON.stringify(generateConfig(shape!));
    writeFileSync(configFile, text);
    writeFileSync(secretsFile, secretsText);
    const blob = await buildSnapshot(dir);
    writeFileSync(join(dir, 'launcher.mjs'), launcher(blob));
    const example = fileURLToPath(exampleConfigUrl);
    const files = ['-c', configFile, '-s', secretsFile];
    const validate = [...NODE, join(root, 'dist/cli/index.js'), 'validate'];
    const rungs: Rung[] = [
      { name: 'node', what: 'Node starts and exits (`node -e 0`)', command: [process.execPath, '-e', '0'] },
      {
        name: 'input',
        what: 'reads and `JSON.parse`s the config',
        command: [...NODE, join(dir, 'input.mjs'), configFile],
      },
      { name: 'zod', what: 'loads zod (English locale only, as `validate`)', command: [...NODE, join(dir, 'zod.mjs')] },
      {
        name: 'model',
        what: 'loads zod and builds the config model (`dist/config/schema.js`)',
        command: [...NODE, join(dir, 'model.mjs')],
      },
      {
        name: 'model-parse',
        what: "the model's parse alone: secrets replaced in the text, `JSON.parse`, `fastConfig().safeParse` (generated parsers, every rule)",
        command: [...NODE, join(dir, 'model-parse.mjs'), configFile, secretsFile],
      },
      {
        name: 'validate-example',
        what: "`oracle-node validate` of the reference's node/config.example.json (the fixed cost)",
        command: [...validate, '-c', example, '-s', secretsFile],
        validates: true,
      },
      {
        name: 'validate',
        what: '`oracle-node validate`, as installed',
        command: [...validate, ...files],
        validates: true,
      },
      {
        name: 'snapshot',
        what: 'the same command from a startup snapshot (model built, parsers generated), started directly',
        command: [...NODE, '--snapshot-blob', blob, 'validate', ...files],
        validates: true,
      },
      {
        name: 'snapshot-launcher',
        what: 'the snapshot through a launcher process, as an installed bin would need',
        command: [process.execPath, join(dir, 'launcher.mjs'), 'validate', ...files],
        validates: true,
      },
      {
        name: 'reference-example',
        what: 'reference `airnode-validator` of node/config.example.json (its fixed cost)',
        command: [referenceValidatorCli, '-c', example, '-s', secretsFile],
      },
      { name: 'reference', what: 'reference `airnode-validator`', command: [referenceValidatorCli, ...files] },
    ];
    const loadBefore = loadAverage();
    console.log(
      `machine: ${machine()}; load ${loadBefore}; shape ${shape!.name} (${(text.length / 2 ** 20).toFixed(2)} MiB)`,
    );
    const runs = new Map<string, Run[]>(rungs.map((rung) => [rung.name, []]));
    for (const rung of rungs) runOnce(rung, hook); // warms the file cache and checks every rung answers
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? rungs : [...rungs].reverse();
      for (const rung of order) runs.get(rung.name)!.push(runOnce(rung, hook));
      console.log(`  round ${round + 1} done`);
    }
    const loadAfter = loadAverage();
    const cpu = (name: string) => median(runs.get(name)!.map((run) => run.cpuMs));
    const wall = (name: string) => median(runs.get(name)!.map((run) => run.ms));
    const rows = rungs.map((rung) => {
      const reference =
        rung.name === 'validate-example' ? 'reference-example' : rung.name.startsWith('reference') ? '' : 'reference';
      const ratio = (of: (name: string) => number) =>
        reference ? `${(of(reference) / of(rung.name)).toFixed(1)}x` : '';
      const row = [
        rung.name,
        rung.what,
        `${cpu(rung.name).toFixed(0)} ms`,
        `${wall(rung.name).toFixed(0)} ms`,
        `${Math.max(...runs.get(rung.name)!.map((run) => run.peakRssMiB)).toFixed(0)} MiB`,
        ratio(cpu),
        ratio(wall),
      ];
      console.log(row.join(' | '));
      return row;
    });
    // What each side spends beyond validating the small example config: the work that grows with the config.
    const ourWork = cpu('validate') - cpu('validate-example');
    const referenceWork = cpu('reference') - cpu('reference-example');
    const workLine =
      `Beyond the example config (CPU of the shape minus CPU of node/config.example.json): ours ${ourWork.toFixed(0)} ms, ` +
      `the reference's ${referenceWork.toFixed(0)} ms, **${(referenceWork / ourWork).toFixed(1)}x**; the example itself ` +
      `costs ours ${cpu('validate-example').toFixed(0)} ms and the reference ${cpu('reference-example').toFixed(0)} ms ` +
      `(${(cpu('reference-example') / cpu('validate-example')).toFixed(1)}x).`;
    console.log(workLine);
    if (args['no-write']) return;
    writeSection('Config validation: the floor', [
      `Machine: ${machine()}, load average ${loadBefore} before and ${loadAfter} after the run. ${new Date().toISOString().slice(0, 10)}.`,
      `Command: \`node --import tsx bench/validate-floor.bench.ts --rounds ${ROUNDS} --shape ${shape!.name}\` (run by \`make bench\`, after \`make build\`).`,
      '',
      `Input: the ${shape!.name} shape of "Config validation" (${shape!.description}; ${(text.length / 2 ** 20).toFixed(2)} MiB). ` +
        'Each rung is one process doing one more part of what `oracle-node validate` does, in plain Node against the built `dist/` ' +
        "with the flag of the bin's `#!` line; the reference's command runs in the same rounds. CPU is user + system time of every " +
        'process of the rung (the launcher and its child both count), wall from spawn to exit, peak RSS the largest maxrss. ' +
        `${ROUNDS} rounds, the order of the rungs reversed every other round; medians. "reference ÷" is the reference's median over the rung's (for the example, the reference's on the example).`,
      '',
      ...table(
        ['rung', 'what the process does', 'CPU', 'wall', 'peak RSS', 'reference ÷ (CPU)', 'reference ÷ (wall)'],
        [false, false, true, true, true, true, true],
        rows,
      ),
      '',
      workLine,
      '',
      'How to read it: each rung adds one part. `model-parse` is the floor of a validator built on the config model ' +
        '(src/config, the one source of truth the CRD and the JSON Schema are generated from) in a fresh Node process: it ' +
        "loads zod and the model and runs the model's parse with its generated parsers and every rule, and nothing of " +
        "`validate`'s own (the duplicate-key check, the secret checks, issue mapping, redaction, printing). `validate` " +
        'minus `model-parse` is what `validate` itself adds. `snapshot` removes loading zod, building the model and ' +
        'generating its parsers from the process (a V8 startup snapshot holds them built), the one structural step left; ' +
        'an installed bin cannot start from a snapshot, so `snapshot-launcher` is what a user would get: a second Node ' +
        'process on top. Neither snapshot rung is in the product.',
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
