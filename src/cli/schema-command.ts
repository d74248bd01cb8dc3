// `oracle-node schema [--ois]`: the JSON Schema generated from the zod schemas (input side).

import { configJsonSchema, oisJsonSchema } from '../config/index.js';
import { type CliIo, parseCommandArgs, processIo } from './args.js';
import type { Subcommand } from './subcommand.js';

const USAGE = `Usage: oracle-node schema [--ois]

Prints the JSON Schema of config.json (or, with --ois, of one OIS object), generated from the zod schemas.`;

export async function runSchema(argv: string[], io: CliIo = processIo): Promise<number> {
  const parsed = parseCommandArgs(argv, { ois: { type: 'boolean' } }, USAGE, { io });
  if ('exitCode' in parsed) return parsed.exitCode;
  const { values } = parsed;
  io.stdout(`${JSON.stringify(values.ois ? oisJsonSchema() : configJsonSchema(), null, 2)}\n`);
  return 0;
}

export const schemaCommand: Subcommand = {
  run: (argv) => runSchema(argv),
};
