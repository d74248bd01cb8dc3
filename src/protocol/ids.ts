// Identifier derivations of the request-response protocol, byte-compatible with Airnode 0.15
// (airnode-facts §1). Pure functions: no I/O, no providers.
import { AbiCoder, keccak256, sha256, solidityPackedKeccak256, toUtf8Bytes } from 'ethers';
import { BYTES32_PATTERN, deriveTemplateIdV1FromCheckedHex, HEX_BYTES_PATTERN } from './direct-ids.js';

// The endpoint id and the bytes32 check live in direct-ids.ts (no ethers), so config validation loads without ethers.
export { BYTES32_PATTERN, deriveEndpointId, HEX_BYTES_PATTERN, isBytes32 } from './direct-ids.js';

const abi = AbiCoder.defaultAbiCoder();

/** The same derivation through ethers' general ABI coder: the reference the direct encoding is tested against. */
export function deriveEndpointIdWithAbiCoder(oisTitle: string, endpointName: string): string {
  return keccak256(abi.encode(['string', 'string'], [oisTitle, endpointName]));
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
  return deriveTemplateIdV1FromCheckedHex(endpointId, encodedParameters);
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
