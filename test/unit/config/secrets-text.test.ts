// `${NAME}` interpolation on the JSON text (interpolateSecretsInText, validate's fast path) against the tree pass
// (interpolateSecrets on the parsed text): wherever the text pass answers, the same value and redactions; where it
// cannot be sure (escapes, references in keys, missing or invalid names, U+FFFD) it declines, and countKeys finds
// forbidden keys; and
// validateConfig gives the same result whichever pass ran.
// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} strings are secret references
import { expect } from 'chai';
import fc from 'fast-check';
import {
  countKeys,
  interpolateSecrets,
  interpolateSecretsInText,
  NestingTooDeepError,
  parseSecretsEnv,
} from '../../../src/config/secrets.js';
import { duplicateKeyPaths, validateConfig } from '../../../src/config/validate.js';
import { BASE_SECRETS, fixturePairs, readFixture } from './fixtures.js';
import { applyMutations, mutationArb } from './mutations.js';

/** A JSON tree whose objects are entry lists, so that repeated keys and `__proto__` can be written. */
type Tree = string | number | boolean | null | Tree[] | { entries: [string, Tree][] };

const NAMES = ['A', 'B', 'URL_1'] as const;

const secretValue = fc.oneof(
  fc.string({ minLength: 1 }),
  fc.constantFrom('1', 'true', 'null', '-1.5e3', ' ', '[]', '{}', '"', 'a"b', 'a\\b', '\u0000x', '\u2028'),
  fc.constantFrom('http://127.0.0.1:8545', '${A}', '$&', '\uFFFD', '\\u0041', 'constructor', '\ud800'),
);

const secretsArb = fc
  .record({ A: secretValue, B: secretValue, URL_1: secretValue }, { requiredKeys: ['A', 'B'] })
  .map((record) => Object.fromEntries(Object.entries(record)) as Record<string, string>);

const piece = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom(...NAMES.map((name) => `\${${name}}`)) },
  { weight: 8, arbitrary: fc.string({ maxLength: 4 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('\\${A}', '${a}', '${MISSING}', '${', '}', '${A', '$${B}}', '\uFFFD', '"', '\\', '\n'),
  },
);
const stringArb = fc.array(piece, { maxLength: 3 }).map((pieces) => pieces.join(''));
const keyArb = fc.oneof(
  { weight: 20, arbitrary: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'url', 'key', '1', '0', '7') },
  { weight: 1, arbitrary: fc.constantFrom('__proto__', 'constructor', 'prototype', '${A}', 'k${B}') },
  { weight: 1, arbitrary: stringArb },
);

const treeArb: fc.Arbitrary<Tree> = fc.letrec<{ tree: Tree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    stringArb,
    fc.integer(),
    fc.constantFrom(true, false, null),
    fc.array(tie('tree'), { maxLength: 3 }),
    fc.array(fc.tuple(keyArb, tie('tree')), { maxLength: 4 }).map((entries) => ({ entries })),
  ),
})).tree;

/** JSON text of a tree: white space from `space`, strings as JSON.stringify writes them or with `$` as \u0024. */
function serialize(tree: Tree, space: string, escapeDollar: boolean): string {
  const str = (s: string) => {
    const json = JSON.stringify(s);
    return escapeDollar ? json.replaceAll('$', '\\u0024') : json;
  };
  const walk = (node: Tree): string => {
    if (typeof node === 'string') return str(node);
    if (node === null || typeof node !== 'object') return JSON.stringify(node);
    if (Array.isArray(node)) return `[${space}${node.map(walk).join(`,${space}`)}${space}]`;
    return `{${space}${node.entries.map(([k, v]) => `${str(k)}${space}:${space}${walk(v)}`).join(`,${space}`)}${space}}`;
  };
  return walk(tree);
}

