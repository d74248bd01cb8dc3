import { createRequire } from 'node:module';
import { expect } from 'chai';
import {
  AbiCoder,
  getAddress,
  getBytes,
  type HDNodeWallet,
  keccak256,
  solidityPacked,
  solidityPackedKeccak256,
  verifyMessage,
  Wallet,
} from 'ethers';
import fc from 'fast-check';
import {
  allBeaconsConsistent,
  bigNumberFrom,
  calculateMedian,
  calculateUpdateTimestamp,
  deriveBeaconId,
  deriveBeaconSetId,
  memoisedTemplateIdV1,
  type SignOevDataBody,
  signedDataHash,
  signHttpSignedData,
  signOevData,
  signOevDataBodySchema,
  signWithTemplateId,
  verifySignOevDataRequest,
} from '../../../src/gateway/signing.js';
import { deriveTemplateIdV1 } from '../../../src/protocol/ids.js';
import { fastMessageSigner } from '../../../src/protocol/message-signer.js';
import { nodeWallet } from '../../../src/protocol/wallet.js';

const abi = AbiCoder.defaultAbiCoder();
const MNEMONIC = 'test test test test test test test test test test test junk';
const node = nodeWallet(MNEMONIC);
const other = new Wallet(`0x${'22'.repeat(32)}`);
const third = new Wallet(`0x${'33'.repeat(32)}`);
const ENDPOINT_ID = '0x13dea3311fe0d6b84f4daeab831befbc49e19e6494c41e9e065a09c3c68f43b6';

// The reference implementation (CommonJS, ethers 5) as a test oracle. It reads the node key from the env.
process.env.AIRNODE_WALLET_PRIVATE_KEY = node.privateKey;
const require = createRequire(import.meta.url);
type RefResult =
  | { success: true; oevUpdateHash: string; beacons: { airnodeAddress: string; templateId: string }[] }
  | { success: false; statusCode: number; error: { message: string } };
const reference = require('@api3/airnode-node/dist/src/workers/local-gateways/validation.js') as {
  verifySignOevDataRequest(body: unknown): RefResult;
  signOevDataBodySchema: { safeParse(body: unknown): { success: boolean } };
};
const referenceSignOev = require('@api3/airnode-node/dist/src/handlers/sign-oev-data.js') as {
  signOevData(beacons: unknown, hash: string): Promise<[Error | null, { data: string[] } | null]>;
};
const referenceApi = require('@api3/airnode-node/dist/src/api/index.js') as {
  signWithTemplateId(templateId: string, timestamp: string, data: string): Promise<string>;
};
// The reference logs rejected requests with console.log; keep the test output readable.
function quietly<T>(fn: () => T): T {
  const log = console.log;
  console.log = () => {};
  try {
    return fn();
  } finally {
    console.log = log;
  }
}

function encodeValue(value: bigint): string {
  return abi.encode(['int256'], [value]);
}

function signBeacon(wallet: Wallet | HDNodeWallet, templateId: string, timestamp: string, encodedValue: string) {
  const hash = solidityPackedKeccak256(['bytes32', 'uint256', 'bytes'], [templateId, timestamp, encodedValue]);
  return { timestamp, encodedValue, signature: wallet.signMessageSync(getBytes(hash)) };
}

const now = () => Math.floor(Date.now() / 1000);
const templateA = keccak256('0x01');
const templateB = keccak256('0x02');
const templateC = keccak256('0x03');

function body(beacons: SignOevDataBody['beacons']): SignOevDataBody {
  return {
    chainId: 31337,
    api3ServerV1: getAddress('0x709944a48caf83535e43471680fda4905fb3181a'),
    oevProxyAddress: getAddress('0x3a5ac5afd1f3bb6fc6e8c4b8bf0e5be1dea4caf1'),
    updateId: keccak256('0x1234'),
    bidderAddress: getAddress('0x8f86403a4de0bb5791fa46b8e795c547942fe4cf'),
    bidAmount: '1000000000000000000',
    beacons,
  };
}

