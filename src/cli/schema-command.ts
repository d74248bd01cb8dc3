// `oracle-node schema [--ois]`: the JSON Schema generated from the zod schemas (input side).

import { parseArgs } from 'node:util';
import { errorMessage } from '../common/errors.js';
import { configJsonSchema, oisJsonSchema } from '../config/index.js';
import type { Subcommand } from './subcommand.js';
import { type CliIo, processIo, usageError } from './validate-io.js';

const USAGE = `Usage: oracle-node schema [--ois]

Prints the JSON Schema of config.json (or, with --ois, of one OIS object), generated from the zod schemas.`;

export async function runSchema(argv: string[], io: CliIo = processIo): Promise<number> {
  let values: { ois?: boolean | undefined; help?: boolean | undefined };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { ois: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
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
  io.stdout(`${JSON.stringify(values.ois ? oisJsonSchema() : configJsonSchema(), null, 2)}\n`);
  return 0;
}

export const schemaCommand: Subcommand = {
  run: (argv) => runSchema(argv),
};