const textArb = fc
  .record({
    tree: fc.array(fc.tuple(keyArb, treeArb), { maxLength: 5 }).map((entries) => ({ entries })),
    space: fc.constantFrom('', '', ' ', '\n  '),
    escapeDollar: fc.constantFrom(false, false, false, true),
    // A reference outside any string (invalid JSON, unless the value could be read as JSON tokens there).
    loose: fc.oneof(
      { weight: 4, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.tuple(fc.nat(), fc.constantFrom(...NAMES)) },
    ),
  })
  .map(({ tree, space, escapeDollar, loose }) => {
    const text = serialize(tree, space, escapeDollar);
    if (!loose) return text;
    const at = loose[0] % (text.length + 1);
    return `${text.slice(0, at)}\${${loose[1]}}${text.slice(at)}`;
  });

function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

describe('${NAME} interpolation on the text', () => {
  it('gives the tree pass’s value and redactions wherever it answers, and never makes invalid JSON valid', () => {
    let answered = 0;
    fc.assert(
      fc.property(textArb, secretsArb, (text, secrets) => {
        const fromText = interpolateSecretsInText(text, secrets);
        if (fromText === undefined) return;
        const raw = parseOrUndefined(text);
        const interpolated = parseOrUndefined(fromText.text);
        if (raw === undefined) {
          expect(interpolated, 'invalid JSON became valid').to.equal(undefined);
          return;
        }
        expect(interpolated, 'valid JSON became invalid').to.not.equal(undefined);
        // validate takes the tree pass for a repeated or forbidden key
        if (duplicateKeyPaths(text).length > 0 || countKeys(interpolated, 256) === undefined) return;
        answered++;
        const tree = interpolateSecrets(raw, secrets);
        expect(interpolated).to.deep.equal(tree.value);
        expect(tree.missing.size + tree.invalid.length + tree.warnings.length).to.equal(0);
        expect(Object.fromEntries(fromText.redactions)).to.deep.equal(Object.fromEntries(tree.redactions));
        expect([...fromText.used].sort()).to.deep.equal([...tree.usages.keys()].sort());
        expect(countKeys(interpolated, 256)).to.equal(tree.keyCount);
      }),
      { numRuns: 3000 },
    );
    // The generator must reach the comparison often, or the property says little.
    expect(answered).to.be.greaterThan(300);
  });

  it('declines what only the tree pass can report', () => {
    const secrets = { A: 'alpha' };
    const declined = [
      '{"a":"\\${A}"}',
      '{"a":"${a}"}',
      '{"a":"${MISSING}"}',
      '{"${A}":1}',
      '{"a":"${A}","b":"\uFFFD"}',
      '{"a":"\\u0024{A}"}',
      '{"a":"${A"}',
    ];
    for (const text of declined) expect(interpolateSecretsInText(text, secrets), text).to.equal(undefined);
    // A record of secrets may hold a name that is not valid: the tree pass reports its references.
    expect(interpolateSecretsInText('{"a":"${a}"}', { a: 'alpha' })).to.equal(undefined);
    // A value that could be read as JSON outside a string: a reference there would make invalid JSON valid.
    expect(interpolateSecretsInText('{"a":${A}}', { A: '1' })).to.equal(undefined);
    expect(interpolateSecretsInText('{"a":"${A}"}', { A: '1' })).to.equal(undefined);
  });

  it('inserts values JSON-escaped, keeps text without references as it is, and records redactions once per string', () => {
    const result = interpolateSecretsInText('{"a":"x${A}y${B}","b":["${A}"]}', { A: 'q"\\', B: 'b\n' })!;
    expect(JSON.parse(result.text)).to.deep.equal({ a: 'xq"\\yb\n', b: ['q"\\'] });
    expect([...result.redactions]).to.deep.equal([
      ['xq"\\yb\n', 'x${A}y${B}'],
      ['q"\\', '${A}'],
    ]);
    expect([...result.used]).to.deep.equal(['A', 'B']);
    const plain = '{"a": [1, "b"]}';
    expect(interpolateSecretsInText(plain, { A: 'alpha' })!.text).to.equal(plain);
  });

  it('finds the bounds of each string once, however many references it holds', () => {
    // One 1.2 MB string with 200,000 references: searching its opening quote again for each reference would scan
    // ~10^11 characters, far beyond the test's timeout.
    const value = 'x${A}'.repeat(200_000);
    const result = interpolateSecretsInText(`{"a":"${value}","b":["\${A}"]}`, { A: 'a/b' })!;
    expect(result.text.length).to.equal(`{"a":"${'xa/b'.repeat(200_000)}","b":["a/b"]}`.length);
    expect([...result.redactions.values()]).to.deep.equal([value, '${A}']);
  });

  it('counts keys, limits depth and finds forbidden keys as the tree pass does', () => {
    const deep = JSON.parse(`${'['.repeat(300)}${']'.repeat(300)}`);
    expect(() => countKeys(deep, 256)).to.throw(NestingTooDeepError);
    expect(() => interpolateSecrets(deep, {}, 256)).to.throw(NestingTooDeepError);
    expect(countKeys({ a: { b: 1, c: [{ d: 2 }] } }, 256)).to.equal(4);
    // A forbidden key, which only the tree pass reports, leaves no count.
    for (const key of ['__proto__', 'constructor', 'prototype']) {
      expect(countKeys(JSON.parse(`{"a":[{"${key}":1}]}`), 256), key).to.equal(undefined);
    }
  });
});

