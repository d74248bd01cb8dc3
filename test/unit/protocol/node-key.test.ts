// The ethers-free mnemonic check, node address and identifiers config validation uses, against ethers 6 (and
// the reference derivation vectors): same answers for random and corrupted mnemonics and random inputs.
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { AbiCoder, getAddress, HDNodeWallet, keccak256, LangEn, Mnemonic, solidityPackedKeccak256 } from 'ethers';
import fc from 'fast-check';
import { BIP39_ENGLISH } from '../../../src/protocol/bip39-english.js';
import { deriveEndpointId, deriveTemplateIdV0FromCheckedHex } from '../../../src/protocol/direct-ids.js';
import {
  checksumAddress,
  deriveNodeAddress,
  deriveNodePrivateKey,
  isValidMnemonic,
} from '../../../src/protocol/node-key.js';

const vectors = JSON.parse(
  readFileSync(new URL('../../fixtures/airnode/vectors/derivation-vectors.json', import.meta.url), 'utf8'),
);
const ethersAddress = (mnemonic: string) => HDNodeWallet.fromPhrase(mnemonic, undefined, "m/44'/60'/0'/0/0").address;
const entropy = fc.constantFrom(16, 20, 24, 28, 32).chain((n) => fc.uint8Array({ minLength: n, maxLength: n }));
const validPhrase = entropy.map((bytes) => Mnemonic.entropyToPhrase(bytes));

describe('node key without ethers (BIP-39 check, node address)', function () {
  this.timeout(60_000);

  it('holds the English wordlist ethers decodes, in order', () => {
    const ethersList = LangEn.wordlist();
    expect(BIP39_ENGLISH).to.have.length(2048);
    expect(BIP39_ENGLISH).to.deep.equal(BIP39_ENGLISH.map((_, i) => ethersList.getWord(i)));
  });

  it('derives the reference vectors', () => {
    expect(isValidMnemonic(vectors.mnemonic)).to.equal(true);
    expect(deriveNodeAddress(vectors.mnemonic)).to.equal(vectors.nodeAddress_m_44_60_0_0_0.value);
    for (const v of vectors.templateIdsV0)
      if (v.mnemonic) expect(deriveNodeAddress(v.mnemonic)).to.equal(v.nodeAddress);
  });

  it('accepts every valid phrase of 12-24 words, as ethers does, and derives the same address', () => {
    fc.assert(
      fc.property(validPhrase, (phrase) => {
        expect(isValidMnemonic(phrase)).to.equal(true);
        expect(deriveNodeAddress(phrase)).to.equal(ethersAddress(phrase));
      }),
      { numRuns: 40 },
    );
  });

  it("derives the node's private key as ethers' HDNodeWallet does (what a signing gateway gets)", () => {
    fc.assert(
      fc.property(validPhrase, (phrase) => {
        expect(deriveNodePrivateKey(phrase)).to.equal(
          HDNodeWallet.fromPhrase(phrase, undefined, "m/44'/60'/0'/0/0").privateKey,
        );
      }),
      { numRuns: 20 },
    );
  });

  it('normalises case and white space as ethers does (same validity, same address)', () => {
    const spacing = fc.constantFrom(' ', '  ', '\t', '\n', '\u00a0', ' \r\n');
    const variant = fc
      .tuple(validPhrase, spacing, fc.boolean(), fc.constantFrom('', ' ', '\n'))
      .map(
        ([phrase, space, upper, edge]) => `${edge}${(upper ? phrase.toUpperCase() : phrase).split(' ').join(space)}`,
      );
    fc.assert(
      fc.property(variant, (phrase) => {
        const valid = Mnemonic.isValidMnemonic(phrase);
        expect(isValidMnemonic(phrase)).to.equal(valid);
        if (valid) expect(deriveNodeAddress(phrase)).to.equal(ethersAddress(phrase));
      }),
      { numRuns: 60 },
    );
  });

  it('rejects what ethers rejects: wrong checksums, counts, unknown words, arbitrary text', () => {
    const word = fc.constantFrom(...BIP39_ENGLISH);
    const words = fc.array(word, { minLength: 1, maxLength: 27 }).map((list) => list.join(' '));
    const swapped = fc.tuple(validPhrase, fc.nat(), word).map(([phrase, at, replacement]) => {
      const list = phrase.split(' ');
      list[at % list.length] = replacement;
      return list.join(' ');
    });
    const anything = fc.oneof(
      words,
      swapped,
      fc.string({ maxLength: 200 }),
      fc.string({ unit: 'binary', maxLength: 60 }),
    );
    fc.assert(
      fc.property(anything, (phrase) => {
        expect(isValidMnemonic(phrase)).to.equal(Mnemonic.isValidMnemonic(phrase));
      }),
      { numRuns: 500 },
    );
    expect(() => deriveNodeAddress('not a mnemonic')).to.throw(TypeError);
  });

  it('checksums addresses as getAddress does', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 20, maxLength: 20 }), (bytes) => {
        const hex = Buffer.from(bytes).toString('hex');
        expect(checksumAddress(hex)).to.equal(getAddress(`0x${hex}`));
      }),
      { numRuns: 300 },
    );
  });
});

