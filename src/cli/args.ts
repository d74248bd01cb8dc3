// The argument handling every engine subcommand shares: parse, answer --help, and turn a parse error into usage
// on stderr with exit code 2. `-h/--help` is added to each command's options.
import { type ParseArgsOptionsConfig, parseArgs } from 'node:util';
import { errorMessage } from '../common/errors.js';
import type { Config, Workload } from '../config/index.js';
import { type EngineEnvironment, readEngineEnvironment } from '../contract/pods.js';
import { ConfigLoadError, loadConfig } from '../node/config-loader.js';

const HELP_OPTION = { help: { type: 'boolean', short: 'h' } } as const;

type Values<O extends ParseArgsOptionsConfig> = ReturnType<
  typeof parseArgs<{ args: string[]; options: O & typeof HELP_OPTION }>
>['values'];

/** The parsed values, or the exit code when the command is already answered (help, or a usage error). */
export function parseCommandArgs<const O extends ParseArgsOptionsConfig>(
  argv: string[],
  options: O,
  help: string,
  settings: { allowPositionals?: boolean } = {},
): { values: Values<O>; positionals: string[] } | { exitCode: number } {
  let values: Values<O>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      options: { ...options, ...HELP_OPTION },
      allowPositionals: settings.allowPositionals === true,
    }));
  } catch (error) {
    process.stderr.write(`${errorMessage(error)}\n\n${help}`);
    return { exitCode: 2 };
  }
  if ((values as { help?: boolean }).help) {
    process.stdout.write(help);
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

/**
 * config.json (+ secrets.env, or the environment) loaded and validated for an engine subcommand, or its exit code
 * after the reason went to stderr: 1 for an invalid config, 2 for a file that cannot be read.
 */
export async function loadCommandConfig(
  configPath: string,
  secretsPath?: string,
  workload?: Workload,
): Promise<Config | number> {
  try {
    return await loadConfig(configPath, secretsPath, secretScope(workload));
  } catch (error) {
    process.stderr.write(`${errorMessage(error)}\n`);
    return error instanceof ConfigLoadError && !error.unreadable ? 1 : 2;
  }
}

/**
 * The secret scope to load the config with: the workload running, when its pod says it was given only that
 * workload's keys. A pod scoped to another workload gets no stand-ins, so a missing key is reported, not hidden.
 */
export function secretScope(workload: Workload | undefined): Workload | undefined {
  return workload !== undefined && engineEnvironment().secretScope === workload ? workload : undefined;
}

/** What the operator's pods say about themselves (the contract's environment); empty outside a pod. */
export function engineEnvironment(): EngineEnvironment {
  return readEngineEnvironment(process.env);
}
