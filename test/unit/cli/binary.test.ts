// End to end through the real binary entry (src/cli/index.ts under tsx): registration and exit codes.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { fixturePath } from '../config/fixtures.js';

const ENTRY = fileURLToPath(new URL('../../../src/cli/index.ts', import.meta.url));

function oracleNode(args: string[], input?: string) {
  const result = spawnSync(process.execPath, ['--import', 'tsx', ENTRY, ...args], {
    encoding: 'utf8',
    input,
    env: { ...process.env, NODE_WALLET_MNEMONIC: '' },
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('oracle-node binary (validate, derive, schema)', function () {
  this.timeout(120_000);

  it('lists the subcommands', () => {
    const out = oracleNode(['--help']);
    expect(out.stdout).to.include('validate').and.include('derive').and.include('schema');
  });

  it('validate exits 0 / 1 / 2', () => {
    const config = fixturePath('node/config.example.json');
    expect(oracleNode(['validate', '-c', config, '-s', fixturePath('node/secrets.example.env')]).code).to.equal(0);
    const invalid = oracleNode(['validate', '-c', config, '--json']);
    expect(invalid.code).to.equal(1);
    expect(JSON.parse(invalid.stdout).ok).to.equal(false);
    expect(oracleNode(['validate']).code).to.equal(2);
  });

  it('derive reads the mnemonic from stdin', () => {
    const out = oracleNode(
      ['derive', 'node-address'],
      'achieve climb couple wait accident symbol spy blouse reduce foil echo label\n',
    );
    expect(out.code).to.equal(0);
    expect(out.stdout.trim()).to.equal('0xA30CA71Ba54E83127214D3271aEA8F5D6bD4Dace');
  });

  it('schema prints JSON', () => {
    const out = oracleNode(['schema']);
    expect(out.code).to.equal(0);
    expect(JSON.parse(out.stdout).type).to.equal('object');
  });
});
