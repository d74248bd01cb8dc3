// What an engine subcommand (coordinator, worker, gateway, start, request) needs beyond its arguments: its config
// loaded and validated, and what its pod says about itself. Apart from args.ts so that `validate` and `schema` do not
// load the engine's config loader at start-up.
import { errorMessage } from '../common/errors.js';
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
