// The native BIP-32 steps of sponsorWallets against ethers' HDNodeWallet and the reference vectors: the same
// private keys and addresses for any sponsor.
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { getAddress, hexlify } from 'ethers';
import fc from 'fast-check';
import { sponsorWallets } from '../../../src/chain/sponsor-wallets.js';
import { deriveSponsorWallet, PROTOCOL_IDS } from '../../../src/protocol/wallet.js';

const vectors = JSON.parse(
  readFileSync(new URL('../../fixtures/airnode/vectors/derivation-vectors.json', import.meta.url), 'utf8'),
) as { mnemonic: string; sponsorWallets: { sponsor: string; protocolId: string; address: string }[] };

describe('sponsorWallets', () => {
  const wallets = sponsorWallets(vectors.mnemonic);

  it('derives the reference vectors (RRP)', () => {
    const rrp = vectors.sponsorWallets.filter((v) => v.protocolId === PROTOCOL_IDS.RRP);
    expect(rrp.length).to.be.greaterThan(0);
    for (const v of rrp) {
      expect(wallets.addressOf(v.sponsor)).to.equal(v.address);
      expect(wallets.walletOf(v.sponsor).address).to.equal(v.address);
    }
  });

  it('derives the same private key and address as ethers for any sponsor', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 20, maxLength: 20 }), (bytes) => {
        const sponsor = getAddress(hexlify(bytes));
        const expected = deriveSponsorWallet(vectors.mnemonic, sponsor, PROTOCOL_IDS.RRP);
        expect(wallets.addressOf(sponsor)).to.equal(expected.address);
        expect(wallets.walletOf(sponsor).privateKey).to.equal(expected.privateKey);
      }),
      { numRuns: 40 },
    );
  });

  it('treats sponsor addresses case-insensitively and keeps one wallet per sponsor', () => {
    const sponsor = vectors.sponsorWallets[0]!.sponsor;
    expect(wallets.walletOf(sponsor.toLowerCase())).to.equal(wallets.walletOf(getAddress(sponsor)));
  });
});
