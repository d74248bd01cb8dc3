// A logger that keeps its lines in memory, for tests that assert what the node said and at which level.
import { createLogger, type Logger } from '../../src/observability/index.js';

export type LogLine = { level: number; msg: string; [field: string]: unknown };

/** pino's numeric levels. */
export const LEVELS = { DEBUG: 20, INFO: 30, WARN: 40, ERROR: 50 } as const;

export function capturingLogger(): { logger: Logger; lines: LogLine[]; at(level: keyof typeof LEVELS): LogLine[] } {
  const lines: LogLine[] = [];
  const logger = createLogger({
    level: 'DEBUG',
    destination: { write: (line: string) => lines.push(JSON.parse(line) as LogLine) },
  });
  return { logger, lines, at: (level) => lines.filter((line) => line.level === LEVELS[level]) };
}
