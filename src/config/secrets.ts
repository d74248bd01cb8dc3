// secrets.env parsing (dotenv 16's grammar) and `${NAME}` interpolation, in two passes with one answer.
// The tree pass walks the parsed config: it records which config paths use each secret (for errors) and reports
// missing and invalid references. The text pass (validate's, for config.json text) replaces the references in the
// text before it is parsed, one scan instead of a walk over every node, and declines whatever it cannot answer
// exactly as the tree pass would. The reference interpolates into the stringified JSON; both give its result for
// string values and keys.
import { isRedactable, MIN_SECRET_LENGTH } from '../observability/redaction.js';
import { closingQuote, openingQuote } from './json-text.js';
import { formatPath, type PathSegment } from './paths.js';

export const SECRET_NAME_PATTERN = /^[A-Z][A-Z0-9_]*$/;

export type Issue = { path: string; message: string };

export type ParsedSecrets = { secrets: Record<string, string>; errors: Issue[] };

// dotenv 16's grammar, as the reference reads secrets.env (`dotenv.parse`, lib/main.js of dotenv 16.6.1, its `LINE`
// with `(?:^|^)` and `(?:$|$)` written `^` and `$`, plus `d` for the key's position): a test holds it to dotenv's
// own parse. Its quirks are the reference's: `A=b#c` is `b`, `A="a" b` is `"a" b`, a quoted value runs over lines to
// its closing quote, `A: b` is a line too. dotenv itself is not loaded: its parse answers with the record alone (no
// line of a key, nothing about the lines it skips), so the scan is needed for the errors anyway.
const DOTENV_LINE =
  /^\s*(?:export\s+)?([\w.-]+)(?:\s*=\s*?|:\s+?)(\s*'(?:\\'|[^'])*'|\s*"(?:\\"|[^"])*"|\s*`(?:\\`|[^`])*`|[^#\r\n]+)?\s*(?:#.*)?$/dgm;
const BLANK_OR_COMMENT = /^\s*(?:#.*)?$/;

/** A value as dotenv 16 makes it from what DOTENV_LINE matched: trimmed, unquoted, `\n` `\r` expanded in "…". */
function dotenvValue(matched: string | undefined): string {
  let value = (matched ?? '').trim();
  const quote = value[0];
  value = value.replace(/^(['"`])([\s\S]*)\1$/gm, '$2');
  if (quote === '"') value = value.replace(/\\n/g, '\n').replace(/\\r/g, '\r');
  return value;
}

/**
 * Parses secrets.env as dotenv 16 does (the reference's `dotenv.parse`): the same names and values, the last of a
 * repeated name winning. Errors, by line: a line dotenv skips (not a comment or blank: it would vanish silently), a
 * name that is not a secret name, an empty value. The values are never part of an error.
 */
export function parseSecretsEnv(text: string): ParsedSecrets {
  const source = text.replace(/\r\n?/g, '\n');
  const lineStarts = [0];
  for (let i = source.indexOf('\n'); i !== -1; i = source.indexOf('\n', i + 1)) lineStarts.push(i + 1);
  const errors: { line: number; message: string }[] = [];
  const skipped = (from: number, to: number) => {
    // Matches end at a line's end, so a stretch between them is whole lines (its first is the end of one read).
    const first = lineNumberAt(lineStarts, from);
    source
      .slice(from, to)
      .split('\n')
      .forEach((line, k) => {
        if (!BLANK_OR_COMMENT.test(line)) errors.push({ line: first + k, message: 'Expected NAME=value' });
      });
  };
  // Name -> its last line and value; a Map keeps dotenv's order (where a name first appeared).
  const read = new Map<string, { line: number; value: string }>();
  let readUpTo = 0;
  for (const match of source.matchAll(DOTENV_LINE)) {
    skipped(readUpTo, match.index);
    read.set(match[1]!, { line: lineNumberAt(lineStarts, match.indices![1]![0]), value: dotenvValue(match[2]) });
    readUpTo = match.index + match[0].length;
  }
  skipped(readUpTo, source.length);

  const secrets: Record<string, string> = Object.create(null);
  for (const [name, { line, value }] of read) {
    if (!SECRET_NAME_PATTERN.test(name)) {
      // The name is not echoed: on a wrapped or garbled line it is often part of a secret value.
      errors.push({ line, message: `Secret name is not valid: the text before "=" must match ${SECRET_NAME_PATTERN}` });
    } else if (value === '') {
      errors.push({ line, message: `Secret ${name} cannot be empty` });
    } else {
      secrets[name] = value;
    }
  }
  errors.sort((a, b) => a.line - b.line);
  return { secrets, errors: errors.map(({ line, message }) => ({ path: `secrets.env:${line}`, message })) };
}

/** The 1-based line of `offset`, given the offsets where lines start. */
function lineNumberAt(lineStarts: readonly number[], offset: number): number {
  let low = 0;
  let high = lineStarts.length - 1;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if (lineStarts[middle]! <= offset) low = middle;
    else high = middle - 1;
  }
  return low + 1;
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
    if (usedSecret) recordRedaction(redactions, result, text);
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

/** What `${NAME}` interpolation into config.json's text gives: the text to parse and what redaction needs. */
export type TextInterpolation = {
  text: string;
  /** interpolated string -> the raw string with ${NAME}, as interpolateSecrets records them */
  redactions: Map<string, string>;
  /** the names of the secrets used */
  used: Set<string>;
};

const BACKSLASH = 0x5c;
const COLON = 0x3a;
/** Text whose presence anywhere sends interpolation to the tree pass (see interpolateSecretsInText). */
const TREE_PASS_MARKS = ['\\u', '\uFFFD'];
/** Only these characters may stand in JSON text outside a string: structure, white space, numbers, literals. */
const OUTSIDE_STRING_ONLY = /^[\s{}[\]:,"0-9+\-.eEtrufalsn]*$/;

/**
 * `${NAME}` interpolation into config.json's text, before it is parsed: one scan for `${` instead of a walk over
 * every node of the parsed tree. JSON.parse of the text it returns gives what interpolateSecrets gives on the parsed
 * text (a test compares them), and the redactions are the same; where that cannot be shown cheaply it returns
 * undefined and the caller takes the tree pass, which also reports what only it can (paths of missing or invalid
 * references, U+FFFD, forbidden keys). So it returns undefined when the text holds a `\u` escape (one could spell
 * `$`, `{`, `}`, U+FFFD or a forbidden key) or U+FFFD, and when a reference is escaped (`\${`), not a valid name,
 * not defined, or in a key. Forbidden keys are left to countKeys, which meets every key of the parse anyway. Each
 * value goes in JSON-escaped, so a reference inside a string stays inside it; one standing outside any string
 * (invalid JSON) is caught because the value must hold a character that JSON allows only inside strings: the text
 * then fails to parse and the caller reports the raw text's error.
 */
export function interpolateSecretsInText(text: string, secrets: Record<string, string>): TextInterpolation | undefined {
  for (const mark of TREE_PASS_MARKS) if (text.includes(mark)) return undefined;
  const redactions = new Map<string, string>();
  const used = new Set<string>();
  let at = text.indexOf('${');
  // Joined once at the end: a flat string, which JSON.parse reads faster than the rope that += builds.
  const pieces: string[] = [];
  let copiedUpTo = 0;
  // The closing quote of the string that held the last reference: references before it are in the same string.
  // Each string's bounds are searched once, so the scans stay linear in the text however many references it has.
  let stringEnd = -1;
  while (at !== -1) {
    if (text.charCodeAt(at - 1) === BACKSLASH) return undefined;
    const close = text.indexOf('}', at + 2);
    if (close === -1) return undefined;
    const name = text.slice(at + 2, close);
    if (!SECRET_NAME_PATTERN.test(name) || !Object.hasOwn(secrets, name)) return undefined;
    const value = JSON.stringify(secrets[name]!).slice(1, -1);
    if (OUTSIDE_STRING_ONLY.test(value)) return undefined;
    if (at > stringEnd) {
      // The first reference of this string: record its redaction as the tree pass does, once per string.
      const start = openingQuote(text, at);
      const end = closingQuote(text, close + 1);
      if (start === -1 || end === -1 || followedByColon(text, end)) return undefined;
      let raw: unknown;
      try {
        raw = JSON.parse(text.slice(start, end + 1));
      } catch {
        return undefined; // not inside a string after all: the text is not JSON, the tree pass reports it
      }
      if (typeof raw !== 'string') return undefined;
      recordRedaction(
        redactions,
        raw.replace(PLACEHOLDER, (_whole, _backslash, ref: string) => secrets[ref]!),
        raw,
      );
      stringEnd = end;
    }
    used.add(name);
    pieces.push(text.slice(copiedUpTo, at), value);
    copiedUpTo = close + 1;
    at = text.indexOf('${', copiedUpTo);
  }
  if (pieces.length === 0) return { text, redactions, used };
  pieces.push(text.slice(copiedUpTo));
  return { text: pieces.join(''), redactions, used };
}

/** Whether the string closed at `end` is a key: the next character after white space is a colon. */
function followedByColon(text: string, end: number): boolean {
  let i = end + 1;
  while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  return text.charCodeAt(i) === COLON;
}

/**
 * How many keys the objects of a parsed JSON tree hold, or undefined when one of them is a forbidden key (the tree
 * pass reports those); NestingTooDeepError past maxDepth, as interpolateSecrets.
 */
export function countKeys(root: unknown, maxDepth: number): number | undefined {
  let count = 0;
  let forbidden = false;
  const walk = (node: object, depth: number): void => {
    if (depth >= maxDepth) throw new NestingTooDeepError(`nested deeper than ${maxDepth} levels`);
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const item: unknown = node[i];
        if (typeof item === 'object' && item !== null) walk(item, depth + 1);
      }
      return;
    }
    // for...in with an own-key test allocates no key list per object (Object.keys did, for every object).
    for (const key in node) {
      if (!Object.hasOwn(node, key)) continue;
      count++;
      // The forbidden keys are 9 or 11 characters long: most keys are ruled out by their length alone.
      if ((key.length === 9 || key.length === 11) && FORBIDDEN_KEYS.has(key)) forbidden = true;
      const item = (node as Record<string, unknown>)[key];
      if (typeof item === 'object' && item !== null) walk(item, depth + 1);
    }
  };
  if (typeof root === 'object' && root !== null) walk(root, 0);
  return forbidden ? undefined : count;
}

/**
 * Two raw strings may interpolate to the same text; the smaller raw one is kept, so that the redactions do not
 * depend on the order in which the strings were met.
 */
function recordRedaction(redactions: Map<string, string>, interpolated: string, raw: string): void {
  const kept = redactions.get(interpolated);
  if (kept === undefined || raw < kept) redactions.set(interpolated, raw);
}

/**
 * Replaces secret values in a message with their `${NAME}` origin, by the log redactor's rule: a value too short to
 * be scrubbed (shortSecretWarnings names it) stays, rather than every "e" of a message becoming `${NAME}`.
 */
export function makeRedactor(
  redactions: ReadonlyMap<string, string>,
  usedNames: Iterable<string>,
  secrets: Record<string, string>,
) {
  // Whole interpolated strings first (longest first), then the raw secret values themselves; equal lengths in a
  // fixed order, so that the answer does not depend on the order in which the strings were met.
  const pairs: [string, string][] = [...redactions.entries()].filter(([secret]) => isRedactable(secret));
  for (const name of usedNames) {
    const value = secrets[name];
    if (value && isRedactable(value)) pairs.push([value, `\${${name}}`]);
  }
  pairs.sort((a, b) => b[0].length - a[0].length || compare(a[0], b[0]) || compare(a[1], b[1]));
  return (text: string): string => {
    let result = text;
    for (const [secret, replacement] of pairs) {
      if (result.includes(secret)) result = result.split(secret).join(replacement);
    }
    return result;
  };
}

/** The error of a `${NAME}` that secrets.env does not define, at the first path that uses it. */
export function missingSecretIssue(name: string, paths: readonly string[]): Issue {
  return {
    path: paths[0] ?? '',
    message: `Secret "${name}" is not defined in secrets.env; it is used at: ${paths.join(', ')}`,
  };
}

/** A warning, by name and never by value, for each used secret too short to be kept out of logs and messages. */
export function shortSecretWarnings(
  usedNames: Iterable<string>,
  secrets: Record<string, string>,
  usages: () => Record<string, string[]>,
): Issue[] {
  const short = [...usedNames].filter((name) => secrets[name] && !isRedactable(secrets[name]));
  if (short.length === 0) return [];
  const paths = usages();
  return short.sort().map((name) => ({
    path: paths[name]?.[0] ?? '',
    message:
      `Secret "${name}" is shorter than ${MIN_SECRET_LENGTH} characters: too short to be redacted, it can appear in ` +
      'logs and messages (a placeholder? set the real value)',
  }));
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

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
