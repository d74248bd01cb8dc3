import { expect } from 'chai';
import {
  clearSecrets,
  createLogger,
  REDACTED,
  redact,
  registerSecret,
  registerSecrets,
} from '../../../src/observability/index.js';

describe('observability/redaction', () => {
  afterEach(() => clearSecrets());

  it('scrubs a secret longer than a regular expression may be (no pattern built from values)', () => {
    const long = `k${'x'.repeat(40_000)}y`;
    expect(() => registerSecret(long)).not.to.throw();
    registerSecret('short-secret-value');
    expect(redact(`a ${long} b short-secret-value c`)).to.equal(`a ${REDACTED} b ${REDACTED} c`);
  });

  it('scrubs many long secrets in a log line, and the line never carries them', () => {
    const values = Array.from({ length: 5 }, (_, i) => `${i}${'s'.repeat(10_000)}${i}`);
    registerSecrets(values);
    const lines: string[] = [];
    const logger = createLogger({ destination: { write: (line: string) => lines.push(line) } });
    logger.info({ values }, `problem with ${values[3]}`);
    for (const value of values) expect(lines.join('')).not.to.contain(value);
    expect(lines.join('')).to.contain(REDACTED);
  });

  it('treats secrets as plain text: regular-expression characters and a lone surrogate are scrubbed literally', () => {
    registerSecret('a.b*c+d?(e)[f]{g}|h^$\\');
    registerSecret('ab\ud800cd');
    expect(redact('x a.b*c+d?(e)[f]{g}|h^$\\ y')).to.equal(`x ${REDACTED} y`);
    expect(redact('aXbYc')).to.equal('aXbYc');
    expect(redact('1 ab\ud800cd 2')).to.equal(`1 ${REDACTED} 2`);
  });

  it('replaces the longest secret first, so one containing another goes whole', () => {
    registerSecrets(['password', 'password-extended']);
    expect(redact('password-extended')).to.equal(REDACTED);
  });
});
