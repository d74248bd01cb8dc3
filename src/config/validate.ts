// validateConfig: JSON text (or a parsed object) + secrets -> every error and warning at once, as
// {path, message}. It never throws on user input, and no message carries a secret value.
import type { z } from 'zod';
import { errorMessage } from '../common/errors.js';
import { addressChecksumWarnings, repairAddressChecksums } from './addresses.js';
import { toIssues } from './issues.js';
import { closingQuote } from './json-text.js';
import { oisSchema } from './ois.js';
import { formatPath, type PathSegment } from './paths.js';
import { type Config, fastConfig } from './schema.js';
import {
  checkSecretsRecord,
  countKeys,
  type Interpolation,
  type Issue,
  interpolateSecrets,
  interpolateSecretsInText,
  makeRedactor,
  missingSecretIssue,
  NestingTooDeepError,
  parseSecretsEnv,
  shortSecretWarnings,
  type TextInterpolation,
} from './secrets.js';

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
  const reason = errorMessage(error);
  const position = /at position (\d+)/.exec(reason);
  // V8 quotes the offending character and an excerpt of the text, which may be a secret: keep only the kind
  // of problem; the line and column say where.
  const cleaned = reason.startsWith('Unexpected token')
    ? 'Unexpected character'
    : reason.replace(/\s*(in JSON )?at position \d+.*$/s, '').replace(/,.*$/s, '');
  const offset = position ? Number(position[1]) : locateJsonError(text);
  if (offset === undefined) return `Malformed JSON: ${cleaned}`;
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - before.lastIndexOf('\n');
  return `Malformed JSON at line ${line}, column ${column}: ${cleaned}`;
}

/**
 * Paths of keys that appear twice in one object of valid JSON text (JSON.parse silently keeps the last).
 * An iterative scan with a stack of open containers, so deep nesting cannot overflow. It runs over every
 * config validated (5 MiB in the benchmark), so it jumps over string contents with indexOf and compares the
 * few keys of an object as a list before it needs a set.
 */
export function duplicateKeyPaths(text: string): string[] {
  type Frame = { isObject: boolean; keys: string[]; keySet?: Set<string>; key: string; index: number };
  const stack: Frame[] = [];
  const found: string[] = [];
  const currentPath = (): PathSegment[] => stack.map((frame) => (frame.isObject ? frame.key : frame.index));
  let expectKey = false;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const closing = closingQuote(text, i + 1);
      const end = closing === -1 ? text.length : closing;
      const frame = stack[stack.length - 1];
      if (expectKey && frame?.isObject) {
        const raw = text.slice(i + 1, end);
        const key = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
        frame.key = key;
        if (hasKey(frame, key)) found.push(formatPath(currentPath()));
        else addKey(frame, key);
        expectKey = false;
      }
      i = end;
    } else if (c === OPEN_BRACE) {
      stack.push({ isObject: true, keys: [], key: '', index: 0 });
      expectKey = true;
    } else if (c === OPEN_BRACKET) {
      stack.push({ isObject: false, keys: [], key: '', index: 0 });
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      stack.pop();
    } else if (c === COMMA) {
      const frame = stack[stack.length - 1];
      if (frame?.isObject) expectKey = true;
      else if (frame) frame.index++;
    }
  }
  return found;
}

const QUOTE = 0x22;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
/** Objects with more keys than this are checked with a Set; smaller ones by comparing the list. */
const KEY_LIST_LIMIT = 16;

function hasKey(frame: { keys: string[]; keySet?: Set<string> }, key: string): boolean {
  return frame.keySet ? frame.keySet.has(key) : frame.keys.includes(key);
}

function addKey(frame: { keys: string[]; keySet?: Set<string> }, key: string): void {
  if (frame.keySet) frame.keySet.add(key);
  else if (frame.keys.length < KEY_LIST_LIMIT) frame.keys.push(key);
  else {
    frame.keySet = new Set(frame.keys);
    frame.keySet.add(key);
  }
}

/**
 * Offset of the first syntax error in JSON text (V8's messages do not always carry one). An iterative
 * scanner: a stack of open containers, so deep nesting cannot overflow.
 */
