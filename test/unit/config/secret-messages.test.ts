import { expect } from 'chai';
import { describeJsonError, parseSecretsEnv, secretValuesOf, urlCredentials } from '../../../src/config/index.js';

// Messages about secrets.env and config.json name the line and the problem, never the text of the file.
describe('config: messages never quote file content', () => {
  const SECRET = 'Zq8Ahv3kLw9pXy2Rt6Uo1Ns5Mb4Vc7Ed';

  it('a wrapped secrets.env line read as a name is not echoed', () => {
    const text = `API_KEY=abc\n${SECRET}=tail\n"${SECRET} continued\n`;
    const { errors } = parseSecretsEnv(text);
    expect(errors.map((error) => error.path)).to.deep.equal(['secrets.env:2', 'secrets.env:3']);
    for (const error of errors) expect(error.message).not.to.contain(SECRET.slice(0, 8));
  });

  it('malformed JSON is described by line, column and kind, without V8 excerpts', () => {
    for (const text of [`{"a": ${SECRET}}`, `{"${SECRET}${SECRET}${SECRET}": x}`, `${SECRET}`]) {
      let message = '';
      try {
        JSON.parse(text);
      } catch (error) {
        message = describeJsonError(text, error);
      }
      expect(message).to.match(/^Malformed JSON at line 1, column \d+: /);
      expect(message).not.to.contain(SECRET.slice(0, 4));
      expect(message).not.to.contain("'Z'");
    }
  });

  it('lists URL credentials and every secret field as values to scrub', () => {
    expect(urlCredentials('http://rpc-user:p%40ss@host:8545/')).to.include.members(['rpc-user', 'p%40ss', 'p@ss']);
    expect(urlCredentials('not a url')).to.deep.equal([]);
    expect(secretValuesOf(undefined, { A: 'http://u:secret-pass@h/' })).to.include('secret-pass');
  });
});
