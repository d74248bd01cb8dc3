// OIS engine benchmark: our extraction/encoding, Node ABI and request building beside the reference
// packages (@api3/airnode-adapter, @api3/airnode-abi 0.15) on the same inputs in the same run, and
// sandboxed (QuickJS) processing latency beside the reference's vm-based @api3/commons processing.
// Writes the "OIS engine" section of docs/benchmarks.md. Run: node --import tsx --expose-gc bench/ois-engine.bench.ts
// (`--processing-only`: the processing rounds alone, printed and not written, e.g. under --cpu-prof).
import { execSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { decodeParameters, encodeParameters } from '../src/ois/abi.js';
import { postProcessResponse } from '../src/ois/processing.js';
import { buildRequest } from '../src/ois/request.js';
import { extractAndEncodeResponse } from '../src/ois/reserved.js';
import type { Endpoint, Ois } from '../src/ois/types.js';
import { workerPool } from '../src/ois/worker-pool.js';

const require = createRequire(import.meta.url);
const refAdapter = require('@api3/airnode-adapter') as {
  extractAndEncodeResponse(data: unknown, params: Record<string, string>): unknown;
  buildRequest(options: unknown): unknown;
};
const refAbi = require('@api3/airnode-abi') as {
  encode(p: { type: string; name: string; value: unknown }[]): string;
  decode(e: string): unknown;
};
// axios as the reference adapter resolves it: it serialises the query when the request is sent.
const refAxios = createRequire(require.resolve('@api3/airnode-adapter'))('axios') as {
  getUri(config: { url: string; params?: unknown }): string;
};
const refCommons = require('@api3/commons') as {
  postProcessResponse(response: unknown, endpoint: unknown, parameters: unknown): Promise<unknown>;
};

const gc = (globalThis as { gc?: () => void }).gc;
const quick = process.env.BENCH_QUICK === '1';
const processingOnly = process.argv.includes('--processing-only');
const BATCHES = quick ? 5 : 15;
const BATCH_MS = quick ? 40 : 150;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((sorted.length * p) / 100) - 1)]!;
}

/** Median ops/s over timed batches (interleaving is done by the caller). */
function throughput(fn: () => void): number {
  for (let i = 0; i < 200; i++) fn();
  gc?.();
  const rates: number[] = [];
  for (let batch = 0; batch < BATCHES; batch++) {
    let ops = 0;
    const start = process.hrtime.bigint();
    let elapsed = 0;
    while (elapsed < BATCH_MS) {
      for (let i = 0; i < 50; i++) fn();
      ops += 50;
      elapsed = Number(process.hrtime.bigint() - start) / 1e6;
    }
    rates.push((ops * 1000) / elapsed);
  }
  return median(rates);
}

async function latencies(fn: () => Promise<unknown>, runs: number): Promise<number[]> {
  for (let i = 0; i < 10; i++) await fn();
  gc?.();
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    await fn();
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return samples;
}

const response = {
  market_data: { current_price: { usd: 43210.123456789, eur: 40001.5 } },
  current: { sunset: 1650000000, temp: 12.345, weather: [{ main: 'Clouds' }] },
  series: Array.from({ length: 50 }, (_, i) => i * 1.25),
};
const extractionCases: [string, Record<string, string>][] = [
  ['single int256, path + _times', { _type: 'int256', _path: 'market_data.current_price.usd', _times: '1000000' }],
  [
    'four values (uint256,int256,string,bool)',
    {
      _type: 'uint256,int256,string,bool',
      _path: 'current.sunset,current.temp,current.weather.0.main,market_data.current_price.eur',
      _times: ',100,,',
    },
  ],
  ['int256[50] array, _times', { _type: 'int256[]', _path: 'series', _times: '1000' }],
];

const abiParameters = [
  { type: 'string32', name: 'coinId', value: 'bitcoin' },
  { type: 'string32', name: '_type', value: 'int256' },
  { type: 'string32', name: '_path', value: 'market_data.current_price.usd' },
  { type: 'uint256', name: 'amount', value: '1000000000000000000' },
  { type: 'address', name: 'to', value: '0x8f0633d80Be1EA5B5DF1909b64f2573622290576' },
  { type: 'string', name: 'note', value: 'benchmark' },
] as const;
const encodedAbi = encodeParameters([...abiParameters]);

