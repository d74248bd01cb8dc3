import { expect } from 'chai';
import { AbiCoder } from 'ethers';
import fc from 'fast-check';
import { type Decimal, decimalToString, parseDecimalLike } from '../../../src/ois/decimal.js';
import {
  castNumber,
  castValue,
  escapeAwareSplit,
  extractAndEncodeResponse,
  extractValue,
  getReservedParameters,
  getReservedParameterValue,
  MAX_ENCODED_RESPONSE_SIZE,
  multiplyValue,
  parseArrayType,
  type ReservedParameterValues,
} from '../../../src/ois/reserved.js';
import { readVectors, referenceAdapter, referenceRequire } from './reference.js';

type Params = ReservedParameterValues;
const vectors = readVectors<{
  extractAndEncode: {
    data: unknown;
    params: Params;
    values?: unknown[];
    encodedValue?: string;
    onchainDecimal?: string;
  }[];
  encodeValue: { value: unknown; type: string; encoded: string }[];
  castValue: { value: unknown; type: string; result: unknown }[];
  multiplyValue: { value: string; times: string | null; result: string }[];
  errors: { data?: unknown; params: Params; error: string }[];
  pathEscaping: { data?: unknown; path?: string; value?: unknown; split?: string; by?: string; result?: string[] }[];
}>('adapter-vectors.json');

/** Runs the reference; its "-0" value strings are normalised (we print "0", see docs/ois-engine.md). */
function reference(data: unknown, params: Params): { ok: true; encodedValue: string; values: unknown } | { ok: false } {
  try {
    const result = referenceAdapter.extractAndEncodeResponse(data, params);
    const values = JSON.parse(JSON.stringify(result.values, (_k, v) => (v === '-0' ? '0' : v)));
    return { ok: true, encodedValue: result.encodedValue, values };
  } catch {
    return { ok: false };
  }
}

