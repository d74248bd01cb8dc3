// `oracle-node validate -c config.json -s secrets.env [--json]`: 0 valid (warnings printed), 1 invalid,
// 2 usage or I/O error. Secret values never reach the output: validateConfig redacts its messages.

import { errorMessage } from '../common/errors.js';
// validate.js rather than the config index: the index also loads the JSON Schema and secret-scope modules, which a
// `validate` process never uses.
import { MAX_CONFIG_BYTES, type ValidationResult, validateConfig } from '../config/validate.js';
import { type CliIo, parseCommandArgs, processIo, usageError } from './args.js';
import { invalidText, issueLine } from './issue-lines.js';
import type { Subcommand } from './subcommand.js';

const USAGE = `Usage: oracle-node validate -c <config.json> [-s <secrets.env>] [--json]

Validates config.json with the secrets interpolated and reports every error and warning.
  -c, --config   path of config.json
  -s, --secrets  path of secrets.env (NAME=value lines); without it, \${NAME} references are errors
      --json     print {ok, errors, warnings} as JSON
Exit codes: 0 valid, 1 invalid, 2 usage or I/O error.`;

// Node's fs, loaded at start-up, read synchronously (a one-shot command waits for the files anyway): an `import` of
// node:fs or node:fs/promises would build an ES module namespace or load a module, ~2 ms of every validate.
const { readFileSync, statSync } = process.getBuiltinModule('node:fs');

function readLimited(path: string, what: string): string {
  const info = statSync(path);
  if (!info.isFile()) throw new Error(`${what} ${path} is not a file`);
  if (info.size > MAX_CONFIG_BYTES) throw new RangeError(`${what} ${path} is larger than the 10 MiB limit`);
  return readFileSync(path, 'utf8');
}

function ioMessage(error: unknown): string {
  const e = error as NodeJS.ErrnoException;
  if (e?.code === 'ENOENT') return `No such file: ${e.path}`;
  if (e?.code === 'EACCES') return `Permission denied: ${e.path}`;
  return errorMessage(error);
}

/** What reading and validating config.json (+ secrets.env) gave: a file that cannot be read, or a result. */
export type FileValidation =
  | { readable: false; message: string }
  | { readable: true; result: ValidationResult; configText?: string; secretsText?: string };

/** Reads both files within the size limit and validates them: what `validate` and `manifest` share. */
export async function validateFiles(configPath: string, secretsPath: string | undefined): Promise<FileValidation> {
  let secretsText: string | undefined;
  try {
    secretsText = secretsPath === undefined ? undefined : readLimited(secretsPath, 'Secrets file');
  } catch (error) {
    return { readable: false, message: ioMessage(error) };
  }
  let configText: string;
  try {
    configText = readLimited(configPath, 'Config file');
  } catch (error) {
    if (error instanceof RangeError)
      return { readable: true, result: { ok: false, errors: [{ path: '', message: error.message }], warnings: [] } };
    return { readable: false, message: ioMessage(error) };
  }
  const result = validateConfig(configText, secretsText ?? {});
  return secretsText === undefined
    ? { readable: true, result, configText }
    : { readable: true, result, configText, secretsText };
}

export { issueLine };

export async function runValidate(argv: string[], io: CliIo = processIo): Promise<number> {
  const parsed = parseCommandArgs(
    argv,
    { config: { type: 'string', short: 'c' }, secrets: { type: 'string', short: 's' }, json: { type: 'boolean' } },
    USAGE,
    { io },
  );
  if ('exitCode' in parsed) return parsed.exitCode;
  const { values } = parsed;
  if (!values.config) return usageError(io, 'Missing -c <config.json>', USAGE);

  const checked = await validateFiles(values.config, values.secrets);
  if (!checked.readable) return reportUnreadable(io, values.json, 2, checked.message);
  return printValidation(io, values.json, values.config, checked.result);
}

export function reportUnreadable(io: CliIo, json: boolean | undefined, code: number, message: string): number {
  if (json) io.stdout(`${JSON.stringify({ ok: false, errors: [{ path: '', message }], warnings: [] }, null, 2)}\n`);
  else io.stderr(`Error: ${message}\n`);
  return code;
}

export function printValidation(io: CliIo, json: boolean | undefined, file: string, result: ValidationResult): number {
  if (json) {
    io.stdout(`${JSON.stringify({ ok: result.ok, errors: result.errors, warnings: result.warnings }, null, 2)}\n`);
  } else {
    let text = result.ok
      ? `${file} is valid${result.warnings.length ? ` (${result.warnings.length} warning(s))` : ''}\n`
      : invalidText(file, result.errors);
    for (const issue of result.warnings) text += issueLine('warning', issue);
    (result.ok ? io.stdout : io.stderr)(text);
  }
  return result.ok ? 0 : 1;
}

export const validateCommand: Subcommand = {
  run: (argv) => runValidate(argv),
};
