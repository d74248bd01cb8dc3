// The node's runs, assembled in one place as controller-runtime's manager assembles a process: what runs and in
// which order. `oracle-node coordinator` and `oracle-node start` (src/cli) parse flags, load the config, answer
// signals and print; these build the rest.
//   runCoordinator: one run of a coordinator (a pod's, or by hand): the executor (worker Jobs in a pod, both halves
//     here otherwise), the providers' memory, the hand-over Lease, a window or one cycle, the report, the heartbeat.
//   runLocalNode: the local node's loop (`start`): a cycle or a window every interval, its metrics, the request log
//     and the heartbeat, until stopped.

import { processPendingSightings } from '../chain/pending.js';
import { type SponsorWallets, sponsorWallets } from '../chain/sponsor-wallets.js';
import { sleepUnlessAborted } from '../common/concurrency.js';
import { errorMessage } from '../common/errors.js';
import { monotonicNow } from '../common/time.js';
import type { Config } from '../config/index.js';
import { createMetricsRegistry, type Registry } from '../observability/index.js';
import { tracerFromEnvironment } from '../observability/tracing.js';
import { ApiRetries, DEFAULT_API_RETRY_WINDOW_SECONDS } from './api-retries.js';
import { budgetWaitWithin, callEndpointWaiting } from './budget-wait.js';
import { FileResponseCache } from './cache.js';
import { type CycleSummary, roleOf, runCycle } from './cycle.js';
import { emptySummary } from './cycle-summary.js';
import { HARD_END_MARGIN_MS, settleBy, WorkDeadline } from './deadline.js';
import { InProcessExecutor, WorkerExecutor } from './executor.js';
import { heartbeatResult, sendHeartbeat } from './heartbeat.js';
import type { HeldLease } from './kubernetes/handover.js';
import type { CoordinatorKubernetes } from './kubernetes/index.js';
import type { Logger } from './logger.js';
import { cycleMetrics } from './metrics.js';
import {
  API_RETRIES_FILE,
  API_RETRIES_WORDS,
  loadHandedOver,
  PENDING_SIGHTINGS_FILE,
  SIGHTINGS_WORDS,
  saveHandedOver,
} from './pending-sightings.js';
import { cycleRequestRecords, FileRequestLog } from './request-log.js';
import { type LastCycleCounts, lastCycleCounts } from './usage-counts.js';
import {
  fileTextStore,
  fileVerifiedProvidersStore,
  loadProviderMemory,
  saveProviderMemory,
} from './verified-providers.js';
import { runWindow } from './window.js';

/**
 * After SIGTERM, how long the cycle report (and request log) may take to write: the run must exit inside the pod's
 * grace period (the operator's COORDINATOR_GRACE_SECONDS, 5 s), after SETTLE_AFTER_STOP_MS for the cycle in flight.
 */
export const REPORT_AFTER_SIGTERM_MS = 3_000;
/** The deadline's reason when the hand-over lease is lost mid-window (src/node/kubernetes/handover.ts). */
export const LEASE_LOST = 'lease lost';

/** What the run's flags ask for: the same for a coordinator and the local loop. */
export type RunFlags = {
  /** The response cache's directory (and, locally, the request log's and the verified providers'). */
  cacheDir: string;
  /** Per chain id, the most per gas (wei) the node pays (`--max-gas-price`). */
  gasPriceCeilings?: ReadonlyMap<string, bigint>;
  /** A standby's delay (`--standby-delay-blocks`; 0: the primary). */
  standbyDelayBlocks: number;
  /** `--heartbeat-usage`: the heartbeat carries the counts of the cycle just run (`last_cycle`). */
  heartbeatUsage?: boolean;
  /** How many sponsors get a label value of their own in the metrics and the cycle report (`--metrics-top-sponsors`). */
  metricsTopSponsors?: number;
  /**
   * How long a request whose API fails for now is retried before it is failed on chain (`--api-retry-window`,
   * seconds; 0: at once). Absent: the default, DEFAULT_API_RETRY_WINDOW_SECONDS.
   */
  apiRetryWindowSeconds?: number;
};