describe('validateConfig takes either pass with the same result', () => {
  const config = readFixture('node/config.example.json');

  function expectSameResult(text: string, secrets: string): void {
    const viaText = validateConfig(text, secrets);
    // A parsed object always takes the tree pass.
    const viaTree = validateConfig(JSON.parse(text), secrets);
    expect(viaText.ok).to.equal(viaTree.ok);
    expect(viaText.errors).to.deep.equal(viaTree.errors);
    expect(viaText.warnings).to.deep.equal(viaTree.warnings);
    expect(viaText.config).to.deep.equal(viaTree.config);
    expect(viaText.secretUsages).to.deep.equal(viaTree.secretUsages);
  }

  it('on the reference example, valid and with secrets interpolated into invalid fields', () => {
    expectSameResult(config, BASE_SECRETS);
    const edited = JSON.parse(config);
    edited.nodeSettings.stage = 'Bad ${PROVIDER_URL}';
    edited.chains[0].providers.local.url = 'not a url ${SS_CURRENCY_CONVERTER_API_KEY}';
    edited.ois[0].title = '${AIRNODE_WALLET_MNEMONIC}';
    const text = JSON.stringify(edited, null, 2);
    expect(interpolateSecretsInText(text, parseSecretsEnv(BASE_SECRETS).secrets)).to.not.equal(undefined);
    expectSameResult(text, BASE_SECRETS);
    const result = validateConfig(text, BASE_SECRETS);
    expect(result.ok).to.equal(false);
    expect(JSON.stringify(result.errors)).to.include('${AIRNODE_WALLET_MNEMONIC}');
    expect(JSON.stringify(result.errors)).to.not.include('achieve climb');
  });

  it('with a forbidden key, which only the tree pass reports', () => {
    for (const key of ['__proto__', 'constructor', 'prototype']) {
      const text = config.replace('"nodeSettings": {', `"nodeSettings": { "${key}": {"a": 1},`);
      expect(text).to.not.equal(config);
      expectSameResult(text, BASE_SECRETS);
      expect(validateConfig(text, BASE_SECRETS).errors.map((e) => e.message)).to.include(
        `The key "${key}" is not allowed`,
      );
    }
  });

  it('on every fixture', () => {
    for (const pair of fixturePairs()) expectSameResult(readFixture(pair.config), readFixture(pair.secrets));
  });

  it('on mutated configs', () => {
    const base = JSON.parse(config);
    fc.assert(
      fc.property(fc.array(mutationArb, { minLength: 1, maxLength: 3 }), (mutations) => {
        const text = JSON.stringify(applyMutations(structuredClone(base), mutations));
        // A mutation nested past the depth limit fails both ways alike; JSON.parse takes it too.
        expectSameResult(text, BASE_SECRETS);
      }),
      { numRuns: 300 },
    );
  });
});
