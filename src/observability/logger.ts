// One logger factory for the gateway, the node and the operator: pino underneath, the config's
// `logFormat` (json | plain) and `logLevel` (DEBUG | INFO | WARN | ERROR) on top, and every line passed
// through the secret redactor before it leaves the process.
import { type Logger, pino } from 'pino';
import { redact } from './redaction.js';

export type LogFormat = 'json' | 'plain';
export type LogLevel = 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
export type { Logger };

/** Anything with a write(string) method: process.stdout, a file stream, a test buffer. */
export type LogDestination = { write(line: string): unknown };

export type LoggerOptions = {
  format?: LogFormat;
  level?: LogLevel;
  /** Fields added to every line, e.g. { component: 'gateway' }. */
  bindings?: Record<string, unknown>;
  destination?: LogDestination;
};

const PINO_LEVELS: Record<LogLevel, pino.Level> = { DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' };

const LEVEL_LABELS: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};

export function toPinoLevel(level: LogLevel | undefined): pino.Level {
  return (level && PINO_LEVELS[level]) ?? 'info';
}

function formatValue(value: unknown): string {
  if (typeof value === 'string') return /[\s"=]/.test(value) || value === '' ? JSON.stringify(value) : value;
  if (value instanceof Object && 'message' in value && typeof value.message === 'string') {
    // Serialized errors: type and message only, so one entry stays one line.
    const type = 'type' in value && typeof value.type === 'string' ? `${value.type}: ` : '';
    return JSON.stringify(`${type}${value.message}`);
  }
  return JSON.stringify(value) ?? String(value);
}

/** Turns one pino JSON line into `2026-01-01T00:00:00.000Z INFO message key=value …`. */
export function formatPlainLine(jsonLine: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(jsonLine) as Record<string, unknown>;
  } catch {
    return jsonLine.endsWith('\n') ? jsonLine : `${jsonLine}\n`;
  }
  const { time, level, msg, ...rest } = entry;
  const label = typeof level === 'number' ? (LEVEL_LABELS[level] ?? String(level)) : String(level ?? '');
  const timestamp = typeof time === 'number' ? new Date(time).toISOString() : String(time ?? '');
  const fields = Object.entries(rest)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${key}=${formatValue(value)}`);
  const message = typeof msg === 'string' ? msg.replace(/\r?\n/g, '\\n') : '';
  return `${[timestamp, label.padEnd(5), message, ...fields].filter((part) => part !== '').join(' ')}\n`;
}

/** The stream pino writes to: redacts, then re-formats for plain output. */
export function createLogStream(format: LogFormat, destination: LogDestination): LogDestination {
  return {
    write(line: string) {
      const safe = redact(line);
      destination.write(format === 'plain' ? formatPlainLine(safe) : safe);
    },
  };
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const format = options.format ?? 'json';
  const destination = options.destination ?? pino.destination({ dest: 1, sync: true });
  return pino(
    {
      level: toPinoLevel(options.level),
      base: options.bindings ?? {},
      timestamp: pino.stdTimeFunctions.isoTime,
      // Level names as in the config (DEBUG, INFO, …) rather than pino's numbers.
      formatters: { level: (_label, number) => ({ level: LEVEL_LABELS[number] ?? number }) },
    },
    createLogStream(format, destination),
  );
}

/** A logger that drops everything: the default for library code when the caller passes none. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
