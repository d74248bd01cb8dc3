// Identifier derivations of the request-response protocol, byte-compatible with Airnode 0.15
// (airnode-facts §1). Pure functions: no I/O, no providers.
import { AbiCoder, keccak256, sha256, solidityPackedKeccak256, toUtf8Bytes } from 'ethers';
import jsSha3 from 'js-sha3';

const abi = AbiCoder.defaultAbiCoder();

/** keccak256(abi.encode(string oisTitle, string endpointName)): standard, not packed, ABI encoding. */
export function deriveEndpointId(oisTitle: string, endpointName: string): string {
  // Unpaired surrogates: Buffer writes U+FFFD where ethers throws or writes the surrogate itself; keep ethers' answer.
  if (LONE_SURROGATE.test(oisTitle) || LONE_SURROGATE.test(endpointName)) {
    return deriveEndpointIdWithAbiCoder(oisTitle, endpointName);
  }
  // js-sha3's keccak is about 2.5x faster than the noble one inside ethers on these short inputs.
  return `0x${jsSha3.keccak256(encodeTwoStrings(oisTitle, endpointName))}`;
}

/** The same derivation through ethers' general ABI coder: the reference the direct encoding is tested against. */
export function deriveEndpointIdWithAbiCoder(oisTitle: string, endpointName: string): string {
  return keccak256(abi.encode(['string', 'string'], [oisTitle, endpointName]));
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

/** RRP template id ("V0"): keccak256(abi.encodePacked(address node, bytes32 endpointId, bytes parameters)). */
export function deriveTemplateIdV0(nodeAddress: string, endpointId: string, encodedParameters: string): string {
  return solidityPackedKeccak256(['address', 'bytes32', 'bytes'], [nodeAddress, endpointId, encodedParameters]);
}

/**
 * Signed-data and OEV template id ("V1"): keccak256(abi.encodePacked(bytes32 endpointId, bytes parameters)).
 * The packed encoding of two hex strings is their bytes one after the other, hashed here with js-sha3; anything
 * ethers would not take as bytes32 and bytes goes through ethers, which throws as it always did.
 */
export function deriveTemplateIdV1(endpointId: string, encodedParameters: string): string {
  if (!BYTES32_PATTERN.test(endpointId) || !HEX_BYTES_PATTERN.test(encodedParameters)) {
    return deriveTemplateIdV1WithSolidityPacked(endpointId, encodedParameters);
  }
  return `0x${jsSha3.keccak256(Buffer.from(endpointId.slice(2) + encodedParameters.slice(2), 'hex'))}`;
}

/** The same derivation through ethers' solidityPacked: the reference the direct one is tested against. */
export function deriveTemplateIdV1WithSolidityPacked(endpointId: string, encodedParameters: string): string {
  return solidityPackedKeccak256(['bytes32', 'bytes'], [endpointId, encodedParameters]);
}

type RequestIdCommon = {
  chainId: bigint | number | string;
  rrpAddress: string;
  requester: string;
  requesterRequestCount: bigint | number | string;
  sponsor: string;
  sponsorWallet: string;
  fulfillAddress: string;
  fulfillFunctionId: string;
  parameters: string;
};

/** requestId of makeFullRequest, as AirnodeRrpV0 computes it on chain. */
export function deriveFullRequestId(input: RequestIdCommon & { nodeAddress: string; endpointId: string }): string {
  return solidityPackedKeccak256(
    [
      'uint256',
      'address',
      'address',
      'uint256',
      'address',
      'bytes32',
      'address',
      'address',
      'address',
      'bytes4',
      'bytes',
    ],
    [
      input.chainId,
      input.rrpAddress,
      input.requester,
      input.requesterRequestCount,
      input.nodeAddress,
      input.endpointId,
      input.sponsor,
      input.sponsorWallet,
      input.fulfillAddress,
      input.fulfillFunctionId,
      input.parameters,
    ],
  );
}

/** requestId of makeTemplateRequest, as AirnodeRrpV0 computes it on chain. */
export function deriveTemplateRequestId(input: RequestIdCommon & { templateId: string }): string {
  return solidityPackedKeccak256(
    ['uint256', 'address', 'address', 'uint256', 'bytes32', 'address', 'address', 'address', 'bytes4', 'bytes'],
    [
      input.chainId,
      input.rrpAddress,
      input.requester,
      input.requesterRequestCount,
      input.templateId,
      input.sponsor,
      input.sponsorWallet,
      input.fulfillAddress,
      input.fulfillFunctionId,
      input.parameters,
    ],
  );
}

export type CloudProviderIdentity = { type: string; region?: string | undefined; projectId?: string | undefined };

/** deploymentId = type + first 8 hex chars of sha256(type ‖ region ‖ projectId ‖ nodeAddress ‖ stage ‖ nodeVersion). */
export function deriveDeploymentId(
  cloudProvider: CloudProviderIdentity,
  nodeAddress: string,
  stage: string,
  nodeVersion: string,
): string {
  const parts = [cloudProvider.type];
  if (cloudProvider.type !== 'local' && cloudProvider.region) parts.push(cloudProvider.region);
  if (cloudProvider.type === 'gcp' && cloudProvider.projectId) parts.push(cloudProvider.projectId);
  parts.push(nodeAddress, stage, nodeVersion);
  return cloudProvider.type + sha256(toUtf8Bytes(parts.join(''))).slice(2, 10);
}

/** A 32-byte hex word: request ids, endpoint ids, template ids, log topics. */
export const BYTES32_PATTERN = /^0x[0-9a-fA-F]{64}$/;

/** Bytes as ethers' getBytes takes a string: 0x, then whole bytes of hex digits in either case. */
export const HEX_BYTES_PATTERN = /^0x(?:[0-9a-fA-F]{2})*$/;

export function isBytes32(value: unknown): value is string {
  return typeof value === 'string' && BYTES32_PATTERN.test(value);
}