export function locateJsonError(text: string): number | undefined {
  const stack: ('{' | '[')[] = [];
  let i = 0;
  // expect: 'value' | 'key' | 'colon' | 'commaOrEnd' | 'valueOrEnd' | 'keyOrEnd'
  let expect = 'value';
  const ws = /[ \t\n\r]/;
  const literal = /^(true|false|null)/;
  const number = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/;
  const afterValue = () => (expect = stack.length === 0 ? 'end' : 'commaOrEnd');
  while (i < text.length) {
    const c = text[i]!;
    if (ws.test(c)) {
      i++;
      continue;
    }
    if (expect === 'end') return i;
    if (expect === 'colon') {
      if (c !== ':') return i;
      i++;
      expect = 'value';
      continue;
    }
    if (expect === 'commaOrEnd') {
      const top = stack[stack.length - 1];
      if (c === ',') expect = top === '{' ? 'key' : 'value';
      else if ((c === '}' && top === '{') || (c === ']' && top === '[')) {
        stack.pop();
        afterValue();
      } else return i;
      i++;
      continue;
    }
    if ((expect === 'keyOrEnd' && c === '}') || (expect === 'valueOrEnd' && c === ']')) {
      stack.pop();
      i++;
      afterValue();
      continue;
    }
    if (expect === 'key' || expect === 'keyOrEnd') {
      if (c !== '"') return i;
    }
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') {
        const code = text.charCodeAt(j);
        if (code < 0x20) return j;
        j += text[j] === '\\' ? 2 : 1;
      }
      if (j >= text.length) return text.length;
      i = j + 1;
      if (expect === 'key' || expect === 'keyOrEnd') expect = 'colon';
      else afterValue();
      continue;
    }
    if (c === '{' || c === '[') {
      stack.push(c);
      i++;
      expect = c === '{' ? 'keyOrEnd' : 'valueOrEnd';
      continue;
    }
    const rest = text.slice(i, i + 400);
    const match = literal.exec(rest) ?? number.exec(rest);
    if (!match) return i;
    i += match[0].length;
    afterValue();
  }
  return expect === 'end' ? undefined : text.length;
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

function duplicateKeyWarning(path: string): Issue {
  return { path, message: 'This key appears more than once in the same object; the last value is used' };
}

type Loaded =
  | { ok: false }
  /** text: the raw text (BOM removed) when the input was text; fromText: set when value is its interpolated parse */
  | { ok: true; value: unknown; text?: string; fromText?: TextInterpolation };

