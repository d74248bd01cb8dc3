import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import yaml from 'js-yaml';
import { createSecretCommand, manifestYaml, namesKubectlReadsDifferently } from '../../../src/cli/manifest.js';
import { runManifest } from '../../../src/cli/manifest-command.js';
import { runValidate } from '../../../src/cli/validate-command.js';
import { parseSecretsEnv } from '../../../src/config/index.js';
import { fixturePath, readFixture } from '../config/fixtures.js';
import { capture } from './helpers.js';

const CONFIG = fixturePath('node/config.example.json');
const SECRETS = fixturePath('node/secrets.example.env');
const MNEMONIC = 'achieve climb couple wait accident symbol spy blouse reduce foil echo label';
const SECRET_VALUES = [MNEMONIC, 'http://127.0.0.1:8545', '<enter your API key>'];
const dir = mkdtempSync(join(tmpdir(), 'oracle-node-manifest-'));
const write = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

type Doc = { apiVersion: string; kind: string; metadata: Record<string, string>; [key: string]: unknown };
const documents = (text: string) => yaml.loadAll(text) as Doc[];

describe('oracle-node manifest', () => {
  it('prints the Secret (base64 data of secrets.env) and the OracleNode with config.json as written', async () => {
    const out = await capture(runManifest, ['-c', CONFIG, '-s', SECRETS, '--name', 'my-node', '-n', 'team-a']);
    expect(out.code).to.equal(0);
    // Only warnings: the example's four authorizer addresses with checksums that do not match, and its four loopback
    // URLs (the provider, the cross-chain authorizers' providers, the API), which a pod cannot reach.
    const lines = out.stderr.trim().split('\n');
    expect(lines.filter((line) => line.includes(': Address checksum (EIP-55) does not match'))).to.have.length(4);
    expect(lines.filter((line) => line.includes(': a loopback address (localhost, 127.x.x.x)'))).to.have.length(4);
    expect(lines).to.have.length(8);
    const [secret, node, ...rest] = documents(out.stdout);
    expect(rest).to.deep.equal([]);
    expect(secret).to.deep.include({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'my-node-secrets', namespace: 'team-a' },
      type: 'Opaque',
    });
    const decoded = Object.fromEntries(
      Object.entries(secret!.data as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
    );
    expect(decoded).to.deep.equal({ ...parseSecretsEnv(readFixture('node/secrets.example.env')).secrets });
    expect(decoded.AIRNODE_WALLET_MNEMONIC).to.equal(MNEMONIC);
    expect(node).to.deep.equal({
      apiVersion: 'oracle-node.io/v1alpha1',
      kind: 'OracleNode',
      metadata: { name: 'my-node', namespace: 'team-a' },
      // The reference's names (AirnodeRrp, airnodeWalletMnemonic) and the placeholders stay as written.
      spec: { secretRef: { name: 'my-node-secrets' }, config: JSON.parse(readFixture('node/config.example.json')) },
    });
    expect(out.stdout).to.match(/^# The Secret holds the values of /);
  });

  it('names the Secret with --secret-name and leaves the namespace to kubectl without -n', async () => {
    const out = await capture(runManifest, ['-c', CONFIG, '-s', SECRETS, '--name', 'n1', '--secret-name', 'vault.s']);
    expect(out.code).to.equal(0);
    const [secret, node] = documents(out.stdout);
    expect(secret!.metadata).to.deep.equal({ name: 'vault.s' });
    expect(node!.metadata).to.deep.equal({ name: 'n1' });
    expect((node!.spec as { secretRef: unknown }).secretRef).to.deep.equal({ name: 'vault.s' });
  });

  it('--omit-secret prints only the OracleNode and the kubectl command that creates the Secret on stderr', async () => {
    const config = JSON.parse(readFixture('node/config.example.json'));
    const out = await capture(runManifest, [
      '-c',
      CONFIG,
      '-s',
      SECRETS,
      '--name',
      'my-node',
      '-n',
      'team-a',
      '--omit-secret',
    ]);
    expect(out.code).to.equal(0);
    const docs = documents(out.stdout);
    expect(docs.map((d) => d.kind)).to.deep.equal(['OracleNode']);
    expect(docs[0]!.spec).to.deep.equal({ secretRef: { name: 'my-node-secrets' }, config });
    expect(out.stdout).to.not.include('#');
    expect(out.stderr).to.include(
      `  kubectl create secret generic my-node-secrets --from-env-file=${SECRETS} -n team-a\n`,
    );
    expect(out.stderr).to.include('keys: AIRNODE_WALLET_MNEMONIC, PROVIDER_URL, SS_CURRENCY_CONVERTER_API_KEY');
    // The reference's example quotes its values: kubectl would keep the quotes (a mnemonic that is not valid).
    expect(out.stderr).to.include('kubectl --from-env-file reads AIRNODE_WALLET_MNEMONIC, PROVIDER_URL differently');
    const plain = write(
      'plain.env',
      `AIRNODE_WALLET_MNEMONIC=${MNEMONIC}\nPROVIDER_URL=http://127.0.0.1:8545\nSS_CURRENCY_CONVERTER_API_KEY=k3y\n`,
    );
    const unquoted = await capture(runManifest, ['-c', CONFIG, '-s', plain, '--name', 'x', '--omit-secret']);
    expect(unquoted.code).to.equal(0);
    expect(unquoted.stderr).to.include('kubectl create secret generic x-secrets --from-env-file=');
    expect(unquoted.stderr).to.not.include('differently');
  });

  it('on an invalid config prints nothing on stdout, and on stderr exactly what validate prints, with its exit code', async () => {
    const config = JSON.parse(readFixture('node/config.example.json'));
    config.nodeSettings.stage = 'BAD';
    config.chains[0].providers.local = { url: 'not a url' };
    const path = write('invalid.json', JSON.stringify(config));
    const validate = await capture(runValidate, ['-c', path, '-s', SECRETS]);
    const manifest = await capture(runManifest, ['-c', path, '-s', SECRETS, '--name', 'my-node']);
    expect(validate.code).to.equal(1);
    expect(manifest).to.deep.equal({ code: 1, stdout: '', stderr: validate.stderr });
    const malformed = write('malformed.json', '{\n "chains": [,]\n}');
    expect(await capture(runManifest, ['-c', malformed, '-s', SECRETS, '--name', 'a'])).to.deep.equal({
      ...(await capture(runValidate, ['-c', malformed, '-s', SECRETS])),
      stdout: '',
    });
  });

  it('exits 2 with nothing on stdout on usage and I/O errors, as validate does', async () => {
    const cases: string[][] = [
      [],
      ['-c', CONFIG, '-s', SECRETS],
      ['-c', CONFIG, '-s', SECRETS, '--name', 'Not_A_Name'],
      ['-c', CONFIG, '-s', SECRETS, '--name', 'ok', '-n', 'Bad Namespace'],
      ['-c', CONFIG, '-s', SECRETS, '--name', 'ok', '--secret-name', '-bad'],
      ['-c', CONFIG, '--name', 'ok', '--omit-secret'],
      ['-c', CONFIG, '-s', SECRETS, '--name', 'ok', '--bogus'],
      ['-c', join(dir, 'nope.json'), '-s', SECRETS, '--name', 'ok'],
      ['-c', CONFIG, '-s', join(dir, 'nope.env'), '--name', 'ok'],
      ['-c', dir, '-s', SECRETS, '--name', 'ok'],
      // name + stage ("dev") over the 39 characters that child names allow
      ['-c', CONFIG, '-s', SECRETS, '--name', 'a'.repeat(37)],
    ];
    for (const argv of cases) {
      const out = await capture(runManifest, argv);
      expect(out.code, argv.join(' ')).to.equal(2);
      expect(out.stdout, argv.join(' ')).to.equal('');
      expect(out.stderr, argv.join(' ')).to.not.equal('');
    }
    const missing = await capture(runManifest, ['-c', join(dir, 'nope.json'), '-s', SECRETS, '--name', 'ok']);
    expect(missing.stderr).to.equal((await capture(runValidate, ['-c', join(dir, 'nope.json'), '-s', SECRETS])).stderr);
    expect((await capture(runManifest, ['-c', CONFIG, '-s', SECRETS, '--name', 'a'.repeat(36)])).code).to.equal(0);
  });

  it('never writes a secret value on stderr: valid, invalid, warnings, --omit-secret', async () => {
    const config = JSON.parse(readFixture('node/config.example.json'));
    config.ois[0].apiSpecifications.servers.push({ url: 'http://other' }); // a warning
    const warned = write('warned.json', JSON.stringify(config));
    config.nodeSettings.stage = '$' + '{PROVIDER_URL}';
    config.ois[0].title = 'bad/$' + '{AIRNODE_WALLET_MNEMONIC}';
    const invalid = write('secret-in-error.json', JSON.stringify(config));
    const runs = [
      await capture(runManifest, ['-c', warned, '-s', SECRETS, '--name', 'n']),
      await capture(runManifest, ['-c', warned, '-s', SECRETS, '--name', 'n', '--omit-secret']),
      await capture(runManifest, ['-c', invalid, '-s', SECRETS, '--name', 'n']),
    ];
    expect(runs.map((r) => r.code)).to.deep.equal([0, 0, 1]);
    expect(runs[0]!.stderr).to.include('warning ois[0].apiSpecifications.servers: 2 servers are listed');
    for (const run of runs) for (const value of SECRET_VALUES) expect(run.stderr).to.not.include(value);
  });

  it('prints a config without any placeholder and without -s as the OracleNode alone, without secretRef', async () => {
    const config = JSON.parse(readFixture('node/config.example.json'));
    config.nodeSettings.airnodeWalletMnemonic = MNEMONIC;
    config.chains[0].providers.local.url = 'http://127.0.0.1:8545';
    config.apiCredentials[0].securitySchemeValue = 'not-a-secret';
    const path = write('no-secrets.json', JSON.stringify(config));
    const out = await capture(runManifest, ['-c', path, '--name', 'plain']);
    expect(out.code, out.stderr).to.equal(0);
    expect(documents(out.stdout)).to.deep.equal([
      { apiVersion: 'oracle-node.io/v1alpha1', kind: 'OracleNode', metadata: { name: 'plain' }, spec: { config } },
    ]);
  });
});

describe('manifest YAML and the kubectl command', () => {
  it('quotes the strings a YAML 1.1 reader (kubectl) would take for numbers, booleans or times', () => {
    const tricky = ['0x5FbDB2315678afecb367f032d93F642f64180aa3', '010', '1_000', '0x_ff', 'yes', 'on', '2026-01-01'];
    const text = manifestYaml([{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { tricky } }]);
    for (const value of tricky) expect(text).to.include(`- '${value}'\n`);
    expect(yaml.load(text)).to.deep.equal({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'x' },
      data: { tricky },
    });
  });

  it('keeps a long string on one line', () => {
    const long = 'x '.repeat(200).trim();
    expect(manifestYaml([{ apiVersion: 'v1', kind: 'K', metadata: { name: 'x' }, long }])).to.include(
      `long: ${long}\n`,
    );
  });

  it('quotes a path with spaces in the kubectl command', () => {
    expect(createSecretCommand('s', "/my dir/it's.env", undefined)).to.equal(
      `kubectl create secret generic s '--from-env-file=/my dir/it'\\''s.env'`,
    );
  });

  it('names the secrets kubectl --from-env-file would read differently (quotes, export, comments, trailing spaces)', () => {
    const text = [
      'PLAIN=value with spaces',
      'QUOTED="v"',
      'export EXPORTED=v',
      'COMMENTED=v # note',
      'TRAILING=v  ',
      '  INDENTED=v',
      'EQUALS=a=b',
    ].join('\n');
    expect(namesKubectlReadsDifferently(text, parseSecretsEnv(text).secrets)).to.deep.equal([
      'QUOTED',
      'EXPORTED',
      'COMMENTED',
      'TRAILING',
    ]);
  });
});
