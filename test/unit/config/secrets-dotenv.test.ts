// secrets.env is read as the reference reads it: `dotenv.parse` of dotenv 16 (the version @api3/airnode-node 0.15
// and @api3/airnode-validator 0.15 load) is the oracle for every name and value; our parse adds only the errors
// (a line dotenv skips, a name that is not a secret name, an empty value), by line and without values.
import { createRequire } from 'node:module';
import { expect } from 'chai';
import dotenv from 'dotenv';
import fc from 'fast-check';
import { parseSecretsEnv, SECRET_NAME_PATTERN } from '../../../src/config/index.js';

const require = createRequire(import.meta.url);

/** What the reference reads from `text`, less what our parse refuses with an error (bad names, empty values). */
function readByDotenv(text: string): Record<string, string> {
  return Object.fromEntries(
    Object.entries(dotenv.parse(text)).filter(([name, value]) => SECRET_NAME_PATTERN.test(name) && value !== ''),
  );
}

const TRICKY: Record<string, string> = {
  'hash right after the value': 'A=b#c',
  'hash after a space': 'A=b #c',
  'hash inside double quotes': 'A="b # c"',
  'hash inside single quotes': "A='b#c'",
  'text after the closing quote': 'A="a" b',
  'comment after the closing quote': 'A="a" # note',
  'single quotes keep \\n': "A='a\\nb'",
  'double quotes expand \\n and \\r': 'A="a\\nb\\rc"',
  'backticks keep \\n': 'A=`a\\nb`',
  'unquoted keeps \\n': 'A=a\\nb',
  'quotes inside a value': `A=it's "x"`,
  'escaped quote in double quotes': 'A="a\\"b"',
  'mismatched quotes': `A="a'`,
  'unterminated quote': 'A="abc\nB=1',
  'export prefix': 'export A=1',
  'export with spaces': 'export    A = 1',
  'spaces around =': 'A  =  b  ',
  'tab before value': 'A=\tb',
  'leading spaces': '   A=1',
  'colon form': 'A: b',
  'colon without space': 'A:b',
  'equals in the value': 'A=b=c',
  'empty value': 'A=\nB=2',
  'empty quotes': 'A=""\nB=\'\'',
  'value on the next line after a quote': 'A=\n"x"',
  'multi-line double quotes': 'A="line1\nline2"\nB=3',
  'multi-line single quotes': "A='line1\n# not a comment\nline3'",
  'multi-line backticks': 'A=`x\ny`',
  'CRLF line ends': 'A=1\r\nB="x\r\ny"\r\nC=3\r\n',
  'CR line ends': 'A=1\rB=2',
  'duplicate keys, last wins': 'A=1\nB=2\nA=3',
  'duplicate keys, empty last': 'A=1\nA=',
  'comments and blank lines': '# top\n\n  # indented\nA=1 # tail\n\n',
  'lowercase and dotted names': 'lower=1\nA.B=2\nA-B=3\nC=4',
  'name with a space': 'A B=1\nC=2',
  'no equals sign': 'JUSTANAME\nC=2',
  'json instead of env': '{\n  "key1": "value1"\n}',
  'url value': 'URL=https://user:pa#ss@host:8545/path?x=1',
  'quoted url with hash': 'URL="https://host/#frag"',
  'byte order mark': '\uFEFFA=1',
  'unicode value': 'A=héllo wörld',
  backslashes: 'A=C:\\path\\to\nB="C:\\new"',
};

describe('secrets.env as dotenv 16 reads it', () => {
  it('holds our parse to the dotenv the reference declares (16.x)', () => {
    // The oracle must be the reference's dotenv: its grammar changed in 15 (multi-line values) and may again.
    const reference = require('@api3/airnode-node/package.json') as { dependencies: Record<string, string> };
    expect(reference.dependencies['dotenv']).to.match(/^\^16\./);
    expect((require('dotenv/package.json') as { version: string }).version).to.match(/^16\./);
  });

  for (const [name, text] of Object.entries(TRICKY)) {
    it(`${name}: ${JSON.stringify(text)}`, () => {
      expect({ ...parseSecretsEnv(text).secrets }).to.deep.equal(readByDotenv(text));
    });
  }

  it('gives the issue examples the reference values: `A=b#c` is b, `A="a" b` is "a" b', () => {
    expect({ ...parseSecretsEnv('A=b#c\nB="a" b').secrets }).to.deep.equal({ A: 'b', B: '"a" b' });
  });

  it('names the line of each error, also after multi-line values and CRLF, never the value', () => {
    const text = [
      'A="first', // 1
      'second" # a two-line value', // 2
      'lower=SECRETVALUE1', // 3
      'EMPTY=', // 4
      'SECRETVALUE2 wrapped', // 5
      '# comment', // 6
      "B='x", // 7
      "y'", // 8
      'EMPTY=', // 9: the last EMPTY decides
    ].join('\r\n');
    const { secrets, errors } = parseSecretsEnv(text);
    expect({ ...secrets }).to.deep.equal(readByDotenv(text));
    expect(errors).to.deep.equal([
      {
        path: 'secrets.env:3',
        message: 'Secret name is not valid: the text before "=" must match /^[A-Z][A-Z0-9_]*$/',
      },
      { path: 'secrets.env:5', message: 'Expected NAME=value' },
      { path: 'secrets.env:9', message: 'Secret EMPTY cannot be empty' },
    ]);
    expect(JSON.stringify(errors)).to.not.include('SECRETVALUE');
  });

  it('a name repeated with a value after an empty one is not an error (dotenv keeps the last)', () => {
    expect(parseSecretsEnv('A=\nA=1')).to.deep.equal({
      secrets: Object.assign(Object.create(null), { A: '1' }),
      errors: [],
    });
  });

  it('equals dotenv.parse on any text built of the grammar’s tricky pieces (property)', () => {
    const piece = fc.constantFrom(
      'A',
      'B',
      'a',
      '_',
      '.',
      '=',
      ' = ',
      ':',
      ': ',
      ' ',
      '\t',
      '#',
      ' #',
      '"',
      "'",
      '`',
      '\\',
      '\\n',
      '\\"',
      'x',
      'export ',
      '\n',
      '\r\n',
      '\r',
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }), (pieces) => {
        const text = pieces.join('');
        expect({ ...parseSecretsEnv(text).secrets }).to.deep.equal(readByDotenv(text));
      }),
      { numRuns: 3000 },
    );
  });
});
