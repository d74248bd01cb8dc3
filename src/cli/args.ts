// The argument handling every engine subcommand shares: parse, answer --help, and turn a parse error into usage
// on stderr with exit code 2. `-h/--help` is added to each command's options.
import { type ParseArgsOptionsConfig, parseArgs } from 'node:util';

const HELP_OPTION = { help: { type: 'boolean', short: 'h' } } as const;

type Values<O extends ParseArgsOptionsConfig> = ReturnType<
  typeof parseArgs<{ args: string[]; options: O & typeof HELP_OPTION }>
>['values'];

/** The parsed values, or the exit code when the command is already answered (help, or a usage error). */
export function parseCommandArgs<const O extends ParseArgsOptionsConfig>(
  argv: string[],
  options: O,
  help: string,
): { values: Values<O> } | { exitCode: number } {
  let values: Values<O>;
  try {
    ({ values } = parseArgs({ args: argv, options: { ...options, ...HELP_OPTION } }));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${help}`);
    return { exitCode: 2 };
  }
  if ((values as { help?: boolean }).help) {
    process.stdout.write(help);
    return { exitCode: 0 };
  }
  return { values };
}
