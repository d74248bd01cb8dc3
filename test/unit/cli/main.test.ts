import { expect } from 'chai';
import { subcommands } from '../../../src/cli/commands.js';
import { runCli, usage } from '../../../src/cli/main.js';

describe('oracle-node CLI', () => {
  it('answers an unknown command with usage and exit code 2', async () => {
    expect(await runCli(['no-such-command'])).to.equal(2);
  });

  it('prints its version', async () => {
    expect(await runCli(['--version'])).to.equal(0);
  });

  it('has every subcommand: the workloads, the tools and the day-two commands', () => {
    expect(Object.keys(subcommands).sort()).to.deep.equal(
      [
        'coordinator',
        'derive',
        'gateway',
        'operator',
        'schema',
        'start',
        'validate',
        'manifest',
        'worker',
        'status',
        'logs',
        'cycle',
        'request',
        'usage',
        'completion',
        'feed',
      ].sort(),
    );
  });

  it('--help gives a one-line summary of each command', () => {
    const lines = usage().split('\n');
    for (const [name, entry] of Object.entries(subcommands)) {
      const line = lines.find((l) => l.trimStart().startsWith(`${name} `));
      expect(line, name).to.match(new RegExp(`^  ${name} +${entry.summary.replace(/[()|.*+?]/g, '\\$&')}$`));
    }
  });

  for (const name of Object.keys(subcommands)) {
    it(`dispatches ${name} (--help exits 0)`, async () => {
      const write = process.stdout.write;
      process.stdout.write = (() => true) as typeof process.stdout.write;
      try {
        expect(await runCli([name, '--help'])).to.equal(0);
      } finally {
        process.stdout.write = write;
      }
    });
  }

  // One argument convention (src/cli/args.ts): an unknown option is a usage error on stderr (the parser's message, a
  // blank line, the command's usage, ending in a newline) with exit code 2, and nothing on stdout.
  for (const name of Object.keys(subcommands).filter((n) => n !== 'completion')) {
    it(`${name} answers an unknown option with its usage on stderr and exit code 2`, async () => {
      const streams = { stdout: process.stdout.write, stderr: process.stderr.write };
      let out = '';
      let err = '';
      process.stdout.write = ((chunk: string) => {
        out += chunk;
        return true;
      }) as typeof process.stdout.write;
      process.stderr.write = ((chunk: string) => {
        err += chunk;
        return true;
      }) as typeof process.stderr.write;
      let code: number;
      try {
        code = await runCli([name, '--no-such-option']);
      } finally {
        process.stdout.write = streams.stdout;
        process.stderr.write = streams.stderr;
      }
      expect(code, err).to.equal(2);
      expect(out).to.equal('');
      expect(err).to.match(/^.*'--no-such-option'.*\n\nUsage: oracle-node /s);
      expect(err.endsWith('\n')).to.equal(true);
    });
  }

  it('runs a registered command through runCli', async () => {
    const write = process.stdout.write;
    let out = '';
    process.stdout.write = ((chunk: string) => {
      out += chunk;
      return true;
    }) as typeof process.stdout.write;
    try {
      expect(await runCli(['derive', 'endpoint-id', 'Currency Converter API', 'convertToUSD'])).to.equal(0);
    } finally {
      process.stdout.write = write;
    }
    expect(out).to.include('0x13dea3311fe0d6b84f4daeab831befbc49e19e6494c41e9e065a09c3c68f43b6');
  });
});
