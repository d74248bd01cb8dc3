// The signed-data digest of the gateway and the feed against ethers' solidityPackedKeccak256 (the reference's
// packing), and the forms it leaves to the caller.
import { expect } from 'chai';
import { hexlify, solidityPackedKeccak256 } from 'ethers';
import fc from 'fast-check';
import { plainSignedDataDigest } from '../../../src/protocol/signed-data.js';

const hex = (bytes: Uint8Array | undefined) => (bytes ? hexlify(bytes) : undefined);
const packed = (templateId: string, timestamp: string | number | bigint, value: string) =>
  solidityPackedKeccak256(['bytes32', 'uint256', 'bytes'], [templateId, timestamp, value]);

describe('plainSignedDataDigest', () => {
  const bytes32 = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => hexlify(b));

  it('is keccak256(abi.encodePacked(bytes32, uint256, bytes)) for every plain form of the values', () => {
    const timestamp = fc.oneof(
      fc.bigInt({ min: 0n, max: (1n << 256n) - 1n }),
      fc.bigInt({ min: 0n, max: (1n << 256n) - 1n }).map(String),
      fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
    );
    const value = fc.uint8Array({ maxLength: 200 }).map((b) => hexlify(b));
    fc.assert(
      fc.property(bytes32, timestamp, value, fc.boolean(), (templateId, time, encoded, upper) => {
        const id = upper ? `0x${templateId.slice(2).toUpperCase()}` : templateId;
        expect(hex(plainSignedDataDigest(id, time, encoded))).to.equal(packed(id, time, encoded));
      }),
      { numRuns: 300, seed: 45 },
    );
  });

  it('takes an empty value as 0x', () => {
    const templateId = `0x${'ab'.repeat(32)}`;
    expect(hex(plainSignedDataDigest(templateId, '1700000000', ''))).to.equal(packed(templateId, 1700000000, '0x'));
  });

  it('leaves every other form to the caller: hex, negative or too large timestamps, malformed ids and values', () => {
    const templateId = `0x${'ab'.repeat(32)}`;
    const others: [string, string | number | bigint, string][] = [
      [templateId, '0x10', '0x'],
      [templateId, -1, '0x'],
      [templateId, -1n, '0x'],
      [templateId, 1.5, '0x'],
      [templateId, (1n << 256n).toString(), '0x'],
      [templateId, 1n << 256n, '0x'],
      [templateId, '', '0x'],
      [templateId, 1, '0x1'],
      [templateId, 1, '0xzz'],
      [templateId, 1, '00'],
      [`0x${'ab'.repeat(31)}`, 1, '0x'],
      [`${'ab'.repeat(32)}`, 1, '0x'],
    ];
    for (const [id, time, value] of others)
      expect(plainSignedDataDigest(id, time, value), `${id} ${time} ${value}`).to.equal(undefined);
  });
});
