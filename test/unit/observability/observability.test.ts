import { spawnSync } from 'node:child_process';
import perfHooks from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import * as promClient from 'prom-client';
import { FEED_EVENT_LOOP_SAMPLING_MS } from '../../../src/cli/feed.js';
import {
  clearSecrets,
  counter,
  createLogger,
  createMetricsRegistry,
  EVENT_LOOP_SAMPLING_MS,
  formatPlainLine,
  histogram,
  metricValue,
  REDACTED,
  redact,
  registerSecret,
  startObservabilityServer,
} from '../../../src/observability/index.js';

const OBSERVABILITY_ENTRY = fileURLToPath(new URL('../../../src/observability/index.ts', import.meta.url));

function capture() {
  const lines: string[] = [];
  return { lines, destination: { write: (line: string) => lines.push(line) } };
}

describe('observability', () => {
  afterEach(() => clearSecrets());

  describe('createLogger', () => {
    it('writes one JSON object per line with the level name and bindings', () => {
      const { lines, destination } = capture();
      const logger = createLogger({ format: 'json', level: 'INFO', bindings: { component: 'gateway' }, destination });
      logger.info({ endpointId: '0x12' }, 'request served');
      logger.debug('hidden at INFO');
      expect(lines).to.have.length(1);
      const entry = JSON.parse(lines[0]!);
      expect(entry).to.include({ level: 'INFO', component: 'gateway', endpointId: '0x12', msg: 'request served' });
      expect(entry.time).to.match(/^\d{4}-\d\d-\d\dT/);
    });

    it('honours each level threshold', () => {
      for (const [level, expected] of [
        ['DEBUG', 4],
        ['INFO', 3],
        ['WARN', 2],
        ['ERROR', 1],
      ] as const) {
        const { lines, destination } = capture();
        const logger = createLogger({ level, destination });
        logger.debug('d');
        logger.info('i');
        logger.warn('w');
        logger.error('e');
        expect(lines, level).to.have.length(expected);
      }
    });

    it('writes plain lines: time, level, message, key=value, no newline inside', () => {
      const { lines, destination } = capture();
      const logger = createLogger({ format: 'plain', level: 'DEBUG', bindings: { component: 'gw' }, destination });
      logger.warn({ status: 500, err: new Error('boom\nsecond line') }, 'API call\nfailed');
      expect(lines).to.have.length(1);
      const line = lines[0]!;
      expect(line).to.match(/^\d{4}-\d\d-\d\dT\S+Z WARN {2}API call\\nfailed /);
      expect(line).to.contain('component=gw').and.contain('status=500').and.contain('err="Error: boom\\nsecond line"');
      expect(line.trimEnd()).not.to.contain('\n');
    });

    it('passes through lines that are not JSON', () => {
      expect(formatPlainLine('not json')).to.equal('not json\n');
    });

    it('scrubs registered secrets from every line, in messages, fields and JSON-escaped form', () => {
      const { lines, destination } = capture();
      const logger = createLogger({ format: 'json', destination });
      registerSecret('super-secret-key');
      registerSecret('quote"and\\slash');
      registerSecret('abc'); // too short to be scrubbed
      logger.info({ url: 'https://api.example/x?key=super-secret-key' }, 'using super-secret-key');
      logger.info({ value: 'quote"and\\slash' }, 'abc stays');
      expect(lines.join('')).not.to.contain('super-secret-key');
      expect(lines.join('')).not.to.contain('quote');
      expect(lines[0]).to.contain(REDACTED);
      expect(JSON.parse(lines[1]!).msg).to.equal('abc stays');
    });

    it('redact() scrubs arbitrary text and URI-encoded forms', () => {
      registerSecret('p@ss word');
      expect(redact('a p@ss word b p%40ss%20word')).to.equal(`a ${REDACTED} b ${REDACTED}`);
    });
  });

  describe('metrics', () => {
    it('creates collectors idempotently per registry', async () => {
      const registry = createMetricsRegistry({ labels: { component: 'test' } });
      const a = counter(registry, { name: 'x_total', help: 'x', labelNames: ['kind'] });
      const b = counter(registry, { name: 'x_total', help: 'x', labelNames: ['kind'] });
      expect(a).to.equal(b);
      a.inc({ kind: 'k' }, 2);
      expect(await metricValue(registry, 'x_total', { kind: 'k' })).to.equal(2);
      const other = createMetricsRegistry();
      expect(counter(other, { name: 'x_total', help: 'x' })).not.to.equal(a);
      histogram(registry, { name: 'lat_seconds', help: 'l' }).observe(0.01);
      const text = await registry.metrics();
      expect(text).to.contain('x_total{kind="k",component="test"} 2').and.contain('lat_seconds_bucket');
    });

    it('samples the event loop lag every EVENT_LOOP_SAMPLING_MS, not every 10 ms, and still reports it', async () => {
      // prom-client calls perf_hooks.monitorEventLoopDelay through the module object: record the resolutions asked.
      const original = perfHooks.monitorEventLoopDelay;
      const resolutions: (number | undefined)[] = [];
      perfHooks.monitorEventLoopDelay = (options) => {
        resolutions.push(options?.resolution);
        return original(options);
      };
      let registry: ReturnType<typeof createMetricsRegistry>;
      try {
        registry = createMetricsRegistry({ defaultMetrics: true });
      } finally {
        perfHooks.monitorEventLoopDelay = original;
      }
      expect(EVENT_LOOP_SAMPLING_MS).to.equal(100);
      expect(resolutions).to.deep.equal([EVENT_LOOP_SAMPLING_MS]);
      expect(await registry.metrics()).to.contain('nodejs_eventloop_lag_p99_seconds');
    });

    it("makes the series of prom-client's collectDefaultMetrics, each with its type and help", async () => {
      // Ours calls prom-client's collectors one by one and makes the CPU counters itself (theirs loads
      // @opentelemetry/api); a prom-client update that adds, renames or drops a default metric fails here.
      const ours = createMetricsRegistry({ defaultMetrics: true, prefix: 'x_' });
      const reference = new promClient.Registry();
      promClient.collectDefaultMetrics({ register: reference, prefix: 'x_' });
      const shape = async (registry: promClient.Registry) =>
        (await registry.getMetricsAsJSON()).map((metric) => `${metric.name} ${metric.type} ${metric.help}`).sort();
      const expected = await shape(reference);
      expect(expected).to.include(
        'x_process_cpu_seconds_total counter Total user and system CPU time spent in seconds.',
      );
      expect(await shape(ours)).to.deep.equal(expected);
      ours.clear();
      reference.clear();
    });

    it("loads neither prom-client's index nor @opentelemetry/api (its CPU collector's, 51 modules)", () => {
      const script = [
        "import { createRequire } from 'node:module';",
        `const { createMetricsRegistry } = await import(${JSON.stringify(OBSERVABILITY_ENTRY)});`,
        'createMetricsRegistry({ defaultMetrics: true });',
        'console.log(JSON.stringify(Object.keys(createRequire(import.meta.url).cache)));',
        'process.exit(0);',
      ].join('\n');
      const result = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(result.status, result.stderr).to.equal(0);
      const packages = (JSON.parse(result.stdout) as string[]).map((file) =>
        file.slice(file.lastIndexOf('node_modules/') + 'node_modules/'.length),
      );
      expect(packages).to.include('prom-client/lib/metrics/eventLoopLag.js');
      expect(packages).to.not.include('prom-client/index.js');
      expect(packages.filter((file) => file.startsWith('@opentelemetry/'))).to.deep.equal([]);
    });

    it('counts the CPU the process uses: user, system and their sum', async () => {
      const registry = createMetricsRegistry({ defaultMetrics: true });
      const cpu = async (name: string) =>
        (await registry.getSingleMetric(name)?.get())?.values.reduce((sum, value) => sum + value.value, 0) ?? -1;
      const before = {
        user: await cpu('process_cpu_user_seconds_total'),
        total: await cpu('process_cpu_seconds_total'),
      };
      const spent = process.cpuUsage();
      while (process.cpuUsage(spent).user < 20_000) Math.sqrt(Math.random());
      const user = await cpu('process_cpu_user_seconds_total');
      const system = await cpu('process_cpu_system_seconds_total');
      const total = await cpu('process_cpu_seconds_total');
      expect(user - before.user).to.be.at.least(0.02);
      expect(total - before.total).to.be.at.least(0.02);
      expect(total).to.be.closeTo(user + system, 1e-6);
      registry.clear();
    });

    it('samples the event loop lag as often as a component asks (the feed: once a second)', () => {
      const original = perfHooks.monitorEventLoopDelay;
      const resolutions: (number | undefined)[] = [];
      perfHooks.monitorEventLoopDelay = (options) => {
        resolutions.push(options?.resolution);
        return original(options);
      };
      try {
        createMetricsRegistry({ defaultMetrics: true, eventLoopSamplingMs: FEED_EVENT_LOOP_SAMPLING_MS });
      } finally {
        perfHooks.monitorEventLoopDelay = original;
      }
      expect(resolutions).to.deep.equal([1000]);
    });
  });

  describe('observability server', () => {
    it('serves /metrics, /healthz, /readyz and 404 JSON elsewhere', async () => {
      const registry = createMetricsRegistry();
      counter(registry, { name: 'hits_total', help: 'h' }).inc();
      let ready = false;
      const server = await startObservabilityServer({
        registry,
        host: '127.0.0.1',
        ready: () => ({ ready, reason: 'starting' }),
      });
      try {
        const base = `http://127.0.0.1:${server.port}`;
        const metrics = await fetch(`${base}/metrics`);
        expect(metrics.status).to.equal(200);
        expect(await metrics.text()).to.contain('hits_total 1');
        expect(await (await fetch(`${base}/healthz`)).json()).to.deep.equal({ status: 'ok' });
        const notReady = await fetch(`${base}/readyz`);
        expect(notReady.status).to.equal(503);
        expect(await notReady.json()).to.deep.equal({ status: 'not ready', reason: 'starting' });
        ready = true;
        expect((await fetch(`${base}/readyz`)).status).to.equal(200);
        const missing = await fetch(`${base}/nope`);
        expect(missing.status).to.equal(404);
        expect(await missing.json()).to.deep.equal({ message: 'Not found' });
      } finally {
        await server.close();
      }
    });
  });
});
