// Subcommand dispatch. Each subcommand lives in its own module and returns an exit code:
// 0 success, 1 a finding (e.g. invalid config), 2 usage or I/O error.
import { redact } from '../observability/index.js';
import { destinationPolicyFromEnvironment, setDestinationPolicy } from '../ois/destinations.js';
import { subcommands } from './commands.js';

/**
 * Every text a subcommand writes to stdout or stderr (summaries, usage errors, messages) goes through the
 * secret redactor, like the log lines: a secret registered by the command never leaves the process in clear.
 */
export function redactStandardStreams(): void {
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream) as (chunk: unknown, ...rest: unknown[]) => boolean;
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      if (typeof chunk === 'string') return write(redact(chunk), ...rest);
      if (chunk instanceof Uint8Array) return write(redact(Buffer.from(chunk).toString('utf8')), ...rest);
      return write(chunk, ...rest);
    }) as typeof stream.write;
  }
}

function usage(): string {
  const lines = ['Usage: oracle-node <command> [options]', '', 'Commands:'];
  for (const name of Object.keys(subcommands).sort()) lines.push(`  ${name}`);
  lines.push('', 'Run `oracle-node <command> --help` for the options of a command.');
  return lines.join('\n');
}

export async function runCli(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${usage()}\n`);
    return name ? 0 : 2;
  }
  if (name === '--version' || name === 'version') {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const load = subcommands[name];
  if (!load) {
    process.stderr.write(`Unknown command: ${name}\n\n${usage()}\n`);
    return 2;
  }
  // The opt-in deny list for API destinations applies to every command that calls APIs (docs/security.md).
  setDestinationPolicy(destinationPolicyFromEnvironment(process.env));
  const command = await load();
  return command.run(rest);
}

export const VERSION = '0.1.0';
