// `oracle-node coordinator -c config.json -s secrets.env`: one request-response cycle, then exit; with
// `--window <s> [--poll-interval <s>]` the first cycle and then a poll every interval until the window ends
// (src/node/window.ts), reported as one cycle. With `--handover-lease NAME` the window sends only while it holds that
// Lease (src/node/kubernetes/handover.ts): the next run waits for it, so windows overlap without a gap and never send
// at once. Prints a JSON summary (counts) on stdout; logs go to stderr.

import { sponsorWallets } from '../chain/sponsor-wallets.js';
import { errorMessage } from '../common/errors.js';
import { monotonicNow } from '../common/time.js';
import { ENV } from '../contract/pods.js';
import { FileResponseCache } from '../node/cache.js';
import { roleOf, runCycle } from '../node/cycle.js';
import { HARD_END_MARGIN_MS, settleBy, WorkDeadline } from '../node/deadline.js';
import { InProcessExecutor, WorkerExecutor } from '../node/executor.js';
import { heartbeatResult, sendHeartbeat } from '../node/heartbeat.js';
import type { HeldLease } from '../node/kubernetes/handover.js';
import { coordinatorKubernetes } from '../node/kubernetes/index.js';
import { createNodeLogger } from '../node/logger.js';
import { loadPendingSightings, PENDING_SIGHTINGS_FILE, savePendingSightings } from '../node/pending-sightings.js';
import { cycleRequestRecords, FileRequestLog } from '../node/request-log.js';
import { processPendingSightings } from '../node/shard.js';
import {
  fileTextStore,
  fileVerifiedProvidersStore,
  loadProviderMemory,
  saveProviderMemory,
} from '../node/verified-providers.js';
import { emptySummary, runWindow } from '../node/window.js';
import { registerSecret } from '../observability/index.js';
import { tracerFromEnvironment } from '../observability/tracing.js';
import { parseCommandArgs, parseGasPriceCeilings, parseStandbyDelay, parseWindowOptions } from './args.js';
import { engineEnvironment, loadCommandConfig } from './command-config.js';
import type { Subcommand } from './subcommand.js';

export const DEFAULT_CACHE_DIR = '/tmp/oracle-node-cache';
/**
 * After SIGTERM, how long the cycle report (and request log) may take to write: the run must exit inside the pod's
 * grace period (the operator's COORDINATOR_GRACE_SECONDS, 5 s), after SETTLE_AFTER_STOP_MS for the cycle in flight.
 */
export const REPORT_AFTER_SIGTERM_MS = 3_000;
/** The deadline's reason when the hand-over lease is lost mid-window (src/node/kubernetes/handover.ts). */
export const LEASE_LOST = 'lease lost';

const HELP = `Usage: oracle-node coordinator -c config.json [-s secrets.env] [--cache-dir DIR] [--details]
                               [--window SECONDS [--poll-interval SECONDS] [--handover-lease NAME]]
                               [--max-gas-price CHAIN_ID=GWEI ...] [--standby-delay-blocks N]

Runs one request-response cycle on every configured chain, sends the heartbeat when
nodeSettings.heartbeat.enabled, and exits.
  -c, --config         config.json (default: $ORACLE_NODE_CONFIG, set in the operator's pods)
  -s, --secrets        secrets.env (values for \${NAME} in the config); default: the environment
      --cache-dir      directory of the response cache (default ${DEFAULT_CACHE_DIR})
      --details        include every request outcome in the summary
      --window         after the first cycle, keep polling for new blocks until SECONDS after the start,
                       then report the whole window as one cycle and exit
      --poll-interval  seconds between polls in a window (default 1)
      --handover-lease the coordination.k8s.io Lease (in $${ENV.namespace}) the window must hold to send: the run
                       waits for it until its window ends, renews it, stops sending if it loses it and hands
                       it back after its last poll; the window counts from the process start (the operator's
                       runs: one per node, so the next run takes over where this one ends)
      --max-gas-price  the most per gas the node pays on a chain, in gwei (repeatable); a transaction priced
                       above it is not sent and its request waits
      --standby-delay-blocks  a standby of the same node deployed elsewhere: serves a request only once it has
                       been servable for N blocks and is still open (0, the default: the primary)

Nothing is sent after the window's hard end (its end + ${HARD_END_MARGIN_MS / 1000} s) or after SIGTERM: the requests
left stay open for the next run. SIGTERM stops the run; the report is written and the process exits 0.
`;

