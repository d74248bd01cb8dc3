// `oracle-node coordinator -c config.json -s secrets.env`: one request-response cycle, then exit; with
// `--window <s> [--poll-interval <s>]` the first cycle and then a poll every interval until the window ends
// (src/node/window.ts), reported as one cycle. With `--handover-lease NAME` the window sends only while it holds that
// Lease (src/node/kubernetes/handover.ts): the next run waits for it, so windows overlap without a gap and never send
// at once. Prints a JSON summary (counts) on stdout; logs go to stderr.

import { errorMessage } from '../common/errors.js';
import { ENV } from '../contract/pods.js';
import type { CycleSummary } from '../node/cycle.js';
import { emptySummary } from '../node/cycle-summary.js';
import { HARD_END_MARGIN_MS } from '../node/deadline.js';
import { coordinatorKubernetes } from '../node/kubernetes/index.js';
import { createNodeLogger } from '../node/logger.js';
import { runCoordinator } from '../node/run.js';
import { registerSecret } from '../observability/index.js';
import { DEFAULT_API_RETRY_WINDOW_SECONDS } from '../ois/deferral.js';
import { API_LIMIT_OPTIONS, API_LIMIT_OPTIONS_HELP, applyApiRateLimits } from './api-limit-options.js';
import {
  parseApiRetryWindow,
  parseCommandArgs,
  parseGasPriceCeilings,
  parseStandbyDelay,
  parseWindowOptions,
} from './args.js';
import { engineEnvironment, loadCommandConfig, parseTopSponsors, USAGE_OPTIONS_HELP } from './command-config.js';
import { onStopSignals } from './lifecycle.js';
import type { Subcommand } from './subcommand.js';

export { LEASE_LOST, REPORT_AFTER_SIGTERM_MS } from '../node/run.js';

export const DEFAULT_CACHE_DIR = '/tmp/oracle-node-cache';
const HELP = `Usage: oracle-node coordinator -c config.json [-s secrets.env] [--cache-dir DIR] [--details]
                               [--window SECONDS [--poll-interval SECONDS] [--handover-lease NAME]]
                               [--max-gas-price CHAIN_ID=GWEI ...] [--standby-delay-blocks N]
                               [--api-retry-window SECONDS]
                               [--metrics-top-sponsors N] [--heartbeat-usage]
                               [--api-rate-limit TITLE=N/s ...]

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
      --api-retry-window  a request whose API fails for now (429, 408, 5xx, no answer) stays open and is
                       retried with back-off, never sooner than a Retry-After; it is failed on chain only
                       once older than SECONDS (default ${DEFAULT_API_RETRY_WINDOW_SECONDS}; 0: at once, as the reference)
${USAGE_OPTIONS_HELP.replace(/^/gm, '      ')}
      (in a pod the operator made, the sponsors are reported to it, which keeps its own top N across runs)
${API_LIMIT_OPTIONS_HELP}
                         Run with worker Jobs (in a pod made by the operator), this process calls no API: its
                         workers get their shares from spec.apiLimits.

Nothing is sent after the window's hard end (its end + ${HARD_END_MARGIN_MS / 1000} s) or after SIGTERM: the requests
left stay open for the next run. SIGTERM stops the run; the report is written and the process exits 0.
`;

/** What the run prints without --details: the summary without its per-request outcomes. */
function countsOf(summary: CycleSummary): Omit<CycleSummary, 'results' | 'seen'> {
  const { results, seen, ...counts } = summary;
  void results;
  void seen;
  return counts;
}

