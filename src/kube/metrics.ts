// The runtime's Prometheus metrics, with the names controller-runtime and client-go use so existing dashboards and
// alerts work unchanged. Each manager has its own Registry (no global default registry).
import { Counter, Gauge, Histogram, Registry } from '../observability/prom-client.js';

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
// workqueue_*_duration_seconds use client-go's buckets: 1 µs up to 10 s by powers of ten.
const WORKQUEUE_BUCKETS = [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1, 10];

export class RuntimeMetrics {
  readonly workqueueDepth: Gauge<'name'>;
  readonly workqueueAdds: Counter<'name'>;
  readonly workqueueQueueDuration: Histogram<'name'>;
  readonly workqueueWorkDuration: Histogram<'name'>;
  readonly workqueueRetries: Counter<'name'>;
  readonly workqueueUnfinishedWork: Gauge<'name'>;
  readonly workqueueLongestRunning: Gauge<'name'>;
  readonly reconcileTotal: Counter<'controller' | 'result'>;
  readonly reconcileErrors: Counter<'controller'>;
  readonly terminalReconcileErrors: Counter<'controller'>;
  readonly reconcileTime: Histogram<'controller'>;
  readonly activeWorkers: Gauge<'controller'>;
  readonly maxConcurrentReconciles: Gauge<'controller'>;
  readonly restRequests: Counter<'code' | 'method' | 'host'>;
  readonly restDuration: Histogram<'verb' | 'host'>;
  readonly restRateLimiterDuration: Histogram<'verb' | 'host'>;
  readonly leaderStatus: Gauge<'name'>;
  readonly watchEvents: Counter<'resource' | 'type'>;
  readonly watchRestarts: Counter<'resource' | 'reason'>;
  readonly relists: Counter<'resource' | 'reason'>;
  readonly watchSilenceSeconds: Gauge<'resource' | 'namespace'>;
  readonly eventsDropped: Counter<'reason'>;

  private readonly collectors: (() => void)[] = [];

  constructor(readonly registry: Registry = new Registry()) {
    const r = [registry];
    this.workqueueDepth = new Gauge({
      name: 'workqueue_depth',
      help: 'Current depth of workqueue',
      labelNames: ['name'],
      registers: r,
    });
    this.workqueueAdds = new Counter({
      name: 'workqueue_adds_total',
      help: 'Total number of adds handled by workqueue',
      labelNames: ['name'],
      registers: r,
    });
    this.workqueueQueueDuration = new Histogram({
      name: 'workqueue_queue_duration_seconds',
      help: 'How long in seconds an item stays in workqueue before being requested',
      labelNames: ['name'],
      buckets: WORKQUEUE_BUCKETS,
      registers: r,
    });
    this.workqueueWorkDuration = new Histogram({
      name: 'workqueue_work_duration_seconds',
      help: 'How long in seconds processing an item from workqueue takes',
      labelNames: ['name'],
      buckets: WORKQUEUE_BUCKETS,
      registers: r,
    });
    this.workqueueRetries = new Counter({
      name: 'workqueue_retries_total',
      help: 'Total number of retries handled by workqueue',
      labelNames: ['name'],
      registers: r,
    });
    const collectors = this.collectors;
    this.workqueueUnfinishedWork = new Gauge({
      name: 'workqueue_unfinished_work_seconds',
      help: "How many seconds of work has been done that is in progress and hasn't been observed by work_duration",
      labelNames: ['name'],
      registers: r,
      collect() {
        for (const collect of collectors) collect();
      },
    });
    this.workqueueLongestRunning = new Gauge({
      name: 'workqueue_longest_running_processor_seconds',
      help: 'How many seconds has the longest running processor for workqueue been running',
      labelNames: ['name'],
      registers: r,
      collect() {
        for (const collect of collectors) collect();
      },
    });
    this.reconcileTotal = new Counter({
      name: 'controller_runtime_reconcile_total',
      help: 'Total number of reconciliations per controller',
      labelNames: ['controller', 'result'],
      registers: r,
    });
    this.reconcileErrors = new Counter({
      name: 'controller_runtime_reconcile_errors_total',
      help: 'Total number of reconciliation errors per controller',
      labelNames: ['controller'],
      registers: r,
    });
    this.terminalReconcileErrors = new Counter({
      name: 'controller_runtime_terminal_reconcile_errors_total',
      help: 'Total number of terminal reconciliation errors per controller',
      labelNames: ['controller'],
      registers: r,
    });
    this.reconcileTime = new Histogram({
      name: 'controller_runtime_reconcile_time_seconds',
      help: 'Length of time per reconciliation per controller',
      labelNames: ['controller'],
      buckets: DURATION_BUCKETS,
      registers: r,
    });
    this.activeWorkers = new Gauge({
      name: 'controller_runtime_active_workers',
      help: 'Number of currently used workers per controller',
      labelNames: ['controller'],
      registers: r,
    });
    this.maxConcurrentReconciles = new Gauge({
      name: 'controller_runtime_max_concurrent_reconciles',
      help: 'Maximum number of concurrent reconciles per controller',
      labelNames: ['controller'],
      registers: r,
    });
    this.restRequests = new Counter({
      name: 'rest_client_requests_total',
      help: 'Number of HTTP requests, partitioned by status code, method, and host',
      labelNames: ['code', 'method', 'host'],
      registers: r,
    });
    this.restDuration = new Histogram({
      name: 'rest_client_request_duration_seconds',
      help: 'Request latency in seconds. Broken down by verb, and host',
      labelNames: ['verb', 'host'],
      buckets: DURATION_BUCKETS,
      registers: r,
    });
    this.restRateLimiterDuration = new Histogram({
      name: 'rest_client_rate_limiter_duration_seconds',
      help: 'Client side rate limiter latency in seconds. Broken down by verb, and host',
      labelNames: ['verb', 'host'],
      buckets: DURATION_BUCKETS,
      registers: r,
    });
    this.leaderStatus = new Gauge({
      name: 'leader_election_master_status',
      help: 'Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master',
      labelNames: ['name'],
      registers: r,
    });
    this.watchEvents = new Counter({
      name: 'oracle_operator_watch_events_total',
      help: 'Watch events received, by resource and type (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR)',
      labelNames: ['resource', 'type'],
      registers: r,
    });
    this.watchRestarts = new Counter({
      name: 'oracle_operator_watch_restarts_total',
      help: 'Watch restarts, by resource and reason (timeout, error, gone, relist)',
      labelNames: ['resource', 'reason'],
      registers: r,
    });
    this.relists = new Counter({
      name: 'oracle_operator_relists_total',
      help: 'Full lists, by resource and reason (initial, gone, periodic, error)',
      labelNames: ['resource', 'reason'],
      registers: r,
    });
    this.watchSilenceSeconds = new Gauge({
      name: 'oracle_operator_watch_silence_seconds',
      help: 'Seconds since the watch last delivered anything (event, bookmark, list or clean close)',
      labelNames: ['resource', 'namespace'],
      registers: r,
      collect() {
        for (const collect of collectors) collect();
      },
    });
    this.eventsDropped = new Counter({
      name: 'oracle_operator_events_dropped_total',
      help: 'Kubernetes Events not sent, by reason (rate_limited, queue_full, error)',
      labelNames: ['reason'],
      registers: r,
    });
  }

  /** Registers a callback that refreshes computed gauges just before a scrape. */
  onCollect(collect: () => void): void {
    this.collectors.push(collect);
  }
}
