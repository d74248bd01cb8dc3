// `oracle-node coordinator -c config.json -s secrets.env`: one request-response cycle, then exit; with
// `--window <s> [--poll-interval <s>]` the first cycle and then a poll every interval until the window ends
// (src/node/window.ts), reported as one cycle. Prints a JSON summary (counts) on stdout; logs go to stderr.

import { sponsorWallets } from '../chain/sponsor-wallets.js';
import { errorMessage } from '../common/errors.js';
import { FileResponseCache } from '../node/cache.js';
import { runCycle } from '../node/cycle.js';
import { InProcessExecutor, WorkerExecutor } from '../node/executor.js';
import { heartbeatResult, sendHeartbeat } from '../node/heartbeat.js';
import { coordinatorKubernetes } from '../node/kubernetes/index.js';
import { createNodeLogger } from '../node/logger.js';
import { cycleRequestRecords, FileRequestLog } from '../node/request-log.js';
import { fileVerifiedProvidersStore, loadProviderMemory, saveProviderMemory } from '../node/verified-providers.js';
import { runWindow } from '../node/window.js';
import { registerSecret } from '../observability/index.js';
import { tracerFromEnvironment } from '../observability/tracing.js';
import { parseCommandArgs, parseGasPriceCeilings, parseWindowOptions } from './args.js';
import { engineEnvironment, loadCommandConfig } from './command-config.js';
import type { Subcommand } from './subcommand.js';

export const DEFAULT_CACHE_DIR = '/tmp/oracle-node-cache';

const HELP = `Usage: oracle-node coordinator -c config.json [-s secrets.env] [--cache-dir DIR] [--details]
                               [--window SECONDS [--poll-interval SECONDS]] [--max-gas-price CHAIN_ID=GWEI ...]

Runs one request-response cycle on every configured chain, sends the heartbeat when
nodeSettings.heartbeat.enabled, and exits.
  -c, --config         config.json (default: $ORACLE_NODE_CONFIG, set in the operator's pods)
  -s, --secrets        secrets.env (values for \${NAME} in the config); default: the environment
      --cache-dir      directory of the response cache (default ${DEFAULT_CACHE_DIR})
      --details        include every request outcome in the summary
      --window         after the first cycle, keep polling for new blocks until SECONDS after the start,
                       then report the whole window as one cycle and exit
      --poll-interval  seconds between polls in a window (default 1)
      --max-gas-price  the most per gas the node pays on a chain, in gwei (repeatable); a transaction priced
                       above it is not sent and its request waits
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
        'max-gas-price': { type: 'string', multiple: true },
      },
      HELP,
    );
    if ('exitCode' in parsed) return parsed.exitCode;
    const { values } = parsed;
    const windowOptions = parseWindowOptions(values, { windowRequired: true });
    if ('exitCode' in windowOptions) return windowOptions.exitCode;
    const limits = parseGasPriceCeilings(values['max-gas-price']);
    if ('exitCode' in limits) return limits.exitCode;
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
    const cache = kubernetes?.cache ?? new FileResponseCache(cacheDir);
    // Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set (spec.telemetry.otlpEndpoint in the operator's pods).
    const tracer = tracerFromEnvironment(process.env, 'coordinator');
    // In a pod, worker Jobs call the APIs and this process signs and sends; locally both halves run here.
    const chainContext = {
      config,
      wallets,
      logger,
      cache,
      tracer,
      ...(limits.ceilings ? { gasPriceCeilings: limits.ceilings } : {}),
    };
    const executor = kubernetes
      ? new WorkerExecutor(chainContext, kubernetes.workers)
      : new InProcessExecutor(chainContext);
    const startTime = new Date();
    const started = performance.now();
    // Each run is a new process: the chain ids verified by the previous run are carried over, not asked again.
    const verifiedProviders = kubernetes?.verifiedProviders ?? fileVerifiedProvidersStore(cacheDir);
    const providers = await loadProviderMemory(config, verifiedProviders, logger);
    const deps = { executor, logger, wallets, tracer, providerMemory: providers.memory };
    let summary: Awaited<ReturnType<typeof runCycle>>;
    if (windowOptions.windowMs !== undefined && windowOptions.pollIntervalMs !== undefined) {
      // SIGTERM ends the window early; what was done so far is reported.
      const ended = new AbortController();
      const end = () => ended.abort();
      process.once('SIGTERM', end);
      try {
        summary = await runWindow(config, deps, {
          windowMs: windowOptions.windowMs,
          pollIntervalMs: windowOptions.pollIntervalMs,
          signal: ended.signal,
        });
      } finally {
        process.off('SIGTERM', end);
      }
    } else summary = await runCycle(config, deps);
    await saveProviderMemory(config, verifiedProviders, providers, logger);
    await tracer.flush();
    // As the reference: after every cycle. In a pod, the gateways are reported at the URL callers use.
    const heartbeat = await sendHeartbeat(
      config,
      kubernetes ? { kubernetes: { ...(kubernetes.gatewayUrl ? { gatewayUrl: kubernetes.gatewayUrl } : {}) } } : {},
      { logger },
    );
    if (kubernetes) {
      try {
        await kubernetes.report(summary, {
          startTime,
          durationMs: performance.now() - started,
          heartbeat: heartbeatResult(heartbeat),
        });
      } catch (error) {
        logger.warn({ err: errorMessage(error) }, 'could not write the cycle report');
      }
    } else {
      await recordRequestsLocally(new FileRequestLog(cacheDir), summary, startTime, logger);
    }
    const { results, seen, ...counts } = summary;
    process.stdout.write(`${JSON.stringify(values.details ? summary : counts)}\n`);
    void results;
    void seen;
    return 0;
  },
};
