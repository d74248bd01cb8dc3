// Sponsor wallets derived from one account root per process: deriving from the phrase each time
// (PBKDF2) would cost tens of milliseconds per sponsor. Same paths as wallet.ts (airnode-facts §1).
//
// The six non-hardened BIP-32 steps below the account are protocol/node-key.ts's deriveChild with libsecp256k1's
// k·G (one per step) instead of ethers' HDNodeWallet, which computes two public keys per step in JavaScript: discovery checks
// every request's sponsor wallet address, ~20 ms per sponsor that way and well under 1 ms this way.
// The private keys and addresses are the same (unit tests compare both with ethers on random sponsors).
import { getAddress, HDNodeWallet, Wallet } from 'ethers';
import { publicKeyOfScalar } from '../protocol/message-signer.js';
import { addressOfPrivateKey, deriveChild, derivePath, type ExtendedKey } from '../protocol/node-key.js';
import { deriveWalletPathFromSponsorAddress, PROTOCOL_IDS } from '../protocol/wallet.js';

export type SponsorWallets = {
  /** The node wallet (m/44'/60'/0'/0/0): signs responses. */
  node: HDNodeWallet;
  nodeAddress: string;
  /** The RRP sponsor wallet of a sponsor (signs transactions). */
  walletOf: (sponsor: string) => Wallet;
  addressOf: (sponsor: string) => string;
};

export function sponsorWallets(mnemonic: string): SponsorWallets {
  const account = HDNodeWallet.fromPhrase(mnemonic, undefined, "m/44'/60'/0'");
  const accountKey: ExtendedKey = {
    privateKey: Buffer.from(account.privateKey.slice(2), 'hex'),
    chainCode: Buffer.from(account.chainCode.slice(2), 'hex'),
  };
  // The protocol level (m/44'/60'/0'/1 for RRP) is the same for every sponsor.
  const protocolRoot = deriveChild(accountKey, Number(PROTOCOL_IDS.RRP), publicKeyOfScalar);
  const node = account.derivePath('0/0');
  const keys = new Map<string, { privateKey: string; address: string }>();
  const keyOf = (sponsor: string) => {
    const checksummed = getAddress(sponsor);
    let key = keys.get(checksummed);
    if (!key) {
      const [protocol, ...steps] = deriveWalletPathFromSponsorAddress(checksummed, PROTOCOL_IDS.RRP).split('/');
      if (protocol !== PROTOCOL_IDS.RRP) throw new Error(`Unexpected sponsor wallet path for ${checksummed}`);
      const derived = derivePath(protocolRoot, steps.map(Number), publicKeyOfScalar);
      key = {
        privateKey: `0x${derived.privateKey.toString('hex')}`,
        address: addressOfPrivateKey(derived.privateKey, publicKeyOfScalar),
      };
      keys.set(checksummed, key);
    }
    return key;
  };
  const wallets = new Map<string, Wallet>();
  const walletOf = (sponsor: string) => {
    const key = keyOf(sponsor);
    let wallet = wallets.get(key.address);
    if (!wallet) {
      wallet = new Wallet(key.privateKey);
      wallets.set(key.address, wallet);
    }
    return wallet;
  };
  return { node, nodeAddress: node.address, walletOf, addressOf: (sponsor) => keyOf(sponsor).address };
}