function threeBeacons(values: [bigint, bigint, bigint], ts = String(now() - 10)) {
  return body([
    {
      airnodeAddress: node.address,
      templateId: templateA,
      signedData: signBeacon(node, templateA, ts, encodeValue(values[0])),
    },
    {
      airnodeAddress: other.address,
      templateId: templateB,
      signedData: signBeacon(other, templateB, ts, encodeValue(values[1])),
    },
    {
      airnodeAddress: third.address,
      templateId: templateC,
      signedData: signBeacon(third, templateC, ts, encodeValue(values[2])),
    },
  ]);
}

describe('gateway signing', () => {
  describe('signed data', () => {
    it('hashes templateId ‖ uint256 timestamp ‖ bytes value and signs with EIP-191 by the node key', () => {
      const encodedParameters = '0x3173000000000000000000000000000000000000000000000000000000000000';
      const encodedValue = encodeValue(123456n);
      const signed = signHttpSignedData({
        signer: node,
        endpointId: ENDPOINT_ID,
        encodedParameters,
        encodedValue,
        nowMs: 1_700_000_000_999,
      });
      // Independent computation with ethers primitives.
      const templateId = keccak256(solidityPacked(['bytes32', 'bytes'], [ENDPOINT_ID, encodedParameters]));
      expect(signed.templateId).to.equal(templateId).and.equal(deriveTemplateIdV1(ENDPOINT_ID, encodedParameters));
      expect(signed.timestamp).to.equal('1700000000');
      expect(signed.encodedValue).to.equal(encodedValue);
      const hash = keccak256(solidityPacked(['bytes32', 'uint256', 'bytes'], [templateId, 1700000000n, encodedValue]));
      expect(signedDataHash(templateId, '1700000000', encodedValue)).to.equal(hash);
      expect(verifyMessage(getBytes(hash), signed.signature)).to.equal(node.address);
      expect(node.address).to.equal('0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266');
    });

    it('uses the post-processing timestamp when there is one', () => {
      const signed = signHttpSignedData({
        signer: node,
        endpointId: ENDPOINT_ID,
        encodedParameters: '0x',
        encodedValue: '0x01',
        timestamp: 42,
      });
      expect(signed.timestamp).to.equal('42');
    });

    it('matches the reference signWithTemplateId byte for byte', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.uint8Array({ minLength: 32, maxLength: 32 }),
          fc.bigInt({ min: 0n, max: 2n ** 40n }),
          fc.uint8Array({ maxLength: 100 }),
          async (templateBytes, timestamp, valueBytes) => {
            const templateId = `0x${Buffer.from(templateBytes).toString('hex')}`;
            const encodedValue = `0x${Buffer.from(valueBytes).toString('hex')}`;
            const ours = node.signMessageSync(getBytes(signedDataHash(templateId, timestamp, encodedValue)));
            const theirs = await referenceApi.signWithTemplateId(templateId, timestamp.toString(), encodedValue);
            expect(ours).to.equal(theirs);
          },
        ),
        { numRuns: 30 },
      );
    });
  });

  describe('signed-data hashing (direct packing) against ethers solidityPacked', () => {
    const ethersHash = (templateId: string, timestamp: unknown, encodedValue: string) =>
      solidityPackedKeccak256(['bytes32', 'uint256', 'bytes'], [templateId, timestamp, encodedValue || '0x']);
    const hexOf = (bytes: Uint8Array, upper: boolean) => {
      const text = Buffer.from(bytes).toString('hex');
      return `0x${upper ? text.toUpperCase() : text}`;
    };
    const MAX_UINT256 = 2n ** 256n - 1n;

    it('is byte-identical for every form of timestamp ethers takes (decimal, number, bigint, up to 2^256 - 1)', () => {
      const timestamp = fc.oneof(
        fc.bigInt({ min: 0n, max: MAX_UINT256 }),
        fc.bigInt({ min: 0n, max: MAX_UINT256 }).map(String),
        fc.bigInt({ min: 0n, max: 2n ** 40n }).map((n) => `000${n}`),
        fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
        fc.bigInt({ min: 0n, max: MAX_UINT256 }).map((n) => `0x${n.toString(16)}`),
        fc.constantFrom('0', '1700000000', ' 12', '0b101', '0o17', 0, MAX_UINT256),
      );
      fc.assert(
        fc.property(
          fc.uint8Array({ minLength: 32, maxLength: 32 }),
          timestamp,
          fc.uint8Array({ maxLength: 100 }),
          fc.boolean(),
          (templateBytes, time, valueBytes, upper) => {
            const templateId = hexOf(templateBytes, upper);
            const encodedValue = hexOf(valueBytes, !upper);
            const expected = ethersHash(templateId, time, encodedValue);
            expect(signedDataHash(templateId, time, encodedValue)).to.equal(expected);
            expect(signWithTemplateId(node, templateId, time, encodedValue)).to.equal(
              node.signMessageSync(getBytes(expected)),
            );
          },
        ),
        { numRuns: 400 },
      );
    });

    it('takes an empty value as 0x and refuses what ethers refuses', () => {
      const templateId = keccak256('0x01');
      expect(signedDataHash(templateId, 1, '')).to.equal(ethersHash(templateId, 1, '0x'));
      const refused: [string, string | number | bigint, string][] = [
        [templateId, -1, '0x'],
        [templateId, '-1', '0x'],
        [templateId, 2n ** 256n, '0x'],
        [templateId, (2n ** 256n).toString(), '0x'],
        [templateId, 1.5, '0x'],
        [templateId, 'abc', '0x'],
        [templateId, 1, '0x1'],
        [templateId, 1, 'zz'],
        [templateId.slice(0, 64), 1, '0x'],
      ];
      for (const [id, time, value] of refused) {
        expect(() => ethersHash(id, time, value), `${id} ${time} ${value}`).to.throw();
        expect(() => signedDataHash(id, time, value), `${id} ${time} ${value}`).to.throw();
      }
    });
  });

  describe('remembered template ids', () => {
    it('answers deriveTemplateIdV1 for new and repeated pairs, long parameters included', () => {
      for (const parameters of ['0x', '0x1234', `0x${'ab'.repeat(2000)}`]) {
        const expected = deriveTemplateIdV1(ENDPOINT_ID, parameters);
        expect(memoisedTemplateIdV1(ENDPOINT_ID, parameters)).to.equal(expected);
        expect(memoisedTemplateIdV1(ENDPOINT_ID, parameters)).to.equal(expected);
      }
    });

    it('never answers a remembered id for an endpoint id that is not bytes32 (the joined key would collide)', () => {
      const parameters = '0x1234';
      memoisedTemplateIdV1(ENDPOINT_ID, parameters);
      // endpointId + parameters here is the same text as the remembered pair's key.
      expect(() => memoisedTemplateIdV1(`${ENDPOINT_ID}0x`, '1234')).to.throw();
      expect(() => memoisedTemplateIdV1(ENDPOINT_ID.slice(0, 60), ENDPOINT_ID.slice(60) + parameters)).to.throw();
    });

    it('signs signed data with the libsecp256k1 signer exactly as with the wallet', () => {
      const input = {
        endpointId: ENDPOINT_ID,
        encodedParameters: '0x3173000000000000000000000000000000000000000000000000000000000000',
        encodedValue: encodeValue(987654321n),
        nowMs: 1_700_000_123_000,
      };
      const fast = signHttpSignedData({ ...input, signer: fastMessageSigner(node) });
      expect(fast).to.deep.equal(signHttpSignedData({ ...input, signer: node }));
    });
  });

  describe('OEV helpers', () => {
    it('derives beacon and beacon set ids as keccak(encodePacked) and keccak(abi.encode(bytes32[]))', () => {
      const beaconId = deriveBeaconId(node.address, templateA);
      expect(beaconId).to.equal(solidityPackedKeccak256(['address', 'bytes32'], [node.address, templateA]));
      const ids = [beaconId, deriveBeaconId(other.address, templateB)];
      expect(deriveBeaconSetId(ids)).to.equal(keccak256(abi.encode(['bytes32[]'], [ids])));
    });

    it('takes the median with integer division for an even count', () => {
      expect(calculateMedian([3n, 1n, 2n])).to.equal(2n);
      expect(calculateMedian([1n, 2n])).to.equal(1n);
      expect(calculateMedian([4n, 1n, 2n, 3n])).to.equal(2n);
      expect(calculateMedian([-3n, -2n])).to.equal(-2n); // -5/2 truncates toward zero
    });

    it('averages timestamps with parseInt and floor', () => {
      expect(calculateUpdateTimestamp(['10', '11'])).to.equal(10);
      expect(calculateUpdateTimestamp(['1e3'])).to.equal(1);
    });

    it('checks 1 % consistency against the truncated mean', () => {
      expect(allBeaconsConsistent([100n, 100n, 101n])).to.equal(true);
      expect(allBeaconsConsistent([1000n, 1000n, 1025n])).to.equal(false);
      expect(allBeaconsConsistent([-100n, -100n])).to.equal(false); // reference quirk: negative mean never passes
    });

    it('reads numbers as ethers 5 BigNumber.from does', () => {
      expect(bigNumberFrom('0x10')).to.equal(16n);
      expect(bigNumberFrom('-0x10')).to.equal(-16n);
      expect(bigNumberFrom(12)).to.equal(12n);
      expect(() => bigNumberFrom('1.5')).to.throw();
      expect(() => bigNumberFrom(1.5)).to.throw();
      expect(() => bigNumberFrom(2 ** 60)).to.throw();
    });
  });

  describe('verifySignOevDataRequest and signOevData', () => {
    it('signs a valid request: update hash as the facts define it, one signature per own beacon', () => {
      const request = threeBeacons([1000n, 1004n, 1002n]);
      const result = verifySignOevDataRequest(request, node.address);
      if (!result.success) throw new Error(result.error.message);
      const beaconIds = request.beacons.map((b) =>
        solidityPackedKeccak256(['address', 'bytes32'], [b.airnodeAddress, b.templateId]),
      );
      const dataFeedId = keccak256(abi.encode(['bytes32[]'], [beaconIds]));
      const timestamp = Number(request.beacons[0]!.signedData!.timestamp);
      const expected = solidityPackedKeccak256(
        ['uint256', 'address', 'address', 'bytes32', 'bytes32', 'uint256', 'bytes', 'address', 'uint256'],
        [
          request.chainId,
          request.api3ServerV1,
          request.oevProxyAddress,
          dataFeedId,
          request.updateId,
          timestamp,
          encodeValue(1002n),
          request.bidderAddress,
          request.bidAmount,
        ],
      );
      expect(result.oevUpdateHash).to.equal(expected);
      const signatures = signOevData(node, result.beacons, result.oevUpdateHash);
      expect(signatures).to.have.length(1);
      const message = getBytes(solidityPackedKeccak256(['bytes32', 'bytes32'], [expected, templateA]));
      expect(verifyMessage(message, signatures[0]!)).to.equal(node.address);
    });

    it('uses the single beacon id as data feed id for one beacon', () => {
      const ts = String(now());
      const request = body([
        {
          airnodeAddress: node.address,
          templateId: templateA,
          signedData: signBeacon(node, templateA, ts, encodeValue(5n)),
        },
      ]);
      const result = verifySignOevDataRequest(request, node.address);
      if (!result.success) throw new Error(result.error.message);
      const expected = solidityPackedKeccak256(
        ['uint256', 'address', 'address', 'bytes32', 'bytes32', 'uint256', 'bytes', 'address', 'uint256'],
        [
          31337,
          request.api3ServerV1,
          request.oevProxyAddress,
          deriveBeaconId(node.address, templateA),
          request.updateId,
          ts,
          encodeValue(5n),
          request.bidderAddress,
          request.bidAmount,
        ],
      );
      expect(result.oevUpdateHash).to.equal(expected);
    });

    it('signs every own beacon with data, in request order', () => {
      const ts = String(now());
      const request = body([
        {
          airnodeAddress: node.address,
          templateId: templateB,
          signedData: signBeacon(node, templateB, ts, encodeValue(10n)),
        },
        { airnodeAddress: other.address, templateId: templateC },
        {
          airnodeAddress: node.address,
          templateId: templateA,
          signedData: signBeacon(node, templateA, ts, encodeValue(10n)),
        },
      ]);
      const result = verifySignOevDataRequest(request, node.address);
      if (!result.success) throw new Error(result.error.message);
      const signatures = signOevData(node, result.beacons, result.oevUpdateHash);
      const recovered = [templateB, templateA].map((templateId, i) =>
        verifyMessage(
          getBytes(solidityPackedKeccak256(['bytes32', 'bytes32'], [result.oevUpdateHash, templateId])),
          signatures[i]!,
        ),
      );
      expect(recovered).to.deep.equal([node.address, node.address]);
    });

    const failures: [string, () => SignOevDataBody, string][] = [
      [
        'an invalid beacon address',
        () => body([{ airnodeAddress: '0xzz', templateId: templateA }]),
        'Some of the beacons are invalid',
      ],
      [
        'a short templateId',
        () => body([{ airnodeAddress: node.address, templateId: '0x1234' }]),
        'Some of the beacons are invalid',
      ],
      [
        'no majority with data',
        () => {
          const request = threeBeacons([1n, 1n, 1n]);
          delete request.beacons[1]!.signedData;
          delete request.beacons[2]!.signedData;
          return request;
        },
        'Not enough beacons with data to proceed',
      ],
      [
        'no beacon of this node',
        () => {
          const request = threeBeacons([1n, 1n, 1n]);
          request.beacons[0]!.airnodeAddress = '0x0000000000000000000000000000000000000001';
          delete request.beacons[0]!.signedData;
          return request;
        },
        'Missing beacon data from the Airnode requested for signing',
      ],
      [
        'a stale timestamp',
        () => threeBeacons([1n, 1n, 1n], String(now() - 121)),
        'Not enough beacons with valid data to proceed',
      ],
      [
        'a signature from someone else',
        () => {
          const request = threeBeacons([1n, 1n, 1n]);
          request.beacons[1]!.signedData = signBeacon(third, templateB, String(now()), encodeValue(1n));
          return request;
        },
        'Not enough beacons with valid data to proceed',
      ],
      [
        'a lower-case beacon address (exact comparison, as the reference)',
        () => {
          const request = threeBeacons([1n, 1n, 1n]);
          request.beacons[1]!.airnodeAddress = other.address.toLowerCase();
          return request;
        },
        'Not enough beacons with valid data to proceed',
      ],
      [
        'a value above int224',
        () => threeBeacons([2n ** 223n, 2n ** 223n, 2n ** 223n]),
        'Not enough beacons with valid data to proceed',
      ],
      ['values more than 1 % apart', () => threeBeacons([1000n, 1000n, 1100n]), 'Inconsistent beacon data'],
      [
        'an update id that is not bytes32',
        () => ({ ...threeBeacons([1n, 1n, 1n]), updateId: '0x12' }),
        'Error deriving OEV update hash',
      ],
      [
        'a fractional chain id',
        () => ({ ...threeBeacons([1n, 1n, 1n]), chainId: 1.5 }),
        'Error deriving OEV update hash',
      ],
    ];
    for (const [name, make, message] of failures) {
      it(`rejects ${name}: 400 "${message}", as the reference does`, () => {
        const request = make();
        const result = verifySignOevDataRequest(request, node.address);
        expect(result).to.deep.include({ success: false, statusCode: 400, error: { message } });
        const theirs = quietly(() => reference.verifySignOevDataRequest(request));
        expect(theirs).to.deep.include({ success: false, statusCode: 400, error: { message } });
      });
    }

    it('agrees with the reference on generated requests (differential)', async () => {
      const wallets = [node, other, third];
      // Mostly well-formed values with a few hostile ones, so that every branch is reached.
      const mostly = <T>(usual: T[], rare: T[]) =>
        fc.constantFrom(...usual, ...usual, ...usual, ...usual, ...usual, ...rare);
      const beaconArb = fc.record({
        who: mostly([0, 1, 2], [3]),
        template: mostly([templateA, templateB, templateC], ['0x12', `0X${'ab'.repeat(32)}`]),
        hasData: mostly([true], [false]),
        signer: fc.integer({ min: 0, max: 2 }),
        ownSigner: mostly([true], [false]),
        age: fc.oneof(
          fc.integer({ min: -30, max: 100 }),
          fc.integer({ min: -30, max: 100 }),
          fc.integer({ min: 130, max: 400 }),
        ),
        timestampStyle: mostly(['decimal'], ['hex', 'negativeHex', 'garbage']),
        value: fc.oneof(
          { arbitrary: fc.bigInt({ min: 995n, max: 1005n }), weight: 8 },
          { arbitrary: fc.bigInt({ min: -(2n ** 224n), max: 2n ** 224n }), weight: 1 },
          { arbitrary: fc.constant(-1000n), weight: 1 },
        ),
        valueStyle: mostly(['word'], ['long', 'short']),
        v: mostly(['keep'], ['zero', 'twentyNine', 'compact']),
      });
      const bodyArb = fc.record({
        beacons: fc.array(beaconArb, { minLength: 0, maxLength: 5 }),
        chainId: mostly([1, 31337], [1.5, 2 ** 60]),
        address: mostly(
          ['0x709944a48cAf83535e43471680fDA4905FB3181a'],
          ['0x1234', '0xabc', '0x709944a48caf83535e43471680fda4905fb3181A'],
        ),
        updateId: mostly([keccak256('0x01')], ['0x01']),
        bidAmount: mostly(['1', '1000000000000000000'], ['0x10', '-1', '1.5', '']),
      });
      const outcomes = new Map<string, number>();
      await fc.assert(
        fc.asyncProperty(bodyArb, async (spec) => {
          const nowSeconds = now();
          const beacons = spec.beacons.map((b): SignOevDataBody['beacons'][number] => {
            const airnodeAddress = b.who === 3 ? '0x00000000000000000000000000000000000000aa' : wallets[b.who]!.address;
            if (!b.hasData) return { airnodeAddress, templateId: b.template };
            const ts = nowSeconds - b.age;
            const timestamp = {
              decimal: String(ts),
              hex: `0x${ts.toString(16)}`,
              negativeHex: '-0x10',
              garbage: 'soon',
            }[b.timestampStyle] as string;
            let encodedValue = abi.encode(['int256'], [BigInt.asIntN(256, b.value)]);
            if (b.valueStyle === 'long') encodedValue += 'ff'.repeat(32);
            if (b.valueStyle === 'short') encodedValue = encodedValue.slice(0, 40);
            const template = /^0x[0-9a-f]{64}$/.test(b.template) ? b.template : templateA;
            let signature: string;
            try {
              signature = signBeacon(
                b.ownSigner ? wallets[b.who % 3]! : wallets[b.signer]!,
                template,
                timestamp,
                encodedValue,
              ).signature;
            } catch {
              signature = `0x${'00'.repeat(65)}`;
            }
            const bytes = getBytes(signature);
            if (b.v === 'zero') bytes[64] = bytes[64]! - 27;
            if (b.v === 'twentyNine') bytes[64] = bytes[64]! + 2;
            signature = `0x${Buffer.from(bytes).toString('hex')}`;
            if (b.v === 'compact') signature = signature.slice(0, 130);
            return { airnodeAddress, templateId: b.template, signedData: { timestamp, encodedValue, signature } };
          });
          const request: SignOevDataBody = {
            chainId: spec.chainId,
            api3ServerV1: spec.address,
            oevProxyAddress: spec.address,
            updateId: spec.updateId,
            bidderAddress: spec.address,
            bidAmount: spec.bidAmount,
            beacons,
          };
          expect(signOevDataBodySchema.safeParse(request).success).to.equal(
            reference.signOevDataBodySchema.safeParse(request).success,
          );
          const ours = verifySignOevDataRequest(request, node.address, Date.now());
          const theirs = quietly(() => reference.verifySignOevDataRequest(request));
          const outcome = theirs.success ? 'signed' : theirs.error.message;
          outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
          if (theirs.success) {
            expect(ours, JSON.stringify(request)).to.deep.include({
              success: true,
              oevUpdateHash: theirs.oevUpdateHash,
            });
            if (!ours.success) return;
            const [error, signed] = await referenceSignOev.signOevData(theirs.beacons, theirs.oevUpdateHash);
            expect(error).to.equal(null);
            expect(signOevData(node, ours.beacons, ours.oevUpdateHash)).to.deep.equal(signed!.data);
          } else {
            expect(ours, JSON.stringify(request)).to.deep.include({
              success: false,
              statusCode: theirs.statusCode,
              error: theirs.error,
            });
          }
        }),
        // A fixed default seed: the checks below assert on the mix of outcomes the generator produced (enough
        // signed requests, enough distinct errors), which a random seed makes flaky. FC_SEED explores others.
        { numRuns: 600, seed: Number(process.env['FC_SEED'] ?? 20261121) },
      );
      // The generator must reach the signing path and most of the rejections, or the comparison proves little.
      expect(outcomes.get('signed') ?? 0, JSON.stringify([...outcomes])).to.be.greaterThan(4);
      expect(outcomes.size, JSON.stringify([...outcomes])).to.be.greaterThan(5);
    });
  });
});
