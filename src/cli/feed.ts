// `oracle-node feed -c config.json -s secrets.env [--metrics-port N]`: an Airnode feed (@api3/airnode-feed 3.x
// config.json, unchanged): fetch, sign and push to the Signed APIs, with /healthz, /readyz and /metrics. SIGTERM or
// SIGINT stops the fetches and gives each Signed API one last push. Exit codes: 0 stopped cleanly, 1 invalid config
// or server start failure, 2 usage or I/O error.
import { readFile } from 'node:fs/promises';
import { errorMessage } from '../common/errors.js';
import { urlCredentials } from '../config/secret-values.js';
import { parseSecretsEnv, secretsFromEnvironment } from '../config/secrets.js';
import { readFeedReportEnvironment } from '../contract/feed-report.js';
import { startFeed } from '../feed/engine.js';
import { FeedReporter } from '../feed/report.js';
import { feedSigner } from '../feed/signing.js';
import { validateFeedConfig } from '../feed/validate.js';
import {
  createLogger,
  createMetricsRegistry,
  type LogFormat,
  type LogLevel,
  registerSecrets,
  startObservabilityServer,
} from '../observability/index.js';
import { registerApiBudgetMetrics } from '../ois/budget.js';
import { API_LIMIT_OPTIONS, API_LIMIT_OPTIONS_HELP, applyApiRateLimits } from './api-limit-options.js';
import { parseCommandArgs, parseServerPorts } from './args.js';
import { invalidText } from './issue-lines.js';
import { onStopSignals } from './lifecycle.js';
import type { Subcommand } from './subcommand.js';

const USAGE = `Usage: oracle-node feed -c <config.json> [-s <secrets.env>] [--metrics-port N] [--host H] [--api-rate-limit TITLE=N/s]...

Runs an Airnode feed: the config.json of @api3/airnode-feed 3.x, unchanged (docs/feeds.md).
  -c, --config        path of config.json (the reference's airnode-feed.json)
  -s, --secrets       path of secrets.env (NAME=value lines); default: the environment's variables
      --metrics-port  serve /healthz, /readyz and /metrics on this port (default 9090; 0 = any free port)
      --host          address of the metrics server (default 0.0.0.0)
${API_LIMIT_OPTIONS_HELP}
Logs: LOG_FORMAT json|pretty and LOG_LEVEL debug|info|warn|error, as the reference.
Stops on SIGTERM/SIGINT after one last push to each Signed API.`;

export const DEFAULT_FEED_METRICS_PORT = 9090;
/**
 * The feed's event loop lag is sampled once a second: each sample wakes an idle process (about 0.2 ms of CPU here), and
 * nothing in a feed, whose intervals are seconds, needs a finer lag; a stall of a second or more is still measured.
 */
export const FEED_EVENT_LOOP_SAMPLING_MS = 1000;

const LOG_LEVELS: Record<string, LogLevel> = { debug: 'DEBUG', info: 'INFO', warn: 'WARN', error: 'ERROR' };

