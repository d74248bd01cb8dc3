// `oracle-node validate -c config.json -s secrets.env [--json]`: 0 valid (warnings printed), 1 invalid,
// 2 usage or I/O error. Secret values never reach the output: validateConfig redacts its messages.

import { readFile, stat } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { errorMessage } from '../common/errors.js';
import { type Issue, MAX_CONFIG_BYTES, type ValidationResult, validateConfig } from '../config/index.js';
import type { Subcommand } from './subcommand.js';
import { type CliIo, processIo, usageError } from './validate-io.js';

const USAGE = `Usage: oracle-node validate -c <config.json> [-s <secrets.env>] [--json]

Validates config.json with the secrets interpolated and reports every error and warning.
  -c, --config   path of config.json
  -s, --secrets  path of secrets.env (NAME=value lines); without it, \${NAME} references are errors
      --json     print {ok, errors, warnings} as JSON
Exit codes: 0 valid, 1 invalid, 2 usage or I/O error.`;

async function readLimited(path: string, what: string): Promise<string> {
  const info = await stat(path);
  if (!info.isFile()) throw new Error(`${what} ${path} is not a file`);
  if (info.size > MAX_CONFIG_BYTES) throw new RangeError(`${what} ${path} is larger than the 10 MiB limit`);
  return readFile(path, 'utf8');
}

function ioMessage(error: unknown): string {
  const e = error as NodeJS.ErrnoException;
  if (e?.code === 'ENOENT') return `No such file: ${e.path}`;
  if (e?.code === 'EACCES') return `Permission denied: ${e.path}`;
  return errorMessage(error);
}

const line = (kind: string, issue: Issue) => `  ${kind} ${issue.path || '(root)'}: ${issue.message}\n`;

export async function runValidate(argv: string[], io: CliIo = processIo): Promise<number> {
  let values: {
    config?: string | undefined;
    secrets?: string | undefined;
    json?: boolean | undefined;
    help?: boolean | undefined;
  };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        config: { type: 'string', short: 'c' },
        secrets: { type: 'string', short: 's' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    return usageError(io, errorMessage(error), USAGE);
  }
  if (values.help) {
    io.stdout(`${USAGE}\n`);
    return 0;
  }
  if (!values.config) return usageError(io, 'Missing -c <config.json>', USAGE);

  let configText: string;
  let secretsText: string | undefined;
  let result: ValidationResult;
  try {
    secretsText = values.secrets === undefined ? undefined : await readLimited(values.secrets, 'Secrets file');
  } catch (error) {
    return report(io, values.json, 2, ioMessage(error));
  }
  try {
    configText = await readLimited(values.config, 'Config file');
  } catch (error) {
    if (error instanceof RangeError) {
      result = { ok: false, errors: [{ path: '', message: error.message }], warnings: [] };
      return print(io, values.json, values.config, result);
    }
    return report(io, values.json, 2, ioMessage(error));
  }
  result = validateConfig(configText, secretsText ?? {});
  return print(io, values.json, values.config, result);
}

function report(io: CliIo, json: boolean | undefined, code: number, message: string): number {
  if (json) io.stdout(`${JSON.stringify({ ok: false, errors: [{ path: '', message }], warnings: [] }, null, 2)}\n`);
  else io.stderr(`Error: ${message}\n`);
  return code;
}

function print(io: CliIo, json: boolean | undefined, file: string, result: ValidationResult): number {
  if (json) {
    io.stdout(`${JSON.stringify({ ok: result.ok, errors: result.errors, warnings: result.warnings }, null, 2)}\n`);
  } else {
    let text = result.ok
      ? `${file} is valid${result.warnings.length ? ` (${result.warnings.length} warning(s))` : ''}\n`
      : `${file} is not valid: ${result.errors.length} error(s)\n`;
    for (const issue of result.errors) text += line('error  ', issue);
    for (const issue of result.warnings) text += line('warning', issue);
    (result.ok ? io.stdout : io.stderr)(text);
  }
  return result.ok ? 0 : 1;
}

export const validateCommand: Subcommand = {
  run: (argv) => runValidate(argv),
};
