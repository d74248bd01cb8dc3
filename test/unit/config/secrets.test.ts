// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are ${NAME} secret references, not templates
import { expect } from 'chai';
import { interpolateSecrets, parseSecretsEnv, validateConfig } from '../../../src/config/index.js';
import { BASE_SECRETS, edited, readFixture } from './fixtures.js';

describe('secrets.env parsing', () => {
  it('reads names, comments, blank lines and quotes like dotenv', () => {
    const { secrets, errors } = parseSecretsEnv(
      [
        '# comment',
        '',
        'PLAIN=value # trailing comment',
        'DOUBLE="a b\\nc"',
        "SINGLE='x # not a comment'",
        'export EXPORTED=1',
        'SPACED = spaced  ',
        'MULTI="line1',
        'line2"',
      ].join('\n'),
    );
    expect(errors).to.deep.equal([]);
    expect({ ...secrets }).to.deep.equal({
      PLAIN: 'value',
      DOUBLE: 'a b\nc',
      SINGLE: 'x # not a comment',
      EXPORTED: '1',
      SPACED: 'spaced',
      MULTI: 'line1\nline2',
    });
  });

  it('rejects invalid names and empty values with the line number, never the value', () => {
    const { errors } = parseSecretsEnv('lower=supersecretvalue\nEMPTY=\n1ABC=x\nnot a line');
    expect(errors.map((e) => e.path)).to.deep.equal([
      'secrets.env:1',
      'secrets.env:2',
      'secrets.env:3',
      'secrets.env:4',
    ]);
    expect(errors[0]!.message).to.match(/^Secret name is not valid/);
    expect(errors[0]!.message).not.to.contain('lower');
    expect(errors[1]!.message).to.match(/Secret EMPTY cannot be empty/);
    expect(JSON.stringify(errors)).to.not.include('supersecretvalue');
  });

  it('fails on the reference invalid-secrets and missing-secrets fixtures', () => {
    const config = readFixture('validator/config.valid.json');
    const invalid = validateConfig(config, readFixture('validator/invalid-secrets.env'));
    expect(invalid.ok).to.equal(false);
    expect(invalid.errors[0]).to.deep.equal({ path: 'secrets.env:1', message: 'Expected NAME=value' });
    const missing = validateConfig(config, readFixture('validator/missing-secrets.env'));
    expect(missing.errors).to.deep.equal([
      {
        path: 'chains[0].providers.exampleProvider.url',
        message:
          'Secret "PROVIDER_URL" is not defined in secrets.env; it is used at: chains[0].providers.exampleProvider.url',
      },
    ]);
  });

  it('fails on the reference invalid-secret-name fixture', () => {
    const result = validateConfig(
      readFixture('validator/invalid-secret-name/config.json'),
      readFixture('validator/invalid-secret-name/secrets.env'),
    );
    expect(result.ok).to.equal(false);
    expect(result.errors.some((e) => /is not valid/.test(e.message))).to.equal(true);
  });
});

describe('${NAME} interpolation', () => {
  it('replaces values and keys at any depth and records the paths', () => {
    const { value, usages, missing } = interpolateSecrets(
      { a: ['x-${A}-y', { deep: { k: '${B}' } }], '${A}': 1 },
      { A: 'alpha', B: 'beta' },
    );
    expect(value).to.deep.equal({ a: ['x-alpha-y', { deep: { k: 'beta' } }], alpha: 1 });
    expect(usages.get('A')).to.deep.equal(['a[0]', '["${A}"]']);
    expect(usages.get('B')).to.deep.equal(['a[1].deep.k']);
    expect(missing.size).to.equal(0);
  });

  it('turns \\${ into a literal ${', () => {
    const { value } = interpolateSecrets({ code: 'const s = `\\${x}`; ${A}' }, { A: 'a' });
    expect(value).to.deep.equal({ code: 'const s = `${x}`; a' });
  });

  it('keeps JSON-special characters of a secret as data', () => {
    const { value } = interpolateSecrets({ v: '${A}' }, { A: 'quote " backslash \\ newline \n' });
    expect(value).to.deep.equal({ v: 'quote " backslash \\ newline \n' });
  });

  it('names a missing secret and every path that uses it', () => {
    const result = validateConfig(
      edited((c) => {
        c.chains[0].providers.local.url = '${NOT_DEFINED}';
        c.nodeSettings.stage = '${NOT_DEFINED}';
      }),
      BASE_SECRETS,
    );
    expect(result.ok).to.equal(false);
    const error = result.errors.find((e) => e.message.includes('NOT_DEFINED'));
    expect(error!.message).to.equal(
      'Secret "NOT_DEFINED" is not defined in secrets.env; it is used at: chains[0].providers.local.url, nodeSettings.stage',
    );
    // The placeholders are not reported a second time as a bad URL or stage.
    expect(result.errors).to.have.length(1);
  });

  it('reports a reference that is not a valid secret name', () => {
    const result = validateConfig(
      edited((c) => (c.nodeSettings.stage = '${lower}')),
      BASE_SECRETS,
    );
    expect(result.errors.map((e) => e.path)).to.deep.equal(['nodeSettings.stage']);
    expect(result.errors[0]!.message).to.match(/not a valid secret reference/);
  });
});

