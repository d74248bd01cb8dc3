// `oracle-node gateway -c config.json -s secrets.env [--port N]`: the gateway server alone (HTTP,
// signed-data and OEV gateways as enabled in nodeSettings), with /healthz, /readyz and /metrics. SIGTERM
// or SIGINT drains in-flight requests before exit. Exit codes: 0 stopped cleanly, 1 invalid config or
// server start failure, 2 usage or I/O error. The signing gateways sign with the node key: the mnemonic's, or the
// private key alone (ORACLE_NODE_SIGNING_KEY, --signing-key-file), so that a gateway need not hold the mnemonic.

import { readFile } from 'node:fs/promises';
import { errorMessage } from '../common/errors.js';
import {
  type Config,
  parseSecretsEnv,
  scopedSecretsFromEnvironment,
  secretValuesOf,
  validateConfig,
  WITHHELD_MNEMONIC,
} from '../config/index.js';
import { ENV } from '../contract/pods.js';
import { startGatewayServer } from '../gateway/server.js';
import { secretsEnvironment } from '../node/config-loader.js';
import { createLogger, registerSecret, registerSecrets } from '../observability/index.js';
import { tracerFromEnvironment } from '../observability/tracing.js';
import { deriveNodeAddress, walletFromPrivateKey } from '../protocol/wallet.js';
import { API_LIMIT_OPTIONS, API_LIMIT_OPTIONS_HELP, applyApiRateLimits } from './api-limit-options.js';
import { parseCommandArgs, parseServerPorts } from './args.js';
import { CALLER_OPTIONS, CALLER_OPTIONS_HELP, callerSettings, loadCallers } from './caller-options.js';
import { secretScope } from './command-config.js';
import { cannotListen, onStopSignals } from './lifecycle.js';
import type { Subcommand } from './subcommand.js';

