// What an engine subcommand (coordinator, worker, gateway, start, request) needs beyond its arguments: its config
// loaded and validated, and what its pod says about itself. Apart from args.ts so that `validate` and `schema` do not
// load the engine's config loader at start-up.
import { errorMessage } from '../common/errors.js';
import { DEFAULT_TOP_SPONSORS, MAX_TOP_SPONSORS } from '../common/sponsor-labels.js';
import type { Config, Workload } from '../config/index.js';
import { type EngineEnvironment, readEngineEnvironment } from '../contract/pods.js';
import { ConfigLoadError, loadConfig } from '../node/config-loader.js';

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

/** The usage of `--metrics-top-sponsors` and `--heartbeat-usage`, as the commands that run cycles show it. */
export const USAGE_OPTIONS_HELP = `--metrics-top-sponsors N  how many sponsors get a label of their own in the fulfilments per sponsor
                       (default ${DEFAULT_TOP_SPONSORS}, at most ${MAX_TOP_SPONSORS}): the biggest while labels are free, never taken back;
                       the others are "other" (docs/metrics.md, "Usage")
--heartbeat-usage      the heartbeat carries the counts of each cycle (\`last_cycle\`: requests fulfilled, failed,
                       deferred, skipped; API calls by class), signed with the rest (docs/gateways.md, "Heartbeat")`;

/** `--metrics-top-sponsors N` (0 to MAX_TOP_SPONSORS), or exit code 2 after the usage error went to stderr. */
export function parseTopSponsors(value: string | undefined): { topSponsors: number } | { exitCode: number } {
  if (value === undefined) return { topSponsors: DEFAULT_TOP_SPONSORS };
  const count = Number(value);
  if (value.trim() === '' || !Number.isInteger(count) || count < 0 || count > MAX_TOP_SPONSORS) {
    process.stderr.write(`--metrics-top-sponsors takes a whole number from 0 to ${MAX_TOP_SPONSORS}, not "${value}"\n`);
    return { exitCode: 2 };
  }
  return { topSponsors: count };
}
