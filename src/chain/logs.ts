// Reading the protocol's event logs: block number, eth_getLogs over the history window (split into
// smaller ranges when a provider refuses a large one) and decoding into requests (airnode-facts §3 2a–2c).
import { getAddress, zeroPadValue } from 'ethers';
import { rrpInterface, topics } from './contracts.js';
import { asQuantity, type RpcClient, RpcError, toQuantity } from './rpc.js';
import type { ApiCallRequest, LogPosition, WithdrawalRequest } from './types.js';

export type RawLog = {
  address: string;
  topics: string[];
  data: string;
  blockNumber: string;
  logIndex: string;
  transactionHash: string;
  removed?: boolean;
};

export async function fetchBlockNumber(client: RpcClient): Promise<number> {
  return Number(asQuantity(await client.request('eth_blockNumber', []), 'eth_blockNumber'));
}

/** The block window of a cycle: `blockHistoryLimit` back from the current block. */
export function logWindow(currentBlock: number, blockHistoryLimit: number): { fromBlock: number; toBlock: number } {
  return { fromBlock: Math.max(0, currentBlock - blockHistoryLimit), toBlock: currentBlock };
}

// Providers word their range limits differently; all of these mean "ask for less".
const RANGE_LIMIT = /range|limit|too many|exceed|10000|response size|query returned more/i;

/**
 * All logs of the RRP contract with `node` as first indexed topic in [fromBlock, toBlock]. On a range-limit
 * error the range is halved and both halves fetched, down to single blocks.
 */
export async function fetchNodeLogs(
  client: RpcClient,
  input: { rrpAddress: string; nodeAddress: string; fromBlock: number; toBlock: number; maxRange?: number },
): Promise<RawLog[]> {
  const topic1 = zeroPadValue(input.nodeAddress, 32).toLowerCase();
  const fetchRange = async (from: number, to: number): Promise<RawLog[]> => {
    if (input.maxRange && to - from + 1 > input.maxRange) return split(from, to);
    try {
      const result = await client.request<unknown>('eth_getLogs', [
        { address: input.rrpAddress, fromBlock: toQuantity(from), toBlock: toQuantity(to), topics: [null, topic1] },
      ]);
      if (!Array.isArray(result)) throw new Error('eth_getLogs: answer is not an array');
      return result as RawLog[];
    } catch (error) {
      if (error instanceof RpcError && RANGE_LIMIT.test(error.message) && to > from) return split(from, to);
      throw error;
    }
  };
  const split = async (from: number, to: number): Promise<RawLog[]> => {
    const middle = Math.floor((from + to) / 2);
    const first = await fetchRange(from, middle);
    const second = await fetchRange(middle + 1, to);
    return [...first, ...second];
  };
  if (input.toBlock < input.fromBlock) return [];
  return fetchRange(input.fromBlock, input.toBlock);
}

export type DecodedLogs = {
  apiCalls: ApiCallRequest[];
  withdrawals: WithdrawalRequest[];
  /** Request ids with a FulfilledRequest or FailedRequest in the window. */
  finishedRequestIds: Set<string>;
  fulfilledWithdrawalIds: Set<string>;
  /** Logs that could not be decoded (a lying provider, or a foreign event). */
  undecodable: number;
};

function positionOf(log: RawLog): LogPosition {
  return {
    blockNumber: Number(asQuantity(log.blockNumber, 'log.blockNumber')),
    logIndex: Number(asQuantity(log.logIndex, 'log.logIndex')),
    transactionHash: String(log.transactionHash),
  };
}

/** Decodes raw logs; logs from another address than `rrpAddress` or malformed ones are counted and skipped. */
export function decodeLogs(logs: RawLog[], rrpAddress: string): DecodedLogs {
  const decoded: DecodedLogs = {
    apiCalls: [],
    withdrawals: [],
    finishedRequestIds: new Set(),
    fulfilledWithdrawalIds: new Set(),
    undecodable: 0,
  };
  const rrp = rrpAddress.toLowerCase();
  for (const log of logs) {
    try {
      if (log.removed) continue;
      if (typeof log.address !== 'string' || log.address.toLowerCase() !== rrp) throw new Error('foreign address');
      const parsed = rrpInterface.parseLog({ topics: log.topics, data: log.data });
      if (!parsed) throw new Error('unknown event');
      const args = parsed.args;
      switch (parsed.topic) {
        case topics.MadeFullRequest:
        case topics.MadeTemplateRequest: {
          const isFull = parsed.topic === topics.MadeFullRequest;
          decoded.apiCalls.push({
            ...positionOf(log),
            type: isFull ? 'full' : 'template',
            id: String(args.getValue('requestId')).toLowerCase(),
            nodeAddress: getAddress(args.getValue('airnode')),
            requesterRequestCount: String(args.getValue('requesterRequestCount')),
            chainId: String(args.getValue('chainId')),
            requester: getAddress(args.getValue('requester')),
            endpointId: isFull ? String(args.getValue('endpointId')).toLowerCase() : null,
            templateId: isFull ? null : String(args.getValue('templateId')).toLowerCase(),
            sponsor: getAddress(args.getValue('sponsor')),
            sponsorWallet: getAddress(args.getValue('sponsorWallet')),
            fulfillAddress: getAddress(args.getValue('fulfillAddress')),
            fulfillFunctionId: String(args.getValue('fulfillFunctionId')).toLowerCase(),
            encodedParameters: String(args.getValue('parameters')),
            parameters: {},
          });
          break;
        }
        case topics.FulfilledRequest:
        case topics.FailedRequest:
          decoded.finishedRequestIds.add(String(args.getValue('requestId')).toLowerCase());
          break;
        case topics.RequestedWithdrawal:
          decoded.withdrawals.push({
            ...positionOf(log),
            id: String(args.getValue('withdrawalRequestId')).toLowerCase(),
            nodeAddress: getAddress(args.getValue('airnode')),
            sponsor: getAddress(args.getValue('sponsor')),
            sponsorWallet: getAddress(args.getValue('sponsorWallet')),
          });
          break;
        case topics.FulfilledWithdrawal:
          decoded.fulfilledWithdrawalIds.add(String(args.getValue('withdrawalRequestId')).toLowerCase());
          break;
        default:
          // Other events of the contract (e.g. CreatedTemplate is not indexed by node) are not ours.
          break;
      }
    } catch {
      decoded.undecodable++;
    }
  }
  return decoded;
}

export function byLogPosition(
  a: Pick<LogPosition, 'blockNumber' | 'logIndex'>,
  b: Pick<LogPosition, 'blockNumber' | 'logIndex'>,
): number {
  return a.blockNumber - b.blockNumber || a.logIndex - b.logIndex;
}