const ois: Ois = {
  title: 'Bench',
  apiSpecifications: {
    servers: [{ url: 'http://127.0.0.1:8080/api/v3' }],
    paths: {
      '/coins/{id}': {
        get: {
          parameters: [
            { name: 'id', in: 'path' },
            { name: 'localization', in: 'query' },
            { name: 'market_data', in: 'query' },
            { name: 'vs', in: 'query' },
          ],
        },
      },
    },
    components: { securitySchemes: { key: { type: 'apiKey', name: 'X-Api-Key', in: 'header' } } },
    security: { key: [] },
  },
  endpoints: [
    {
      name: 'coin',
      operation: { path: '/coins/{id}', method: 'get' },
      fixedOperationParameters: [
        { operationParameter: { name: 'localization', in: 'query' }, value: 'false' },
        { operationParameter: { name: 'market_data', in: 'query' }, value: 'true' },
      ],
      reservedParameters: [{ name: '_type', fixed: 'int256' }],
      parameters: [
        { name: 'coinId', operationParameter: { name: 'id', in: 'path' } },
        { name: 'vs', operationParameter: { name: 'vs', in: 'query' } },
      ],
    },
  ],
};
const requestOptions = {
  ois,
  endpointName: 'coin',
  parameters: { coinId: 'bitcoin', vs: 'usd' },
  apiCredentials: [{ oisTitle: 'Bench', securitySchemeName: 'key', securitySchemeValue: 'secret' }],
};

const postProcessing: Endpoint = {
  name: 'p',
  fixedOperationParameters: [],
  reservedParameters: [{ name: '_type' }],
  parameters: [],
  postProcessingSpecificationV2: {
    environment: 'Node',
    timeoutMs: 5000,
    value:
      'async ({ response }) => { const sum = (n) => n.reduce((a, b) => a + b, 0); return { response: [sum(response.map((c) => c.price)) / response.length, response.length].map((x) => x * 10 ** 8) }; }',
  },
};
const markets = Array.from({ length: 10 }, (_, i) => ({ id: `coin${i}`, price: 100 + i, change: i / 10 }));

type Row = { name: string; ours: number; reference: number };

/** The throughput rows: extraction and encoding, ABI, request building, ours beside the reference packages. */
function measureThroughput(measure: (name: string, ours: () => void, reference: () => void) => void): void {
  for (const [name, params] of extractionCases) {
    measure(
      `extract+encode: ${name}`,
      () => extractAndEncodeResponse(response, params),
      () => refAdapter.extractAndEncodeResponse(response, params),
    );
  }
  measure(
    'Node ABI encode (6 parameters)',
    () => encodeParameters([...abiParameters]),
    () => refAbi.encode([...abiParameters]),
  );
  measure(
    'Node ABI decode (6 parameters)',
    () => decodeParameters(encodedAbi),
    () => refAbi.decode(encodedAbi),
  );
  measure(
    'build request (path, query, fixed, apiKey); reference without URL/query serialisation',
    () => buildRequest(requestOptions),
    () => refAdapter.buildRequest(requestOptions),
  );
  measure(
    'build request incl. final URL; reference = buildRequest + axios getUri',
    () => buildRequest(requestOptions),
    () => {
      const built = refAdapter.buildRequest(requestOptions) as { baseUrl: string; path: string; data: unknown };
      refAxios.getUri({ url: `${built.baseUrl}${built.path}`, params: built.data });
    },
  );
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  const measure = (name: string, ours: () => void, reference: () => void) => {
    // Two rounds, alternating, so drift from the contended CPU hits both sides alike.
    const oursRates = [throughput(ours)];
    const referenceRates = [throughput(reference)];
    oursRates.push(throughput(ours));
    referenceRates.push(throughput(reference));
    rows.push({ name, ours: Math.max(...oursRates), reference: Math.max(...referenceRates) });
    console.log(
      `${name}: ours ${rows.at(-1)!.ours.toFixed(0)} ops/s, reference ${rows.at(-1)!.reference.toFixed(0)} ops/s`,
    );
  };

  if (!processingOnly) measureThroughput(measure);

  // Processing as the gateway runs it: on the worker pool, its workers kept warm (keepProcessingWarm), measured
  // after a warm-up; ours and the reference alternate over three rounds, all samples pooled.
  const runs = quick ? 50 : 300;
  await workerPool().keepWarm();
  const ours = () => postProcessResponse(markets, postProcessing, {});
  const reference = () => refCommons.postProcessResponse(markets, postProcessing, {});
  await latencies(ours, 200);
  await latencies(reference, 200);
  const loadBefore = os
    .loadavg()
    .map((value) => value.toFixed(1))
    .join(' / ');
  const oursLatency: number[] = [];
  const referenceLatency: number[] = [];
  for (let round = 0; round < 3; round++) {
    const order = round % 2 === 0 ? [true, false] : [false, true];
    for (const isOurs of order) {
      if (isOurs) oursLatency.push(...(await latencies(ours, runs)));
      else referenceLatency.push(...(await latencies(reference, runs)));
    }
  }
  const loadAfter = os
    .loadavg()
    .map((value) => value.toFixed(1))
    .join(' / ');
  const processing = {
    oursMedian: median(oursLatency),
    oursP99: percentile(oursLatency, 99),
    referenceMedian: median(referenceLatency),
    referenceP99: percentile(referenceLatency, 99),
    load: `${loadBefore} before, ${loadAfter} after`,
  };
  console.log('post-processing V2 latency (ms):', processing);
  await workerPool().close();

  if (!processingOnly) writeSection(rows, processing, runs);
}

