// A logger that keeps its lines in memory, for tests that assert what the node said and at which level.
import { createLogger, type Logger, type LogLevel } from '../../src/observability/index.js';

/** One JSON line as the shared logger writes it (`level` is the label: DEBUG, INFO, WARN, ERROR). */
export type LogLine = { level: string; msg: string; [field: string]: unknown };

export function capturingLogger(): { logger: Logger; lines: LogLine[]; at(level: LogLevel): LogLine[] } {
  const lines: LogLine[] = [];
  const logger = createLogger({
    level: 'DEBUG',
    destination: { write: (line: string) => lines.push(JSON.parse(line) as LogLine) },
  });
  return { logger, lines, at: (level) => lines.filter((line) => line.level === level) };
}
