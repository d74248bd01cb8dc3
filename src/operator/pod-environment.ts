// What an engine process needs to know when it runs in a pod the operator made: the config's `${NAME}` values come
// from the environment (the Secret's keys, through envFrom) instead of a secrets.env file.
import { SECRETS_FROM_ENV } from './builders/common.js';

const PLACEHOLDER = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** True inside operator-made pods (`ORACLE_NODE_SECRETS=env`). */
export function secretsFromEnvironment(env: NodeJS.ProcessEnv = process.env): boolean {
  return env[SECRETS_FROM_ENV.name] === SECRETS_FROM_ENV.value;
}

/**
 * The secrets record for validateConfig: every `${NAME}` the config text uses, valued from the environment. Names
 * the environment lacks are left out, so validation reports them as missing with their config paths.
 */
export function secretsForConfig(configText: string, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const secrets: Record<string, string> = {};
  for (const match of configText.matchAll(PLACEHOLDER)) {
    const name = match[1]!;
    const value = env[name];
    if (value !== undefined && value !== '') secrets[name] = value;
  }
  return secrets;
}
