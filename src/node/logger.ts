// Logging for the cycle: the shared pino logger of src/observability (config's logFormat and logLevel),
// written to stderr so that stdout stays free for the commands' JSON output. The cycle logs ids,
// addresses, counts and reasons only: never mnemonics, keys or provider URLs (which may carry API keys).
import pino from 'pino';
import {
  createLogger,
  type LogFormat,
  type Logger,
  type LogLevel,
  silentLogger as silent,
} from '../observability/index.js';

export type { Logger };

/** `oracleNode` names the OracleNode a pod runs for (the contract's ORACLE_NODE_NAME), bound into every line. */
export function createNodeLogger(
  settings: { logFormat?: LogFormat; logLevel?: LogLevel } = {},
  context: { oracleNode?: string } = {},
): Logger {
  return createLogger({
    format: settings.logFormat ?? 'json',
    level: settings.logLevel ?? 'INFO',
    bindings: { component: 'node', ...context },
    destination: pino.destination({ dest: 2, sync: true }),
  });
}

export const silentLogger: Logger = silent();
