// The identifier derivations config validation needs, written over keccak.ts without ethers (loading ethers was a
// quarter of `oracle-node validate`'s time). Byte-identical to the general encoders: unit tests check them against
// ethers 6 and ethers 5 with random inputs and against the reference derivation vectors.
import { keccak256Hex, keccak256HexOfWritten } from './keccak.js';
import { ethersUtf8Bytes, hasLoneSurrogate } from './utf8.js';

/** A 32-byte hex word: request ids, endpoint ids, template ids, log topics. */
export const BYTES32_PATTERN = /^0x[0-9a-fA-F]{64}$/;

/** Bytes as ethers' getBytes takes a string: 0x, then whole bytes of hex digits in either case. */
export const HEX_BYTES_PATTERN = /^0x(?:[0-9a-fA-F]{2})*$/;

export function isBytes32(value: unknown): value is string {
  return typeof value === 'string' && BYTES32_PATTERN.test(value);
}

/** keccak256(abi.encode(string oisTitle, string endpointName)): standard, not packed, ABI encoding. */
export function deriveEndpointId(oisTitle: string, endpointName: string): string {
  if (hasLoneSurrogate(oisTitle) || hasLoneSurrogate(endpointName)) {
    return `0x${keccak256Hex(encodeTwoStrings(ethersUtf8Bytes(oisTitle), ethersUtf8Bytes(endpointName)))}`;
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

const WORD = 32;
const paddedLength = (length: number) => Math.ceil(length / WORD) * WORD;

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

/**
 * Signed-data and OEV template id ("V1"): keccak256(abi.encodePacked(bytes32 endpointId, bytes parameters)), for
 * inputs already checked: a bytes32 hex word and 0x-prefixed even-length hex, packed as their bytes one after the
 * other. (ids.ts's deriveTemplateIdV1 takes anything ethers accepts and throws as ethers does.)
 */
export function deriveTemplateIdV1FromCheckedHex(endpointId: string, encodedParameters: string): string {
  return `0x${keccak256Hex(Buffer.from(endpointId.slice(2) + encodedParameters.slice(2), 'hex'))}`;
}
