// validateConfig: JSON text (or a parsed object) + secrets -> every error and warning at once, as
// {path, message}. It never throws on user input, and no message carries a secret value.
import type { z } from 'zod';
import { oisSchema } from './ois.js';
import { formatPath } from './paths.js';
import { type Config, configSchema } from './schema.js';
import { checkSecretsRecord, type Issue, interpolateSecrets, makeRedactor, parseSecretsEnv } from './secrets.js';

export type { Issue } from './secrets.js';

export type ValidationResult<T = Config> = {
  ok: boolean;
  config?: T;
  errors: Issue[];
  warnings: Issue[];
  /** secret name -> config paths that use it (never the values) */
  secretUsages?: Record<string, string[]>;
};

export const MAX_CONFIG_BYTES = 10 * 1024 * 1024;
export const MAX_NESTING_DEPTH = 256;

/** Turns a JSON.parse failure into "line L, column C: reason". */
export function describeJsonError(text: string, error: unknown): string {
  const reason = error instanceof Error ? error.message : String(error);
  const position = /at position (\d+)/.exec(reason);
  const cleaned = reason.replace(/\s*(in JSON )?at position \d+( \(line \d+ column \d+\))?/, '');
  if (!position) return `Malformed JSON: ${cleaned}`;
  const offset = Number(position[1]);
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - before.lastIndexOf('\n');
  return `Malformed JSON at line ${line}, column ${column}: ${cleaned}`;
}

function nestingDepthExceeds(root: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[root, 0]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (depth >= limit) return true;
    for (const child of Object.values(value))
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return false;
}

/** zod issues -> {path, message}, one per unknown key, with plainer wording for missing fields. */
export function toIssues(issues: readonly z.core.$ZodIssue[], input?: unknown): Issue[] {
  const out: Issue[] = [];
  for (const issue of issues) {
    const path = issue.path;
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys)
        out.push({ path: formatPath([...path, key]), message: `Unknown key "${key}" is not allowed here` });
      continue;
    }
    let message = issue.message;
    if (issue.code === 'invalid_type' && / received undefined$/.test(message)) {
      message = `Required field is missing (expected ${issue.expected})`;
    } else if (input !== undefined && path.length > 0 && isMissing(input, path)) {
      message = `Required field is missing (${message})`;
    }
    out.push({ path: formatPath(path), message });
  }
  return out;
}

/** True when the parent at `path` exists but has no such key (a missing field, not a wrong value). */
function isMissing(root: unknown, path: readonly PropertyKey[]): boolean {
  let node: unknown = root;
  for (const segment of path.slice(0, -1)) {
    if (node === null || typeof node !== 'object') return false;
    node = (node as Record<PropertyKey, unknown>)[segment];
  }
  return node !== null && typeof node === 'object' && !Object.hasOwn(node, path[path.length - 1]!);
}

function serverWarnings(config: unknown): Issue[] {
  const warnings: Issue[] = [];
  const oisList = (config as { ois?: unknown } | null)?.ois;
  if (!Array.isArray(oisList)) return warnings;
  oisList.forEach((ois, index) => {
    const servers = (ois as { apiSpecifications?: { servers?: unknown } } | null)?.apiSpecifications?.servers;
    if (Array.isArray(servers) && servers.length > 1) {
      warnings.push({
        path: formatPath(['ois', index, 'apiSpecifications', 'servers']),
        message: `${servers.length} servers are listed; only servers[0] is used`,
      });
    }
    if (Array.isArray(servers) && servers.length === 0) {
      warnings.push({
        path: formatPath(['ois', index, 'apiSpecifications', 'servers']),
        message: 'No server is listed; endpoints with an operation cannot call the API',
      });
    }
  });
  return warnings;
}

export type SecretsInput = string | Record<string, string> | undefined;

function loadJson(input: unknown, errors: Issue[]): { ok: boolean; value?: unknown } {
  if (typeof input !== 'string') return { ok: true, value: input };
  if (Buffer.byteLength(input, 'utf8') > MAX_CONFIG_BYTES) {
    errors.push({ path: '', message: `Config is larger than the ${MAX_CONFIG_BYTES / 1024 / 1024} MiB limit` });
    return { ok: false };
  }
  try {
    return { ok: true, value: JSON.parse(input.replace(/^\uFEFF/, '')) };
  } catch (error) {
    errors.push({ path: '', message: describeJsonError(input, error) });
    return { ok: false };
  }
}

function validateWith<S extends z.ZodType>(
  schema: S,
  input: unknown,
  secretsInput: SecretsInput,
  what: string,
): ValidationResult<z.output<S>> {
  const errors: Issue[] = [];
  const warnings: Issue[] = [];
  try {
    const loaded = loadJson(input, errors);
    if (!loaded.ok) return { ok: false, errors, warnings };
    const raw = loaded.value;
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
      return { ok: false, errors: [{ path: '', message: `${what} must be a JSON object` }], warnings };
    }
    if (nestingDepthExceeds(raw, MAX_NESTING_DEPTH)) {
      return {
        ok: false,
        errors: [{ path: '', message: `${what} is nested deeper than ${MAX_NESTING_DEPTH} levels` }],
        warnings,
      };
    }

    let secrets: Record<string, string> = {};
    if (typeof secretsInput === 'string') {
      const parsed = parseSecretsEnv(secretsInput);
      secrets = parsed.secrets;
      errors.push(...parsed.errors);
    } else if (secretsInput) {
      errors.push(...checkSecretsRecord(secretsInput));
      secrets = Object.fromEntries(Object.entries(secretsInput).filter(([, v]) => typeof v === 'string' && v !== ''));
    }

    const interpolation = interpolateSecrets(raw, secrets);
    const redact = makeRedactor(interpolation, secrets);
    errors.push(...interpolation.invalid);
    const placeholderPaths = new Set<string>();
    for (const [name, paths] of interpolation.missing) {
      for (const p of paths) placeholderPaths.add(p);
      errors.push({
        path: paths[0] ?? '',
        message: `Secret "${name}" is not defined in secrets.env; it is used at: ${paths.join(', ')}`,
      });
    }
    for (const issue of interpolation.invalid) placeholderPaths.add(issue.path);

    warnings.push(...serverWarnings(interpolation.value));
    const result = schema.safeParse(interpolation.value);
    if (!result.success) {
      for (const issue of toIssues(result.error.issues, interpolation.value)) {
        if (placeholderPaths.has(issue.path)) continue; // already reported as a missing secret
        errors.push({ path: redact(issue.path), message: redact(issue.message) });
      }
    }
    const secretUsages = Object.fromEntries(interpolation.usages);
    if (errors.length > 0 || !result.success) return { ok: false, errors, warnings, secretUsages };
    return { ok: true, config: result.data, errors, warnings, secretUsages };
  } catch (error) {
    // A bug of ours, never the user's input: still a structured answer, without the input in it.
    const reason = error instanceof Error ? error.name : 'Error';
    return { ok: false, errors: [...errors, { path: '', message: `Internal validator error (${reason})` }], warnings };
  }
}

/** Validates config.json (text or parsed) with secrets (secrets.env text or a name->value record). */
export function validateConfig(input: unknown, secrets?: SecretsInput): ValidationResult<Config> {
  return validateWith(configSchema, input, secrets, 'Config');
}

/** Validates one OIS object (text or parsed). */
export function validateOis(input: unknown, secrets?: SecretsInput): ValidationResult<z.output<typeof oisSchema>> {
  return validateWith(oisSchema, input, secrets, 'OIS');
}
