import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { runValidate } from '../../../src/cli/validate-command.js';
import { fixturePath, readFixture } from '../config/fixtures.js';
import { capture } from './helpers.js';

const CONFIG = fixturePath('node/config.example.json');
const SECRETS = fixturePath('node/secrets.example.env');
const dir = mkdtempSync(join(tmpdir(), 'oracle-node-validate-'));
const write = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

describe('oracle-node validate', () => {
  it('exits 0 on a valid config', async () => {
    const out = await capture(runValidate, ['-c', CONFIG, '-s', SECRETS]);
    expect(out.code).to.equal(0);
    expect(out.stdout).to.match(/is valid/);
  });

  it('prints warnings and still exits 0', async () => {
    const config = JSON.parse(readFixture('node/config.example.json'));
    config.ois[0].apiSpecifications.servers.push({ url: 'http://other' });
    const out = await capture(runValidate, ['-c', write('two-servers.json', JSON.stringify(config)), '-s', SECRETS]);
    expect(out.code).to.equal(0);
    expect(out.stdout).to.include('warning ois[0].apiSpecifications.servers: 2 servers are listed');
  });

  it('exits 1 with every error on an invalid config, and --json prints them', async () => {
    const config = JSON.parse(readFixture('node/config.example.json'));
    config.nodeSettings.stage = 'BAD';
    config.ois[0].endpoints[0].parameters[0].name = '_from';
    const path = write('invalid.json', JSON.stringify(config));
    const text = await capture(runValidate, ['-c', path, '-s', SECRETS]);
    expect(text.code).to.equal(1);
    expect(text.stderr).to.include('error   nodeSettings.stage:');
    expect(text.stderr).to.include('error   ois[0].endpoints[0].parameters[0].name:');
    const json = await capture(runValidate, ['-c', path, '-s', SECRETS, '--json']);
    expect(json.code).to.equal(1);
    const parsed = JSON.parse(json.stdout);
    expect(parsed.ok).to.equal(false);
    expect(parsed.errors.map((e: { path: string }) => e.path)).to.have.members([
      'nodeSettings.stage',
      'ois[0].endpoints[0].parameters[0].name',
    ]);
    expect(parsed.warnings).to.deep.equal([]);
  });

  it('--json on a valid config', async () => {
    const out = await capture(runValidate, ['-c', CONFIG, '-s', SECRETS, '--json']);
    expect(out.code).to.equal(0);
    const parsed = JSON.parse(out.stdout);
    expect(parsed).to.deep.include({ ok: true, errors: [] });
    // The reference's example: its four authorizer addresses have checksums that do not match.
    expect(parsed.warnings.map((w: { message: string }) => w.message.slice(0, 45))).to.deep.equal(
      Array(4).fill('Address checksum (EIP-55) does not match: a m'),
    );
  });

  it('exits 1 on malformed JSON with line and column', async () => {
    const out = await capture(runValidate, ['-c', write('bad.json', '{\n "chains": [,]\n}'), '-s', SECRETS]);
    expect(out.code).to.equal(1);
    expect(out.stderr).to.match(/Malformed JSON at line 2, column 13/);
  });

  it('exits 2 on usage and I/O errors', async () => {
    expect((await capture(runValidate, [])).code).to.equal(2);
    expect((await capture(runValidate, ['-c', CONFIG, '--bogus'])).code).to.equal(2);
    const missing = await capture(runValidate, ['-c', join(dir, 'nope.json'), '-s', SECRETS]);
    expect(missing.code).to.equal(2);
    expect(missing.stderr).to.match(/No such file/);
    expect((await capture(runValidate, ['-c', CONFIG, '-s', join(dir, 'nope.env')])).code).to.equal(2);
    expect((await capture(runValidate, ['-c', dir, '-s', SECRETS])).code).to.equal(2);
  });

  it('never prints secret values', async () => {
    const secret = 'Xq9-very-secret-token-77';
    const secrets = write('secrets.env', `${readFixture('node/secrets.example.env')}\nTOKEN=${secret}\n`);
    const config = JSON.parse(readFixture('node/config.example.json'));
    config.nodeSettings.stage = '$' + '{TOKEN}';
    config.ois[0].title = 'bad/$' + '{TOKEN}';
    config.triggers.rrp[0].endpointName = '$' + '{TOKEN}';
    const path = write('leaky.json', JSON.stringify(config));
    for (const argv of [
      ['-c', path, '-s', secrets],
      ['-c', path, '-s', secrets, '--json'],
    ]) {
      const out = await capture(runValidate, argv);
      expect(out.code).to.equal(1);
      expect(out.stdout + out.stderr).to.not.include(secret);
      expect(out.stdout + out.stderr).to.include('TOKEN');
    }
    // Mnemonics and provider URLs of a valid config are not printed either.
    const ok = await capture(runValidate, ['-c', CONFIG, '-s', SECRETS, '--json']);
    expect(ok.stdout).to.not.include('achieve climb');
    expect(ok.stdout).to.not.include('127.0.0.1:8545');
  });

  it('names a missing secret and its paths', async () => {
    const out = await capture(runValidate, ['-c', CONFIG, '--json']);
    expect(out.code).to.equal(1);
    const messages = JSON.parse(out.stdout).errors.map((e: { message: string }) => e.message);
    expect(messages).to.include(
      'Secret "PROVIDER_URL" is not defined in secrets.env; it is used at: chains[0].providers.local.url',
    );
  });

  it('rejects an oversized config file with exit 1 and a clear message', async () => {
    const path = write('huge.json', `{"x":"${'a'.repeat(10 * 1024 * 1024 + 10)}"}`);
    const out = await capture(runValidate, ['-c', path, '-s', SECRETS]);
    expect(out.code).to.equal(1);
    expect(out.stderr).to.match(/larger than the 10 MiB limit/);
  });
});
