import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { expect } from 'chai';
import { getBytes, hashMessage, keccak256, solidityPackedKeccak256, Wallet } from 'ethers';
import fc from 'fast-check';
import { deriveTemplateIdV1, deriveTemplateIdV1WithSolidityPacked } from '../../../src/protocol/ids.js';
import { fastMessageSigner, hashMessageBytes } from '../../../src/protocol/message-signer.js';
import { nodeWallet } from '../../../src/protocol/wallet.js';

const vectors = JSON.parse(
  readFileSync(new URL('../../fixtures/airnode/vectors/derivation-vectors.json', import.meta.url), 'utf8'),
);
const hex = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString('hex')}`;

/** A valid secp256k1 private key (1 <= k < n) as ethers writes it. */
const privateKey = fc
  .uint8Array({ minLength: 32, maxLength: 32 })
  .map(hex)
  .filter((key) => {
    const value = BigInt(key);
    return value > 0n && value < 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
  });

describe('fastMessageSigner (libsecp256k1) against ethers signMessageSync', () => {
  it('signs the reference fulfilment vector byte for byte', () => {
    const v = vectors.fulfillSignature;
    const signer = fastMessageSigner(nodeWallet(v.signerMnemonic));
    expect(signer.signMessageSync(getBytes(v.hash_keccak256_packed_requestId_data))).to.equal(
      v.signature_eip191_over_32_byte_hash,
    );
    expect(signer.address).to.equal(v.recovers_to);
  });

  it('gives the wallet’s signature for any key and any byte or text message (RFC 6979, low s, v 27/28)', () => {
    const message = fc.oneof(
      fc.uint8Array({ minLength: 32, maxLength: 32 }),
      fc.uint8Array({ maxLength: 200 }),
      fc.string({ maxLength: 40 }),
      fc.string({ unit: 'grapheme', maxLength: 20 }),
      // Any UTF-16 units, lone surrogates included (ethers writes a lone low one as three bytes).
      fc.string({ unit: 'binary', maxLength: 20 }),
      fc.constantFrom('a\uDC00b', '\uDFFF', 'x\uD800', '\uD83D'),
    );
    fc.assert(
      fc.property(privateKey, message, (key, text) => {
        const wallet = new Wallet(key);
        const signer = fastMessageSigner(wallet);
        let expected: string;
        try {
          expected = wallet.signMessageSync(text);
        } catch {
          // A lone high surrogate: ethers refuses the text, and so does the signer.
          expect(() => signer.signMessageSync(text)).to.throw('invalid surrogate pair');
          return;
        }
        expect(signer.signMessageSync(text)).to.equal(expected);
        expect(signer.address).to.equal(wallet.address);
      }),
      { numRuns: 300 },
    );
  });

  it('gives the node wallet’s signature on 300 signed-data sized digests (both recovery ids)', () => {
    const wallet = nodeWallet('test test test test test test test test test test test junk');
    const signer = fastMessageSigner(wallet);
    const vs = new Set<string>();
    for (let i = 0; i < 300; i++) {
      const digest = getBytes(keccak256(Buffer.from(`digest ${i}`)));
      const signature = signer.signMessageSync(digest);
      expect(signature).to.equal(wallet.signMessageSync(digest));
      vs.add(signature.slice(-2));
    }
    expect([...vs].sort()).to.deep.equal(['1b', '1c']);
  });

  it('hashes byte messages as ethers’ hashMessage (EIP-191 prefix and decimal length)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        expect(hex(hashMessageBytes(bytes))).to.equal(hashMessage(bytes));
      }),
      { numRuns: 200 },
    );
  });

  it('keeps the key out of the signer object and refuses a malformed key', () => {
    const wallet = new Wallet(`0x${'42'.repeat(32)}`);
    const signer = fastMessageSigner(wallet);
    expect(JSON.stringify(signer)).not.to.include('4242');
    expect(Object.keys(signer).sort()).to.deep.equal(['address', 'signMessageSync']);
    expect(() => fastMessageSigner({ address: wallet.address, privateKey: `0x${'4z'.repeat(32)}` })).to.throw(
      /not 32 bytes/,
    );
    expect(() => fastMessageSigner({ address: wallet.address, privateKey: '0x42' })).to.throw(/not 32 bytes/);
  });
});

describe('deriveTemplateIdV1 (direct packing) against ethers solidityPacked', () => {
  const require = createRequire(import.meta.url);
  // The reference derives with ethers 5 (@ethersproject/solidity).
  const ethers5 = require('@ethersproject/solidity') as {
    keccak256(types: string[], values: string[]): string;
  };

  it('is byte-identical for any bytes32 endpoint id and any parameters, in either hex case', () => {
    const hexBytes = (min: number, max: number) =>
      fc
        .tuple(fc.uint8Array({ minLength: min, maxLength: max }), fc.boolean())
        .map(
          ([bytes, upper]) =>
            `0x${upper ? Buffer.from(bytes).toString('hex').toUpperCase() : Buffer.from(bytes).toString('hex')}`,
        );
    fc.assert(
      fc.property(hexBytes(32, 32), hexBytes(0, 400), (endpointId, parameters) => {
        const ours = deriveTemplateIdV1(endpointId, parameters);
        expect(ours).to.equal(solidityPackedKeccak256(['bytes32', 'bytes'], [endpointId, parameters]));
        expect(ours).to.equal(ethers5.keccak256(['bytes32', 'bytes'], [endpointId, parameters]));
        expect(ours).to.equal(deriveTemplateIdV1WithSolidityPacked(endpointId, parameters));
      }),
      { numRuns: 500 },
    );
  });

  it('refuses what ethers refuses (short or long ids, odd or non-hex parameters, no 0x)', () => {
    const id = `0x${'ab'.repeat(32)}`;
    for (const [endpointId, parameters] of [
      [`0x${'ab'.repeat(31)}`, '0x'],
      [`${id}00`, '0x'],
      [id, '0x1'],
      [id, '0xzz'],
      [id, '1234'],
      [id, ''],
      [id.slice(2), '0x'],
    ] as const) {
      expect(() => deriveTemplateIdV1WithSolidityPacked(endpointId, parameters)).to.throw();
      expect(() => deriveTemplateIdV1(endpointId, parameters)).to.throw();
    }
  });
});