/** The parsed config and, when it came as text, that text; interpolated already when the text pass could do it. */
function loadJson(input: unknown, secrets: Record<string, string>, errors: Issue[]): Loaded {
  if (typeof input !== 'string') return { ok: true, value: input };
  if (Buffer.byteLength(input, 'utf8') > MAX_CONFIG_BYTES) {
    errors.push({ path: '', message: `Config is larger than the ${MAX_CONFIG_BYTES / 1024 / 1024} MiB limit` });
    return { ok: false };
  }
  const text = input.replace(/^\uFEFF/, '');
  const fromText = interpolateSecretsInText(text, secrets);
  if (fromText) {
    try {
      return { ok: true, value: JSON.parse(fromText.text), text, fromText };
    } catch {
      // The raw text is parsed below: its own error is the one reported.
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    errors.push({ path: '', message: describeJsonError(input, error) });
    return { ok: false };
  }
  return { ok: true, value, text };
}

/** The secrets as a record, and what is wrong with secrets.env or with the record given. */
function readSecrets(secretsInput: SecretsInput): { secrets: Record<string, string>; errors: Issue[] } {
  if (typeof secretsInput === 'string') return parseSecretsEnv(secretsInput);
  if (!secretsInput) return { secrets: {}, errors: [] };
  return {
    secrets: Object.fromEntries(Object.entries(secretsInput).filter(([, v]) => typeof v === 'string' && v !== '')),
    errors: checkSecretsRecord(secretsInput),
  };
}

/** The interpolated config and what validation reports of its secrets, duplicate keys and UTF-8. */
type Interpolated = Omit<Interpolation, 'usages' | 'keyCount'> & {
  usedNames: Iterable<string>;
  /** secret name -> config paths that use it; a function, since the text pass finds the paths only when asked */
  secretUsages: () => Record<string, string[]>;
  duplicates: string[];
};

/**
 * `${NAME}` interpolation: the text pass's parse when it had one, no key is repeated (a repeated key hides a value
 * from the tree but not from the text) and none is forbidden, else the tree pass over the parsed text or the object
 * given.
 */
function interpolate(loaded: Loaded & { ok: true }, secrets: Record<string, string>): Interpolated {
  const { text, fromText } = loaded;
  // The repeated keys of the text: found once, by whichever pass gets to them first.
  let duplicates: string[] | undefined;
  if (text !== undefined && fromText !== undefined) {
    const keyCount = countKeys(loaded.value, MAX_NESTING_DEPTH);
    if (keyCount !== undefined) duplicates = keysAllDistinct(text, keyCount) ? [] : duplicateKeyPaths(text);
    if (duplicates?.length === 0) {
      return {
        value: loaded.value,
        usedNames: fromText.used,
        secretUsages: () => Object.fromEntries(interpolateSecrets(JSON.parse(text), secrets, MAX_NESTING_DEPTH).usages),
        missing: new Map(),
        redactions: fromText.redactions,
        invalid: [],
        warnings: [],
        duplicates,
      };
    }
  }
  const tree = interpolateSecrets(fromText ? JSON.parse(text!) : loaded.value, secrets, MAX_NESTING_DEPTH);
  // The full scan of the text runs only when the quick count cannot rule out a repeated key.
  duplicates ??= text === undefined || keysAllDistinct(text, tree.keyCount) ? [] : duplicateKeyPaths(text);
  return { ...tree, usedNames: tree.usages.keys(), secretUsages: () => Object.fromEntries(tree.usages), duplicates };
}

/**
 * True when valid JSON text cannot repeat a key in any object, decided without the full scan. Without a quote,
 * white space and a colon anywhere in the text, every key's closing quote is followed directly by its colon, so
 * the occurrences of `":` are at least the keys written (an escaped quote or a string starting with a colon adds
 * more), and those are at least the keys JSON.parse keeps (one per distinct name in each object). Equal counts
 * therefore mean no key was written twice; any difference leaves the answer to duplicateKeyPaths.
 */
export function keysAllDistinct(text: string, parsedKeyCount: number): boolean {
  if (/"\s+:/.test(text)) return false;
  let written = 0;
  for (let at = text.indexOf('":'); at !== -1; at = text.indexOf('":', at + 2)) written++;
  return written === parsedKeyCount;
}

function validateWith<S extends z.ZodType>(
  schema: S,
  input: unknown,
  secretsInput: SecretsInput,
  what: string,
  /** Run on a valid result: may complete the output, answers warnings. */
  finish?: (input: unknown, output: z.output<S>) => Issue[],
): ValidationResult<z.output<S>> {
  const errors: Issue[] = [];
  const warnings: Issue[] = [];
  try {
    const { secrets, errors: secretsErrors } = readSecrets(secretsInput);
    const loaded = loadJson(input, secrets, errors);
    if (!loaded.ok) return { ok: false, errors, warnings };
    const raw = loaded.value;
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
      return { ok: false, errors: [{ path: '', message: `${what} must be a JSON object` }], warnings };
    }
    errors.push(...secretsErrors);

    let interpolation: Interpolated;
    try {
      interpolation = interpolate(loaded, secrets);
    } catch (error) {
      if (!(error instanceof NestingTooDeepError)) throw error;
      errors.push({ path: '', message: `${what} is nested deeper than ${MAX_NESTING_DEPTH} levels` });
      return { ok: false, errors, warnings };
    }
    const usedNames = [...interpolation.usedNames];
    const redact = makeRedactor(interpolation.redactions, usedNames, secrets);
    errors.push(...interpolation.invalid);
    warnings.push(...interpolation.warnings, ...interpolation.duplicates.map((path) => duplicateKeyWarning(path)));
    warnings.push(...shortSecretWarnings(usedNames, secrets, interpolation.secretUsages));
    const placeholderPaths = new Set<string>();
    for (const [name, paths] of interpolation.missing) {
      for (const p of paths) placeholderPaths.add(p);
      errors.push(missingSecretIssue(name, paths));
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
    const valid = errors.length === 0 && result.success;
    if (valid && finish) warnings.push(...finish(interpolation.value, result.data));
    const answer: ValidationResult<z.output<S>> = valid
      ? { ok: true, config: result.data, errors, warnings }
      : { ok: false, errors, warnings };
    return withSecretUsages(answer, interpolation.secretUsages);
  } catch (error) {
    // A bug of ours, never the user's input: still a structured answer, without the input in it.
    const reason = error instanceof Error ? error.name : 'Error';
    return { ok: false, errors: [...errors, { path: '', message: `Internal validator error (${reason})` }], warnings };
  }
}

/** Sets result.secretUsages, computed when first read. */
function withSecretUsages<T extends ValidationResult<unknown>>(result: T, usages: () => Record<string, string[]>): T {
  let computed: Record<string, string[]> | undefined;
  return Object.defineProperty(result, 'secretUsages', {
    configurable: true,
    enumerable: true,
    get: () => (computed ??= usages()),
  });
}

/** Validates config.json (text or parsed) with secrets (secrets.env text or a name->value record). */
export function validateConfig(input: unknown, secrets?: SecretsInput): ValidationResult<Config> {
  return validateWith(fastConfig(), input, secrets, 'Config', (written, config) => {
    repairAddressChecksums(config);
    return addressChecksumWarnings(written);
  });
}

/** Validates one OIS object (text or parsed). */
export function validateOis(input: unknown, secrets?: SecretsInput): ValidationResult<z.output<typeof oisSchema>> {
  return validateWith(oisSchema, input, secrets, 'OIS');
}
