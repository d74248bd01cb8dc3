// Loads config.json + secrets.env through the config package (validation and `${NAME}` interpolation).
// Errors are collected into one readable message; no secret value ever appears in it.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type Config,
  parseSecretsEnv,
  SECRET_NAME_PATTERN,
  scopedSecretsFromEnvironment,
  secretValuesOf,
  validateConfig,
  type Workload,
} from '../config/index.js';
import { ENV } from '../contract/pods.js';
import { registerSecrets } from '../observability/index.js';

export class ConfigLoadError extends Error {
  constructor(
    message: string,
    readonly issues: { path: string; message: string }[] = [],
    /** The file could not be read (a usage or I/O error rather than an invalid config). */
    readonly unreadable = false,
  ) {
    super(message);
    this.name = 'ConfigLoadError';
  }
}

/**
 * The variables `${NAME}` values are read from: the environment, and over it, when ORACLE_NODE_SECRETS_DIR names a
 * directory (a pod's keys mounted as a Secret volume), one value per file, named as the file, its content exactly
 * as written (a Secret volume's files hold the key's bytes). Files whose name is not a secret name (a volume's
 * `..data` and timestamped directories) are not read. Throws a ConfigLoadError naming the path when it cannot be read.
 */
export async function secretsEnvironment(env: NodeJS.ProcessEnv = process.env): Promise<NodeJS.ProcessEnv> {
  const dir = env[ENV.secretsDir];
  if (!dir) return env;
  const values: Record<string, string> = {};
  let path = dir;
  try {
    for (const name of await readdir(dir)) {
      if (!SECRET_NAME_PATTERN.test(name)) continue;
      path = join(dir, name);
      values[name] = await readFile(path, 'utf8');
    }
  } catch (error) {
    throw new ConfigLoadError(
      `Cannot read secrets directory file ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
      [],
      true,
    );
  }
  return { ...env, ...values };
}

/**
 * Without `secretsPath`, `${NAME}` values are taken from the environment; in a pod given only one workload's keys
 * (`scope`), the names only other workloads use get stand-ins (config/secret-scopes.ts).
 */
export async function loadConfig(configPath: string, secretsPath?: string, scope?: Workload): Promise<Config> {
  let configText: string;
  try {
    configText = await readFile(configPath, 'utf8');
  } catch (error) {
    throw new ConfigLoadError(
      `Cannot read config file ${configPath}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
      [],
      true,
    );
  }
  let secretsText: string | undefined;
  if (secretsPath) {
    try {
      secretsText = await readFile(secretsPath, 'utf8');
    } catch (error) {
      throw new ConfigLoadError(
        `Cannot read secrets file ${secretsPath}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
        [],
        true,
      );
    }
  }
  // Without a secrets file the values come from the environment (a pod with its Secret as envFrom), only
  // for the names the config references.
  const secrets =
    secretsText === undefined
      ? scopedSecretsFromEnvironment(configText, scope, await secretsEnvironment())
      : parseSecretsEnv(secretsText).secrets;
  // Every secret is scrubbed from the process's output before anything can be logged, even for an invalid config.
  registerSecrets(secretValuesOf(undefined, secrets));
  const result = validateConfig(configText, secretsText ?? secrets);
  registerSecrets(secretValuesOf(result.config, secrets));
  if (!result.ok || !result.config) {
    const lines = result.errors.map((issue) => `  ${issue.path || '(root)'}: ${issue.message}`);
    throw new ConfigLoadError(`The configuration is not valid:\n${lines.join('\n')}`, result.errors);
  }
  return result.config;
}
