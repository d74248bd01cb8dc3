// The ethers-free getAddress and isAddress (src/protocol/address.ts) against ethers 6's: the same answer, or a throw
// where ethers throws (with ethers' reason), for random addresses in every case, with and without 0x, corrupted
// checksums, ICAP forms and anything else.
import { expect } from 'chai';
import { getAddress as ethersGetAddress, isAddress as ethersIsAddress, getIcapAddress } from 'ethers';
import fc from 'fast-check';
import { getAddress, InvalidAddressError, isAddress } from '../../../src/protocol/address.js';

/** What a getAddress answers: its address, or the reason of its throw. */
function outcome(get: (value: string) => string, value: unknown): string {
  try {
    // ethers' getAddress is typed for strings and checks at run time, as ours: both get the value as it is.
    return get(value as string);
  } catch (error) {
    return `throws: ${(error as { shortMessage?: string; reason?: string }).shortMessage ?? (error as InvalidAddressError).reason}`;
  }
}

const hex40 = fc.uint8Array({ minLength: 20, maxLength: 20 }).map((bytes) => Buffer.from(bytes).toString('hex'));
// Each letter upper or lower case at random: mostly a wrong checksum, sometimes all one case.
const anyCase = (text: string, flips: boolean[]) =>
  [...text].map((char, i) => (flips[i % flips.length] ? char.toUpperCase() : char)).join('');
const spellings = fc
  .tuple(hex40, fc.array(fc.boolean(), { minLength: 1, maxLength: 40 }), fc.boolean())
  .map(([hex, flips, prefixed]) => `${prefixed ? '0x' : ''}${anyCase(hex, flips)}`);

describe('getAddress and isAddress without ethers', () => {
  it('answer as ethers for addresses in every case, with and without 0x', () => {
    fc.assert(
      fc.property(spellings, (value) => {
        expect(outcome(getAddress, value)).to.equal(outcome(ethersGetAddress, value));
        expect(isAddress(value)).to.equal(ethersIsAddress(value));
      }),
      { numRuns: 2000 },
    );
  });

  it('answer as ethers for checksummed addresses and their ICAP forms, good and with wrong check digits', () => {
    fc.assert(
      fc.property(hex40, fc.integer({ min: 0, max: 99 }), (hex, digits) => {
        const checksummed = ethersGetAddress(`0x${hex}`);
        expect(getAddress(checksummed)).to.equal(checksummed);
        const icap = getIcapAddress(checksummed);
        expect(getAddress(icap)).to.equal(checksummed);
        const otherDigits = `${icap.slice(0, 2)}${String(digits).padStart(2, '0')}${icap.slice(4)}`;
        expect(outcome(getAddress, otherDigits)).to.equal(outcome(ethersGetAddress, otherDigits));
        expect(outcome(getAddress, icap.toLowerCase().replace(/^xe/, 'XE'))).to.equal(
          outcome(ethersGetAddress, icap.toLowerCase().replace(/^xe/, 'XE')),
        );
      }),
      { numRuns: 500 },
    );
  });

  it('answer as ethers for ICAP bodies above 160 bits (31 base-36 digits)', () => {
    // zzz... in base 36 is above 2^160: ethers checksums the first 40 hex digits and keeps the rest.
    const body = 'z'.repeat(31);
    for (let digits = 0; digits < 100; digits++) {
      const value = `XE${String(digits).padStart(2, '0')}${body}`;
      expect(outcome(getAddress, value)).to.equal(outcome(ethersGetAddress, value));
    }
  });

  it('throw where ethers throws for anything else', () => {
    const values: unknown[] = [
      '',
      '0x',
      `0x${'0'.repeat(39)}`,
      `0x${'0'.repeat(41)}`,
      `0X${'a'.repeat(40)}`,
      `0x${'g'.repeat(40)}`,
      ` 0x${'a'.repeat(40)}`,
      'XE00',
      12,
      null,
      undefined,
      {},
      ['0x0000000000000000000000000000000000000000'],
    ];
    for (const value of values) {
      expect(outcome(getAddress, value), String(value)).to.equal(outcome(ethersGetAddress, value));
      expect(isAddress(value)).to.equal(ethersIsAddress(value));
    }
    fc.assert(
      fc.property(fc.string({ maxLength: 50 }), (value) => {
        expect(outcome(getAddress, value)).to.equal(outcome(ethersGetAddress, value));
      }),
      { numRuns: 1000 },
    );
  });

  it('throws an InvalidAddressError that names the value and the rule', () => {
    expect(() => getAddress('0xnope')).to.throw(InvalidAddressError, /invalid address \(argument="address"/);
  });
});
