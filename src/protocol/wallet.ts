// Key derivations of the node (airnode-facts §1): node address m/44'/60'/0'/0/0, the xpub at m/44'/60'/0',
// and sponsor wallets m/44'/60'/0'/<protocolId>/<six 31-bit chunks of the sponsor address>; and the EIP-191
// message signer of the node key.
import { getAddress, HDNodeWallet, hashMessage, Mnemonic } from 'ethers';
import jsSha3 from 'js-sha3';
import { signRecoverable } from 'tiny-secp256k1';

export const PROTOCOL_IDS = {
  RRP: '1',
  PSP: '2',
  RELAYED_RRP: '3',
  RELAYED_PSP: '4',
  AIRSEEKER: '5',
  AIRKEEPER: '12345',
} as const;

const NODE_ACCOUNT_PATH = "m/44'/60'/0'";

export function isValidMnemonic(mnemonic: string): boolean {
  return Mnemonic.isValidMnemonic(mnemonic);
}

/** The node's signing wallet (m/44'/60'/0'/0/0); its address is the node address. */
export function nodeWallet(mnemonic: string): HDNodeWallet {
  return HDNodeWallet.fromPhrase(mnemonic, undefined, `${NODE_ACCOUNT_PATH}/0/0`);
}

export function deriveNodeAddress(mnemonic: string): string {
  return nodeWallet(mnemonic).address;
}

export function deriveXpub(mnemonic: string): string {
  return HDNodeWallet.fromPhrase(mnemonic, undefined, NODE_ACCOUNT_PATH).neuter().extendedKey;
}

/** Path below m/44'/60'/0' for a sponsor: protocolId, then the address as six 31-bit chunks, least significant first. */
export function deriveWalletPathFromSponsorAddress(
  sponsorAddress: string,
  protocolId: string = PROTOCOL_IDS.RRP,
): string {
  const sponsor = BigInt(getAddress(sponsorAddress));
  const chunks: string[] = [];
  for (let i = 0n; i < 6n; i++) chunks.push(((sponsor >> (31n * i)) & 0x7fffffffn).toString());
  return `${protocolId}/${chunks.join('/')}`;
}

export function deriveSponsorWallet(mnemonic: string, sponsorAddress: string, protocolId: string = PROTOCOL_IDS.RRP) {
  const path = `${NODE_ACCOUNT_PATH}/${deriveWalletPathFromSponsorAddress(sponsorAddress, protocolId)}`;
  return HDNodeWallet.fromPhrase(mnemonic, undefined, path);
}

/** The sponsor wallet address from the public xpub alone, as a third party (or a requester) computes it. */
export function deriveSponsorWalletAddressFromXpub(
  xpub: string,
  sponsorAddress: string,
  protocolId: string = PROTOCOL_IDS.RRP,
): string {
  return HDNodeWallet.fromExtendedKey(xpub).derivePath(deriveWalletPathFromSponsorAddress(sponsorAddress, protocolId))
    .address;
}

/** Anything that signs EIP-191 messages synchronously, as ethers' Wallet and HDNodeWallet do. */
export type MessageSigner = { readonly address: string; signMessageSync(message: string | Uint8Array): string };

const EIP191_PREFIX = Buffer.from('\x19Ethereum Signed Message:\n', 'utf8');

/**
 * ethers' hashMessage of a byte message: keccak256("\x19Ethereum Signed Message:\n" ‖ decimal length ‖ bytes),
 * with js-sha3's keccak (ethers' own is several times slower on these short inputs).
 */
export function hashMessageBytes(message: Uint8Array): Uint8Array {
  const length = Buffer.from(String(message.length), 'latin1');
  const hash = jsSha3.keccak256.create();
  hash.update(EIP191_PREFIX).update(length).update(message);
  return new Uint8Array(hash.arrayBuffer());
}

/**
 * The wallet's key signing EIP-191 messages with libsecp256k1 (tiny-secp256k1, compiled to WebAssembly) instead of
 * ethers' JavaScript secp256k1 (@noble/curves): the same signature byte for byte (RFC 6979 deterministic nonce,
 * low s, v 27/28 as ethers serialises it), in a fraction of the time. Text messages keep ethers' UTF-8 handling.
 * The key is kept in this closure only; the signer has no property that holds it.
 */
export function fastMessageSigner(wallet: { readonly address: string; readonly privateKey: string }): MessageSigner {
  const key = Buffer.from(wallet.privateKey.slice(2), 'hex');
  if (key.length !== 32 || `0x${key.toString('hex')}` !== wallet.privateKey.toLowerCase()) {
    throw new Error('the private key is not 32 bytes of hex');
  }
  const address = wallet.address;
  return {
    address,
    signMessageSync(message: string | Uint8Array): string {
      const digest =
        typeof message === 'string' ? Buffer.from(hashMessage(message).slice(2), 'hex') : hashMessageBytes(message);
      return signDigest(key, digest);
    },
  };
}

/** r ‖ s ‖ v of a 32-byte digest as ethers' Signature.serialized: v is 0x1c for any non-zero recovery id. */
function signDigest(key: Uint8Array, digest: Uint8Array): string {
  const { signature, recoveryId } = signRecoverable(digest, key);
  return `0x${Buffer.from(signature.buffer, signature.byteOffset, 64).toString('hex')}${recoveryId ? '1c' : '1b'}`;
}
