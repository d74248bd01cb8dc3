// Config validation benchmark: ours vs the reference validator (@api3/airnode-validator 0.15.0) on the same
// generated config (100 OIS x 50 endpoints, 20 chains) in the same process. Prints medians, ratio and memory.
// Each validator runs in its own child process so that peak RSS (getrusage maxrss) belongs to it alone.
// Run: node --import tsx --expose-gc bench/config-validate.bench.ts
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { validateConfig } from '../src/config/index.js';
import { deriveEndpointId } from '../src/protocol/ids.js';

const require = createRequire(import.meta.url);
const reference = require('@api3/airnode-validator') as {
  parseConfigWithSecrets: (config: unknown, secrets: Record<string, string>) => { success: boolean };
};
const dotenv = require('dotenv') as { parse: (text: string) => Record<string, string> };

const OIS_COUNT = Number(process.env['BENCH_OIS'] ?? 100);
const ENDPOINTS = Number(process.env['BENCH_ENDPOINTS'] ?? 50);
const CHAINS = Number(process.env['BENCH_CHAINS'] ?? 20);
const ITERATIONS = Number(process.env['BENCH_ITERATIONS'] ?? 7);

const fixtures = new URL('../test/fixtures/airnode/', import.meta.url);
const secretsText = readFileSync(new URL('node/secrets.example.env', fixtures), 'utf8');
const base = JSON.parse(readFileSync(new URL('node/config.example.json', fixtures), 'utf8'));

/** A large valid config built from the reference example: every endpoint has an rrp trigger. */
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
      if (e % 10 === 0) config.triggers.http.push(trigger);
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

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

type Report = { times: number[]; baselineRss: number; peakRss: number; peakHeapAfterRun: number };

/** Child process: validate the config file ITERATIONS times (after one warm-up) with one validator. */
function worker(which: string, file: string): void {
  const text = readFileSync(file, 'utf8');
  const secretsRecord = dotenv.parse(secretsText);
  // Both validators get freshly parsed JSON and the secrets; each interpolates and validates.
  const run =
    which === 'ours'
      ? () => validateConfig(JSON.parse(text), secretsText).ok
      : () => reference.parseConfigWithSecrets(JSON.parse(text), secretsRecord).success;
  gc();
  const baselineRss = process.memoryUsage().rss;
  const times: number[] = [];
  let peakHeapAfterRun = 0;
  for (let i = 0; i <= ITERATIONS; i++) {
    gc();
    const start = performance.now();
    const ok = run();
    const elapsed = performance.now() - start;
    peakHeapAfterRun = Math.max(peakHeapAfterRun, process.memoryUsage().heapUsed);
    if (!ok) throw new Error(`${which}: the generated config did not validate`);
    if (i > 0) times.push(elapsed);
  }
  const report: Report = { times, baselineRss, peakRss: process.resourceUsage().maxRSS * 1024, peakHeapAfterRun };
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

function main(): void {
  const config = generateConfig(OIS_COUNT, ENDPOINTS, CHAINS);
  const text = JSON.stringify(config);
  const dir = mkdtempSync(join(tmpdir(), 'config-bench-'));
  const file = join(dir, 'config.json');
  writeFileSync(file, text);
  if (process.env['BENCH_WRITE']) writeFileSync(process.env['BENCH_WRITE'], text);
  console.log(
    `config: ${OIS_COUNT} OIS x ${ENDPOINTS} endpoints (${OIS_COUNT * ENDPOINTS} rrp triggers), ${CHAINS} chains, ${(text.length / 1024 / 1024).toFixed(2)} MiB JSON`,
  );
  console.log(
    `cpu: ${cpus()[0]?.model ?? 'unknown'} x ${cpus().length}; node ${process.version}; ${ITERATIONS} iterations after 1 warm-up`,
  );
  const results: Record<string, Report> = {};
  try {
    for (const which of ['ours', 'reference']) {
      const child = spawnSync(
        process.execPath,
        ['--import', 'tsx', '--expose-gc', fileURLToPath(import.meta.url), '--worker', which, file],
        { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 },
      );
      if (child.status !== 0) throw new Error(`${which} worker failed: ${child.stderr}`);
      results[which] = JSON.parse(child.stdout.trim().split('\n').pop()!) as Report;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const ours = results['ours']!;
  const theirs = results['reference']!;
  const oursMedian = median(ours.times);
  const theirsMedian = median(theirs.times);
  const line = (name: string, r: Report, m: number) =>
    `${name.padEnd(10)} median ${m.toFixed(0)} ms (runs ${r.times.map((t) => t.toFixed(0)).join(', ')}); ` +
    `peak RSS ${mib(r.peakRss)} MiB (baseline ${mib(r.baselineRss)} MiB); peak heap after a run ${mib(r.peakHeapAfterRun)} MiB`;
  console.log(line('ours', ours, oursMedian));
  console.log(line('reference', theirs, theirsMedian));
  console.log(`ratio: reference / ours = ${(theirsMedian / oursMedian).toFixed(2)}x faster`);
}

const workerAt = process.argv.indexOf('--worker');
if (workerAt >= 0) worker(process.argv[workerAt + 1]!, process.argv[workerAt + 2]!);
else main();