describe('ois/reserved: extraction and encoding', () => {
  describe('reference vectors', () => {
    for (const [index, vector] of vectors.extractAndEncode.entries()) {
      it(`extractAndEncode ${index}: ${JSON.stringify(vector.params)}`, () => {
        const result = extractAndEncodeResponse(vector.data, vector.params);
        expect(result.rawValue).to.deep.equal(vector.data);
        if (vector.encodedValue) expect(result.encodedValue).to.equal(vector.encodedValue);
        if (vector.values) expect(result.values).to.deep.equal(vector.values);
        if (vector.onchainDecimal) {
          expect(AbiCoder.defaultAbiCoder().decode(['int256'], result.encodedValue)[0].toString()).to.equal(
            vector.onchainDecimal,
          );
        }
        const theirs = reference(vector.data, vector.params);
        expect(theirs.ok && theirs.encodedValue).to.equal(result.encodedValue);
      });
    }

    for (const vector of vectors.encodeValue) {
      it(`encodes ${vector.type} ${JSON.stringify(vector.value).slice(0, 40)}`, () => {
        expect(extractAndEncodeResponse(vector.value, { _type: vector.type }).encodedValue).to.equal(vector.encoded);
      });
    }

    it('casts values as the reference', () => {
      for (const vector of vectors.castValue) {
        if (vector.type === 'timestamp') {
          const before = Math.floor(Date.now() / 1000);
          const cast = Number(castValue(vector.value, 'timestamp'));
          expect(cast).to.be.within(before, Math.ceil(Date.now() / 1000));
          continue;
        }
        const cast = castValue(vector.value, vector.type);
        const shown =
          typeof cast === 'object' && cast !== null && 'coefficient' in cast ? decimalToString(cast as Decimal) : cast;
        const expected =
          typeof vector.result === 'string' && vector.result.startsWith('BigNumber(')
            ? vector.result.slice('BigNumber('.length, vector.result.indexOf(')'))
            : vector.result;
        expect(shown, `${vector.type} ${JSON.stringify(vector.value)}`).to.deep.equal(expected);
      }
    });

    it('multiplies with exact decimals and truncates toward zero', () => {
      for (const vector of vectors.multiplyValue) {
        expect(multiplyValue(castNumber(vector.value), vector.times ?? undefined)).to.equal(vector.result);
      }
      expect(multiplyValue(castNumber('-1.5'), undefined)).to.equal('-1');
      expect(multiplyValue(castNumber('-0.5'), '1')).to.equal('0');
      expect(multiplyValue(castNumber('0.1'), '0.2')).to.equal('0');
      expect(multiplyValue(castNumber('0.1'), '30')).to.equal('3');
      expect(multiplyValue(castNumber(1e21), '1e-20')).to.equal('10');
      expect(multiplyValue(castNumber('1.0000000000000000000000001'), '1e25')).to.equal('10000000000000000000000001');
    });

    for (const vector of vectors.errors) {
      it(`fails with: ${vector.error}`, () => {
        let data = vector.data ?? { usd: 1, eur: 2 };
        if (vector.data === "string of 16321 'x' chars") data = 'x'.repeat(16321);
        if (vector.data === 'int array of 511 elements') data = Array.from({ length: 511 }, (_, i) => i);
        expect(() => extractAndEncodeResponse(data, vector.params)).to.throw(vector.error);
        expect(reference(data, vector.params).ok).to.equal(false);
      });
    }

    it('splits on delimiters with escapes exactly as the reference (property)', () => {
      const referenceExtraction = referenceRequire('@api3/airnode-adapter/dist/response-processing/extraction.js') as {
        escapeAwareSplit(value: string, delimiter: string): string[];
      };
      const text = fc
        .array(fc.constantFrom('a', 'b', ',', '.', '\\'), { maxLength: 12 })
        .map((chars) => chars.join(''));
      fc.assert(
        fc.property(text, fc.constantFrom(',', '.'), (value, delimiter) => {
          expect(escapeAwareSplit(value, delimiter)).to.deep.equal(
            referenceExtraction.escapeAwareSplit(value, delimiter),
          );
        }),
        { numRuns: 2000 },
      );
    });

    it('splits and escapes paths as the reference', () => {
      for (const vector of vectors.pathEscaping) {
        if (vector.split !== undefined) expect(escapeAwareSplit(vector.split, vector.by!)).to.deep.equal(vector.result);
        else expect(extractValue(vector.data, vector.path)).to.deep.equal(vector.value);
      }
    });
  });

  describe('reserved parameter values', () => {
    const endpoint = {
      reservedParameters: [
        { name: '_type', fixed: 'int256' },
        { name: '_path', default: 'a' },
        { name: '_times', fixed: '' },
      ],
    };
    it('uses fixed || request || default and ignores parameters not listed', () => {
      expect(getReservedParameterValue('_type', endpoint, { _type: 'bool' })).to.equal('int256');
      expect(getReservedParameterValue('_path', endpoint, {})).to.equal('a');
      expect(getReservedParameterValue('_path', endpoint, { _path: 'b' })).to.equal('b');
      // An empty fixed value is falsy: the requester can override it, as in the reference.
      expect(getReservedParameterValue('_times', endpoint, { _times: '100' })).to.equal('100');
      expect(getReservedParameterValue('_gasPrice', endpoint, { _gasPrice: '1' })).to.equal(undefined);
    });

    it('reads _gasPrice and _minConfirmations for the chain cycle', () => {
      const listed = {
        reservedParameters: [{ name: '_type' }, { name: '_gasPrice' }, { name: '_minConfirmations', default: '2' }],
      };
      expect(getReservedParameters(listed, { _gasPrice: '1000', _type: 'int256' })).to.deep.equal({
        _type: 'int256',
        _path: undefined,
        _times: undefined,
        _gasPrice: '1000',
        _minConfirmations: '2',
      });
    });
  });

  describe('types', () => {
    it('parses array types like the reference', () => {
      expect(parseArrayType('int256[2][][3]')).to.deep.equal({ baseType: 'int256', dimensions: 3 });
      expect(parseArrayType('int256[0]')).to.equal(null);
      expect(parseArrayType('foo[]')).to.equal(null);
      expect(parseArrayType('int256')).to.equal(null);
    });

    it('encodes multi-dimensional and fixed-size numeric arrays', () => {
      const data = [
        [1, 2],
        [3, 4],
      ];
      for (const type of ['int256[][]', 'int256[2][]', 'uint256[2][2]', 'int256[][2]']) {
        const ours = extractAndEncodeResponse(data, { _type: type, _times: '10' });
        expect(ours.values).to.deep.equal([
          [
            ['10', '20'],
            ['30', '40'],
          ],
        ]);
        expect(ours.encodedValue).to.equal(reference(data, { _type: type, _times: '10' }).ok && ours.encodedValue);
      }
      expect(() => extractAndEncodeResponse(data, { _type: 'int256[3][]' })).to.throw('Unable to encode');
    });

    it('casts array elements by their declared type (the reference casts every leaf as a number)', () => {
      const bools = extractAndEncodeResponse([true, false, 'false', 0], { _type: 'bool[]' });
      expect(bools.values).to.deep.equal([[true, false, false, false]]);
      expect(AbiCoder.defaultAbiCoder().decode(['bool[]'], bools.encodedValue)[0]).to.deep.equal([
        true,
        false,
        false,
        false,
      ]);
      // The reference encodes every bool as true here.
      const theirs = reference([true, false], { _type: 'bool[]' });
      expect(theirs.ok && theirs.encodedValue).to.not.equal(
        extractAndEncodeResponse([true, false], { _type: 'bool[]' }).encodedValue,
      );

      const strings = extractAndEncodeResponse(['a', 'bc'], { _type: 'string[]' });
      expect(AbiCoder.defaultAbiCoder().decode(['string[]'], strings.encodedValue)[0]).to.deep.equal(['a', 'bc']);
      expect(reference(['a', 'bc'], { _type: 'string[]' }).ok).to.equal(false);

      const addresses = ['0x8f0633d80be1ea5b5df1909b64f2573622290576', '0x0000000000000000000000000000000000000001'];
      const encoded = extractAndEncodeResponse(addresses, { _type: 'address[2]' });
      expect(encoded.values).to.deep.equal([addresses]);

      const words = extractAndEncodeResponse([['ab', 'c']], { _type: 'string32[][]' });
      expect(AbiCoder.defaultAbiCoder().decode(['bytes32[][]'], words.encodedValue)[0][0][0]).to.match(/^0x6162/);
      expect(() => extractAndEncodeResponse([1], { _type: 'timestamp[]' })).to.throw(
        'Unable to cast value to timestamp[]',
      );
    });

    it('applies the size limit to several values too (the reference checks single values only)', () => {
      const big = 'x'.repeat(16321);
      expect(() => extractAndEncodeResponse({ a: big, b: 1 }, { _type: 'string,int256', _path: 'a,b' })).to.throw(
        `Encoded value exceeds the maximum allowed size (${MAX_ENCODED_RESPONSE_SIZE} bytes)`,
      );
      expect(reference({ a: big, b: 1 }, { _type: 'string,int256', _path: 'a,b' }).ok).to.equal(true);
    });

    it('encodes timestamp without a path and rejects _times on non-numeric types', () => {
      const before = Math.floor(Date.now() / 1000);
      const result = extractAndEncodeResponse({ a: 1 }, { _type: 'timestamp' });
      expect(Number(result.values[0])).to.be.within(before, Math.ceil(Date.now() / 1000));
      expect(() => extractAndEncodeResponse({ a: 1 }, { _type: 'string', _times: '10' })).to.throw(
        'Parameter "_times" can only be used with numeric types, but "_type" was "string"',
      );
    });

    it('reads own properties only along a path', () => {
      expect(() => extractValue({ a: {} }, 'a.constructor')).to.throw("Unable to find value at path: 'a.constructor'");
      expect(() => extractValue({ a: {} }, 'a.__proto__')).to.throw();
      expect(extractValue({ a: [1, 2, 3] }, 'a.length')).to.equal(3);
      expect(extractValue({ a: 'xyz' }, 'a.1')).to.equal('y');
    });

    it('truncates string32 to 31 UTF-8 bytes without splitting characters', () => {
      const result = extractAndEncodeResponse('é'.repeat(20), { _type: 'string32' });
      expect(Buffer.from(result.encodedValue.slice(2), 'hex').toString('utf8').replace(/\0+$/, '')).to.equal(
        'é'.repeat(15),
      );
    });

    it('rejects malformed _times and values that do not fit', () => {
      expect(() => extractAndEncodeResponse('1', { _type: 'int256', _times: 'abc' })).to.throw(
        'Invalid "_times" value',
      );
      expect(() => extractAndEncodeResponse('-1', { _type: 'uint256' })).to.throw('Unable to encode');
      expect(() => extractAndEncodeResponse(`1${'0'.repeat(80)}`, { _type: 'int256' })).to.throw('Unable to encode');
      expect(() => extractAndEncodeResponse('1e999999999', { _type: 'int256' })).to.throw(
        'Unable to cast value to int256',
      );
    });
  });

  describe('decimal parsing matches bignumber.js inputs', () => {
    const cases: [string, string | null][] = [
      ['12', '12'],
      ['-12.50', '-12.5'],
      [' 7 ', '7'],
      ['+5', '5'],
      ['.5', '0.5'],
      ['5.', '5'],
      ['1e3', '1000'],
      ['1.5E-3', '0.0015'],
      ['0x1f', '31'],
      ['-0x10', '-16'],
      ['0b101', '5'],
      ['0o17', '15'],
      ['0xAbC', null],
      ['0x1.8', '1.5'],
      ['Infinity', null],
      ['NaN', null],
      ['', null],
      ['1,2', null],
      ['+-5', null],
      ['abc', null],
      ['.', null],
    ];
    for (const [input, expected] of cases) {
      it(`"${input}" -> ${expected}`, () => {
        const parsed = parseDecimalLike(input);
        expect(parsed === null ? null : decimalToString(parsed)).to.equal(expected);
      });
    }
  });

  describe('property: byte-compatible with @api3/airnode-adapter', () => {
    const numberLike = fc.oneof(
      fc.integer().map(String),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.bigInt({ min: -(2n ** 200n), max: 2n ** 200n }).map(String),
      fc.tuple(fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }), fc.integer({ min: 0, max: 20 })).map(([n, s]) => {
        const text = (n < 0n ? -n : n).toString().padStart(s + 1, '0');
        return `${n < 0n ? '-' : ''}${s === 0 ? text : `${text.slice(0, -s)}.${text.slice(-s)}`}`;
      }),
      fc.constantFrom('true', 'false', true, false, '0x1f', ' 42 ', '1e5', '-1.5e-3', '', 'abc', null, '0xZZ'),
    );
    const times = fc.oneof(
      fc.constant(undefined),
      fc.constant(''),
      fc.constantFrom('1', '10', '100', '1000000', '1e18', '0.5', '-3', '123456789.123'),
    );
    const leafValue = fc.oneof(
      numberLike,
      fc.string({ maxLength: 40 }),
      fc.constantFrom('0x8f0633d80be1ea5b5df1909b64f2573622290576', `0x${'ab'.repeat(32)}`, '0x1234', '0x123'),
    );

    it('single values: same success, encodedValue and values', () => {
      const types = fc.constantFrom('int256', 'uint256', 'bool', 'string', 'bytes32', 'bytes', 'address', 'string32');
      fc.assert(
        fc.property(leafValue, types, times, (value, type, timesValue) => {
          const data = { wrapped: { value } };
          const params: Params = { _type: type, _path: 'wrapped.value', _times: timesValue };
          // Known difference: string32 of non-ASCII text (the reference may cut inside a UTF-8 sequence and fail).
          if (type === 'string32' && Buffer.byteLength(String(value)) !== String(value).length) return;
          const theirs = reference(data, params);
          let ours: ReturnType<typeof extractAndEncodeResponse> | undefined;
          try {
            ours = extractAndEncodeResponse(data, params);
          } catch {
            ours = undefined;
          }
          if (!theirs.ok) {
            expect(ours, `reference failed for ${JSON.stringify(params)} ${JSON.stringify(value)}`).to.equal(undefined);
            return;
          }
          expect(ours, `${JSON.stringify(params)} ${JSON.stringify(value)}`).to.not.equal(undefined);
          expect(ours!.encodedValue).to.equal(theirs.encodedValue);
          expect(ours!.values).to.deep.equal(theirs.values);
        }),
        { numRuns: 1500 },
      );
    });

    it('paths with escaped "." and "," over awkward keys: same results (several values)', () => {
      const key = fc
        .array(fc.constantFrom('a', 'b', '.', ',', '0', '1'), { minLength: 1, maxLength: 4 })
        .map((c) => c.join(''));
      const escapeSegment = (segment: string) => segment.replaceAll('.', '\\.').replaceAll(',', '\\,');
      fc.assert(
        fc.property(
          fc.array(key, { minLength: 1, maxLength: 3 }),
          fc.array(key, { minLength: 1, maxLength: 3 }),
          (p1, p2) => {
            const data: Record<string, unknown> = {};
            for (const [path, value] of [
              [p1, 7],
              [p2, 9],
            ] as const) {
              let node = data;
              path.forEach((segment, i) => {
                if (i === path.length - 1) {
                  if (!(segment in node)) node[segment] = value;
                } else {
                  if (typeof node[segment] !== 'object' || node[segment] === null) node[segment] = {};
                  node = node[segment] as Record<string, unknown>;
                }
              });
            }
            const params = {
              _type: 'int256,int256',
              _path: `${p1.map(escapeSegment).join('.')},${p2.map(escapeSegment).join('.')}`,
            };
            const theirs = reference(data, params);
            let ours: ReturnType<typeof extractAndEncodeResponse> | undefined;
            try {
              ours = extractAndEncodeResponse(data, params);
            } catch {
              ours = undefined;
            }
            if (!theirs.ok) {
              expect(ours).to.equal(undefined);
              return;
            }
            expect(ours?.values).to.deep.equal(theirs.values);
          },
        ),
        { numRuns: 500 },
      );
    });

    it('numeric arrays and several values: same results', () => {
      const numbers = fc.array(
        fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 })),
        {
          maxLength: 6,
        },
      );
      fc.assert(
        fc.property(numbers, numbers, times, times, (a, b, t1, t2) => {
          const data = { a, b, n: a[0] ?? 1 };
          const params: Params = {
            _type: 'int256[],uint256[],int256',
            _path: 'a,b,n',
            _times: [t1 ?? '', t2 ?? '', t1 ?? ''].join(','),
          };
          const theirs = reference(data, params);
          let ours: ReturnType<typeof extractAndEncodeResponse> | undefined;
          try {
            ours = extractAndEncodeResponse(data, params);
          } catch {
            ours = undefined;
          }
          if (!theirs.ok) {
            expect(ours).to.equal(undefined);
            return;
          }
          expect(ours!.encodedValue).to.equal(theirs.encodedValue);
          expect(ours!.values).to.deep.equal(theirs.values);
        }),
        { numRuns: 500 },
      );
    });
  });
});