/** A local run keeps its request log in the cache directory (what `oracle-node request -c` reads). */
export async function recordRequestsLocally(
  log: FileRequestLog,
  summary: Parameters<typeof cycleRequestRecords>[0],
  time: Date,
  logger: ReturnType<typeof createNodeLogger>,
): Promise<void> {
  try {
    await log.record(cycleRequestRecords(summary, { time }));
  } catch (error) {
    logger.warn({ err: errorMessage(error) }, 'could not write the request log');
  }
}

/** Waits for `work` at most `ms` (an unanswered write must not hold the exit past the grace period). */
async function withinBudget(work: Promise<void>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([work, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/** The OracleNode that owns the Lease, from the pod's variables (the operator sets both); none when run by hand. */
function leaseOwner(env: NodeJS.ProcessEnv): { owner?: { name: string; uid: string } } {
  const name = env[ENV.oracleNode];
  const uid = env[ENV.oracleNodeUid];
  return name && uid ? { owner: { name, uid } } : {};
}

/**
 * Waits for the hand-over Lease until the window's end (src/node/kubernetes/handover.ts): the held Lease, whose loss
 * stops the deadline, or the exit code of a run that never got it (0, nothing done; 2, no credentials for the Lease).
 */
async function holdHandoverLease(options: {
  namespace: string;
  name: string;
  logger: ReturnType<typeof createNodeLogger>;
  windowEndAt: number;
  deadline: WorkDeadline;
  terminated: () => boolean;
  owner?: { name: string; uid: string };
}): Promise<HeldLease | number> {
  const { logger, deadline } = options;
  let held: HeldLease | undefined;
  try {
    // Loaded only here: a run without a hand-over never loads the Kubernetes client.
    const { acquireHandoverLease } = await import('../node/kubernetes/handover.js');
    held = await acquireHandoverLease({
      namespace: options.namespace,
      name: options.name,
      logger,
      waitUntil: options.windowEndAt,
      signal: deadline.signal,
      onLost: () => deadline.stop(LEASE_LOST),
      // Taken over from the last holder with the Lease, handed to the next one: the stuck rule counts across runs.
      sightings: processPendingSightings(),
      ...(options.owner ? { owner: options.owner } : {}),
    });
  } catch (error) {
    // No credentials to reach the API server with (the Lease calls themselves are retried while waiting).
    process.stderr.write(`--handover-lease: cannot reach the Lease: ${errorMessage(error)}\n`);
    return 2;
  }
  if (held) {
    // Checked before each send, so a run paused past its renew deadline sends nothing when it resumes.
    const lease = held;
    deadline.stopUnless(() => lease.held(), LEASE_LOST);
    return held;
  }
  // Another window held it throughout (or SIGTERM came first): this run did nothing and reports nothing.
  if (!options.terminated()) logger.warn('the window ended before the coordinator lease was free: nothing was sent');
  const { results, seen, ...counts } = emptySummary();
  void results;
  void seen;
  process.stdout.write(`${JSON.stringify(counts)}\n`);
  // The Lease client's connections do not hold the exit.
  setTimeout(() => process.exit(), 0).unref();
  return 0;
}

export const command: Subcommand = {
  async run(argv) {
    const parsed = parseCommandArgs(
      argv,
      {
        config: { type: 'string', short: 'c' },
        secrets: { type: 'string', short: 's' },
        'cache-dir': { type: 'string' },
        details: { type: 'boolean' },
        window: { type: 'string' },
        'poll-interval': { type: 'string' },
        'handover-lease': { type: 'string' },
        'max-gas-price': { type: 'string', multiple: true },
        'standby-delay-blocks': { type: 'string' },
      },
      HELP,
    );
    if ('exitCode' in parsed) return parsed.exitCode;
    const { values } = parsed;
    const windowOptions = parseWindowOptions(values, { windowRequired: true });
    if ('exitCode' in windowOptions) return windowOptions.exitCode;
    const handoverLease = values['handover-lease'];
    const leaseNamespace = process.env[ENV.namespace];
    if (handoverLease !== undefined && (windowOptions.windowMs === undefined || !leaseNamespace)) {
      process.stderr.write(`--handover-lease needs --window and $${ENV.namespace}\n`);
      return 2;
    }
    const limits = parseGasPriceCeilings(values['max-gas-price']);
    if ('exitCode' in limits) return limits.exitCode;
    const standby = parseStandbyDelay(values['standby-delay-blocks']);
    if ('exitCode' in standby) return standby.exitCode;
    const role = roleOf(standby.standbyDelayBlocks);
    const pod = engineEnvironment();
    const configPath = values.config ?? pod.configPath;
    if (!configPath) {
      process.stderr.write(`Missing -c config.json\n\n${HELP}`);
      return 2;
    }
    const config = await loadCommandConfig(configPath, values.secrets, 'coordinator');
    if (typeof config === 'number') return config;
    // Never in a log line, nor in the cycle report the operator turns into Events and status.
    registerSecret(config.nodeSettings.nodeWalletMnemonic);
    for (const chain of config.chains)
      for (const provider of Object.values(chain.providers)) registerSecret(provider.url);
    for (const credential of config.apiCredentials) registerSecret(credential.securitySchemeValue);
    const logger = createNodeLogger(config.nodeSettings, pod);
    const wallets = sponsorWallets(config.nodeSettings.nodeWalletMnemonic);
    // In a coordinator pod made by the operator: API calls in worker Jobs, the ConfigMap cache, a cycle report.
    let kubernetes: Awaited<ReturnType<typeof coordinatorKubernetes>>;
    try {
      kubernetes = await coordinatorKubernetes();
    } catch (error) {
      process.stderr.write(`${errorMessage(error)}\n`);
      return 2;
    }
    const cacheDir = values['cache-dir'] ?? DEFAULT_CACHE_DIR;
    const localRequestLog = new FileRequestLog(cacheDir);
    const cache = kubernetes?.cache ?? new FileResponseCache(cacheDir);
    // Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set (spec.telemetry.otlpEndpoint in the operator's pods).
    const tracer = tracerFromEnvironment(process.env, 'coordinator');
    // The window's hard end, or SIGTERM: nothing new is signed or sent after it (src/node/deadline.ts).
    const deadline = WorkDeadline.after(
      windowOptions.windowMs === undefined ? undefined : windowOptions.windowMs + HARD_END_MARGIN_MS,
    );
    let terminated = false;
    const terminate = () => {
      terminated = true;
      logger.warn('SIGTERM: nothing new is sent; the run reports what it did and exits');
      deadline.stop('SIGTERM');
    };
    process.once('SIGTERM', terminate);
    deadline.signal.addEventListener('abort', () => {
      if (!terminated && deadline.reason !== LEASE_LOST)
        logger.warn("the window's hard end: nothing new is sent; open requests wait for the next run");
    });
    // In a pod, worker Jobs call the APIs and this process signs and sends; locally both halves run here.
    const chainContext = {
      config,
      wallets,
      logger,
      cache,
      tracer,
      deadline,
      ...(limits.ceilings ? { gasPriceCeilings: limits.ceilings } : {}),
      role,
    };
    const windowed = windowOptions.windowMs !== undefined && windowOptions.pollIntervalMs !== undefined;
    // A window's workers stay for it (docs/chain-cycle.md): their pods start while its first cycle runs.
    const windowWorkers = windowed ? kubernetes?.windowWorkers : undefined;
    await windowWorkers?.start({ config, deadline, logger });
    const executor = kubernetes
      ? new WorkerExecutor(chainContext, windowWorkers ?? kubernetes.workers)
      : new InProcessExecutor(chainContext);
    const startTime = new Date();
    const started = performance.now();
    // Each run is a new process: the chain ids verified by the previous run are carried over, not asked again.
    const verifiedProviders = kubernetes?.verifiedProviders ?? fileVerifiedProvidersStore(cacheDir);
    const providers = await loadProviderMemory(config, verifiedProviders, logger);
    // The last run's sightings of pending transactions: with the hand-over Lease they come with it, else from here.
    const sightingsStore =
      handoverLease === undefined
        ? (kubernetes?.pendingSightings ?? fileTextStore(cacheDir, PENDING_SIGHTINGS_FILE))
        : undefined;
    const sightingsLoaded = sightingsStore
      ? await loadPendingSightings(sightingsStore, processPendingSightings(), logger)
      : undefined;
    const deps = {
      executor,
      logger,
      wallets,
      tracer,
      providerMemory: providers.memory,
      standbyDelayBlocks: standby.standbyDelayBlocks,
    };
    // With a hand-over the window's end stays where the start put it, whenever the lease comes free.
    const windowEndAt = deadline.hardEndAt === undefined ? undefined : deadline.hardEndAt - HARD_END_MARGIN_MS;
    let held: HeldLease | undefined;
    if (handoverLease !== undefined && leaseNamespace && windowEndAt !== undefined) {
      const lease = await holdHandoverLease({
        namespace: leaseNamespace,
        name: handoverLease,
        logger,
        windowEndAt,
        deadline,
        terminated: () => terminated,
        ...leaseOwner(process.env),
      });
      if (typeof lease === 'number') {
        deadline.finish();
        // The window's workers, started for a window this run never got, are told it is over.
        await windowWorkers?.stop();
        process.off('SIGTERM', terminate);
        return lease;
      }
      held = lease;
    }
    const summary =
      windowOptions.windowMs !== undefined && windowOptions.pollIntervalMs !== undefined
        ? await runWindow(config, deps, {
            windowMs:
              held && windowEndAt !== undefined ? Math.max(0, windowEndAt - monotonicNow()) : windowOptions.windowMs,
            pollIntervalMs: windowOptions.pollIntervalMs,
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
          });
        } catch (error) {
          logger.warn({ err: errorMessage(error) }, 'could not write the cycle report');
        }
      } else if (!windowed) {
        await recordRequestsLocally(localRequestLog, summary, startTime, logger);
      }
    };
    if (terminated) {
      await withinBudget(report(undefined), REPORT_AFTER_SIGTERM_MS);
    } else {
      await saveProviderMemory(config, verifiedProviders, providers, logger);
      if (sightingsStore)
        await savePendingSightings(sightingsStore, processPendingSightings(), sightingsLoaded, logger);
      await tracer.flush();
      // As the reference: after every cycle. In a pod, the gateways are reported at the URL callers use.
      const heartbeat = await sendHeartbeat(
        config,
        kubernetes ? { kubernetes: { ...(kubernetes.gatewayUrl ? { gatewayUrl: kubernetes.gatewayUrl } : {}) } } : {},
        { logger },
      );
      await report(heartbeatResult(heartbeat));
    }
    await workersStopped;
    process.off('SIGTERM', terminate);
    // Work abandoned at the deadline (an API that never answers) is not waited for: the run ends once reported.
    if (deadline.stopped) setTimeout(() => process.exit(), 0).unref();
    const { results, seen, ...counts } = summary;
    process.stdout.write(`${JSON.stringify(values.details ? summary : counts)}\n`);
    void results;
    void seen;
    return 0;
  },
};
