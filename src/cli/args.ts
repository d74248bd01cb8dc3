// The one argument convention of every subcommand: parse with node:util's parseArgs (strict), answer -h/--help, and
// turn a parse error into "message, blank line, usage" on stderr with exit code 2. Output goes through a CliIo, so a
// test passes its own to capture it. Kept free of the engine's modules: `validate` and `schema` load this file at
// start-up. What an engine subcommand adds (its config, its pod's environment) is in command-config.ts.
import type { ParseArgsOptionsConfig } from 'node:util';
import { errorMessage } from '../common/errors.js';
import { DEFAULT_API_RETRY_WINDOW_SECONDS } from '../ois/deferral.js';

// Node's own util module, already loaded at start-up: an `import` of node:util builds its ES module namespace,
// which reads every export and so loads their lazy parts (~4 ms of each short-lived command, `validate` included).
const { parseArgs } = process.getBuiltinModule('node:util');

/** Where a subcommand reads and writes; tests pass their own to capture output. */
export type CliIo = {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Reads all of standard input; undefined when stdin is a terminal. */
  readStdin: () => Promise<string | undefined>;
  env: Record<string, string | undefined>;
};

export const processIo: CliIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  readStdin: async () => {
    if (process.stdin.isTTY) return undefined;
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  },
  env: process.env,
};

/** A wrong argument found after parsing; the command answers it with usageError (exit code 2). */
export class UsageError extends Error {}

const withNewline = (text: string) => (text.endsWith('\n') ? text : `${text}\n`);

/** A usage error: the message, a blank line and the usage on stderr; exit code 2. */
export function usageError(io: CliIo, message: string, usage: string): number {
  io.stderr(`${message}\n\n${withNewline(usage)}`);
  return 2;
}

const HELP_OPTION = { help: { type: 'boolean', short: 'h' } } as const;

type Values<O extends ParseArgsOptionsConfig> = ReturnType<
  typeof parseArgs<{ args: string[]; options: O & typeof HELP_OPTION }>
>['values'];

/** The parsed values, or the exit code when the command is already answered (help, or a usage error). */
export function parseCommandArgs<const O extends ParseArgsOptionsConfig>(
  argv: string[],
  options: O,
  help: string,
  settings: { allowPositionals?: boolean; io?: CliIo } = {},
): { values: Values<O>; positionals: string[] } | { exitCode: number } {
  const io = settings.io ?? processIo;
  let values: Values<O>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      options: { ...options, ...HELP_OPTION },
      strict: true,
      allowPositionals: settings.allowPositionals === true,
    }));
  } catch (error) {
    // parseArgs throws a TypeError with a readable message on unknown or malformed options.
    return { exitCode: usageError(io, errorMessage(error), help) };
  }
  if ((values as { help?: boolean }).help) {
    io.stdout(withNewline(help));
    return { exitCode: 0 };
  }
  return { values, positionals };
}

/** The shortest poll interval a window accepts: below it a poll costs more than it saves. */
export const MIN_POLL_INTERVAL_S = 0.1;
/** The poll interval of a window when `--poll-interval` is not given. */
export const DEFAULT_POLL_INTERVAL_S = 1;

/**
 * `--window` and `--poll-interval` (seconds, decimals allowed) as milliseconds, or exit code 2 after the usage error
 * went to stderr. Without `--window` (and where the command has none, `windowRequired: false`) the poll interval
 * alone turns polling on.
 */
export function parseWindowOptions(
  values: { window?: string | undefined; 'poll-interval'?: string | undefined },
  options: { windowRequired: boolean },
): { windowMs?: number; pollIntervalMs?: number } | { exitCode: number } {
  const seconds = (text: string | undefined) => {
    if (text === undefined) return undefined;
    const value = Number(text);
    return text.trim() !== '' && Number.isFinite(value) && value >= MIN_POLL_INTERVAL_S ? value : null;
  };
  const window = seconds(values.window);
  const poll = seconds(values['poll-interval']);
  if (window === null || poll === null) {
    process.stderr.write(`--window and --poll-interval must be numbers of seconds >= ${MIN_POLL_INTERVAL_S}\n`);
    return { exitCode: 2 };
  }
  if (options.windowRequired && poll !== undefined && window === undefined) {
    process.stderr.write('--poll-interval needs --window\n');
    return { exitCode: 2 };
  }
  if (window === undefined && poll === undefined) return {};
  return {
    ...(window === undefined ? {} : { windowMs: Math.round(window * 1000) }),
    pollIntervalMs: Math.round((poll ?? DEFAULT_POLL_INTERVAL_S) * 1000),
  };
}

