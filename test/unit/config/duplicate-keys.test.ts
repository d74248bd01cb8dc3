// duplicateKeyPaths (the scan behind the "appears more than once" warning) against a plain reference scan:
// the same paths for random JSON text with repeated, escaped and nested keys.
import { expect } from 'chai';
import fc from 'fast-check';
import { formatPath, type PathSegment } from '../../../src/config/paths.js';
import { interpolateSecrets } from '../../../src/config/secrets.js';
import { duplicateKeyPaths, keysAllDistinct, validateConfig } from '../../../src/config/validate.js';

/** The straightforward scan: every character, one Set per object, each key decoded with JSON.parse. */
function referenceDuplicateKeyPaths(text: string): string[] {
  type Frame = { kind: '{' | '['; keys?: Set<string>; key?: string; index: number };
  const stack: Frame[] = [];
  const found: string[] = [];
  const path = (): PathSegment[] => stack.map((frame) => (frame.kind === '[' ? frame.index : (frame.key ?? '')));
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') {
      let end = i + 1;
      while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      const frame = stack[stack.length - 1];
      if (expectKey && frame?.kind === '{') {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        frame.key = key;
        if (frame.keys!.has(key)) found.push(formatPath(path()));
        frame.keys!.add(key);
        expectKey = false;
      }
      i = end;
    } else if (c === '{') {
      stack.push({ kind: '{', keys: new Set(), index: 0 });
      expectKey = true;
    } else if (c === '[') stack.push({ kind: '[', index: 0 });
    else if (c === '}' || c === ']') stack.pop();
    else if (c === ',') {
      const frame = stack[stack.length - 1];
      if (frame?.kind === '{') expectKey = true;
      else if (frame) frame.index++;
    }
  }
  return found;
}

// Few distinct keys (so objects repeat them), some needing escapes, and enough of them to pass the list limit.
const key = fc.oneof(
  fc.constantFrom(
    'a',
    'b',
    'c',
    'a"b',
    'a\\b',
    '\\',
    '"',
    'é',
    '\u0001',
    '',
    'x y',
    '[',
    '{',
    ',',
    ':',
    ': x',
    ' :',
    'a":',
    '" :',
  ),
  fc.integer({ min: 0, max: 40 }).map((n) => `k${n}`),
);
const { text: jsonText } = fc.letrec<{ text: string }>((tie) => ({
  text: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc
      .oneof(fc.string({ maxLength: 6 }), fc.constantFrom('\\', '"', '\\"', '}', ']', ','))
      .map((s) => JSON.stringify(s)),
    fc.constantFrom('1', 'true', 'null', '-2.5e3'),
    fc.array(tie('text'), { maxLength: 5 }).map((items) => `[${items.join(',')}]`),
    fc
      .array(fc.tuple(key, tie('text')), { maxLength: 24 })
      .chain((entries) =>
        fc
          .tuple(fc.constantFrom(' ', '', '\n  '), fc.constantFrom('', '', ' ', '\t'))
          .map(
            ([space, beforeColon]) =>
              `{${entries.map(([k, v]) => `${space}${JSON.stringify(k)}${beforeColon}:${space}${v}`).join(',')}}`,
          ),
      ),
  ),
}));

describe('duplicateKeyPaths', () => {
  it('finds the same repeated keys as the plain scan, at the same paths', () => {
    fc.assert(
      fc.property(jsonText, (text) => {
        JSON.parse(text); // only valid JSON reaches the scan
        expect(duplicateKeyPaths(text)).to.deep.equal(referenceDuplicateKeyPaths(text));
      }),
      { numRuns: 1000 },
    );
  });

  it('rules out repeated keys by counting only when none is there (else the scan decides)', () => {
    let ruledOut = 0;
    fc.assert(
      fc.property(jsonText, (text) => {
        const { keyCount } = interpolateSecrets(JSON.parse(text), {});
        if (keysAllDistinct(text, keyCount)) {
          ruledOut++;
          expect(referenceDuplicateKeyPaths(text)).to.deep.equal([]);
        }
      }),
      { numRuns: 3000 },
    );
    expect(ruledOut).to.be.greaterThan(100); // the quick answer is reached, not only the fallback
  });

  it('warns about a repeated key through validateConfig, with or without escapes and spacing', () => {
    for (const text of ['{"a":1,"a":2}', '{"a" :1,"a":2}', '{"x":"\\n","a":1,"a":2}', '{"b":":","a":{"c":1,"c":1}}']) {
      const paths = validateConfig(text, {}).warnings.filter((w) => w.message.includes('more than once'));
      expect(paths.length, text).to.equal(1);
    }
    const distinct = validateConfig('{"a":1,"b":{"a":":x"}}', {});
    expect(distinct.warnings.filter((w) => w.message.includes('more than once'))).to.deep.equal([]);
  });

  it('reports a key repeated in a large object and under escaped names', () => {
    const many = Array.from({ length: 40 }, (_, i) => `"k${i}":${i}`).join(',');
    expect(duplicateKeyPaths(`{"list":[{${many},"k3":0}],"a\\"b":1,"a\\u0022b":2}`)).to.deep.equal([
      'list[0].k3',
      '["a\\"b"]',
    ]);
  });
});
