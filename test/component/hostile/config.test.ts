// A careless (or hostile) operator's files: prototype keys, duplicate keys, bytes that are not UTF-8, and
// secrets.env / config.json text that must never be quoted back. Through `validate`, the real binary.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { validateConfig } from '../../../src/config/index.js';
import { spawnOracleNode } from '../../support/binary.js';
import { configJson, SECRETS } from '../gateway/fixtures.js';

function validate(args: string[]): Promise<{ code: number | null; out: string }> {
  const child = spawnOracleNode(['validate', ...args]);
  let out = '';
  child.stdout!.on('data', (chunk) => {
    out += chunk;
  });
  child.stderr!.on('data', (chunk) => {
    out += chunk;
  });
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, out })));
}

describe('hostile input: config files', function () {
  this.timeout(60_000);
  const base = () => configJson('http://127.0.0.1:1');

  it('refuses __proto__, constructor and prototype keys with their path, and never changes a prototype', () => {
    const { nodeSettings, ...rest } = base();
    const text = JSON.stringify({ ...rest, ['__proto__']: { nodeSettings } });
    const result = validateConfig(text, SECRETS);
    expect(result.ok).to.equal(false);
    expect(result.errors).to.deep.include({ path: '__proto__', message: 'The key "__proto__" is not allowed' });
    const nested = JSON.stringify({ ...base(), templates: [{ constructor: 1, prototype: 2 }] });
    const paths = validateConfig(nested, SECRETS).errors.map((error) => error.path);
    expect(paths).to.include.members(['templates[0].constructor', 'templates[0].prototype']);
    expect(({} as Record<string, unknown>)['nodeSettings']).to.equal(undefined);
  });

  it('warns about duplicate keys and bytes that are not UTF-8, with their paths', () => {
    const config = base();
    const text = JSON.stringify(config).replace('"stage":"test"', '"stage":"prod","stage":"test"');
    const duplicate = validateConfig(text, SECRETS);
    expect(duplicate.ok).to.equal(true);
    expect(duplicate.warnings).to.deep.include({
      path: 'nodeSettings.stage',
      message: 'This key appears more than once in the same object; the last value is used',
    });
    // What a Latin-1 byte (0xE9) becomes when the file is read as UTF-8.
    const latin1 = Buffer.from(JSON.stringify(config).replace('"stage":"test"', '"stage":"t\u00e9st"'), 'latin1');
    const replaced = validateConfig(latin1.toString('utf8'), SECRETS);
    expect(replaced.warnings.map((warning) => warning.path)).to.include('nodeSettings.stage');
  });

  it('validate never prints a secret from a wrapped secrets.env line or JSON text', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hostile-config-'));
    const secret = 'wrapped-Secret-Xq7Lp2Vn9Rk4';
    writeFileSync(join(dir, 'config.json'), JSON.stringify(base()));
    writeFileSync(
      join(dir, 'secrets.env'),
      `API_KEY="abc"\n${secret}=rest\nNODE_WALLET_MNEMONIC="${SECRETS.NODE_WALLET_MNEMONIC}"\n`,
    );
    const wrapped = await validate(['-c', join(dir, 'config.json'), '-s', join(dir, 'secrets.env')]);
    expect(wrapped.code).to.equal(1);
    expect(wrapped.out).to.contain('secrets.env:2');
    expect(wrapped.out).not.to.contain(secret);
    writeFileSync(join(dir, 'bad.json'), `{"nodeSettings": ${secret}}`);
    const json = await validate(['-c', join(dir, 'bad.json')]);
    expect(json.code).to.equal(1);
    expect(json.out).to.contain('line 1, column');
    expect(json.out).not.to.contain(secret.slice(0, 6));
  });
});
