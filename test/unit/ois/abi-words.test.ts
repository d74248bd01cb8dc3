import { expect } from 'chai';
import { AbiCoder, toUtf8Bytes } from 'ethers';
import fc from 'fast-check';
import { encodeAbi } from '../../../src/ois/abi-words.js';
import { ethersUtf8Bytes as utf8Bytes } from '../../../src/protocol/utf8.js';

const coder = AbiCoder.defaultAbiCoder();

type Case = { type: string; value: unknown };

const bases: fc.Arbitrary<Case>[] = [
  fc.bigInt({ min: 0n, max: 2n ** 256n - 1n }).map((n) => ({ type: 'uint256', value: n.toString() })),
  fc.bigInt({ min: -(2n ** 255n), max: 2n ** 255n - 1n }).map((n) => ({ type: 'int256', value: n.toString() })),
  fc.boolean().map((value) => ({ type: 'bool', value })),
  fc
    .uint8Array({ minLength: 20, maxLength: 20 })
    .map((b) => ({ type: 'address', value: `0x${Buffer.from(b).toString('hex')}` })),
  fc
    .uint8Array({ minLength: 32, maxLength: 32 })
    .map((b) => ({ type: 'bytes32', value: `0x${Buffer.from(b).toString('hex')}` })),
  fc.uint8Array({ maxLength: 70 }).map((b) => ({ type: 'bytes', value: `0x${Buffer.from(b).toString('hex')}` })),
  fc.string({ maxLength: 70, unit: 'binary' }).map((value) => ({ type: 'string', value })),
];

/** A value of `base` wrapped in `dims` array levels (innermost first), each fixed or dynamic. */
function nestedCase(baseIndex: number, dims: { fixed: boolean; length: number }[]): fc.Arbitrary<Case> {
  if (dims.length === 0) return bases[baseIndex]!;
  const outer = dims.at(-1)!;
  const inner = nestedCase(baseIndex, dims.slice(0, -1));
  return fc.array(inner, { minLength: outer.length, maxLength: outer.length }).map((items) => ({
    type: typeFor(baseIndex, dims),
    value: items.map((item) => item.value),
  }));
}

const BASE_NAMES = ['uint256', 'int256', 'bool', 'address', 'bytes32', 'bytes', 'string'];
function typeFor(baseIndex: number, dims: { fixed: boolean; length: number }[]): string {
  return BASE_NAMES[baseIndex]! + dims.map((d) => `[${d.fixed ? d.length : ''}]`).join('');
}

const dim = fc.record({ fixed: fc.boolean(), length: fc.integer({ min: 0, max: 3 }) }).map((d) => ({
  fixed: d.fixed && d.length > 0,
  length: d.length,
}));
const nested: fc.Arbitrary<Case> = fc
  .tuple(fc.integer({ min: 0, max: bases.length - 1 }), fc.array(dim, { maxLength: 2 }))
  .chain(([baseIndex, dims]) => nestedCase(baseIndex, dims));

describe('ois/abi-words: hand-written abi.encode', () => {
  it('equals ethers AbiCoder on random tuples of nested types', () => {
    fc.assert(
      fc.property(fc.array(nested, { minLength: 1, maxLength: 4 }), (cases) => {
        const types = cases.map((c) => c.type);
        const values = cases.map((c) => c.value);
        expect(encodeAbi(types, values)).to.equal(coder.encode(types, values));
      }),
      { numRuns: 500 },
    );
  });

  it('rejects what ethers rejects', () => {
    const bad: [string, unknown][] = [
      ['uint256', '-1'],
      ['uint256', (2n ** 256n).toString()],
      ['int256', (2n ** 255n).toString()],
      ['bytes32', '0x1234'],
      ['bytes', '0x123'],
      ['address', '0x123'],
      ['int256[2]', ['1']],
      ['int256[]', '1'],
      ['string', 5],
    ];
    for (const [type, value] of bad) {
      expect(() => encodeAbi([type], [value]), type).to.throw();
      expect(() => coder.encode([type], [value]), type).to.throw();
    }
  });

  it('encodes UTF-8 like ethers, lone low surrogates included', () => {
    for (const text of ['abc', 'é€😀', '\uDC00x', 'a\uD83D\uDE00b']) {
      expect(utf8Bytes(text).toString('hex')).to.equal(Buffer.from(toUtf8Bytes(text)).toString('hex'));
    }
    expect(() => utf8Bytes('\uD800')).to.throw();
    expect(() => toUtf8Bytes('\uD800')).to.throw();
  });
});
