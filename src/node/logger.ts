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

export function createNodeLogger(settings: { logFormat?: LogFormat; logLevel?: LogLevel } = {}): Logger {
  return createLogger({
    format: settings.logFormat ?? 'json',
    level: settings.logLevel ?? 'INFO',
    bindings: { component: 'node' },
    destination: pino.destination({ dest: 2, sync: true }),
  });
}

export const silentLogger: Logger = silent();