/** The OracleNode that owns the Lease, from the pod's variables (the operator sets both); none when run by hand. */
function leaseOwner(env: NodeJS.ProcessEnv): { owner?: { name: string; uid: string } } {
  const name = env[ENV.oracleNode];
  const uid = env[ENV.oracleNodeUid];
  return name && uid ? { owner: { name, uid } } : {};
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
        'metrics-top-sponsors': { type: 'string' },
        'heartbeat-usage': { type: 'boolean' },
        'api-retry-window': { type: 'string' },
        ...API_LIMIT_OPTIONS,
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
    const sponsors = parseTopSponsors(values['metrics-top-sponsors']);
    if ('exitCode' in sponsors) return sponsors.exitCode;
    const retries = parseApiRetryWindow(values['api-retry-window']);
    if ('exitCode' in retries) return retries.exitCode;
    const pod = engineEnvironment();
    const configPath = values.config ?? pod.configPath;
    if (!configPath) {
      process.stderr.write(`Missing -c config.json\n\n${HELP}`);
      return 2;
    }
    const config = await loadCommandConfig(configPath, values.secrets, 'coordinator');
    if (typeof config === 'number') return config;
    // No wait by default: the run gives each of its API calls the wait its window leaves (src/node/budget-wait.ts).
    const budgets = applyApiRateLimits(values['api-rate-limit'], config.ois, { defaultMaxWaitMs: 0 });
    if ('error' in budgets) {
      process.stderr.write(`${budgets.error}\n\n${HELP}`);
      return 2;
    }
    // Never in a log line, nor in the cycle report the operator turns into Events and status.
    registerSecret(config.nodeSettings.nodeWalletMnemonic);
    for (const chain of config.chains)
      for (const provider of Object.values(chain.providers)) registerSecret(provider.url);
    for (const credential of config.apiCredentials) registerSecret(credential.securitySchemeValue);
    const logger = createNodeLogger(config.nodeSettings, pod);
    // In a coordinator pod made by the operator: API calls in worker Jobs, the ConfigMap cache, a cycle report.
    let kubernetes: Awaited<ReturnType<typeof coordinatorKubernetes>>;
    try {
      kubernetes = await coordinatorKubernetes();
    } catch (error) {
      process.stderr.write(`${errorMessage(error)}\n`);
      return 2;
    }
    const terminate = new AbortController();
    const stopListening = onStopSignals(() => terminate.abort(), { signals: ['SIGTERM'], once: true });
    const run = await runCoordinator({
      config,
      logger,
      kubernetes,
      cacheDir: values['cache-dir'] ?? DEFAULT_CACHE_DIR,
      ...(windowOptions.windowMs !== undefined ? { windowMs: windowOptions.windowMs } : {}),
      ...(windowOptions.pollIntervalMs !== undefined ? { pollIntervalMs: windowOptions.pollIntervalMs } : {}),
      ...(handoverLease !== undefined && leaseNamespace
        ? { handoverLease: { namespace: leaseNamespace, name: handoverLease, ...leaseOwner(process.env) } }
        : {}),
      ...(limits.ceilings ? { gasPriceCeilings: limits.ceilings } : {}),
      standbyDelayBlocks: standby.standbyDelayBlocks,
      heartbeatUsage: values['heartbeat-usage'] === true,
      metricsTopSponsors: sponsors.topSponsors,
      apiRetryWindowSeconds: retries.apiRetryWindowSeconds,
      terminate: terminate.signal,
    });
    if ('exitCode' in run) {
      if (run.exitCode === 2) {
        process.stderr.write(`--handover-lease: cannot reach the Lease: ${run.error}\n`);
      } else {
        process.stdout.write(`${JSON.stringify(countsOf(emptySummary()))}\n`);
        // The Lease client's connections do not hold the exit.
        setTimeout(() => process.exit(), 0).unref();
      }
      await run.workersStopped;
      stopListening();
      return run.exitCode;
    }
    stopListening();
    const { summary } = run;
    // Work abandoned at the deadline (an API that never answers) is not waited for: the run ends once reported.
    if (run.abandoned) setTimeout(() => process.exit(), 0).unref();
    process.stdout.write(`${JSON.stringify(values.details ? summary : countsOf(summary))}\n`);
    return 0;
  },
};
