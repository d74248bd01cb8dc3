// `oracle-node start -c config.json -s secrets.env [--interval-ms N]`: the local deployment in one
// process: the gateway server plus the request-response cycle every minute, a heartbeat after each cycle,
// graceful shutdown on SIGTERM/SIGINT. A bad config or a port in use stops start-up with a clear message;
// an unreachable provider is only logged, and retried next cycle.

import { sponsorWallets } from '../chain/sponsor-wallets.js';
import { errorMessage } from '../common/errors.js';
import { type GatewayServer, startGatewayServer } from '../gateway/server.js';
import { FileResponseCache } from '../node/cache.js';
import { roleOf, runCycle } from '../node/cycle.js';
import { InProcessExecutor } from '../node/executor.js';
import { sendHeartbeat } from '../node/heartbeat.js';
import { createNodeLogger } from '../node/logger.js';
import { cycleMetrics } from '../node/metrics.js';
import { callEndpoint } from '../node/ois-adapter.js';
import { FileRequestLog } from '../node/request-log.js';
import { runWindow } from '../node/window.js';
import { createMetricsRegistry } from '../observability/index.js';
import { tracerFromEnvironment } from '../observability/tracing.js';
import {
  parseCommandArgs,
  parseGasPriceCeilings,
  parseServerPorts,
  parseStandbyDelay,
  parseWindowOptions,
} from './args.js';
import { loadCommandConfig } from './command-config.js';
import { DEFAULT_CACHE_DIR, recordRequestsLocally } from './coordinator.js';
import type { Subcommand } from './subcommand.js';

export const DEFAULT_CYCLE_INTERVAL_MS = 60_000;

const HELP = `Usage: oracle-node start -c config.json [-s secrets.env] [--interval-ms N] [--poll-interval SECONDS] [--cache-dir DIR] [--port N] [--metrics-port N] [--no-gateway]
                         [--max-gas-price CHAIN_ID=GWEI ...] [--standby-delay-blocks N]

Runs the node locally: gateway server and a request-response cycle every minute (or every N ms).
--poll-interval makes each cycle a window, as \`oracle-node coordinator --window\`: after the cycle, the new
blocks are polled every SECONDS until the next cycle.
--metrics-port serves /healthz, /readyz and /metrics on that port only, not on the gateway port.
--max-gas-price is the most per gas the node pays on a chain, in gwei (repeatable): a transaction priced above it
is not sent and its request waits.
--standby-delay-blocks makes this node a standby of the same node deployed elsewhere: it serves a request only
once it has been servable (confirmed) for N blocks and is still open; 0, the default, is the primary.
Stops gracefully on SIGTERM or SIGINT.
`;

