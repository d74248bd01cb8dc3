// Subcommand dispatch. Each subcommand lives in its own module and returns an exit code:
// 0 success, 1 a finding (e.g. invalid config), 2 usage or I/O error.
import { destinationPolicyFromEnvironment, setDestinationPolicy } from '../ois/destinations.js';
import { subcommands } from './commands.js';

export function usage(): string {
  const lines = ['Usage: oracle-node <command> [options]', '', 'Commands:'];
  const width = Math.max(...Object.keys(subcommands).map((name) => name.length));
  for (const [name, entry] of Object.entries(subcommands)) lines.push(`  ${name.padEnd(width)}  ${entry.summary}`);
  lines.push(
    '',
    'Run `oracle-node <command> --help` for the options of a command.',
    'Installed as the kubectl plugin kubectl-oracle_node, the same commands run as `kubectl oracle-node <command>`.',
  );
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
  const entry = subcommands[name];
  if (!entry) {
    process.stderr.write(`Unknown command: ${name}\n\n${usage()}\n`);
    return 2;
  }
  // The opt-in deny list for API destinations applies to every command that calls APIs (docs/security.md).
  setDestinationPolicy(destinationPolicyFromEnvironment(process.env));
  const command = await entry.load();
  return command.run(rest);
}

export const VERSION = '0.1.0';