describe('template id V0 over checked hex, against ethers', () => {
  it('is byte-identical for any address, bytes32 and even-length hex (either case)', () => {
    const hex = (min: number, max: number) =>
      fc.uint8Array({ minLength: min, maxLength: max }).map((b) => Buffer.from(b).toString('hex'));
    const anyCase = (text: string, upper: boolean) => (upper ? text.toUpperCase() : text);
    fc.assert(
      fc.property(hex(20, 20), hex(32, 32), hex(0, 300), fc.boolean(), (address, endpointId, parameters, upper) => {
        const nodeAddress = getAddress(`0x${address}`);
        const ours = deriveTemplateIdV0FromCheckedHex(
          nodeAddress,
          `0x${anyCase(endpointId, upper)}`,
          `0x${anyCase(parameters, upper)}`,
        );
        const theirs = solidityPackedKeccak256(
          ['address', 'bytes32', 'bytes'],
          [nodeAddress, `0x${endpointId}`, `0x${parameters}`],
        );
        expect(ours).to.equal(theirs);
      }),
      { numRuns: 500 },
    );
  });

  it('matches the reference vectors', () => {
    for (const v of vectors.templateIdsV0) {
      const expected = v.templateId ?? v.templateIdV0;
      expect(deriveTemplateIdV0FromCheckedHex(v.nodeAddress, v.endpointId, v.encodedParameters)).to.equal(expected);
    }
    for (const v of vectors.endpointIds) expect(deriveEndpointId(v.oisTitle, v.endpointName)).to.equal(v.endpointId);
  });
});

describe('endpoint id of long strings (length and offset words above one byte), against ethers', () => {
  it('is byte-identical for strings of 255-70,000 bytes', () => {
    const coder = AbiCoder.defaultAbiCoder();
    for (const [a, b] of [
      ['t'.repeat(255), 'n'],
      ['t'.repeat(300), 'é'.repeat(200)],
      ['€'.repeat(25_000), 'x'.repeat(70_000)],
    ] as const) {
      expect(deriveEndpointId(a, b)).to.equal(keccak256(coder.encode(['string', 'string'], [a, b])));
    }
  });
});

describe('endpoint id with unpaired surrogates, against ethers', () => {
  it('encodes or throws exactly when ethers does', () => {
    const unit = fc.constantFrom('a', 'é', '€', '\ud800', '\udbff', '\udc00', '\udfff', '\ud83d\ude00', '\ud83d');
    const text = fc.array(unit, { maxLength: 12 }).map((units) => units.join(''));
    const coder = AbiCoder.defaultAbiCoder();
    const outcome = (derive: () => string) => {
      try {
        return derive();
      } catch (error) {
        return error instanceof TypeError ? 'TypeError' : 'other error';
      }
    };
    fc.assert(
      fc.property(text, text, (a, b) => {
        const theirs = outcome(() => keccak256(coder.encode(['string', 'string'], [a, b])));
        expect(outcome(() => deriveEndpointId(a, b))).to.equal(theirs);
      }),
      { numRuns: 500 },
    );
  });
});