describe('secret values never appear in output', () => {
  const SECRET = 'Sup3r-Secret-Value-42';
  const secrets = `${BASE_SECRETS}\nMY_SECRET=${SECRET}\n`;

  const leaks = (result: unknown) => JSON.stringify(result).includes(SECRET);

  it('redacts values interpolated into invalid fields', () => {
    const result = validateConfig(
      edited((c) => {
        c.ois[0].title = 'bad/${MY_SECRET}';
        c.triggers.rrp[0].oisTitle = '${MY_SECRET}';
        c.triggers.http[0].endpointName = 'x${MY_SECRET}x';
        c.nodeSettings.stage = '${MY_SECRET}';
        c.chains[0].providers['${MY_SECRET}'] = { url: 'nope ${MY_SECRET}' };
        c.apiCredentials[0].oisTitle = '${MY_SECRET}';
        c.nodeSettings.logLevel = '${MY_SECRET}';
      }),
      secrets,
    );
    expect(result.ok).to.equal(false);
    expect(result.errors.length).to.be.at.least(4);
    const { config: _config, ...printed } = result;
    expect(leaks(printed), JSON.stringify(printed)).to.equal(false);
    expect(JSON.stringify(result.errors)).to.include('${MY_SECRET}');
  });

  it('redacts the mnemonic from mnemonic errors', () => {
    const result = validateConfig(
      edited((c) => (c.nodeSettings.airnodeWalletMnemonic = '${MY_SECRET}')),
      secrets,
    );
    expect(result.ok).to.equal(false);
    expect(leaks(result.errors)).to.equal(false);
  });

  it('reports secret usages by name and path only', () => {
    const result = validateConfig(readFixture('node/config.example.json'), readFixture('node/secrets.example.env'));
    expect(result.secretUsages).to.deep.equal({
      PROVIDER_URL: ['chains[0].providers.local.url'],
      AIRNODE_WALLET_MNEMONIC: ['nodeSettings.airnodeWalletMnemonic'],
      SS_CURRENCY_CONVERTER_API_KEY: ['apiCredentials[0].securitySchemeValue'],
    });
  });
});

describe('${NAME} interpolation (copy on write)', () => {
  it('shares the subtrees without placeholders with its input and never modifies the input', () => {
    const input = { untouched: { list: [1, 'two', { three: 3 }] }, secret: { url: '${A}' }, '${A}': ['x'] };
    const snapshot = structuredClone(input);
    const { value } = interpolateSecrets(input, { A: 'alpha' }) as { value: Record<string, unknown> };
    expect(value).to.deep.equal({ untouched: input.untouched, secret: { url: 'alpha' }, alpha: ['x'] });
    expect(value['untouched']).to.equal(input.untouched);
    expect(value['alpha']).to.equal(input['${A}']);
    expect(value).to.not.equal(input);
    expect(input).to.deep.equal(snapshot);
  });

  it('returns a tree without any placeholder as it is', () => {
    const input = { a: [{ b: 'c' }], d: 1 };
    expect(interpolateSecrets(input, { A: 'alpha' }).value).to.equal(input);
  });
});
