// Subcommand dispatch. Each subcommand lives in its own module and returns an exit code:
// 0 success, 1 a finding (e.g. invalid config), 2 usage or I/O error.
import { subcommands } from './commands.js';

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
  const command = await load();
  return command.run(rest);
}

export const VERSION = '0.1.0';
