// The ethers-free mnemonic check, node address and packed template id (protocol/mnemonic.ts, endpoint-id.ts) held
// to ethers 6's answers on random input: these are what config validation, in the operator too, runs.
import { expect } from 'chai';
import { getAddress, HDNodeWallet, LangEn, Mnemonic } from 'ethers';
import fc from 'fast-check';
import { BIP39_ENGLISH } from '../../../src/protocol/bip39-english.js';
import { deriveTemplateIdV0Packed } from '../../../src/protocol/endpoint-id.js';
import { deriveTemplateIdV0 } from '../../../src/protocol/ids.js';
import { deriveNodeAddress, isValidMnemonic } from '../../../src/protocol/mnemonic.js';

const NODE_PATH = "m/44'/60'/0'/0/0";
const SPACES = [' ', '  ', '\t', '\n', '\u00a0', ' \u3000 '];

/** A phrase from random entropy, then written the many ways a person or a YAML file might write it. */
const writtenPhrase = fc
  .record({
    entropy: fc
      .integer({ min: 4, max: 8 })
      .chain((words) => fc.uint8Array({ minLength: 4 * words, maxLength: 4 * words })),
    upper: fc.array(fc.boolean(), { minLength: 24, maxLength: 24 }),
    separators: fc.array(fc.constantFrom(...SPACES), { minLength: 24, maxLength: 24 }),
    edit: fc.constantFrom('none', 'none', 'swap', 'drop', 'replace', 'pad', 'fullwidth'),
    at: fc.nat(),
  })
  .map(({ entropy, upper, separators, edit, at }) => {
    const words = Mnemonic.fromEntropy(entropy).phrase.split(' ');
    const i = at % words.length;
    if (edit === 'swap') [words[i], words[(i + 1) % words.length]] = [words[(i + 1) % words.length]!, words[i]!];
    if (edit === 'drop') words.splice(i, 1);
    if (edit === 'replace') words[i] = BIP39_ENGLISH[at % 2048]!;
    if (edit === 'fullwidth')
      words[i] = [...words[i]!].map((c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0)).join('');
    const text = words.map((w, k) => (upper[k] ? w.toUpperCase() : w)).reduce((a, w, k) => `${a}${separators[k]}${w}`);
    return edit === 'pad' ? ` ${text} ` : text;
  });

describe('mnemonic and node address without ethers', () => {
  it('has the BIP-39 English wordlist ethers has', () => {
    expect(BIP39_ENGLISH).to.have.length(2048);
    for (const [index, word] of BIP39_ENGLISH.entries()) expect(word).to.equal(LangEn.wordlist().getWord(index));
  });

  it('accepts and rejects exactly the phrases ethers does, and derives the same node address', () => {
    const outcomes = { valid: 0, invalid: 0 };
    fc.assert(
      fc.property(writtenPhrase, (phrase) => {
        const valid = Mnemonic.isValidMnemonic(phrase);
        outcomes[valid ? 'valid' : 'invalid']++;
        expect(isValidMnemonic(phrase)).to.equal(valid);
        if (valid)
          expect(deriveNodeAddress(phrase)).to.equal(HDNodeWallet.fromPhrase(phrase, undefined, NODE_PATH).address);
        else expect(() => deriveNodeAddress(phrase)).to.throw('invalid mnemonic');
      }),
      { numRuns: 60 },
    );
    // Both sides of the rule were exercised (the edits make about half the phrases invalid).
    expect(outcomes.valid).to.be.greaterThan(10);
    expect(outcomes.invalid).to.be.greaterThan(10);
  });

  it('rejects what is not a phrase at all', () => {
    for (const text of ['', ' ', 'abandon', 'abandon '.repeat(12), 'abandon '.repeat(11).concat('about x')])
      expect(isValidMnemonic(text)).to.equal(Mnemonic.isValidMnemonic(text));
  });

  it('derives the packed V0 template id as ids.ts (ethers) does for well-formed input, and refuses the rest', () => {
    const hex = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString('hex')}`;
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 20, maxLength: 20 }),
        fc.boolean(),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.uint8Array({ maxLength: 200 }),
        (address, checksummed, endpointId, parameters) => {
          const node = checksummed ? getAddress(hex(address)) : hex(address);
          expect(deriveTemplateIdV0Packed(node, hex(endpointId), hex(parameters))).to.equal(
            deriveTemplateIdV0(node, hex(endpointId), hex(parameters)),
          );
        },
      ),
      { numRuns: 300 },
    );
    const id = `0x${'ab'.repeat(32)}`;
    const node = `0x${'12'.repeat(20)}`;
    expect(() => deriveTemplateIdV0Packed(node.slice(0, -2), id, '0x')).to.throw();
    expect(() => deriveTemplateIdV0Packed(node, id.slice(0, -2), '0x')).to.throw();
    expect(() => deriveTemplateIdV0Packed(node, id, '0x1')).to.throw();
  });
});
