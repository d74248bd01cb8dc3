// The ids config validation derives (endpoint id, RRP template id), without ethers: validation runs in the
// operator for every OracleNode, and ethers adds ~16 MiB of RSS to a process that loads it. ids.ts re-exports
// these for the engine; the derivation vectors and property tests hold them to ethers' answers.
import { createRequire } from 'node:module';
import jsSha3 from 'js-sha3';

/** A 32-byte hex word: request ids, endpoint ids, template ids, log topics. */
export const BYTES32_PATTERN = /^0x[0-9a-fA-F]{64}$/;

export function isBytes32(value: unknown): value is string {
  return typeof value === 'string' && BYTES32_PATTERN.test(value);
}

/** keccak256(abi.encode(string oisTitle, string endpointName)): standard, not packed, ABI encoding. */
export function deriveEndpointId(oisTitle: string, endpointName: string): string {
  // Unpaired surrogates: Buffer writes U+FFFD where ethers throws or writes the surrogate itself; keep ethers'
  // answer, from ethers itself, loaded only for such a name.
  if (LONE_SURROGATE.test(oisTitle) || LONE_SURROGATE.test(endpointName)) {
    const { AbiCoder, keccak256 } = createRequire(import.meta.url)('ethers') as typeof import('ethers');
    return keccak256(AbiCoder.defaultAbiCoder().encode(['string', 'string'], [oisTitle, endpointName]));
  }
  // js-sha3's keccak is about 2.5x faster than the noble one inside ethers on these short inputs.
  return `0x${jsSha3.keccak256(encodeTwoStrings(oisTitle, endpointName))}`;
}

// With the u flag a well-formed pair is one code point, so this matches only unpaired surrogates.
const LONE_SURROGATE = /\p{Surrogate}/u;
const WORD = 32;
const paddedLength = (length: number) => Math.ceil(length / WORD) * WORD;

/**
 * abi.encode(string a, string b) written directly: two head words (the offsets of a and b), then each string as
 * its length word and its UTF-8 bytes zero-padded to whole words. The general coder builds a ParamType and copies
 * the bytes several times per call, which made it most of `validate`'s CPU on large configs.
 */
function encodeTwoStrings(a: string, b: string): Uint8Array {
  const aLength = Buffer.byteLength(a, 'utf8');
  const bLength = Buffer.byteLength(b, 'utf8');
  const aTail = WORD + paddedLength(aLength);
  const out = Buffer.alloc(2 * WORD + aTail + WORD + paddedLength(bLength));
  writeWordUint(out, 0, 2 * WORD);
  writeWordUint(out, WORD, 2 * WORD + aTail);
  writeWordUint(out, 2 * WORD, aLength);
  out.write(a, 3 * WORD, 'utf8');
  writeWordUint(out, 2 * WORD + aTail, bLength);
  out.write(b, 3 * WORD + aTail, 'utf8');
  return out;
}

/** A uint256 word holding a length or offset (< 2^32: strings are far shorter), big-endian, in a zeroed buffer. */
function writeWordUint(out: Buffer, offset: number, value: number): void {
  out.writeUInt32BE(value, offset + WORD - 4);
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const EVEN_HEX = /^0x(?:[0-9a-fA-F]{2})*$/;

/**
 * RRP template id ("V0") of well-formed input: keccak256(address ‖ endpointId ‖ parameters), the packed encoding
 * of (address, bytes32, bytes). ids.ts's deriveTemplateIdV0 takes anything ethers accepts (and checks an address's
 * checksum); this one is for input already checked, and throws on anything else.
 */
export function deriveTemplateIdV0Packed(nodeAddress: string, endpointId: string, encodedParameters: string): string {
  if (!ADDRESS.test(nodeAddress) || !isBytes32(endpointId) || !EVEN_HEX.test(encodedParameters))
    throw new Error('deriveTemplateIdV0Packed: malformed input');
  const packed = Buffer.from(nodeAddress.slice(2) + endpointId.slice(2) + encodedParameters.slice(2), 'hex');
  return `0x${jsSha3.keccak256(packed)}`;
}
