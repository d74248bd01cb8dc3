// Sponsor wallets derived from one account root per process: deriving from the phrase each time
// (PBKDF2) would cost tens of milliseconds per sponsor. Same paths as wallet.ts (airnode-facts §1).
//
// The six non-hardened BIP-32 steps below the account compute one k·G each with libsecp256k1 (WebAssembly)
// instead of ethers' HDNodeWallet, which computes two public keys per step in JavaScript: discovery checks
// every request's sponsor wallet address, ~20 ms per sponsor that way and well under 1 ms this way.
// The private keys and addresses are the same (unit tests compare both with ethers on random sponsors).
import { createHmac } from 'node:crypto';
import { computeAddress, getAddress, HDNodeWallet, Wallet } from 'ethers';
import { publicKeyOfScalar } from '../protocol/message-signer.js';
import { deriveWalletPathFromSponsorAddress, PROTOCOL_IDS } from '../protocol/wallet.js';

export type SponsorWallets = {
  /** The node wallet (m/44'/60'/0'/0/0): signs responses. */
  node: HDNodeWallet;
  nodeAddress: string;
  /** The RRP sponsor wallet of a sponsor (signs transactions). */
  walletOf: (sponsor: string) => Wallet;
  addressOf: (sponsor: string) => string;
};

/** Order of the secp256k1 group. */
const CURVE_ORDER = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const HARDENED = 0x80000000;

/** A BIP-32 node: its key, chain code, and public key both ways (compressed feeds the next step). */
type ExtendedKey = { privateKey: bigint; chainCode: Buffer; publicKey: Buffer; uncompressedPublicKey: Buffer };

/** One k·G (libsecp256k1); the compressed form is cut from the uncompressed one (no second multiplication). */
function publicKeysOf(privateKey: bigint): { compressed: Buffer; uncompressed: Buffer } {
  const uncompressed = Buffer.from(publicKeyOfScalar(Buffer.from(privateKey.toString(16).padStart(64, '0'), 'hex')));
  const compressed = Buffer.alloc(33);
  compressed[0] = (uncompressed[64]! & 1) === 0 ? 0x02 : 0x03;
  uncompressed.copy(compressed, 1, 1, 33);
  return { compressed, uncompressed };
}

/** BIP-32 CKDpriv for a non-hardened index. */
export function deriveChild(parent: ExtendedKey, index: number): ExtendedKey {
  if (!Number.isInteger(index) || index < 0 || index >= HARDENED) throw new Error(`Not a non-hardened index: ${index}`);
  const data = Buffer.alloc(37);
  parent.publicKey.copy(data, 0);
  data.writeUInt32BE(index, 33);
  const digest = createHmac('sha512', parent.chainCode).update(data).digest();
  const tweak = BigInt(`0x${digest.subarray(0, 32).toString('hex')}`);
  const privateKey = (tweak + parent.privateKey) % CURVE_ORDER;
  // Probability below 2^-127; BIP-32 would skip to the next index, ethers fails as well.
  if (tweak >= CURVE_ORDER || privateKey === 0n) throw new Error(`Invalid child key at index ${index}`);
  const { compressed, uncompressed } = publicKeysOf(privateKey);
  return { privateKey, chainCode: digest.subarray(32), publicKey: compressed, uncompressedPublicKey: uncompressed };
}

export function sponsorWallets(mnemonic: string): SponsorWallets {
  const account = HDNodeWallet.fromPhrase(mnemonic, undefined, "m/44'/60'/0'");
  const accountKey = BigInt(account.privateKey);
  const root: ExtendedKey = {
    privateKey: accountKey,
    chainCode: Buffer.from(account.chainCode.slice(2), 'hex'),
    ...(({ compressed, uncompressed }) => ({ publicKey: compressed, uncompressedPublicKey: uncompressed }))(
      publicKeysOf(accountKey),
    ),
  };
  // The protocol level (m/44'/60'/0'/1 for RRP) is the same for every sponsor.
  const protocolRoot = deriveChild(root, Number(PROTOCOL_IDS.RRP));
  const node = account.derivePath('0/0');
  const keys = new Map<string, { privateKey: string; address: string }>();
  const keyOf = (sponsor: string) => {
    const checksummed = getAddress(sponsor);
    let key = keys.get(checksummed);
    if (!key) {
      const [protocol, ...steps] = deriveWalletPathFromSponsorAddress(checksummed, PROTOCOL_IDS.RRP).split('/');
      if (protocol !== PROTOCOL_IDS.RRP) throw new Error(`Unexpected sponsor wallet path for ${checksummed}`);
      const derived = steps.reduce((parent, step) => deriveChild(parent, Number(step)), protocolRoot);
      key = {
        privateKey: `0x${derived.privateKey.toString(16).padStart(64, '0')}`,
        address: computeAddress(`0x${derived.uncompressedPublicKey.toString('hex')}`),
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
