// The identifier derivations config validation needs, written over keccak.ts without ethers (loading ethers was a
// quarter of `oracle-node validate`'s time). Byte-identical to the general encoders: unit tests check them against
// ethers 6 and ethers 5 with random inputs and against the reference derivation vectors.
import { keccak256Hex, keccak256HexOfWritten } from './keccak.js';

/** A 32-byte hex word: request ids, endpoint ids, template ids, log topics. */
export const BYTES32_PATTERN = /^0x[0-9a-fA-F]{64}$/;

export function isBytes32(value: unknown): value is string {
  return typeof value === 'string' && BYTES32_PATTERN.test(value);
}

/** keccak256(abi.encode(string oisTitle, string endpointName)): standard, not packed, ABI encoding. */
export function deriveEndpointId(oisTitle: string, endpointName: string): string {
  if (LONE_SURROGATE.test(oisTitle) || LONE_SURROGATE.test(endpointName)) {
    return `0x${keccak256Hex(encodeTwoStrings(ethersUtf8(oisTitle), ethersUtf8(endpointName)))}`;
  }
  // Well-formed strings are encoded by Buffer straight into the hash's input.
  const aLength = Buffer.byteLength(oisTitle, 'utf8');
  const bLength = Buffer.byteLength(endpointName, 'utf8');
  const layout = twoStringsLayout(aLength, bLength);
  return `0x${keccak256HexOfWritten(layout.size, (out) => {
    writeTwoStringsHeads(out, layout, aLength, bLength);
    out.write(oisTitle, layout.aAt, 'utf8');
    out.write(endpointName, layout.bAt, 'utf8');
  })}`;
}

// With the u flag a well-formed pair is one code point, so this matches only unpaired surrogates.
const LONE_SURROGATE = /\p{Surrogate}/u;
const WORD = 32;
const paddedLength = (length: number) => Math.ceil(length / WORD) * WORD;

/**
 * UTF-8 bytes as ethers' toUtf8Bytes writes them: Buffer's for well-formed strings; with unpaired surrogates
 * (where Buffer would write U+FFFD) a lone low surrogate is encoded as its own three bytes and a lone high one
 * throws, as in ethers.
 */
function ethersUtf8(text: string): Buffer {
  if (!LONE_SURROGATE.test(text)) return Buffer.from(text, 'utf8');
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes.push(c);
    else if (c < 0x800) bytes.push((c >> 6) | 0xc0, (c & 0x3f) | 0x80);
    else if ((c & 0xfc00) === 0xd800) {
      i++;
      const low = text.charCodeAt(i);
      if (i >= text.length || (low & 0xfc00) !== 0xdc00) throw new TypeError('invalid surrogate pair');
      const point = 0x10000 + ((c & 0x03ff) << 10) + (low & 0x03ff);
      bytes.push(
        (point >> 18) | 0xf0,
        ((point >> 12) & 0x3f) | 0x80,
        ((point >> 6) & 0x3f) | 0x80,
        (point & 0x3f) | 0x80,
      );
    } else bytes.push((c >> 12) | 0xe0, ((c >> 6) & 0x3f) | 0x80, (c & 0x3f) | 0x80);
  }
  return Buffer.from(bytes);
}

type TwoStringsLayout = { size: number; bHeadAt: number; aAt: number; bAt: number };

/**
 * abi.encode(string a, string b) written directly: two head words (the offsets of a and b), then each string as
 * its length word and its UTF-8 bytes zero-padded to whole words. The general coder builds a ParamType and copies
 * the bytes several times per call, which made it most of `validate`'s CPU on large configs.
 */
function twoStringsLayout(aLength: number, bLength: number): TwoStringsLayout {
  const bHeadAt = 3 * WORD + paddedLength(aLength);
  return { size: bHeadAt + WORD + paddedLength(bLength), bHeadAt, aAt: 3 * WORD, bAt: bHeadAt + WORD };
}

/** The three words around the strings, in a zero-filled buffer: the two offsets and both length words. */
function writeTwoStringsHeads(out: Buffer, layout: TwoStringsLayout, aLength: number, bLength: number): void {
  writeWordUint(out, 0, 2 * WORD);
  writeWordUint(out, WORD, layout.bHeadAt);
  writeWordUint(out, 2 * WORD, aLength);
  writeWordUint(out, layout.bHeadAt, bLength);
}

function encodeTwoStrings(a: Buffer, b: Buffer): Buffer {
  const layout = twoStringsLayout(a.length, b.length);
  const out = Buffer.alloc(layout.size);
  writeTwoStringsHeads(out, layout, a.length, b.length);
  a.copy(out, layout.aAt);
  b.copy(out, layout.bAt);
  return out;
}

/**
 * A uint256 word holding a length or offset (< 2^32: strings are far shorter), big-endian, in a zeroed buffer.
 * Byte stores rather than Buffer's writeUInt32BE, whose checks showed in the profile of a fresh process.
 */
function writeWordUint(out: Buffer, offset: number, value: number): void {
  const last = offset + WORD - 1;
  out[last] = value & 0xff;
  out[last - 1] = (value >>> 8) & 0xff;
  out[last - 2] = (value >>> 16) & 0xff;
  out[last - 3] = value >>> 24;
}

/**
 * RRP template id ("V0"): keccak256(abi.encodePacked(address node, bytes32 endpointId, bytes parameters)), for
 * inputs already checked: a 0x-prefixed 40-digit address, a bytes32 hex word and 0x-prefixed even-length hex.
 * (ids.ts's deriveTemplateIdV0 takes anything ethers accepts and throws as ethers does.)
 */
export function deriveTemplateIdV0FromCheckedHex(
  nodeAddress: string,
  endpointId: string,
  encodedParameters: string,
): string {
  const packed = Buffer.from(`${nodeAddress.slice(2)}${endpointId.slice(2)}${encodedParameters.slice(2)}`, 'hex');
  return `0x${keccak256Hex(packed)}`;
}
