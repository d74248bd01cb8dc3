// Sponsor wallets derived from one account root per process: deriving from the phrase each time
// (PBKDF2) would cost tens of milliseconds per sponsor. Same paths as wallet.ts (airnode-facts §1).
import { getAddress, HDNodeWallet } from 'ethers';
import { deriveWalletPathFromSponsorAddress, PROTOCOL_IDS } from '../protocol/wallet.js';

export type SponsorWallets = {
  /** The node wallet (m/44'/60'/0'/0/0): signs responses. */
  node: HDNodeWallet;
  nodeAddress: string;
  /** The RRP sponsor wallet of a sponsor (signs transactions). */
  walletOf: (sponsor: string) => HDNodeWallet;
  addressOf: (sponsor: string) => string;
};

export function sponsorWallets(mnemonic: string): SponsorWallets {
  const account = HDNodeWallet.fromPhrase(mnemonic, undefined, "m/44'/60'/0'");
  const node = account.derivePath('0/0');
  const wallets = new Map<string, HDNodeWallet>();
  const walletOf = (sponsor: string) => {
    const key = getAddress(sponsor);
    let wallet = wallets.get(key);
    if (!wallet) {
      wallet = account.derivePath(deriveWalletPathFromSponsorAddress(key, PROTOCOL_IDS.RRP));
      wallets.set(key, wallet);
    }
    return wallet;
  };
  return { node, nodeAddress: node.address, walletOf, addressOf: (sponsor) => walletOf(sponsor).address };
}
