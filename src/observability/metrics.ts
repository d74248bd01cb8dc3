// prom-client helpers shared by the gateway, the node and the operator. Each component gets its own
// Registry (no global default registry, so tests and several servers in one process do not collide), and
// metric lookups are idempotent: asking twice for the same name returns the same collector.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from './prom-client.js';

export { Counter, Gauge, Histogram, Registry };

/** Seconds; from a fast loopback answer up to the 30 s budget of an API call with retry. */
export const LATENCY_BUCKETS_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export type RegistryOptions = {
  /** Process metrics (CPU, memory, event loop lag) with this prefix; off unless asked for. */
  defaultMetrics?: boolean;
  prefix?: string;
  /** How often the event loop lag is sampled, ms (EVENT_LOOP_SAMPLING_MS unless given). */
  eventLoopSamplingMs?: number;
  /** Labels added to every series of the registry, e.g. { component: 'gateway' }. */
  labels?: Record<string, string>;
};

/**
 * How often the event loop lag is sampled (prom-client's default is every 10 ms). At 10 ms the sampling timer alone
 * cost an idle `oracle-node feed` about 11 ms of CPU a second, a third of its CPU at 100 templates; at 100 ms it
 * costs about 2 ms a second (docs/benchmarks.md, Airnode feed), and a stall still delays the next sample, so it is still measured.
 */
export const EVENT_LOOP_SAMPLING_MS = 100;

export function createMetricsRegistry(options: RegistryOptions = {}): Registry {
  const registry = new Registry();
  if (options.labels) registry.setDefaultLabels(options.labels);
  if (options.defaultMetrics) {
    collectDefaultMetrics({
      register: registry,
      prefix: options.prefix ?? '',
      eventLoopMonitoringPrecision: options.eventLoopSamplingMs ?? EVENT_LOOP_SAMPLING_MS,
    });
  }
  return registry;
}

type MetricSpec<L extends string> = { name: string; help: string; labelNames?: readonly L[] };

export function counter<L extends string>(registry: Registry, spec: MetricSpec<L>): Counter<L> {
  const existing = registry.getSingleMetric(spec.name);
  if (existing) return existing as Counter<L>;
  return new Counter<L>({ ...spec, labelNames: spec.labelNames ?? [], registers: [registry] });
}

/** `collect`, when given, sets the gauge's values at each scrape (values that are a function of the time). */
export function gauge<L extends string>(
  registry: Registry,
  spec: MetricSpec<L> & { collect?: (this: Gauge<L>) => void },
): Gauge<L> {
  const existing = registry.getSingleMetric(spec.name);
  if (existing) return existing as Gauge<L>;
  return new Gauge<L>({ ...spec, labelNames: spec.labelNames ?? [], registers: [registry] });
}

export function histogram<L extends string>(
  registry: Registry,
  spec: MetricSpec<L> & { buckets?: number[] },
): Histogram<L> {
  const existing = registry.getSingleMetric(spec.name);
  if (existing) return existing as Histogram<L>;
  return new Histogram<L>({
    ...spec,
    labelNames: spec.labelNames ?? [],
    buckets: spec.buckets ?? LATENCY_BUCKETS_SECONDS,
    registers: [registry],
  });
}

/** Seconds elapsed since a process.hrtime.bigint() reading. */
export function secondsSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/** Runs fn and observes its duration in seconds with the outcome label set to "success" or "error". */
export async function timeOutcome<T, L extends string>(
  metric: Histogram<L | 'outcome'>,
  labels: Partial<Record<L, string>>,
  fn: () => Promise<T>,
): Promise<T> {
  const start = process.hrtime.bigint();
  try {
    const result = await fn();
    metric.observe({ ...labels, outcome: 'success' } as Partial<Record<L | 'outcome', string>>, secondsSince(start));
    return result;
  } catch (error) {
    metric.observe({ ...labels, outcome: 'error' } as Partial<Record<L | 'outcome', string>>, secondsSince(start));
    throw error;
  }
}

/** Reads the current value of a counter or gauge series (tests and status pages). */
export async function metricValue(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number | undefined> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return undefined;
  const { values } = await metric.get();
  const match = values.find((value) =>
    Object.entries(labels).every(([key, expected]) => String(value.labels[key]) === expected),
  );
  return match?.value;
}