const USAGE = `Usage: oracle-node gateway -c <config.json> [-s <secrets.env>] [--port N] [--host H] [--metrics-port N] [--path-key-secret NAME] [--signing-key-file F] [--callers DIR [--caller-rate NAME=N/s]... [--default-caller-rate N/s]] [--api-rate-limit TITLE[/ENDPOINT]=N/s]...

Serves the gateways enabled in nodeSettings (HTTP, signed-data, OEV) on gatewayServerPort (default 3000).
  -c, --config           path of config.json
  -s, --secrets          path of secrets.env (NAME=value lines); default: the environment's variables
      --port             port, overriding nodeSettings.cloudProvider.gatewayServerPort (0 = any free port)
      --host             address to listen on (default 0.0.0.0)
      --metrics-port     serve /healthz, /readyz and /metrics on this port only, not on the gateway port
                         (keep them off a caller-facing Service; 0 = any free port)
      --path-key-secret  name of a secret in secrets.env used as the path key instead of the public default
      --signing-key-file file holding the node's private key (0x and 64 hex digits), which the signed-data and
                         OEV gateways sign with instead of the mnemonic's; default: the environment's
                         ${ENV.signingKey} (or that file of ${ENV.secretsDir})
${CALLER_OPTIONS_HELP}
${API_LIMIT_OPTIONS_HELP}
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
      'signing-key-file': { type: 'string' },
      ...CALLER_OPTIONS,
      ...API_LIMIT_OPTIONS,
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
  const callerFlags = callerSettings(values);
  if ('error' in callerFlags) {
    process.stderr.write(`${callerFlags.error}\n\n${USAGE}\n`);
    return 2;
  }

  let configText: string;
  let secrets: Record<string, string> = {};
  let signingKeyText: string | undefined;
  try {
    configText = await readFile(values.config, 'utf8');
    // Without -s the secrets come from the environment (and the pod's secrets directory, when it has one).
    const env = await secretsEnvironment();
    secrets = values.secrets
      ? parseSecretsEnv(await readFile(values.secrets, 'utf8')).secrets
      : scopedSecretsFromEnvironment(configText, secretScope('gateway'), env);
    const keyFile = values['signing-key-file'];
    signingKeyText = keyFile ? await readFile(keyFile, 'utf8') : env[ENV.signingKey] || undefined;
  } catch (error) {
    process.stderr.write(`Cannot read ${(error as NodeJS.ErrnoException).path ?? 'file'}: ${errorMessage(error)}\n`);
    return 2;
  }
  // Every secret value is scrubbed from the logs from here on.
  if (signingKeyText) registerSecret(signingKeyText.trim());
  registerSecrets(secretValuesOf(undefined, secrets));
  const result = validateConfig(configText, secrets);
  if (!result.ok || !result.config) {
    const lines = result.errors.map((issue) => `  ${issue.path || '(root)'}: ${issue.message}`);
    process.stderr.write(`The configuration is not valid:\n${lines.join('\n')}\n`);
    return 1;
  }
  const config = result.config;
  // A caller over an API's budget is answered 429 at once: a gateway never holds a request for a turn.
  const budgets = applyApiRateLimits(values['api-rate-limit'], config.ois, { defaultMaxWaitMs: 0 });
  if ('error' in budgets) {
    process.stderr.write(`${budgets.error}\n\n${USAGE}\n`);
    return 2;
  }
  // Values that are secret even when written inline in config.json rather than taken from secrets.env.
  registerSecrets(secretValuesOf(config, secrets));
  const signer = nodeSigner(config, signingKeyText, values['signing-key-file'] ?? ENV.signingKey);
  if ('error' in signer) {
    process.stderr.write(`${signer.error}\n`);
    return 1;
  }

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
  const loaded = await loadCallers(callerFlags.settings, logger);
  if ('exitCode' in loaded) return loaded.exitCode;
  const { callers } = loaded;
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
      ...(signer.wallet ? { signer: signer.wallet } : {}),
      ...(callers ? { callers } : {}),
    });
  } catch (error) {
    process.stderr.write(cannotListen('gateway server', ports.port, error));
    return 1;
  }

  await new Promise<void>((resolve) => {
    onStopSignals(
      (signal) => {
        logger.info({ signal }, 'draining in-flight requests');
        callers?.close();
        void server.close().then(stopTracing).then(resolve);
      },
      { once: true },
    );
  });
  return 0;
}

/**
 * The node key the signing gateways use: the private key given (it must be the mnemonic's node key when the gateway
 * also holds the real mnemonic), else none, and the app derives it from the mnemonic. A pod given only the gateway's
 * keys holds a stand-in mnemonic: with a signing gateway on it must be given the key, or it would sign as the
 * stand-in. Errors name the key's source, never its text.
 */
function nodeSigner(
  config: Config,
  keyText: string | undefined,
  source: string,
): { wallet?: ReturnType<typeof walletFromPrivateKey> } | { error: string } {
  const mnemonic = config.nodeSettings.nodeWalletMnemonic;
  const withheld = mnemonic === WITHHELD_MNEMONIC;
  if (keyText === undefined) {
    const signs = config.nodeSettings.httpSignedDataGateway.enabled || config.nodeSettings.oevGateway.enabled;
    if (signs && withheld) {
      return {
        error: `The signed-data and OEV gateways need the node key: this gateway holds no mnemonic, so set ${ENV.signingKey} (or --signing-key-file)`,
      };
    }
    return {};
  }
  const wallet = walletFromPrivateKey(keyText);
  if (!wallet) return { error: `${source} is not a private key (0x and 64 hex digits, below the curve order)` };
  if (!withheld && mnemonic && deriveNodeAddress(mnemonic) !== wallet.address) {
    return { error: `${source} is not the node key of nodeSettings.nodeWalletMnemonic (m/44'/60'/0'/0/0)` };
  }
  return { wallet };
}

export const gatewayCommand: Subcommand = {
  run: runGateway,
};
