// `oracle-node gateway -c config.json -s secrets.env [--port N]`: the gateway server alone (HTTP,
// signed-data and OEV gateways as enabled in nodeSettings), with /healthz, /readyz and /metrics. SIGTERM
// or SIGINT drains in-flight requests before exit. Exit codes: 0 stopped cleanly, 1 invalid config or
// server start failure, 2 usage or I/O error.

import { readFile } from 'node:fs/promises';
import { errorMessage } from '../common/errors.js';
import { parseSecretsEnv, scopedSecretsFromEnvironment, secretValuesOf, validateConfig } from '../config/index.js';
import { startGatewayServer } from '../gateway/server.js';
import { createLogger, registerSecrets } from '../observability/index.js';
import { tracerFromEnvironment } from '../observability/tracing.js';
import { parseCommandArgs, parseServerPorts } from './args.js';
import { secretScope } from './command-config.js';
import type { Subcommand } from './subcommand.js';

const USAGE = `Usage: oracle-node gateway -c <config.json> [-s <secrets.env>] [--port N] [--host H] [--metrics-port N] [--path-key-secret NAME]

Serves the gateways enabled in nodeSettings (HTTP, signed-data, OEV) on gatewayServerPort (default 3000).
  -c, --config           path of config.json
  -s, --secrets          path of secrets.env (NAME=value lines); default: the environment's variables
      --port             port, overriding nodeSettings.cloudProvider.gatewayServerPort (0 = any free port)
      --host             address to listen on (default 0.0.0.0)
      --metrics-port     serve /healthz, /readyz and /metrics on this port only, not on the gateway port
                         (keep them off a caller-facing Service; 0 = any free port)
      --path-key-secret  name of a secret in secrets.env used as the path key instead of the public default
Stops on SIGTERM/SIGINT after draining in-flight requests.`;

export async function runGateway(argv: string[]): Promise<number> {
  const parsed = parseCommandArgs(
    argv,
    {
      config: { type: 'string', short: 'c' },
      secrets: { type: 'string', short: 's' },
      port: { type: 'string' },
      host: { type: 'string' },
      'metrics-port': { type: 'string' },
      'path-key-secret': { type: 'string' },
    },
    `${USAGE}\n`,
  );
  if ('exitCode' in parsed) return parsed.exitCode;
  const { values } = parsed;
  if (!values.config) {
    process.stderr.write(`Missing -c <config.json>\n\n${USAGE}\n`);
    return 2;
  }
  const ports = parseServerPorts(values);
  if ('exitCode' in ports) return ports.exitCode;

  let configText: string;
  let secrets: Record<string, string> = {};
  try {
    configText = await readFile(values.config, 'utf8');
    // Without -s the secrets come from the environment, as in a pod whose Secret is mounted with envFrom.
    secrets = values.secrets
      ? parseSecretsEnv(await readFile(values.secrets, 'utf8')).secrets
      : scopedSecretsFromEnvironment(configText, secretScope('gateway'));
  } catch (error) {
    process.stderr.write(`Cannot read ${(error as NodeJS.ErrnoException).path ?? 'file'}: ${errorMessage(error)}\n`);
    return 2;
  }
  // Every secret value is scrubbed from the logs from here on.
  registerSecrets(secretValuesOf(undefined, secrets));
  const result = validateConfig(configText, secrets);
  if (!result.ok || !result.config) {
    const lines = result.errors.map((issue) => `  ${issue.path || '(root)'}: ${issue.message}`);
    process.stderr.write(`The configuration is not valid:\n${lines.join('\n')}\n`);
    return 1;
  }
  const config = result.config;
  // Values that are secret even when written inline in config.json rather than taken from secrets.env.
  registerSecrets(secretValuesOf(config, secrets));

  let pathKey: string | undefined;
  const pathKeySecret = values['path-key-secret'];
  if (pathKeySecret) {
    pathKey = secrets[pathKeySecret];
    if (!pathKey || !/^[A-Za-z0-9._~-]{16,128}$/.test(pathKey)) {
      process.stderr.write(
        `Secret ${pathKeySecret} must exist and be 16-128 URL-safe characters (A-Z a-z 0-9 . _ ~ -)\n`,
      );
      return 1;
    }
  }

  const logger = createLogger({
    format: config.nodeSettings.logFormat,
    level: config.nodeSettings.logLevel,
    bindings: { component: 'gateway' },
  });
  // Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set: then a trace per gateway request, exported every 5 s.
  const tracer = tracerFromEnvironment(process.env, 'gateway');
  const stopTracing = tracer.flushEvery(5000);
  let server: Awaited<ReturnType<typeof startGatewayServer>>;
  try {
    server = await startGatewayServer(config, {
      logger,
      keepProcessingWarm: true,
      tracer,
      ...ports,
      ...(values.host ? { host: values.host } : {}),
      ...(pathKey ? { pathKey } : {}),
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    process.stderr.write(
      code === 'EADDRINUSE'
        ? `Cannot start the gateway server: port ${ports.port ?? 'configured'} is already in use\n`
        : `Cannot start the gateway server: ${errorMessage(error)}\n`,
    );
    return 1;
  }

  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info({ signal }, 'draining in-flight requests');
      process.off('SIGTERM', onTerm);
      process.off('SIGINT', onInt);
      void server.close().then(stopTracing).then(resolve);
    };
    const onTerm = () => stop('SIGTERM');
    const onInt = () => stop('SIGINT');
    process.on('SIGTERM', onTerm);
    process.on('SIGINT', onInt);
  });
  return 0;
}

export const gatewayCommand: Subcommand = {
  run: runGateway,
};
