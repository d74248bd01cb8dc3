// pino JSON logging for the cycle. Secrets never reach a log line: the cycle logs ids, addresses,
// counts and reasons only, and these paths are redacted as a second line of defence.
import { type Logger, pino } from 'pino';

export type { Logger };

export function createLogger(options: { level?: string; name?: string; destination?: number } = {}): Logger {
  const level = (options.level ?? process.env['LOG_LEVEL'] ?? 'info').toLowerCase();
  return pino(
    {
      name: options.name ?? 'oracle-node',
      level,
      redact: {
        paths: [
          'mnemonic',
          '*.mnemonic',
          'nodeWalletMnemonic',
          '*.nodeWalletMnemonic',
          'privateKey',
          '*.privateKey',
          'url',
          '*.url',
        ],
        censor: '[redacted]',
      },
    },
    pino.destination({ fd: options.destination ?? 2, sync: true }),
  );
}

export const silentLogger: Logger = pino({ level: 'silent' });
