// secrets.env parsing (dotenv-like) and `${NAME}` interpolation into the parsed config tree.
// The reference interpolates into the stringified JSON; walking the tree gives the same result for
// string values and keys, and lets us record which config paths use each secret (for errors and redaction).
import { formatPath, type PathSegment } from './paths.js';

export const SECRET_NAME_PATTERN = /^[A-Z][A-Z0-9_]*$/;

export type Issue = { path: string; message: string };

export type ParsedSecrets = { secrets: Record<string, string>; errors: Issue[] };

const LINE = /^\s*(?:export\s+)?([^=\s#]+)\s*=\s*(.*)$/;

/** Parses secrets.env: NAME=value lines, `#` comments, blank lines, '…' "…" `…` quotes (double quotes expand \n). */
export function parseSecretsEnv(text: string): ParsedSecrets {
  const secrets: Record<string, string> = Object.create(null);
  const errors: Issue[] = [];
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    const line = lines[i]!;
    if (/^\s*(#.*)?$/.test(line)) continue;
    const match = LINE.exec(line);
    if (!match) {
      errors.push({ path: `secrets.env:${lineNo}`, message: 'Expected NAME=value' });
      continue;
    }
    const name = match[1]!;
    let rest = match[2]!;
    let value: string;
    const quote = rest[0];
    if (quote === '"' || quote === "'" || quote === '`') {
      // A quoted value may span lines until the closing quote.
      let end = findClosingQuote(rest, quote);
      while (end < 0 && i + 1 < lines.length) {
        i++;
        rest += `\n${lines[i]}`;
        end = findClosingQuote(rest, quote);
      }
      if (end < 0) {
        errors.push({ path: `secrets.env:${lineNo}`, message: `Unterminated ${quote} quote in the value` });
        continue;
      }
      value = rest.slice(1, end);
      if (quote === '"') value = value.replace(/\\n/g, '\n').replace(/\\r/g, '\r');
    } else {
      value = rest.replace(/\s+#.*$/, '').trim();
    }
    if (!SECRET_NAME_PATTERN.test(name)) {
      // The text before "=" is not echoed: on a wrapped or garbled line it is often part of a secret value.
      errors.push({
        path: `secrets.env:${lineNo}`,
        message: `Secret name is not valid: the text before "=" must match ${SECRET_NAME_PATTERN}`,
      });
      continue;
    }
    if (value === '') {
      errors.push({ path: `secrets.env:${lineNo}`, message: `Secret ${name} cannot be empty` });
      continue;
    }
    secrets[name] = value;
  }
  return { secrets, errors };
}

function findClosingQuote(text: string, quote: string): number {
  for (let i = 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === quote) return i;
  }
  return -1;
}

/** Validates an already-parsed secrets record (names, non-empty values) as the reference does. */
export function checkSecretsRecord(secrets: Record<string, string>): Issue[] {
  const errors: Issue[] = [];
  for (const [name, value] of Object.entries(secrets)) {
    if (!SECRET_NAME_PATTERN.test(name)) {
      errors.push({
        path: 'secrets',
        message: `Secret name "${name}" is not valid: it must match ${SECRET_NAME_PATTERN}`,
      });
    } else if (typeof value !== 'string' || value === '') {
      errors.push({ path: 'secrets', message: `Secret ${name} cannot be empty` });
    }
  }
  return errors;
}

export type Interpolation = {
  value: unknown;
  /** secret name -> config paths (rendered) that use it */
  usages: Map<string, string[]>;
  /** names used in the config but not defined */
  missing: Map<string, string[]>;
  /** interpolated string -> the raw text with ${NAME}, to redact messages */
  redactions: Map<string, string>;
  /** names inside ${…} that are not valid secret names, and keys that are never allowed (__proto__, …) */
  invalid: Issue[];
  /** strings holding U+FFFD, the mark of bytes that were not UTF-8 when the file was read */
  warnings: Issue[];
  /** how many keys the input's objects hold (validate compares it with the keys written in the JSON text) */
  keyCount: number;
};

/** Keys that would reach an object's prototype when copied; never meaningful in a config. */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

// `${…}` not preceded by a backslash, as in the reference (ES template delimiter).
const PLACEHOLDER = /(\\?)\$\{([^}]*)\}/g;

/** Thrown when the tree is nested deeper than the caller allows (checked during the same walk). */
export class NestingTooDeepError extends Error {}

/**
 * Replaces `${NAME}` in every string (values and keys) of a parsed JSON tree; `\${…}` becomes a literal `${…}`.
 * The input is never modified; unchanged subtrees are shared between the input and the result.
 * Recursive with a depth limit (default 256), so hostile nesting ends in NestingTooDeepError, not a stack overflow.
 */
export function interpolateSecrets(root: unknown, secrets: Record<string, string>, maxDepth = 256): Interpolation {
  const usages = new Map<string, string[]>();
  const missing = new Map<string, string[]>();
  const redactions = new Map<string, string>();
  const invalid: Issue[] = [];
  const warnings: Issue[] = [];
  const path: PathSegment[] = [];
  let keyCount = 0;

  const record = (map: Map<string, string[]>, name: string, rendered: string) => {
    const list = map.get(name);
    if (list) list.push(rendered);
    else map.set(name, [rendered]);
  };

  const replaceString = (text: string): string => {
    if (!text.includes('${')) return text;
    let usedSecret = false;
    const result = text.replace(PLACEHOLDER, (whole, backslash: string, name: string) => {
      if (backslash) return whole.slice(1);
      const rendered = formatPath(path);
      if (!SECRET_NAME_PATTERN.test(name)) {
        invalid.push({
          path: rendered,
          message: `"\${${name}}" is not a valid secret reference (name must match ${SECRET_NAME_PATTERN}); escape a literal as \\\${`,
        });
        return whole;
      }
      if (!Object.hasOwn(secrets, name)) {
        record(missing, name, rendered);
        return whole;
      }
      record(usages, name, rendered);
      usedSecret = true;
      return secrets[name]!;
    });
    if (usedSecret) redactions.set(result, text);
    return result;
  };

  // Copy on write: a subtree without placeholders is returned as it is, so a large config is not copied whole
  // (the zod parse that follows makes its own output anyway).
  const walk = (node: unknown, depth: number): unknown => {
    if (typeof node === 'string') {
      if (node.includes('\uFFFD')) {
        warnings.push({
          path: formatPath(path),
          message: 'Contains bytes that are not valid UTF-8 (read as U+FFFD); save the file as UTF-8',
        });
      }
      return replaceString(node);
    }
    if (node === null || typeof node !== 'object') return node;
    if (depth >= maxDepth) throw new NestingTooDeepError(`nested deeper than ${maxDepth} levels`);
    if (Array.isArray(node)) {
      let copy: unknown[] | undefined;
      for (let i = 0; i < node.length; i++) {
        path.push(i);
        const value = walk(node[i], depth + 1);
        path.pop();
        if (copy) copy[i] = value;
        else if (value !== node[i]) {
          copy = node.slice(0, i);
          copy[i] = value;
        }
      }
      return copy ?? node;
    }
    // Copies are null-prototype objects: no key, whatever its name, can reach Object.prototype or change a copy's
    // prototype. A forbidden key is reported and left out, which makes a copy of its object.
    const record = node as Record<string, unknown>;
    const keys = Object.keys(record);
    keyCount += keys.length;
    let copy: Record<string, unknown> | undefined;
    const copyUpTo = (end: number): Record<string, unknown> => {
      const started: Record<string, unknown> = Object.create(null);
      for (let j = 0; j < end; j++) started[keys[j]!] = record[keys[j]!];
      return started;
    };
    for (let k = 0; k < keys.length; k++) {
      const key = keys[k]!;
      path.push(key);
      const newKey = key.includes('${') ? replaceString(key) : key;
      if (FORBIDDEN_KEYS.has(newKey)) {
        invalid.push({ path: formatPath(path), message: `The key "${newKey}" is not allowed` });
        path.pop();
        copy ??= copyUpTo(k);
        continue;
      }
      const value = walk(record[key], depth + 1);
      path.pop();
      if (!copy && (newKey !== key || value !== record[key])) copy = copyUpTo(k);
      if (copy) copy[newKey] = value;
    }
    return copy ?? node;
  };

  const value = walk(root, 0);
  return { value, usages, missing, redactions, invalid, warnings, keyCount };
}

/** Replaces secret values in a message with their `${NAME}` origin. */
export function makeRedactor(
  interpolation: Pick<Interpolation, 'redactions' | 'usages'>,
  secrets: Record<string, string>,
) {
  // Whole interpolated strings first (longest first), then the raw secret values themselves.
  const pairs: [string, string][] = [...interpolation.redactions.entries()];
  for (const name of interpolation.usages.keys()) {
    const value = secrets[name];
    if (value) pairs.push([value, `\${${name}}`]);
  }
  pairs.sort((a, b) => b[0].length - a[0].length);
  return (text: string): string => {
    let result = text;
    for (const [secret, replacement] of pairs) {
      if (secret.length > 0 && result.includes(secret)) result = result.split(secret).join(replacement);
    }
    return result;
  };
}

/** Names of the `${NAME}` references in a parsed config (escaped `\${…}` and invalid names excluded). */
export function referencedSecretNames(root: unknown): Set<string> {
  // With no secrets, interpolation records every valid reference as missing: the same walk, one rule.
  try {
    return new Set(interpolateSecrets(root, {}).missing.keys());
  } catch (error) {
    if (error instanceof NestingTooDeepError) return new Set();
    throw error;
  }
}

/**
 * The secrets a config references, taken from the environment. In a pod the Secret named by the OracleNode's
 * `secretRef` arrives as environment variables; only the names the config uses are picked, so unrelated variables
 * (PATH, KUBERNETES_*) never become secrets. Text that is not JSON yields no secrets: validation reports it.
 */
export function secretsFromEnvironment(config: unknown, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  let root = config;
  if (typeof config === 'string') {
    try {
      root = JSON.parse(config);
    } catch {
      return {};
    }
  }
  const secrets: Record<string, string> = {};
  for (const name of referencedSecretNames(root)) {
    const value = env[name];
    if (value !== undefined) secrets[name] = value;
  }
  return secrets;
}