/** The run's retries of transient API failures, shared by its cycles' plans and shards (src/node/api-retries.ts). */
function apiRetriesOf(flags: RunFlags): ApiRetries {
  return new ApiRetries(flags.apiRetryWindowSeconds ?? DEFAULT_API_RETRY_WINDOW_SECONDS);
}

export type CoordinatorRunOptions = RunFlags & {
  config: Config;
  logger: Logger;
  /** In a coordinator pod made by the operator: worker Jobs, the ConfigMap cache, the cycle report; else undefined. */
  kubernetes: CoordinatorKubernetes | undefined;
  /** `--window`: the run polls until this long after its start; with pollIntervalMs, a window, else one cycle. */
  windowMs?: number;
  pollIntervalMs?: number;
  /** `--handover-lease`: the Lease the window sends under (it needs windowMs). */
  handoverLease?: { namespace: string; name: string; owner?: { name: string; uid: string } };
  /** SIGTERM: nothing new is sent; the run reports what it did and returns. */
  terminate: AbortSignal;
};

export type CoordinatorRunOutcome =
  | {
      summary: CycleSummary;
      /** Work was abandoned at the deadline (an API that never answers): the process need not wait for it. */
      abandoned: boolean;
    }
  | {
      /** The run never held the hand-over Lease: 0, another window held it throughout; 2, it could not be reached. */
      exitCode: 0 | 2;
      /** Why the Lease could not be reached (exit code 2). */
      error?: string;
      /** The window's workers, started for a window this run never got, being told it is over. */
      workersStopped: Promise<void> | undefined;
    };

