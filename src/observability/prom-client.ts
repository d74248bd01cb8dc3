// prom-client's collectors, loaded file by file: its index also loads the Pushgateway (node:https with tls, and
// zlib), the cluster aggregator and the Summary, none of which src/ uses, for about 20 ms of CPU at each start-up of
// every process (docs/benchmarks.md, "Start-up of the Airnode feed"). The types are the package's own; the files are
// its CommonJS modules, so Counter and the others share the one Registry module (and its global registry) as the
// index would.
//
// The default metrics are prom-client's own collectors, called one by one, but for the process CPU counters: its
// file for them loads @opentelemetry/api (51 modules, about 14 ms of CPU and 5 MiB at start-up) for exemplars, which
// src/ never turns on. `processCpuTotal` below makes the same three series.
import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';

const require = createRequire(import.meta.url);

export const Registry: typeof PromClient.Registry = require('prom-client/lib/registry');
export type Registry = PromClient.Registry;
export const Counter: typeof PromClient.Counter = require('prom-client/lib/counter');
export type Counter<T extends string = string> = PromClient.Counter<T>;
export const Gauge: typeof PromClient.Gauge = require('prom-client/lib/gauge');
export type Gauge<T extends string = string> = PromClient.Gauge<T>;
export const Histogram: typeof PromClient.Histogram = require('prom-client/lib/histogram');
export type Histogram<T extends string = string> = PromClient.Histogram<T>;

export type DefaultMetricsOptions = {
  register: PromClient.Registry;
  prefix?: string;
  /** How often the event loop lag is sampled, ms (prom-client's eventLoopMonitoringPrecision). */
  eventLoopMonitoringPrecision?: number;
};

type DefaultMetric = (registry: PromClient.Registry, config: DefaultMetricsOptions) => void;

/** prom-client's default metrics but the CPU counters, in the order of its lib/defaultMetrics.js. */
const PROM_CLIENT_DEFAULT_METRICS = [
  'processStartTime',
  'osMemoryHeap',
  'processOpenFileDescriptors',
  'processMaxFileDescriptors',
  'eventLoopLag',
  'processResources',
  'processHandles',
  'processRequests',
  'heapSizeAndUsed',
  'heapSpacesSizeAndUsed',
  'version',
  'gc',
] as const;

/** process_cpu_user_seconds_total, process_cpu_system_seconds_total and process_cpu_seconds_total, as prom-client's. */
function processCpuTotal(registry: PromClient.Registry, config: DefaultMetricsOptions): void {
  const prefix = config.prefix ?? '';
  let last = process.cpuUsage();
  const user = new Counter({
    name: `${prefix}process_cpu_user_seconds_total`,
    help: 'Total user CPU time spent in seconds.',
    registers: [registry],
    // One collect sets all three, from one reading.
    collect() {
      const now = process.cpuUsage();
      const userSeconds = (now.user - last.user) / 1e6;
      const systemSeconds = (now.system - last.system) / 1e6;
      last = now;
      user.inc(userSeconds);
      system.inc(systemSeconds);
      total.inc(userSeconds + systemSeconds);
    },
  });
  const system = new Counter({
    name: `${prefix}process_cpu_system_seconds_total`,
    help: 'Total system CPU time spent in seconds.',
    registers: [registry],
  });
  const total = new Counter({
    name: `${prefix}process_cpu_seconds_total`,
    help: 'Total user and system CPU time spent in seconds.',
    registers: [registry],
  });
}

/** The series of prom-client's collectDefaultMetrics, in one registry. */
export function collectDefaultMetrics(config: DefaultMetricsOptions): void {
  const options = { eventLoopMonitoringPrecision: 10, ...config };
  processCpuTotal(config.register, options);
  for (const name of PROM_CLIENT_DEFAULT_METRICS) {
    (require(`prom-client/lib/metrics/${name}`) as DefaultMetric)(config.register, options);
  }
}
