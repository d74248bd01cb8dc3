// The node key's signatures for the gateways, the feed and the fulfilments (EIP-191 messages and raw digests), and
// public keys for BIP-32 steps: libsecp256k1 (secp256k1.ts: native where the platform has a build, else WebAssembly)
// instead of ethers' JavaScript secp256k1 (@noble/curves), with the same bytes.
import { keccak256OfWritten } from './keccak.js';
import { secp256k1 } from './secp256k1.js';
import { ethersUtf8Bytes } from './utf8.js';

/** Anything that signs EIP-191 messages synchronously, as ethers' Wallet and HDNodeWallet do. */
export type MessageSigner = { readonly address: string; signMessageSync(message: string | Uint8Array): string };

const EIP191_PREFIX = Buffer.from('\x19Ethereum Signed Message:\n', 'utf8');

/**
 * ethers' hashMessage of a byte message: keccak256("\x19Ethereum Signed Message:\n" ‖ decimal length ‖ bytes),
 * written straight into the WebAssembly sponge of keccak.ts (ethers' keccak is several times slower on these short
 * inputs, js-sha3's about 4 times once optimised, and its optimising compile cost a feed 20 ms of CPU).
 */
export function hashMessageBytes(message: Uint8Array): Uint8Array {
  const length = String(message.length);
  return keccak256OfWritten(EIP191_PREFIX.length + length.length + message.length, (target) => {
    target.set(EIP191_PREFIX);
    target.write(length, EIP191_PREFIX.length, 'latin1');
    target.set(message, EIP191_PREFIX.length + length.length);
  });
}

/**
 * The wallet's key signing EIP-191 messages with libsecp256k1: the same signature byte for byte as the wallet's
 * signMessageSync (RFC 6979 deterministic nonce, low s, v 27/28 as ethers serialises it), in about a third of the
 * time. Text messages are UTF-8 as ethers writes them. The key is kept in this closure only: the signer has no property
 * that holds it.
 */
export function fastMessageSigner(wallet: { readonly address: string; readonly privateKey: string }): MessageSigner {
  const key = Buffer.from(wallet.privateKey.slice(2), 'hex');
  if (key.length !== 32 || `0x${key.toString('hex')}` !== wallet.privateKey.toLowerCase()) {
    throw new Error('the private key is not 32 bytes of hex');
  }
  const library = secp256k1();
  const address = wallet.address;
  return {
    address,
    signMessageSync(message: string | Uint8Array): string {
      const digest = hashMessageBytes(typeof message === 'string' ? ethersUtf8Bytes(message) : message);
      // r ‖ s ‖ v as ethers' Signature.serialized: v is 0x1c for any non-zero recovery id.
      const { signature, recoveryId } = library.signRecoverable(digest, key);
      return `0x${Buffer.from(signature.buffer, signature.byteOffset, 64).toString('hex')}${recoveryId ? '1c' : '1b'}`;
    },
  };
}

/**
 * A 32-byte digest signed with a private key by libsecp256k1: the same r, s and recovery as ethers'
 * SigningKey.sign (RFC 6979, low s), as the { r, s, v } ethers takes for a transaction's signature.
 */
export function signDigest(privateKey: string, digest: string): { r: string; s: string; v: 27 | 28 } {
  const key = Buffer.from(privateKey.slice(2), 'hex');
  if (key.length !== 32) throw new Error('the private key is not 32 bytes of hex');
  const { signature, recoveryId } = secp256k1().signRecoverable(Buffer.from(digest.slice(2), 'hex'), key);
  const bytes = Buffer.from(signature.buffer, signature.byteOffset, 64);
  return {
    r: `0x${bytes.subarray(0, 32).toString('hex')}`,
    s: `0x${bytes.subarray(32).toString('hex')}`,
    v: recoveryId ? 28 : 27,
  };
}

/** The public key of a 32-byte private key by libsecp256k1 (for many BIP-32 steps; see node-key.ts's publicKeyOf). */
export function publicKeyOfScalar(privateKey: Uint8Array, format: 'compressed' | 'uncompressed'): Uint8Array {
  const point = secp256k1().publicKey(privateKey, format === 'compressed');
  if (!point) throw new Error('the private key is not a valid secp256k1 scalar');
  return point;
}