/** Waits for `work` at most `ms` (an unanswered write must not hold the exit past the grace period). */
async function withinBudget(work: Promise<void>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([work, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/** A local run keeps its request log in the cache directory (what `oracle-node request -c` reads). */
export async function recordRequestsLocally(
  log: FileRequestLog,
  summary: Parameters<typeof cycleRequestRecords>[0],
  time: Date,
  logger: Logger,
): Promise<void> {
  try {
    await log.record(cycleRequestRecords(summary, { time }));
  } catch (error) {
    logger.warn({ err: errorMessage(error) }, 'could not write the request log');
  }
}

/**
 * Waits for the hand-over Lease until the window's end (src/node/kubernetes/handover.ts): the held Lease, whose loss
 * stops the deadline, or why the run never got it.
 */
async function holdHandoverLease(options: {
  namespace: string;
  name: string;
  logger: Logger;
  windowEndAt: number;
  deadline: WorkDeadline;
  terminated: () => boolean;
  owner?: { name: string; uid: string };
  apiRetries: ApiRetries;
}): Promise<HeldLease | { exitCode: 0 | 2; error?: string }> {
  const { logger, deadline } = options;
  let held: HeldLease | undefined;
  try {
    // Loaded only here: a run without a hand-over never loads the Kubernetes client.
    const { acquireHandoverLease } = await import('./kubernetes/handover.js');
    held = await acquireHandoverLease({
      namespace: options.namespace,
      name: options.name,
      logger,
      waitUntil: options.windowEndAt,
      signal: deadline.signal,
      onLost: () => deadline.stop(LEASE_LOST),
      // Taken over from the last holder with the Lease, handed to the next one: the stuck rule counts across runs, and
      // no API is called sooner than it asked.
      sightings: processPendingSightings(),
      apiRetries: options.apiRetries,
      ...(options.owner ? { owner: options.owner } : {}),
    });
  } catch (error) {
    // No credentials to reach the API server with (the Lease calls themselves are retried while waiting).
    return { exitCode: 2, error: errorMessage(error) };
  }
  if (held) {
    // Checked before each send, so a run paused past its renew deadline sends nothing when it resumes.
    const lease = held;
    deadline.stopUnless(() => lease.held(), LEASE_LOST);
    return held;
  }
  // Another window held it throughout (or SIGTERM came first): this run did nothing and reports nothing.
  if (!options.terminated()) logger.warn('the window ended before the coordinator lease was free: nothing was sent');
  return { exitCode: 0 };
}

/** One coordinator run: a window or one cycle on every chain, then the report and the heartbeat. */
export async function runCoordinator(options: CoordinatorRunOptions): Promise<CoordinatorRunOutcome> {
  const { config, logger, kubernetes, cacheDir, windowMs, pollIntervalMs, terminate } = options;
  const wallets = sponsorWallets(config.nodeSettings.nodeWalletMnemonic);
  const localRequestLog = new FileRequestLog(cacheDir);
  const cache = kubernetes?.cache ?? new FileResponseCache(cacheDir);
  // Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set (spec.telemetry.otlpEndpoint in the operator's pods).
  const tracer = tracerFromEnvironment(process.env, 'coordinator');
  // The window's hard end, or SIGTERM: nothing new is signed or sent after it (src/node/deadline.ts).
  const deadline = WorkDeadline.after(windowMs === undefined ? undefined : windowMs + HARD_END_MARGIN_MS);
  const onTerminate = () => {
    logger.warn('SIGTERM: nothing new is sent; the run reports what it did and exits');
    deadline.stop('SIGTERM');
  };
  if (terminate.aborted) onTerminate();
  else terminate.addEventListener('abort', onTerminate, { once: true });
  deadline.signal.addEventListener('abort', () => {
    if (!terminate.aborted && deadline.reason !== LEASE_LOST)
      logger.warn("the window's hard end: nothing new is sent; open requests wait for the next run");
  });
  // In a pod, worker Jobs call the APIs and this process signs and sends; locally both halves run here.
  const apiRetries = apiRetriesOf(options);
  const chainContext = {
    config,
    wallets,
    logger,
    cache,
    tracer,
    deadline,
    apiRetries,
    ...(options.gasPriceCeilings ? { gasPriceCeilings: options.gasPriceCeilings } : {}),
    role: roleOf(options.standbyDelayBlocks),
  };
  const windowed = windowMs !== undefined && pollIntervalMs !== undefined;
  // A window's workers stay for it (docs/chain-cycle.md): their pods start while its first cycle runs.
  const windowWorkers = windowed ? kubernetes?.windowWorkers : undefined;
  await windowWorkers?.start({ config, deadline, logger });
  const executor = kubernetes
    ? new WorkerExecutor(chainContext, windowWorkers ?? kubernetes.workers)
    : new InProcessExecutor({
        ...chainContext,
        // A call over its API's budget waits for its turn until the window's end (the hard end's margin is for the
        // call and its send), else it is deferred and its request left open for the next poll or run.
        callEndpoint: callEndpointWaiting(
          budgetWaitWithin(() => deadline.timeLeftMs() - HARD_END_MARGIN_MS, deadline.signal),
        ),
      });
  const startTime = new Date();
  const started = performance.now();
  // Each run is a new process: the chain ids verified by the previous run are carried over, not asked again.
  const verifiedProviders = kubernetes?.verifiedProviders ?? fileVerifiedProvidersStore(cacheDir);
  const providers = await loadProviderMemory(config, verifiedProviders, logger);
  // The last run's sightings of pending transactions and API retries: with the hand-over Lease they come with it, else
  // from here.
  const carried =
    options.handoverLease === undefined
      ? [
          {
            store: kubernetes?.pendingSightings ?? fileTextStore(cacheDir, PENDING_SIGHTINGS_FILE),
            state: processPendingSightings(),
            words: SIGHTINGS_WORDS,
          },
          {
            store: kubernetes?.apiRetries ?? fileTextStore(cacheDir, API_RETRIES_FILE),
            state: apiRetries,
            words: API_RETRIES_WORDS,
          },
        ]
      : [];
  const loaded = await Promise.all(
    carried.map(({ store, state, words }) => loadHandedOver(store, state, logger, words)),
  );
  const deps = {
    executor,
    logger,
    wallets,
    tracer,
    providerMemory: providers.memory,
    standbyDelayBlocks: options.standbyDelayBlocks,
    apiRetries,
  };
  // With a hand-over the window's end stays where the start put it, whenever the lease comes free.
  const windowEndAt = deadline.hardEndAt === undefined ? undefined : deadline.hardEndAt - HARD_END_MARGIN_MS;
  let held: HeldLease | undefined;
  if (options.handoverLease && windowEndAt !== undefined) {
    const lease = await holdHandoverLease({
      ...options.handoverLease,
      logger,
      windowEndAt,
      deadline,
      terminated: () => terminate.aborted,
      apiRetries,
    });
    if ('exitCode' in lease) {
      deadline.finish();
      terminate.removeEventListener('abort', onTerminate);
      return { ...lease, workersStopped: windowWorkers?.stop() };
    }
    held = lease;
  }
  const summary =
    windowMs !== undefined && pollIntervalMs !== undefined
      ? await runWindow(config, deps, {
          windowMs: held && windowEndAt !== undefined ? Math.max(0, windowEndAt - monotonicNow()) : windowMs,
          pollIntervalMs,
          deadline,
          // Run by hand, each poll's requests are in the local log as soon as it is done (`oracle-node request`).
          ...(kubernetes
            ? {}
            : { afterCycle: (cycle) => recordRequestsLocally(localRequestLog, cycle, new Date(), logger) }),
        })
      : await settleBy(runCycle(config, deps), deadline, emptySummary);
  // Right after the last poll's cycle (its sends are with the provider): the next window starts at once.
  await held?.release();
  // The work is over: the hard end no longer applies to the report (SIGTERM is still heard, so it is not fatal).
  deadline.finish();
  // The window's workers are told it is over; not waited for before the report (the grace after SIGTERM is short).
  const workersStopped = windowWorkers?.stop();
  // After SIGTERM the grace period is short: the report comes first and is not waited for beyond its budget.
  const report = async (heartbeat: ReturnType<typeof heartbeatResult> | undefined) => {
    if (kubernetes) {
      try {
        await kubernetes.report(summary, {
          startTime,
          durationMs: performance.now() - started,
          ...(heartbeat ? { heartbeat } : {}),
          ...(options.metricsTopSponsors === undefined ? {} : { topSponsors: options.metricsTopSponsors }),
        });
      } catch (error) {
        logger.warn({ err: errorMessage(error) }, 'could not write the cycle report');
      }
    } else if (!windowed) {
      await recordRequestsLocally(localRequestLog, summary, startTime, logger);
    }
  };
  if (terminate.aborted) {
    await withinBudget(report(undefined), REPORT_AFTER_SIGTERM_MS);
  } else {
    await saveProviderMemory(config, verifiedProviders, providers, logger);
    await Promise.all(
      carried.map(({ store, state, words }, i) => saveHandedOver(store, state, loaded[i], logger, words)),
    );
    await tracer.flush();
    // As the reference: after every cycle. In a pod, the gateways are reported at the URL callers use.
    const heartbeat = await sendHeartbeat(
      config,
      {
        ...(kubernetes
          ? { kubernetes: { ...(kubernetes.gatewayUrl ? { gatewayUrl: kubernetes.gatewayUrl } : {}) } }
          : {}),
        ...(options.heartbeatUsage ? { usage: lastCycleCounts(summary, performance.now() - started) } : {}),
      },
      { logger },
    );
    await report(heartbeatResult(heartbeat));
  }
  await workersStopped;
  terminate.removeEventListener('abort', onTerminate);
  return { summary, abandoned: deadline.stopped };
}

export type LocalNodeOptions = RunFlags & {
  config: Config;
  logger: Logger;
  wallets: SponsorWallets;
  /** Milliseconds from one cycle's start to the next one's. */
  intervalMs: number;
  /** With it, each cycle is a window that polls every pollIntervalMs until the next one starts. */
  pollIntervalMs?: number;
  /** Where the cycle metrics are registered (the gateway's /metrics); without one they are kept but not served. */
  registry?: Registry;
  /** Stops the loop after the cycle in flight (a window ends early). */
  stop: AbortSignal;
};

/** The local node's loop (`oracle-node start`): a cycle (or a window) every interval until stopped. */
export async function runLocalNode(options: LocalNodeOptions): Promise<void> {
  const { config, logger, wallets, intervalMs, pollIntervalMs, stop } = options;
  const requestLog = new FileRequestLog(options.cacheDir);
  const tracer = tracerFromEnvironment(process.env, 'coordinator');
  // One for the node's life: a request deferred in one cycle is retried in a later one.
  const apiRetries = apiRetriesOf(options);
  /** When the cycle in flight must be done (the next one's start), on the monotonic clock. */
  let cycleEndAt = monotonicNow();
  const executor = new InProcessExecutor({
    config,
    wallets,
    logger,
    apiRetries,
    cache: new FileResponseCache(options.cacheDir),
    tracer,
    ...(options.gasPriceCeilings ? { gasPriceCeilings: options.gasPriceCeilings } : {}),
    role: roleOf(options.standbyDelayBlocks),
    // A call over its API's budget waits for its turn within its cycle, leaving the call and its send the margin a
    // coordinator's window leaves them, else it is deferred to the next cycle. The gateway's calls never wait.
    callEndpoint: callEndpointWaiting(budgetWaitWithin(() => cycleEndAt - monotonicNow() - HARD_END_MARGIN_MS, stop)),
  });
  const metrics = cycleMetrics(options.registry ?? createMetricsRegistry(), {
    ...(options.metricsTopSponsors === undefined ? {} : { topSponsors: options.metricsTopSponsors }),
  });
  while (!stop.aborted) {
    const started = Date.now();
    const startedMs = performance.now();
    // The heartbeat's counts of this cycle (`--heartbeat-usage`); none after a cycle that failed.
    let usage: LastCycleCounts | undefined;
    cycleEndAt = monotonicNow() + intervalMs;
    try {
      const deps = { executor, logger, wallets, tracer, standbyDelayBlocks: options.standbyDelayBlocks, apiRetries };
      // With polling, each cycle is a window that ends before the next one starts.
      const summary = pollIntervalMs
        ? await runWindow(config, deps, {
            windowMs: intervalMs,
            pollIntervalMs,
            signal: stop,
            // Each poll's requests are in the log as soon as it is done: `request` finds them before the window ends.
            afterCycle: (cycle) => recordRequestsLocally(requestLog, cycle, new Date(), logger),
          })
        : await runCycle(config, deps);
      await tracer.flush();
      metrics.observe(summary, (Date.now() - started) / 1000);
      if (options.heartbeatUsage) usage = lastCycleCounts(summary, performance.now() - startedMs);
      if (!pollIntervalMs) await recordRequestsLocally(requestLog, summary, new Date(started), logger);
    } catch (error) {
      // runCycle isolates chains and providers; anything reaching here is a bug, never fatal for the loop.
      logger.error({ err: errorMessage(error) }, 'cycle failed');
      metrics.observe(undefined, (Date.now() - started) / 1000);
    }
    // sendHeartbeat never throws: a failure is logged and counted.
    await sendHeartbeat(config, usage ? { usage } : {}, { logger });
    const wait = Math.max(0, intervalMs - (Date.now() - started));
    if (stop.aborted) break;
    await sleepUnlessAborted(wait, stop);
  }
}
