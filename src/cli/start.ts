// `oracle-node start -c config.json -s secrets.env [--interval-ms N]`: the local deployment in one
// process: the gateway server plus the request-response cycle every minute, a heartbeat after each cycle,
// graceful shutdown on SIGTERM/SIGINT. A bad config or a port in use stops start-up with a clear message;
// an unreachable provider is only logged, and retried next cycle.

import { sponsorWallets } from '../chain/sponsor-wallets.js';
import { type GatewayServer, startGatewayServer } from '../gateway/server.js';
import { roleOf } from '../node/cycle.js';
import { createNodeLogger } from '../node/logger.js';
import { callEndpoint } from '../node/ois-adapter.js';
import { runLocalNode } from '../node/run.js';
import { DEFAULT_API_RETRY_WINDOW_SECONDS } from '../ois/deferral.js';
import { API_LIMIT_OPTIONS, API_LIMIT_OPTIONS_HELP, applyApiRateLimits } from './api-limit-options.js';
import {
  parseApiRetryWindow,
  parseCommandArgs,
  parseGasPriceCeilings,
  parseServerPorts,
  parseStandbyDelay,
  parseWindowOptions,
} from './args.js';
import { CALLER_OPTIONS, CALLER_OPTIONS_HELP, callerSettings, loadCallers } from './caller-options.js';
import { loadCommandConfig, parseTopSponsors, USAGE_OPTIONS_HELP } from './command-config.js';
import { DEFAULT_CACHE_DIR } from './coordinator.js';
import { cannotListen, onStopSignals } from './lifecycle.js';
import type { Subcommand } from './subcommand.js';

export const DEFAULT_CYCLE_INTERVAL_MS = 60_000;

const HELP = `Usage: oracle-node start -c config.json [-s secrets.env] [--interval-ms N] [--poll-interval SECONDS] [--cache-dir DIR] [--port N] [--metrics-port N] [--no-gateway]
                         [--max-gas-price CHAIN_ID=GWEI ...] [--standby-delay-blocks N] [--api-retry-window SECONDS]
                         [--metrics-top-sponsors N] [--heartbeat-usage]
                         [--callers DIR [--caller-rate NAME=N/s ...] [--default-caller-rate N/s]]
                         [--api-rate-limit TITLE=N/s ...]

Runs the node locally: gateway server and a request-response cycle every minute (or every N ms).
--poll-interval makes each cycle a window, as \`oracle-node coordinator --window\`: after the cycle, the new
blocks are polled every SECONDS until the next cycle.
--metrics-port serves /healthz, /readyz and /metrics on that port only, not on the gateway port.
--max-gas-price is the most per gas the node pays on a chain, in gwei (repeatable): a transaction priced above it
is not sent and its request waits.
--standby-delay-blocks makes this node a standby of the same node deployed elsewhere: it serves a request only
once it has been servable (confirmed) for N blocks and is still open; 0, the default, is the primary.
--api-retry-window: a request whose API fails for now (429, 408, 5xx, no answer) stays open and is retried with
back-off, never sooner than the API's Retry-After; it is failed on chain only once older than SECONDS (default
${DEFAULT_API_RETRY_WINDOW_SECONDS}; 0: at once, as the reference does).
${USAGE_OPTIONS_HELP}
The gateway's callers (keys and rates, as \`oracle-node gateway\`):
${CALLER_OPTIONS_HELP}
The APIs' rate budgets, one for the cycles and the gateway together (a cycle's call waits for its turn within its
cycle, a gateway's is answered 429 at once):
${API_LIMIT_OPTIONS_HELP}
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
        'metrics-top-sponsors': { type: 'string' },
        'heartbeat-usage': { type: 'boolean' },
        'api-retry-window': { type: 'string' },
        ...CALLER_OPTIONS,
        ...API_LIMIT_OPTIONS,
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
    const sponsors = parseTopSponsors(values['metrics-top-sponsors']);
    if ('exitCode' in sponsors) return sponsors.exitCode;
    const retries = parseApiRetryWindow(values['api-retry-window']);
    if ('exitCode' in retries) return retries.exitCode;
    const callerFlags = callerSettings(values);
    if ('error' in callerFlags) {
      process.stderr.write(`${callerFlags.error}\n\n${HELP}`);
      return 2;
    }
    if (callerFlags.settings && values['no-gateway']) {
      process.stderr.write(`--callers needs the gateway (not --no-gateway)\n\n${HELP}`);
      return 2;
    }
    const config = await loadCommandConfig(values.config, values.secrets);
    if (typeof config === 'number') return config;
    if (config.nodeSettings.cloudProvider.type !== 'local') {
      process.stderr.write(
        `oracle-node start runs the local deployment; nodeSettings.cloudProvider.type is "${config.nodeSettings.cloudProvider.type}"\n`,
      );
      return 1;
    }
    // No wait by default, so the gateway answers 429 at once; each cycle gives its calls the wait its interval leaves.
    const budgets = applyApiRateLimits(values['api-rate-limit'], config.ois, { defaultMaxWaitMs: 0 });
    if ('error' in budgets) {
      process.stderr.write(`${budgets.error}\n\n${HELP}`);
      return 2;
    }
    const logger = createNodeLogger(config.nodeSettings);
    const wallets = sponsorWallets(config.nodeSettings.nodeWalletMnemonic);

    const loaded = await loadCallers(callerFlags.settings, logger);
    if ('exitCode' in loaded) return loaded.exitCode;
    const { callers } = loaded;
    let gateway: GatewayServer | undefined;
    if (!values['no-gateway']) {
      try {
        gateway = await startGatewayServer(config, {
          callEndpoint,
          keepProcessingWarm: true,
          ...ports,
          ...(callers ? { callers } : {}),
        });
      } catch (error) {
        process.stderr.write(cannotListen('gateway server', values.port, error));
        return 1;
      }
    }

    const stopped = new AbortController();
    const stopListening = onStopSignals((signal) => {
      if (stopped.signal.aborted) return;
      stopped.abort();
      logger.info({ signal }, 'stopping after the current cycle');
    });

    logger.info(
      {
        nodeAddress: wallets.nodeAddress,
        role: roleOf(standby.standbyDelayBlocks),
        intervalMs,
        gatewayPort: gateway?.port,
        metricsPort: gateway?.metricsPort,
      },
      'node started',
    );
    await runLocalNode({
      config,
      logger,
      wallets,
      cacheDir: values['cache-dir'] ?? DEFAULT_CACHE_DIR,
      intervalMs,
      ...(polling.pollIntervalMs ? { pollIntervalMs: polling.pollIntervalMs } : {}),
      ...(limits.ceilings ? { gasPriceCeilings: limits.ceilings } : {}),
      standbyDelayBlocks: standby.standbyDelayBlocks,
      metricsTopSponsors: sponsors.topSponsors,
      heartbeatUsage: values['heartbeat-usage'] === true,
      apiRetryWindowSeconds: retries.apiRetryWindowSeconds,
      // Cycle metrics join the gateway's /metrics.
      ...(gateway ? { registry: gateway.gateway.registry } : {}),
      stop: stopped.signal,
    });
    callers?.close();
    await gateway?.close();
    stopListening();
    logger.info('node stopped');
    return 0;
  },
};
