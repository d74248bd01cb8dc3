// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} placeholders are the subject of these tests
import { expect } from 'chai';
import { referencedSecretNames, secretsFromEnvironment, validateConfig } from '../../../src/config/index.js';

describe('secrets from the environment (pods get the Secret through envFrom)', () => {
  const config = {
    a: '${PROVIDER_URL}',
    b: ['x ${API_KEY} y', 'literal \\${NOT_A_SECRET}'],
    '${KEY_NAME}': { c: 'bad ${lower}' },
  };

  it('finds the referenced names, skipping escaped and invalid ones', () => {
    expect([...referencedSecretNames(config)].sort()).to.deep.equal(['API_KEY', 'KEY_NAME', 'PROVIDER_URL']);
  });

  it('picks only referenced variables from the environment', () => {
    const env = { PROVIDER_URL: 'http://127.0.0.1:8545', API_KEY: 'k', PATH: '/usr/bin', NOT_A_SECRET: 'no' };
    expect(secretsFromEnvironment(JSON.stringify(config), env)).to.deep.equal({
      PROVIDER_URL: 'http://127.0.0.1:8545',
      API_KEY: 'k',
    });
  });

  it('yields nothing for text that is not JSON, leaving the error to validation', () => {
    expect(secretsFromEnvironment('{not json', { A: 'b' })).to.deep.equal({});
  });

  it('reports a referenced variable missing from the environment like a missing secret', () => {
    const result = validateConfig(
      { chains: '${MISSING_ONE}' },
      secretsFromEnvironment({ chains: '${MISSING_ONE}' }, {}),
    );
    expect(result.ok).to.equal(false);
    expect(result.errors.map((e) => e.message).join('\n')).to.include('MISSING_ONE');
  });
});
