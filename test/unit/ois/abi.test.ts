import { expect } from 'chai';
import fc from 'fast-check';
import { type AbiParameter, decodeParameters, encodeParameters, MAX_PARAMETERS } from '../../../src/ois/abi.js';
import { readVectors, referenceAbi } from './reference.js';

type AbiVector = {
  decoded?: Record<string, unknown>;
  encoded: string;
  input_order?: [AbiParameter['type'], string, unknown][];
  note?: string;
  source?: string;
};
const vectors = readVectors<{ vectors: AbiVector[]; must_fail_to_decode: { encoded: string; why: string }[] }>(
  'abi-vectors.json',
);

describe('ois/abi: Node ABI parameters', () => {
  describe('reference vectors', () => {
    for (const [index, vector] of vectors.vectors.entries()) {
      it(`vector ${index}: ${vector.note ?? vector.source ?? Object.keys(vector.decoded ?? {}).join(',')}`, () => {
        const decoded = decodeParameters(vector.encoded);
        if (vector.decoded) expect(decoded).to.deep.equal(vector.decoded);
        expect(decoded).to.deep.equal(referenceAbi.decode(vector.encoded));
        if (vector.input_order) {
          const parameters = vector.input_order.map(([type, name, value]) => ({ type, name, value }));
          expect(encodeParameters(parameters)).to.equal(vector.encoded);
        }
      });
    }

    for (const vector of vectors.must_fail_to_decode) {
      it(`rejects ${vector.why}`, () => {
        expect(() => decodeParameters(vector.encoded)).to.throw();
        expect(() => referenceAbi.decode(vector.encoded)).to.throw();
      });
    }
  });

  it('encodes an empty list as the bare header and decodes "0x" as {}', () => {
    expect(encodeParameters([])).to.equal(`0x31${'0'.repeat(62)}`);
    expect(decodeParameters('0x')).to.deep.equal({});
  });

  it('rejects trailing bytes with "Re-encoding mismatch"', () => {
    const encoded = encodeParameters([{ type: 'int256', name: 'x', value: '-1000' }]);
    expect(() => decodeParameters(`${encoded}00`)).to.throw('Re-encoding mismatch');
  });

  it('rejects upper-case hex like the reference (exact string re-encoding check)', () => {
    const encoded = encodeParameters([{ type: 'bytes', name: 'b', value: '0xabcdef' }]);
    const upper = `0x${encoded.slice(2).toUpperCase()}`;
    expect(() => decodeParameters(upper)).to.throw('Re-encoding mismatch');
    expect(() => referenceAbi.decode(upper)).to.throw('Re-encoding mismatch');
  });

  it('rejects an unknown schema version', () => {
    const encoded = encodeParameters([]);
    const version2 = `0x32${encoded.slice(4)}`;
    expect(() => decodeParameters(version2)).to.throw('Unknown ABI schema version: 2');
  });

  it('accepts 30 parameters and refuses 31', () => {
    const params = (n: number): AbiParameter[] =>
      Array.from({ length: n }, (_, i) => ({ type: 'uint256', name: `p${i}`, value: String(i) }));
    const encoded = encodeParameters(params(MAX_PARAMETERS));
    expect(encoded).to.equal(referenceAbi.encode(params(MAX_PARAMETERS)));
    expect(Object.keys(decodeParameters(encoded))).to.have.length(30);
    expect(() => encodeParameters(params(31))).to.throw('at most 30');
  });

  it('limits names and string32 values to 31 bytes', () => {
    expect(() => encodeParameters([{ type: 'bool', name: 'x'.repeat(32), value: true }])).to.throw(
      'longer than 31 bytes',
    );
    expect(() => encodeParameters([{ type: 'string32', name: 'n', value: 'é'.repeat(16) }])).to.throw(
      'longer than 31 bytes',
    );
    expect(encodeParameters([{ type: 'bool', name: 'x'.repeat(31), value: true }])).to.be.a('string');
  });

  it('lets later duplicate names overwrite earlier ones and keeps "__proto__" as a plain key', () => {
    const encoded = encodeParameters([
      { type: 'string', name: 'a', value: 'first' },
      { type: 'string', name: '__proto__', value: 'p' },
      { type: 'string', name: 'a', value: 'second' },
    ]);
    const decoded = decodeParameters(encoded);
    expect(decoded.a).to.equal('second');
    expect(Object.getPrototypeOf(decoded)).to.equal(Object.prototype);
    expect(Object.keys(decoded)).to.deep.equal(['a', '__proto__']);
  });

  describe('property: byte-compatible with @api3/airnode-abi in both directions', () => {
    const name = fc.string({ minLength: 0, maxLength: 31 }).filter((s) => Buffer.byteLength(s) <= 31);
    const hexBytes = (min: number, max: number) =>
      fc.uint8Array({ minLength: min, maxLength: max }).map((b) => `0x${Buffer.from(b).toString('hex')}`);
    const parameter: fc.Arbitrary<AbiParameter> = fc.oneof(
      fc.record({ type: fc.constant('bytes' as const), name, value: hexBytes(0, 80) }),
      fc.record({ type: fc.constant('bytes32' as const), name, value: hexBytes(32, 32) }),
      fc.record({ type: fc.constant('string' as const), name, value: fc.string({ maxLength: 80 }) }),
      fc.record({
        type: fc.constant('string32' as const),
        name,
        value: fc
          .string({ maxLength: 31 })
          .filter((s) => Buffer.byteLength(s) <= 31 && !s.includes('\u0000') && Buffer.from(s).toString() === s),
      }),
      fc.record({
        type: fc.constant('address' as const),
        name,
        value: hexBytes(20, 20),
      }),
      fc.record({
        type: fc.constant('int256' as const),
        name,
        value: fc.bigInt({ min: -(2n ** 255n), max: 2n ** 255n - 1n }).map(String),
      }),
      fc.record({
        type: fc.constant('uint256' as const),
        name,
        value: fc.bigInt({ min: 0n, max: 2n ** 256n - 1n }).map(String),
      }),
      fc.record({ type: fc.constant('bool' as const), name, value: fc.boolean() }),
    );
    const parameterList = fc.array(parameter, { maxLength: MAX_PARAMETERS });

    it('ours encodes exactly as theirs and each decodes the other', () => {
      fc.assert(
        fc.property(parameterList, (parameters) => {
          const ours = encodeParameters(parameters);
          const theirs = referenceAbi.encode(parameters);
          expect(ours).to.equal(theirs);
          expect(decodeParameters(theirs)).to.deep.equal(referenceAbi.decode(ours));
        }),
        { numRuns: 300 },
      );
    });

    it('encoding agrees on loosely typed and invalid values (both accept the same, or both reject)', () => {
      const looseValue = fc.oneof(
        fc.integer().map((n) => n),
        fc
          .bigInt({ min: -(2n ** 257n), max: 2n ** 257n })
          .map((n) => `${n < 0n ? '-' : ''}0x${(n < 0n ? -n : n).toString(16)}`),
        fc.bigInt({ min: -(2n ** 257n), max: 2n ** 257n }).map(String),
        fc.constantFrom('', '1.5', '0x', '0x123', 'abc', ' 12', '0x8f0633d80be1ea5b5df1909b64f2573622290576'),
        fc.constantFrom('0x8F0633D80BE1EA5B5DF1909B64F2573622290576', '0x8f0633d80Be1EA5B5DF1909b64f2573622290577'),
        fc.boolean(),
        fc.constant(null),
      );
      const type = fc.constantFrom('bytes', 'bytes32', 'string', 'string32', 'address', 'int256', 'uint256', 'bool');
      fc.assert(
        fc.property(type, looseValue, (t, value) => {
          const parameters = [{ type: t as AbiParameter['type'], name: 'x', value }];
          if ((t === 'string' || t === 'string32') && typeof value !== 'string') {
            // Deliberate difference: the reference silently encodes a non-string as "" (data loss); we reject it.
            expect(() => encodeParameters(parameters)).to.throw('must be a string');
            return;
          }
          let theirs: string | undefined;
          try {
            theirs = referenceAbi.encode(parameters);
          } catch {
            theirs = undefined;
          }
          if (theirs === undefined) expect(() => encodeParameters(parameters), `${t} ${String(value)}`).to.throw();
          else expect(encodeParameters(parameters), `${t} ${String(value)}`).to.equal(theirs);
        }),
        { numRuns: 1000 },
      );
    });

    it('decoding agrees on mutated encodings (both accept or both reject)', () => {
      fc.assert(
        fc.property(parameterList, fc.nat(), fc.integer({ min: 0, max: 255 }), (parameters, position, byte) => {
          const encoded = encodeParameters(parameters);
          const offset = 2 + 2 * (position % ((encoded.length - 2) / 2));
          const mutated = encoded.slice(0, offset) + byte.toString(16).padStart(2, '0') + encoded.slice(offset + 2);
          let theirs: unknown;
          let theirsFailed = false;
          try {
            theirs = referenceAbi.decode(mutated);
          } catch {
            theirsFailed = true;
          }
          if (theirsFailed) {
            expect(() => decodeParameters(mutated)).to.throw();
          } else {
            expect(decodeParameters(mutated)).to.deep.equal(theirs);
          }
        }),
        { numRuns: 300 },
      );
    });
  });
});
