// The chain-side data model of the request-response cycle. Everything here is plain JSON (strings for
// big numbers) so that a shard can cross a process boundary unchanged.

import type { Amount, ChainConfig, GasPriceStrategy } from '../config/index.js';

export type { Amount, ChainConfig, GasPriceStrategy };

export const DEFAULT_BLOCK_HISTORY_LIMIT = 300;
export const DEFAULT_MIN_CONFIRMATIONS = 0;
export const MAXIMUM_ONCHAIN_ERROR_LENGTH = 100;
export const BATCH_SIZE = 10;

export function rrpAddressOf(chain: ChainConfig): string {
  const address = chain.contracts.NodeRrp;
  if (!address) throw new Error(`Chain ${chain.id} has no NodeRrp contract address`);
  return address;
}

export function dryRunAddressOf(chain: ChainConfig): string | undefined {
  return chain.contracts.NodeRrpDryRun;
}

/** Where a log sits on chain; orders requests of one sponsor (nonce order). */
export type LogPosition = { blockNumber: number; logIndex: number; transactionHash: string };

export type ApiCallRequest = LogPosition & {
  type: 'full' | 'template';
  id: string;
  nodeAddress: string;
  requesterRequestCount: string;
  chainId: string;
  requester: string;
  /** Set for full requests; for template requests once the template is resolved. */
  endpointId: string | null;
  templateId: string | null;
  sponsor: string;
  sponsorWallet: string;
  fulfillAddress: string;
  fulfillFunctionId: string;
  /** Node-ABI encoded parameters of the request itself. */
  encodedParameters: string;
  /** Decoded parameters: template parameters overridden by the request's own. */
  parameters: Record<string, unknown>;
  template?: { nodeAddress: string; endpointId: string; encodedParameters: string };
};

export type WithdrawalRequest = LogPosition & {
  id: string;
  nodeAddress: string;
  sponsor: string;
  sponsorWallet: string;
};

/** A request that survived discovery, with the trigger it matched. */
export type ServableApiCall = ApiCallRequest & {
  endpointId: string;
  oisTitle: string;
  endpointName: string;
  cacheResponses: boolean;
};