export const command: Subcommand = {
  async run(argv) {
    const parsed = parseCommandArgs(
      argv,
      {
        config: { type: 'string', short: 'c' },
        secrets: { type: 'string', short: 's' },
        'interval-ms': { type: 'string' },
        'poll-interval': { type: 'string' },
        'cache-dir': { type: 'string' },
        port: { type: 'string' },
        'metrics-port': { type: 'string' },
        'no-gateway': { type: 'boolean' },
        'max-gas-price': { type: 'string', multiple: true },
        'standby-delay-blocks': { type: 'string' },
      },
      HELP,
    );
    if ('exitCode' in parsed) return parsed.exitCode;
    const { values } = parsed;
    if (!values.config) {
      process.stderr.write(`Missing -c config.json\n\n${HELP}`);
      return 2;
    }
    const intervalMs = values['interval-ms'] ? Number(values['interval-ms']) : DEFAULT_CYCLE_INTERVAL_MS;
    if (!Number.isInteger(intervalMs) || intervalMs < 100) {
      process.stderr.write('--interval-ms must be an integer >= 100\n');
      return 2;
    }
    const polling = parseWindowOptions(values, { windowRequired: false });
    if ('exitCode' in polling) return polling.exitCode;
    const ports = parseServerPorts(values);
    if ('exitCode' in ports) return ports.exitCode;
    const limits = parseGasPriceCeilings(values['max-gas-price']);
    if ('exitCode' in limits) return limits.exitCode;
    const standby = parseStandbyDelay(values['standby-delay-blocks']);
    if ('exitCode' in standby) return standby.exitCode;
    const role = roleOf(standby.standbyDelayBlocks);
    const config = await loadCommandConfig(values.config, values.secrets);
    if (typeof config === 'number') return config;
    if (config.nodeSettings.cloudProvider.type !== 'local') {
      process.stderr.write(
        `oracle-node start runs the local deployment; nodeSettings.cloudProvider.type is "${config.nodeSettings.cloudProvider.type}"\n`,
      );
      return 1;
    }
    const logger = createNodeLogger(config.nodeSettings);
    const wallets = sponsorWallets(config.nodeSettings.nodeWalletMnemonic);
    const cacheDir = values['cache-dir'] ?? DEFAULT_CACHE_DIR;
    const cache = new FileResponseCache(cacheDir);
    const requestLog = new FileRequestLog(cacheDir);
    const tracer = tracerFromEnvironment(process.env, 'coordinator');
    const executor = new InProcessExecutor({
      config,
      wallets,
      logger,
      cache,
      tracer,
      ...(limits.ceilings ? { gasPriceCeilings: limits.ceilings } : {}),
      role,
    });

    let gateway: GatewayServer | undefined;
    if (!values['no-gateway']) {
      try {
        gateway = await startGatewayServer(config, { callEndpoint, keepProcessingWarm: true, ...ports });
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        process.stderr.write(
          code === 'EADDRINUSE'
            ? `Cannot start the gateway server: port ${values.port ?? 'configured'} is already in use\n`
            : `Cannot start the gateway server: ${errorMessage(error)}\n`,
        );
        return 1;
      }
    }
    // Cycle metrics join the gateway's /metrics; without a gateway they are kept but not served.
    const metrics = cycleMetrics(gateway?.gateway.registry ?? createMetricsRegistry());

    let stopping = false;
    let wake: (() => void) | undefined;
    const stopped = new AbortController();
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      stopped.abort();
      logger.info({ signal }, 'stopping after the current cycle');
      wake?.();
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));

    logger.info(
      {
        nodeAddress: wallets.nodeAddress,
        role,
        intervalMs,
        gatewayPort: gateway?.port,
        metricsPort: gateway?.metricsPort,
      },
      'node started',
    );
    while (!stopping) {
      const started = Date.now();
      try {
        const deps = { executor, logger, wallets, tracer, standbyDelayBlocks: standby.standbyDelayBlocks };
        // With polling, each cycle is a window that ends before the next one starts.
        const summary = polling.pollIntervalMs
          ? await runWindow(config, deps, {
              windowMs: intervalMs,
              pollIntervalMs: polling.pollIntervalMs,
              signal: stopped.signal,
              // Each poll's requests are in the log as soon as it is done: `request` finds them before the window ends.
              afterCycle: (cycle) => recordRequestsLocally(requestLog, cycle, new Date(), logger),
            })
          : await runCycle(config, deps);
        await tracer.flush();
        metrics.observe(summary, (Date.now() - started) / 1000);
        if (!polling.pollIntervalMs) await recordRequestsLocally(requestLog, summary, new Date(started), logger);
      } catch (error) {
        // runCycle isolates chains and providers; anything reaching here is a bug, never fatal for the loop.
        logger.error({ err: errorMessage(error) }, 'cycle failed');
        metrics.observe(undefined, (Date.now() - started) / 1000);
      }
      // sendHeartbeat never throws: a failure is logged and counted.
      await sendHeartbeat(config, {}, { logger });
      const wait = Math.max(0, intervalMs - (Date.now() - started));
      if (stopping) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, wait);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    await gateway?.close();
    logger.info('node stopped');
    return 0;
  },
};
