// The BIP-39 mnemonic check and the node address (BIP-32/44 m/44'/60'/0'/0/0) written with node:crypto (SHA-256,
// PBKDF2-HMAC-SHA512, HMAC-SHA512, secp256k1) and keccak.ts, without ethers: config validation needs
// both, and loading ethers was a quarter of `oracle-node validate`'s time. Each answer is the one ethers 6 gives
// (Mnemonic.isValidMnemonic, HDNodeWallet.fromPhrase(...).address), which unit tests check with random mnemonics
// and the reference derivation vectors.
import { createECDH, createHash, createHmac, pbkdf2Sync } from 'node:crypto';
import { BIP39_ENGLISH } from './bip39-english.js';
import { keccak256Hex } from './keccak.js';

let wordIndex: Map<string, number> | undefined;
function indexOfWord(word: string): number {
  wordIndex ??= new Map(BIP39_ENGLISH.map((w, i) => [w, i]));
  return wordIndex.get(word) ?? -1;
}

/**
 * The word indices of a valid English BIP-39 mnemonic, or undefined. As ethers splits and checks it: lower-cased,
 * split on runs of white space (so leading or trailing space makes an empty, invalid word), 12-24 words in
 * multiples of 3, each word NFKD-normalised, and the checksum bits equal to the first bits of SHA-256(entropy).
 */
function mnemonicWordIndices(mnemonic: string): number[] | undefined {
  const words = mnemonic.toLowerCase().split(/\s+/g);
  if (words.length % 3 !== 0 || words.length < 12 || words.length > 24) return undefined;
  const indices: number[] = [];
  for (const word of words) {
    const index = indexOfWord(word.normalize('NFKD'));
    if (index < 0) return undefined;
    indices.push(index);
  }
  const entropy = new Uint8Array(Math.ceil((11 * words.length) / 8));
  let offset = 0;
  for (const index of indices) {
    for (let bit = 0; bit < 11; bit++, offset++) {
      if (index & (1 << (10 - bit))) entropy[offset >> 3]! |= 1 << (7 - (offset % 8));
    }
  }
  const entropyBytes = (32 * words.length) / 3 / 8;
  const checksumMask = (((1 << (words.length / 3)) - 1) << (8 - words.length / 3)) & 0xff;
  const checksum = createHash('sha256').update(entropy.subarray(0, entropyBytes)).digest()[0]! & checksumMask;
  return checksum === (entropy[entropy.length - 1]! & checksumMask) ? indices : undefined;
}

/** True for a valid English BIP-39 mnemonic (Mnemonic.isValidMnemonic of ethers 6). */
export function isValidMnemonic(mnemonic: string): boolean {
  return mnemonicWordIndices(mnemonic) !== undefined;
}

// secp256k1's group order.
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const HARDENED = 0x80000000;
const NODE_ADDRESS_PATH = [44 + HARDENED, 60 + HARDENED, HARDENED, 0, 0];

/** A BIP-32 extended private key. */
export type ExtendedKey = { privateKey: Buffer; chainCode: Buffer };

/** How a public key is computed from a private key: one k·G, compressed (33 bytes) or uncompressed (65 bytes). */
export type PublicKeyOf = (privateKey: Buffer, format: 'compressed' | 'uncompressed') => Uint8Array;

/**
 * The secp256k1 public key of a private key with Node's OpenSSL (~0.4 ms): enough for the node address, and loads
 * nothing. Callers deriving many keys pass libsecp256k1's instead (message-signer.ts, ~0.1 ms after a 30 ms load).
 */
export function publicKeyOf(privateKey: Buffer, format: 'compressed' | 'uncompressed'): Buffer {
  const ecdh = createECDH('secp256k1');
  ecdh.setPrivateKey(privateKey);
  return ecdh.getPublicKey(null, format);
}

/**
 * BIP-32 private child derivation (hardened when index >= 2^31), as ethers 5 and 6 do it: k_i = (IL + k_par) mod n,
 * IL not range-checked (the odds of it mattering are below 2^-127, and the reference would derive the same key).
 */
export function deriveChild(parent: ExtendedKey, index: number, publicKey: PublicKeyOf = publicKeyOf): ExtendedKey {
  if (!Number.isInteger(index) || index < 0 || index > 0xffffffff) throw new RangeError(`Not a BIP-32 index: ${index}`);
  const data = Buffer.alloc(37);
  if (index >= HARDENED) parent.privateKey.copy(data, 1);
  else data.set(publicKey(parent.privateKey, 'compressed'), 0);
  data.writeUInt32BE(index, 33);
  const I = createHmac('sha512', parent.chainCode).update(data).digest();
  const child =
    (BigInt(`0x${I.subarray(0, 32).toString('hex')}`) + BigInt(`0x${parent.privateKey.toString('hex')}`)) % N;
  return { privateKey: Buffer.from(child.toString(16).padStart(64, '0'), 'hex'), chainCode: I.subarray(32) };
}

/** The key at `path` (BIP-32 indices) below `parent`. */
export function derivePath(
  parent: ExtendedKey,
  path: readonly number[],
  publicKey: PublicKeyOf = publicKeyOf,
): ExtendedKey {
  return path.reduce((key, index) => deriveChild(key, index, publicKey), parent);
}

/** The Ethereum address of a private key, checksummed. */
export function addressOfPrivateKey(privateKey: Buffer, publicKey: PublicKeyOf = publicKeyOf): string {
  return checksumAddress(keccak256Hex(publicKey(privateKey, 'uncompressed').subarray(1)).slice(-40));
}

/** EIP-55 mixed-case checksum of a 40-hex-digit address (ethers' getAddress). */
export function checksumAddress(hex40: string): string {
  const lower = hex40.toLowerCase();
  const hash = keccak256Hex(Buffer.from(lower, 'latin1'));
  let out = '0x';
  for (let i = 0; i < 40; i++) out += Number.parseInt(hash[i]!, 16) >= 8 ? lower[i]!.toUpperCase() : lower[i]!;
  return out;
}

/**
 * The BIP-32 master key of a mnemonic (no passphrase); throws on an invalid mnemonic. The seed is PBKDF2 over the
 * phrase as ethers normalises it: the list's words joined by single spaces.
 */
export function masterKeyOf(mnemonic: string): ExtendedKey {
  const indices = mnemonicWordIndices(mnemonic);
  if (!indices) throw new TypeError('invalid mnemonic');
  const phrase = indices.map((i) => BIP39_ENGLISH[i]).join(' ');
  const seed = pbkdf2Sync(Buffer.from(phrase, 'utf8'), Buffer.from('mnemonic', 'utf8'), 2048, 64, 'sha512');
  const master = createHmac('sha512', 'Bitcoin seed').update(seed).digest();
  return { privateKey: master.subarray(0, 32), chainCode: master.subarray(32) };
}

/** The node address (m/44'/60'/0'/0/0 of the mnemonic), checksummed; throws on an invalid mnemonic. */
export function deriveNodeAddress(mnemonic: string): string {
  return addressOfPrivateKey(derivePath(masterKeyOf(mnemonic), NODE_ADDRESS_PATH).privateKey);
}

/**
 * The node key (m/44'/60'/0'/0/0 of the mnemonic) as 0x and 64 hex digits: what a signing gateway gets in place of
 * the mnemonic. Here rather than through ethers, which the operator never loads; throws on an invalid mnemonic.
 */
export function deriveNodePrivateKey(mnemonic: string): string {
  return `0x${derivePath(masterKeyOf(mnemonic), NODE_ADDRESS_PATH).privateKey.toString('hex')}`;
}
