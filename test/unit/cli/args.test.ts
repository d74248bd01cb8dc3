import { expect } from 'chai';
import {
  parseGasPriceCeilings,
  parsePort,
  parseServerPorts,
  parseStandbyDelay,
  parseWindowOptions,
} from '../../../src/cli/args.js';
import { runGateway } from '../../../src/cli/gateway.js';
import { command as startCommand } from '../../../src/cli/start.js';

/** Runs a command with process.stderr captured (the engine subcommands write their usage errors there). */
async function withStderr(run: () => Promise<number>): Promise<{ code: number; stderr: string }> {
  const original = process.stderr.write.bind(process.stderr);
  let stderr = '';
  process.stderr.write = ((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  }) as typeof process.stderr.write;
  try {
    return { code: await run(), stderr };
  } finally {
    process.stderr.write = original;
  }
}

describe('cli/args', () => {
  it('reads --max-gas-price CHAIN_ID=GWEI as wei per chain (nine decimals at most), refusing anything else', async () => {
    expect(parseGasPriceCeilings(undefined)).to.deep.equal({});
    expect(parseGasPriceCeilings(['1=150', '137=0.5', '10=0.000000001'])).to.deep.equal({
      ceilings: new Map([
        ['1', 150_000_000_000n],
        ['137', 500_000_000n],
        ['10', 1n],
      ]),
    });
    for (const bad of ['150', '1=', 'one=1', '1=-5', '1=0.0000000001', '1=1e3'])
      expect((await withStderr(async () => ('exitCode' in parseGasPriceCeilings([bad]) ? 2 : 0))).code, bad).to.equal(
        2,
      );
  });

  it('reads --standby-delay-blocks as whole blocks (absent: 0, the primary), refusing anything else', async () => {
    expect(parseStandbyDelay(undefined)).to.deep.equal({ standbyDelayBlocks: 0 });
    expect(parseStandbyDelay('0')).to.deep.equal({ standbyDelayBlocks: 0 });
    expect(parseStandbyDelay('12')).to.deep.equal({ standbyDelayBlocks: 12 });
    for (const bad of ['', ' ', '-1', '1.5', 'six', '10001'])
      expect((await withStderr(async () => ('exitCode' in parseStandbyDelay(bad) ? 2 : 0))).code, bad).to.equal(2);
  });

  it('reads a port as an integer between 0 and 65535, absent as undefined and anything else as null', () => {
    expect(parsePort(undefined)).to.equal(undefined);
    expect(parsePort('0')).to.equal(0);
    expect(parsePort('65535')).to.equal(65535);
    for (const text of ['65536', '-1', '1.5', '', ' ', 'http']) expect(parsePort(text), text).to.equal(null);
  });

  it('reads --window and --poll-interval as seconds (decimals allowed), the poll interval 1 s by default', async () => {
    expect(parseWindowOptions({}, { windowRequired: true })).to.deep.equal({});
    expect(parseWindowOptions({ window: '50' }, { windowRequired: true })).to.deep.equal({
      windowMs: 50_000,
      pollIntervalMs: 1000,
    });
    expect(parseWindowOptions({ window: '3', 'poll-interval': '0.2' }, { windowRequired: true })).to.deep.equal({
      windowMs: 3000,
      pollIntervalMs: 200,
    });
    // `start` polls without a window: each of its cycles is one.
    expect(parseWindowOptions({ 'poll-interval': '2' }, { windowRequired: false })).to.deep.equal({
      pollIntervalMs: 2000,
    });
    for (const values of [
      { window: '0' },
      { window: ' ' },
      { 'poll-interval': 'x', window: '5' },
      { window: 'Infinity' },
    ]) {
      const { code, stderr } = await withStderr(async () => {
        const parsed = parseWindowOptions(values, { windowRequired: true });
        return 'exitCode' in parsed ? parsed.exitCode : 0;
      });
      expect(code).to.equal(2);
      expect(stderr).to.contain('seconds');
    }
    const { code } = await withStderr(async () => {
      const parsed = parseWindowOptions({ 'poll-interval': '1' }, { windowRequired: true });
      return 'exitCode' in parsed ? parsed.exitCode : 0;
    });
    expect(code).to.equal(2);
  });

  it('keeps absent server ports absent so that the config decides', () => {
    expect(parseServerPorts({})).to.deep.equal({});
    expect(parseServerPorts({ port: '8080', 'metrics-port': '0' })).to.deep.equal({ port: 8080, metricsPort: 0 });
  });

  for (const [name, run] of [
    ['gateway', runGateway],
    ['start', (argv: string[]) => startCommand.run(argv)],
  ] as const) {
    it(`${name} refuses a port outside 0-65535 with exit code 2 before it reads the config`, async () => {
      for (const option of ['--port', '--metrics-port']) {
        const { code, stderr } = await withStderr(() => run(['-c', '/nonexistent/config.json', option, '70000']));
        expect(code, option).to.equal(2);
        expect(stderr).to.equal('--port and --metrics-port must be integers between 0 and 65535\n');
      }
    });

    it(`${name} answers an unknown option with the usage and exit code 2`, async () => {
      const { code, stderr } = await withStderr(() => run(['--no-such-option']));
      expect(code).to.equal(2);
      expect(stderr).to.match(/Unknown option '--no-such-option'[\s\S]*Usage: oracle-node/);
    });
  }
});
