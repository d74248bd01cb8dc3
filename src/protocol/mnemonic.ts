// The node wallet's mnemonic check and address (m/44'/60'/0'/0/0) from node:crypto and js-sha3, without ethers:
// config validation needs only these two, and ethers adds ~16 MiB of RSS to a process that loads it (the operator
// validates every OracleNode's config and never signs). Written step for step as ethers 6 does it (Mnemonic,
// HDNodeWallet.fromPhrase, computeAddress, getAddress), and tested against ethers on random mnemonics.
import { createECDH, createHash, createHmac, pbkdf2Sync } from 'node:crypto';
import jsSha3 from 'js-sha3';
import { BIP39_ENGLISH } from './bip39-english.js';

const WORD_INDEX = new Map(BIP39_ENGLISH.map((word, index) => [word, index]));
const HARDENED = 0x80000000;
/** The order of secp256k1's group. */
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const NODE_WALLET_PATH = "m/44'/60'/0'/0/0";

/** The entropy a BIP-39 phrase encodes, or undefined when it is not one (ethers' mnemonicToEntropy rules). */
function mnemonicEntropy(phrase: string): Buffer | undefined {
  const words = phrase.toLowerCase().split(/\s+/g);
  if (words.length % 3 !== 0 || words.length < 12 || words.length > 24) return undefined;
  const bits = Buffer.alloc(Math.ceil((11 * words.length) / 8));
  let offset = 0;
  for (const word of words) {
    const index = WORD_INDEX.get(word.normalize('NFKD'));
    if (index === undefined) return undefined;
    for (let bit = 0; bit < 11; bit++, offset++) {
      if (index & (1 << (10 - bit))) bits[offset >> 3]! |= 1 << (7 - (offset % 8));
    }
  }
  const entropy = bits.subarray(0, (32 * words.length) / 3 / 8);
  const checksumBits = words.length / 3;
  const mask = (((1 << checksumBits) - 1) << (8 - checksumBits)) & 0xff;
  const checksum = createHash('sha256').update(entropy).digest()[0]! & mask;
  return checksum === (bits[bits.length - 1]! & mask) ? entropy : undefined;
}

export function isValidMnemonic(mnemonic: string): boolean {
  return mnemonicEntropy(mnemonic) !== undefined;
}

/** The phrase as ethers rewrites it before hashing: the words of its entropy, lowercase, one space apart. */
function canonicalPhrase(entropy: Buffer): string {
  const words: string[] = [];
  let offset = 0;
  const checksum = createHash('sha256').update(entropy).digest();
  const bits = Buffer.concat([entropy, checksum.subarray(0, 1)]);
  const count = (entropy.length * 8 + entropy.length / 4) / 11;
  for (let i = 0; i < count; i++) {
    let index = 0;
    for (let bit = 0; bit < 11; bit++, offset++)
      index = (index << 1) | ((bits[offset >> 3]! >> (7 - (offset % 8))) & 1);
    words.push(BIP39_ENGLISH[index]!);
  }
  return words.join(' ');
}

function publicKey(privateKey: Buffer, form: 'compressed' | 'uncompressed'): Buffer {
  const ecdh = createECDH('secp256k1');
  ecdh.setPrivateKey(privateKey);
  return ecdh.getPublicKey(undefined, form);
}

/** A private key at `path` below the seed's master key (BIP-32, private derivation). */
function derivePrivateKey(seed: Buffer, path: string): Buffer {
  let master = createHmac('sha512', 'Bitcoin seed').update(seed).digest();
  let key = master.subarray(0, 32);
  let chainCode = master.subarray(32);
  for (const component of path.split('/').slice(1)) {
    const hardened = component.endsWith("'");
    const index = Number.parseInt(component, 10) + (hardened ? HARDENED : 0);
    const data = Buffer.alloc(37);
    if (hardened) key.copy(data, 1);
    else publicKey(key, 'compressed').copy(data, 0);
    data.writeUInt32BE(index, 33);
    master = createHmac('sha512', chainCode).update(data).digest();
    const child = (BigInt(`0x${master.subarray(0, 32).toString('hex')}`) + BigInt(`0x${key.toString('hex')}`)) % N;
    key = Buffer.from(child.toString(16).padStart(64, '0'), 'hex');
    chainCode = master.subarray(32);
  }
  return key;
}

/** EIP-55 mixed-case checksum of a lowercase hex address without 0x. */
function checksumAddress(lowercaseHex: string): string {
  const hash = jsSha3.keccak256(lowercaseHex);
  let out = '0x';
  for (let i = 0; i < 40; i++)
    out += Number.parseInt(hash[i]!, 16) >= 8 ? lowercaseHex[i]!.toUpperCase() : lowercaseHex[i];
  return out;
}

/** The node address: m/44'/60'/0'/0/0 of the mnemonic (no password), checksummed. Throws on an invalid mnemonic. */
export function deriveNodeAddress(mnemonic: string): string {
  const entropy = mnemonicEntropy(mnemonic);
  if (!entropy) throw new Error('invalid mnemonic');
  const seed = pbkdf2Sync(
    Buffer.from(canonicalPhrase(entropy).normalize('NFKD'), 'utf8'),
    Buffer.from('mnemonic', 'utf8'),
    2048,
    64,
    'sha512',
  );
  const uncompressed = publicKey(derivePrivateKey(seed, NODE_WALLET_PATH), 'uncompressed');
  return checksumAddress(jsSha3.keccak256(uncompressed.subarray(1)).slice(24));
}