/**
 * `--max-gas-price CHAIN_ID=GWEI` (repeatable): the most per gas the node pays on each chain, in wei, or exit code 2
 * after the usage error went to stderr.
 */
export function parseGasPriceCeilings(
  values: string[] | undefined,
): { ceilings?: Map<string, bigint> } | { exitCode: number } {
  if (!values || values.length === 0) return {};
  const ceilings = new Map<string, bigint>();
  for (const value of values) {
    const match = /^(\d{1,78})=(\d{1,12}(?:\.\d{1,9})?)$/.exec(value.trim());
    if (!match) {
      process.stderr.write(`--max-gas-price takes CHAIN_ID=GWEI (e.g. 1=150 or 137=0.5), not "${value}"\n`);
      return { exitCode: 2 };
    }
    const [whole, fraction = ''] = match[2]!.split('.');
    ceilings.set(match[1]!, BigInt(whole!) * 1_000_000_000n + BigInt(fraction.padEnd(9, '0')));
  }
  return { ceilings };
}

/**
 * `--standby-delay-blocks N` (docs/chain-cycle.md, "Standby"): 0 or absent, a primary; N > 0, a standby that serves
 * a request only once it has been servable for N blocks. Exit code 2 after the usage error went to stderr.
 */
export function parseStandbyDelay(value: string | undefined): { standbyDelayBlocks: number } | { exitCode: number } {
  if (value === undefined) return { standbyDelayBlocks: 0 };
  const blocks = Number(value);
  if (value.trim() === '' || !Number.isInteger(blocks) || blocks < 0 || blocks > 10_000) {
    process.stderr.write(`--standby-delay-blocks takes a whole number of blocks from 0 to 10000, not "${value}"\n`);
    return { exitCode: 2 };
  }
  return { standbyDelayBlocks: blocks };
}

/** The longest retry window: a request older than a day is past any API's outage worth waiting for. */
const MAX_API_RETRY_WINDOW_SECONDS = 86_400;

/**
 * `--api-retry-window SECONDS` (docs/chain-cycle.md, "When the API fails for a while"): how long a request whose API
 * fails for now (429, 408, 5xx, no answer) is left open and retried before it is failed on chain; 0 fails it at once,
 * as the reference does. Exit code 2 after the usage error went to stderr.
 */
export function parseApiRetryWindow(
  value: string | undefined,
): { apiRetryWindowSeconds: number } | { exitCode: number } {
  if (value === undefined) return { apiRetryWindowSeconds: DEFAULT_API_RETRY_WINDOW_SECONDS };
  const seconds = Number(value);
  if (value.trim() === '' || !Number.isInteger(seconds) || seconds < 0 || seconds > MAX_API_RETRY_WINDOW_SECONDS) {
    process.stderr.write(
      `--api-retry-window takes a whole number of seconds from 0 to ${MAX_API_RETRY_WINDOW_SECONDS}, not "${value}"\n`,
    );
    return { exitCode: 2 };
  }
  return { apiRetryWindowSeconds: seconds };
}

/** A port number from an option: undefined when absent, null when not a port. */
export function parsePort(text: string | undefined): number | undefined | null {
  if (text === undefined) return undefined;
  const port = Number(text);
  return Number.isInteger(port) && port >= 0 && port <= 65535 && text.trim() !== '' ? port : null;
}

/**
 * `--port` and `--metrics-port` of a command that serves the gateway, or exit code 2 after the usage error went to
 * stderr. Absent options stay absent (the config's port, the gateway port).
 */
export function parseServerPorts(values: {
  port?: string | undefined;
  'metrics-port'?: string | undefined;
}): { port?: number; metricsPort?: number } | { exitCode: number } {
  const port = parsePort(values.port);
  const metricsPort = parsePort(values['metrics-port']);
  if (port === null || metricsPort === null) {
    process.stderr.write('--port and --metrics-port must be integers between 0 and 65535\n');
    return { exitCode: 2 };
  }
  return { ...(port === undefined ? {} : { port }), ...(metricsPort === undefined ? {} : { metricsPort }) };
}