function cpuModel(): string {
  try {
    const line = execSync('lscpu', { encoding: 'utf8' })
      .split('\n')
      .find((l) => l.startsWith('Model name:'));
    if (line) return line.replace('Model name:', '').trim();
  } catch {
    // lscpu missing: fall back to Node's view.
  }
  return os.cpus()[0]?.model ?? 'unknown';
}

/** A Markdown table padded the way the repository's formatter (Biome) lays tables out. */
function table(header: string[], alignRight: boolean[], rows: string[][]): string[] {
  const widths = header.map((cell, i) => Math.max(3, cell.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) =>
    `| ${cells.map((cell, i) => (alignRight[i] ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!))).join(' | ')} |`;
  const rule = `| ${widths.map((w, i) => (alignRight[i] ? `${'-'.repeat(w - 1)}:` : '-'.repeat(w))).join(' | ')} |`;
  return [line(header), rule, ...rows.map(line)];
}

function writeSection(
  rows: Row[],
  processing: { oursMedian: number; oursP99: number; referenceMedian: number; referenceP99: number; load: string },
  runs: number,
): void {
  const file = new URL('../docs/benchmarks.md', import.meta.url);
  const lines = [
    '## OIS engine',
    '',
    `Machine: ${os.cpus().length} cores, ${cpuModel()} (shared with a background build, so absolute numbers are noisy; both sides run in the same process, interleaved). Node ${process.version}.`,
    `Command: \`node --import tsx --expose-gc bench/ois-engine.bench.ts\` (run by \`make bench\`), ${new Date().toISOString().slice(0, 10)}.`,
    '',
    'Throughput: median ops/s over timed batches (best of two interleaved rounds per side); reference = `@api3/airnode-adapter` / `@api3/airnode-abi` 0.15.0 (ethers 5, bignumber.js) on the same inputs.',
    '',
    ...table(
      ['operation', 'ours (ops/s)', 'reference (ops/s)', 'ours / reference'],
      [false, true, true, true],
      rows.map((row) => [
        row.name,
        Math.round(row.ours).toLocaleString('en-US'),
        Math.round(row.reference).toLocaleString('en-US'),
        `${(row.ours / row.reference).toFixed(2)}×`,
      ]),
    ),
    '',
    `Processing latency, V2 post-processing snippet over a 10-element response (3 interleaved rounds of ${runs} sequential calls per side after 200 of warm-up, all samples pooled; load average ${processing.load}): ours as the gateway runs it, \`postProcessResponse\` on the worker pool with its workers kept warm, each call in a fresh QuickJS runtime/context prepared while the instance was idle (memory-capped, interruptible, nothing of the host reachable); the reference runs \`vm.runInNewContext\` (\`@api3/commons\`) on the calling thread, which is no sandbox. Goal (issue 27): <= 0.5 ms median, <= 2 ms p99.`,
    '',
    ...table(
      ['processing', 'median (ms)', 'p99 (ms)'],
      [false, true, true],
      [
        ['ours (QuickJS sandbox)', processing.oursMedian.toFixed(3), processing.oursP99.toFixed(3)],
        ['reference (Node vm)', processing.referenceMedian.toFixed(3), processing.referenceP99.toFixed(3)],
        ['ratio ours / reference (median)', `${(processing.oursMedian / processing.referenceMedian).toFixed(2)}×`, ''],
      ],
    ),
    '',
  ];
  const section = lines.join('\n');
  const current = existsSync(file) ? readFileSync(file, 'utf8') : '# Benchmarks\n';
  const start = current.indexOf('## OIS engine');
  let next: string;
  if (start === -1) {
    next = `${current.trimEnd()}\n\n${section}`;
  } else {
    const after = current.indexOf('\n## ', start + 1);
    next = current.slice(0, start) + section.trimEnd() + (after === -1 ? '' : `\n\n${current.slice(after + 1)}`);
  }
  writeFileSync(file, `${next.trimEnd()}\n`);
  console.log('wrote the "OIS engine" section of docs/benchmarks.md');
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
