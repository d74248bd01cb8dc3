// Tracing start-up and per-span cost. What `oracle-node coordinator` pays for tracing at start is loading the
// tracer module (src/observability/tracing.ts, imported by the coordinator, worker, start and gateway commands,
// never by validate): measured here as the import of the built module in fresh processes against a process that
// imports what the coordinator loads anyway and the tracer builds on (node:crypto, the secret redactor), and the cost of a span (start, attributes, end, buffered) and of encoding spans as OTLP JSON.
// Needs `make build` (dist/observability/tracing.js).
//   node --import tsx --expose-gc bench/tracing.bench.ts [--runs 21]
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { otlpTraceRequest, Tracer } from '../src/observability/tracing.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '21' } } });
const runs = Number(values.runs);
const built = join(import.meta.dirname, '..', 'dist', 'observability', 'tracing.js');
const redaction = join(import.meta.dirname, '..', 'dist', 'observability', 'redaction.js');
if (!existsSync(built)) throw new Error('run `make build` first');

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Milliseconds a fresh `node` takes to run `code`, from spawn to exit. */
function processMs(code: string): number {
  const start = performance.now();
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(result.stderr);
  return performance.now() - start;
}

const bare = [] as number[];
const withTracer = [] as number[];
const load = `const { Tracer, otlpHttpExporter } = await import(${JSON.stringify(built)});
new Tracer(otlpHttpExporter('http://127.0.0.1:4318/v1/traces', { 'service.name': 'oracle-node' })).startSpan('x').end();`;
for (let i = 0; i < runs; i++) {
  // Interleaved, so the machine's load hits both alike.
  // node:crypto's random source is initialised by the coordinator's key derivation anyway.
  bare.push(processMs(`(await import('node:crypto')).randomBytes(16); await import(${JSON.stringify(redaction)});`));
  withTracer.push(processMs(load));
}

const tracer = new Tracer(async () => undefined);
const spans = 100_000;
let start = performance.now();
for (let i = 0; i < spans; i++) {
  tracer.startSpan('api call', { attributes: { requestId: '0x01', chainId: '1', 'http.request.method': 'GET' } }).end();
  if (i % 4000 === 3999) await tracer.flush();
}
const perSpanUs = ((performance.now() - start) * 1000) / spans;
const batch = Array.from({ length: 512 }, () => ({
  name: 'api call',
  kind: 'client' as const,
  traceId: 'a'.repeat(32),
  spanId: 'b'.repeat(16),
  startNs: 1n,
  endNs: 2n,
  attributes: { requestId: `0x${'1'.repeat(64)}`, chainId: '1', 'http.request.method': 'GET' },
}));
start = performance.now();
for (let i = 0; i < 50; i++) JSON.stringify(otlpTraceRequest(batch, { 'service.name': 'oracle-node' }));
const encodeUs = ((performance.now() - start) * 1000) / (50 * 512);

console.log(
  `load average ${(await import('node:os'))
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' / ')}`,
);
console.log(
  `process start to exit, median of ${runs}: without the tracer ${median(bare).toFixed(1)} ms, importing the tracer ${median(withTracer).toFixed(1)} ms (+${(median(withTracer) - median(bare)).toFixed(1)} ms)`,
);
console.log(`span (start, 3 attributes, end, buffered, flushed to a no-op exporter): ${perSpanUs.toFixed(2)} µs`);
console.log(`OTLP JSON encoding: ${encodeUs.toFixed(2)} µs per span`);