export async function runFeed(argv: string[]): Promise<number> {
  const parsed = parseCommandArgs(
    argv,
    {
      config: { type: 'string', short: 'c' },
      secrets: { type: 'string', short: 's' },
      'metrics-port': { type: 'string' },
      host: { type: 'string' },
      ...API_LIMIT_OPTIONS,
    },
    `${USAGE}\n`,
  );
  if ('exitCode' in parsed) return parsed.exitCode;
  const { values } = parsed;
  const configPath = values.config ?? process.env.ORACLE_NODE_CONFIG;
  if (!configPath) {
    process.stderr.write(`Missing -c <config.json>\n\n${USAGE}\n`);
    return 2;
  }
  const ports = parseServerPorts({ 'metrics-port': values['metrics-port'] });
  if ('exitCode' in ports) return ports.exitCode;

  let rawConfig: unknown;
  let secrets: Record<string, string>;
  try {
    const text = await readFile(configPath, 'utf8');
    try {
      rawConfig = JSON.parse(text);
    } catch (error) {
      process.stderr.write(`${configPath} is not JSON: ${errorMessage(error)}\n`);
      return 1;
    }
    secrets = values.secrets
      ? parseSecretsEnv(await readFile(values.secrets, 'utf8')).secrets
      : secretsFromEnvironment(rawConfig);
  } catch (error) {
    process.stderr.write(`Cannot read ${(error as NodeJS.ErrnoException).path ?? 'file'}: ${errorMessage(error)}\n`);
    return 2;
  }
  registerSecrets(Object.values(secrets));
  const result = await validateFeedConfig(rawConfig, secrets);
  if (!result.ok) {
    process.stderr.write(invalidText(configPath, result.errors));
    return 1;
  }
  const config = result.config;
  // A fetch over the budget is skipped, not held: the next interval fetches again.
  const budgets = applyApiRateLimits(values['api-rate-limit'], config.ois, { defaultMaxWaitMs: 0 });
  if ('error' in budgets) {
    process.stderr.write(`${budgets.error}\n\n${USAGE}\n`);
    return 2;
  }
  // Secret even when written inline: the mnemonic, API credentials, auth tokens, credentials in a Signed API URL.
  registerSecrets([
    config.nodeSettings.airnodeWalletMnemonic,
    ...config.apiCredentials.map((credential) => credential.securitySchemeValue),
    ...config.signedApis.flatMap((api) => [...(api.authToken ? [api.authToken] : []), ...urlCredentials(api.url)]),
  ]);

  const format: LogFormat = process.env.LOG_FORMAT === 'pretty' ? 'plain' : 'json';
  const logger = createLogger({
    format,
    level: LOG_LEVELS[process.env.LOG_LEVEL ?? 'info'] ?? 'INFO',
    bindings: { component: 'feed', stage: config.nodeSettings.stage },
  });
  const registry = createMetricsRegistry({
    defaultMetrics: true,
    labels: { component: 'feed' },
    eventLoopSamplingMs: FEED_EVENT_LOOP_SAMPLING_MS,
  });
  registerApiBudgetMetrics(registry);
  // In a pod the operator made, the last push per Signed API goes into a ConfigMap for status; elsewhere, nowhere.
  let reporter: FeedReporter | undefined;
  try {
    // Loaded only in such a pod: a local run never pays for the Kubernetes client.
    const pod = readFeedReportEnvironment(process.env);
    const write = pod ? await (await import('../node/kubernetes/index.js')).feedReportWriter(pod) : undefined;
    if (write) reporter = new FeedReporter({ signedApis: config.signedApis.map((api) => api.name), write, logger });
  } catch (error) {
    // Status only: the feed pushes without it.
    logger.warn({ error: errorMessage(error) }, 'no feed report: cannot reach the Kubernetes API');
  }
  const engine = startFeed({
    config,
    signer: feedSigner(config.nodeSettings.airnodeWalletMnemonic),
    logger,
    registry,
    ...(reporter ? { onPush: (event) => reporter.record(event) } : {}),
  });
  let stopping = false;
  let server: Awaited<ReturnType<typeof startObservabilityServer>>;
  try {
    server = await startObservabilityServer({
      registry,
      healthy: () => !stopping,
      ready: () => (stopping ? { ready: false, reason: 'stopping' } : true),
      port: ports.metricsPort ?? DEFAULT_FEED_METRICS_PORT,
      ...(values.host ? { host: values.host } : {}),
    });
  } catch (error) {
    await engine.stop();
    await reporter?.stop();
    process.stderr.write(`Cannot start the metrics server: ${errorMessage(error)}\n`);
    return 1;
  }
  logger.info({ airnode: engine.airnode, metricsPort: server.port }, 'serving /healthz, /readyz and /metrics');

  await new Promise<void>((resolve) => {
    onStopSignals(
      (signal) => {
        stopping = true;
        logger.info({ signal }, 'stopping: last push to each Signed API');
        void engine
          .stop()
          .then(() => reporter?.stop())
          .then(() => server.close())
          .then(resolve);
      },
      { once: true },
    );
  });
  logger.info('stopped');
  return 0;
}

export const feedCommand: Subcommand = { run: runFeed };
