import { createRequire } from 'node:module';
import { expect } from 'chai';
import fc from 'fast-check';
import type { Config } from '../../../src/config/index.js';
import {
  validateHttpRequest,
  validateHttpSignedDataRequest,
  verifyRequestOrigin,
} from '../../../src/gateway/validation.js';
import { encodeParameters } from '../../../src/ois/abi.js';

// The reference's request validation (CommonJS, ethers 5) as a test oracle.
const require = createRequire(import.meta.url);
type RefValidation = { success: boolean; statusCode?: number; error?: { message: string } };
const reference = require('@api3/airnode-node/dist/src/workers/local-gateways/validation.js') as {
  verifyRequestOrigin(allowed: string[], origin: string | undefined): unknown;
  verifyHttpRequest(config: unknown, parameters: unknown, endpointId: string): RefValidation;
  verifyHttpSignedDataRequest(config: unknown, encodedParameters: string, endpointId: string): RefValidation;
};

const HTTP_ID = '0x13dea3311fe0d6b84f4daeab831befbc49e19e6494c41e9e065a09c3c68f43b6';
const SIGNED_ID = '0xfb87102cdabadf905321521ba0b3cbf74ad09c5d400ac2eccdbef8d6143e78c4';
const trigger = (endpointId: string) => ({ endpointId, oisTitle: 'T', endpointName: 'e' });
// Only the trigger lists are read by validation.
const config = {
  triggers: { rrp: [], http: [trigger(HTTP_ID)], httpSignedData: [trigger(SIGNED_ID)] },
} as unknown as Config;

function outcome(result: { success: boolean; statusCode?: number; error?: { message: string } }) {
  return result.success ? { success: true } : { success: false, statusCode: result.statusCode, error: result.error };
}

describe('gateway request validation', () => {
  describe('CORS (verifyRequestOrigin)', () => {
    it('allows "*" or the exact origin and echoes the matched entry', () => {
      expect(verifyRequestOrigin(['*'], undefined)).to.deep.equal({
        success: true,
        headers: {
          'Access-Control-Allow-Origin': '*',
          'Access-Control-Allow-Methods': 'OPTIONS,POST',
          'Access-Control-Allow-Headers': 'Content-Type',
        },
      });
      expect(verifyRequestOrigin(['https://a.example'], 'https://a.example')).to.deep.include({ success: true });
      expect(verifyRequestOrigin(['https://a.example'], 'https://A.example')).to.deep.equal({
        success: false,
        error: { message: 'CORS origin verification failed.' },
      });
      expect(verifyRequestOrigin([], 'https://a.example')).to.deep.include({ success: false });
    });

    it('agrees with the reference on generated origin lists', () => {
      const origin = fc.constantFrom('https://a.example', 'https://b.example', '*', '', 'null');
      fc.assert(
        fc.property(fc.array(origin, { maxLength: 4 }), fc.option(origin, { nil: undefined }), (allowed, requested) => {
          expect(verifyRequestOrigin(allowed, requested)).to.deep.equal(
            reference.verifyRequestOrigin(allowed, requested),
          );
        }),
        { numRuns: 300 },
      );
    });
  });

  describe('HTTP gateway body', () => {
    it('needs an object of parameters and a trigger of the HTTP list', () => {
      expect(validateHttpRequest(config, { parameters: { a: 1 } }, HTTP_ID)).to.deep.include({ success: true });
      expect(validateHttpRequest(config, { parameters: {} }, SIGNED_ID)).to.deep.equal({
        success: false,
        statusCode: 400,
        error: { message: `Unable to find endpoint with ID:'${SIGNED_ID}'` },
      });
      for (const body of [undefined, null, {}, [], { parameters: [] }, { parameters: 'x' }, { parameters: null }]) {
        expect(validateHttpRequest(config, body, HTTP_ID), JSON.stringify(body)).to.deep.equal({
          success: false,
          statusCode: 400,
          error: { message: 'Invalid request body' },
        });
      }
    });

    it('agrees with the reference on generated parameters', () => {
      fc.assert(
        fc.property(fc.jsonValue({ maxDepth: 2 }), fc.constantFrom(HTTP_ID, SIGNED_ID, 'x'), (parameters, id) => {
          const ours = validateHttpRequest(config, { parameters }, id);
          expect(outcome(ours)).to.deep.equal(outcome(reference.verifyHttpRequest(config, parameters, id)));
        }),
        { numRuns: 300 },
      );
    });
  });

  describe('signed-data gateway body', () => {
    it('decodes the parameters and checks the signed-data trigger list', () => {
      const encoded = encodeParameters([{ type: 'string', name: 'coin', value: 'eth' }]);
      const valid = validateHttpSignedDataRequest(config, { encodedParameters: encoded }, SIGNED_ID);
      expect(valid).to.deep.include({ success: true, encodedParameters: encoded, parameters: { coin: 'eth' } });
      expect(validateHttpSignedDataRequest(config, { encodedParameters: '0x' }, HTTP_ID)).to.deep.include({
        success: false,
        error: { message: `Unable to find endpoint with ID:'${HTTP_ID}'` },
      });
      // A bad encoding wins over an unknown endpoint, as in the reference.
      expect(validateHttpSignedDataRequest(config, { encodedParameters: '0xzz' }, HTTP_ID)).to.deep.include({
        success: false,
        error: { message: 'Request contains invalid encodedParameters: 0xzz' },
      });
      expect(validateHttpSignedDataRequest(config, { encodedParameters: 1 }, SIGNED_ID)).to.deep.include({
        error: { message: 'Invalid request body' },
      });
    });

    it('agrees with the reference on generated encodings', () => {
      const parameter = fc.record({
        type: fc.constantFrom('string', 'uint256', 'int256', 'bool', 'bytes32', 'address', 'bytes', 'string32'),
        name: fc.string({ minLength: 1, maxLength: 10, unit: fc.constantFrom(...'abcXYZ_1') }),
      });
      const valueFor = (type: string) =>
        ({
          string: 'eth',
          uint256: '42',
          int256: '-7',
          bool: true,
          bytes32: `0x${'ab'.repeat(32)}`,
          address: '0x709944a48caf83535e43471680fda4905fb3181a',
          bytes: '0x1234',
          string32: 'short',
        })[type];
      const encodedArb = fc.oneof(
        fc
          .array(parameter, { maxLength: 4 })
          .map((list) =>
            encodeParameters(list.map((p) => ({ type: p.type as 'string', name: p.name, value: valueFor(p.type) }))),
          ),
        fc.array(parameter, { minLength: 1, maxLength: 3 }).map((list) => {
          const encoded = encodeParameters(
            list.map((p) => ({ type: p.type as 'string', name: p.name, value: valueFor(p.type) })),
          );
          return `${encoded}00`; // trailing bytes: the re-encoding check must reject them
        }),
        fc.string({ maxLength: 80, unit: fc.constantFrom(...'0123456789abcdefABx') }).map((s) => `0x${s}`),
        fc.constantFrom('0x', '', 'eth', `0x${'00'.repeat(32)}`, `0x31${'00'.repeat(31)}`),
      );
      fc.assert(
        fc.property(encodedArb, fc.constantFrom(SIGNED_ID, HTTP_ID), (encodedParameters, id) => {
          const ours = validateHttpSignedDataRequest(config, { encodedParameters }, id);
          const theirs = reference.verifyHttpSignedDataRequest(config, encodedParameters, id);
          expect(outcome(ours), encodedParameters).to.deep.equal(outcome(theirs));
        }),
        { numRuns: 400 },
      );
    });
  });
});
