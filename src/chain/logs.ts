// Reading the protocol's event logs: block number, eth_getLogs over the history window (split into
// smaller ranges when a provider refuses a large one) and decoding into requests (airnode-facts §3 2a–2c).
import { getAddress, zeroPadValue } from 'ethers';
import { isBytes32 } from '../protocol/ids.js';
import { topics } from './contracts.js';
import { asQuantity, type RpcClient, RpcError, RpcTransportError, toQuantity } from './rpc.js';
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

/** A block's timestamp (seconds since the epoch, one eth_getBlockByNumber); throws when the provider lacks the block. */
export async function fetchBlockTimestamp(client: RpcClient, block: number): Promise<number> {
  const answer = await client.request<{ timestamp?: unknown } | null>('eth_getBlockByNumber', [
    toQuantity(block),
    false,
  ]);
  if (!answer) throw new Error(`block ${block} not found`);
  const timestamp = Number(asQuantity(answer.timestamp, 'block.timestamp'));
  if (!Number.isSafeInteger(timestamp)) throw new Error(`block ${block} has no usable timestamp`);
  return timestamp;
}

/** The block window of a cycle: `blockHistoryLimit` back from the current block. */
export function logWindow(currentBlock: number, blockHistoryLimit: number): { fromBlock: number; toBlock: number } {
  return { fromBlock: Math.max(0, currentBlock - blockHistoryLimit), toBlock: currentBlock };
}

// Providers word their range limits differently; all of these mean "ask for less".
const RANGE_LIMIT = /range|limit|too many|exceed|10000|response size|query returned more/i;

/**
 * All logs of the RRP contract with `node` as first indexed topic in [fromBlock, toBlock] (and `requestId` as the
 * second, when given: the request events of one request). On a range-limit error the range is halved and both
 * halves fetched, down to single blocks.
 */
export async function fetchNodeLogs(
  client: RpcClient,
  input: {
    rrpAddress: string;
    nodeAddress: string;
    fromBlock: number;
    toBlock: number;
    maxRange?: number;
    requestId?: string;
  },
): Promise<RawLog[]> {
  const topic1 = zeroPadValue(input.nodeAddress, 32).toLowerCase();
  const topicFilter = input.requestId ? [null, topic1, input.requestId.toLowerCase()] : [null, topic1];
  const fetchRange = async (from: number, to: number): Promise<RawLog[]> => {
    if (input.maxRange && to - from + 1 > input.maxRange) return split(from, to);
    try {
      const result = await client.request<unknown>('eth_getLogs', [
        { address: input.rrpAddress, fromBlock: toQuantity(from), toBlock: toQuantity(to), topics: topicFilter },
      ]);
      if (!Array.isArray(result)) throw new RpcTransportError('eth_getLogs: answer is not an array');
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

// Word-level decoding of the protocol's events: ethers' generic ABI decoder costs about a millisecond per
// request log, which dominated discovery with a thousand pending requests. The layouts are fixed by the
// contract (airnode-facts §2); anything that does not fit them exactly is rejected as undecodable.
const WORD = 64; // hex characters

function word(data: string, index: number): string {
  const start = 2 + index * WORD;
  if (data.length < start + WORD) throw new Error('log data too short');
  return data.slice(start, start + WORD);
}

function topicWord(topic: unknown): string {
  if (!isBytes32(topic)) throw new Error('bad topic');
  return topic.slice(2).toLowerCase();
}

function addressFromWord(hex: string): string {
  if (!/^0{24}[0-9a-fA-F]{40}$/.test(hex)) throw new Error('not an address word');
  return getAddress(`0x${hex.slice(24)}`);
}

function uintFromWord(hex: string): string {
  return BigInt(`0x${hex}`).toString();
}

/** Made{Full,Template}Request data: 8 static words, then the `parameters` bytes at offset 0x120. */
function decodeRequestData(data: string) {
  if (!/^0x([0-9a-fA-F]{2})*$/.test(data)) throw new Error('log data is not hex');
  const selectorWord = word(data, 7);
  if (!/^[0-9a-fA-F]{8}0{56}$/.test(selectorWord)) throw new Error('not a bytes4 word');
  if (BigInt(`0x${word(data, 8)}`) !== 0x120n) throw new Error('unexpected parameters offset');
  const length = Number(BigInt(`0x${word(data, 9)}`));
  const start = 2 + 10 * WORD;
  const padded = Math.ceil(length / 32) * WORD;
  if (data.length !== start + padded) throw new Error('parameters length mismatch');
  return {
    requesterRequestCount: uintFromWord(word(data, 0)),
    chainId: uintFromWord(word(data, 1)),
    requester: addressFromWord(word(data, 2)),
    idWord: `0x${word(data, 3).toLowerCase()}`,
    sponsor: addressFromWord(word(data, 4)),
    sponsorWallet: addressFromWord(word(data, 5)),
    fulfillAddress: addressFromWord(word(data, 6)),
    fulfillFunctionId: `0x${selectorWord.slice(0, 8).toLowerCase()}`,
    encodedParameters: `0x${data.slice(start, start + length * 2).toLowerCase()}`,
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
      if (typeof log !== 'object' || log === null) throw new Error('not a log');
      if (log.removed) continue;
      if (typeof log.address !== 'string' || log.address.toLowerCase() !== rrp) throw new Error('foreign address');
      if (!Array.isArray(log.topics) || typeof log.data !== 'string') throw new Error('malformed log');
      const topic0 = String(log.topics[0]).toLowerCase();
      switch (topic0) {
        case topics.MadeFullRequest:
        case topics.MadeTemplateRequest: {
          if (log.topics.length !== 3) throw new Error('wrong topic count');
          const isFull = topic0 === topics.MadeFullRequest;
          const fields = decodeRequestData(log.data);
          decoded.apiCalls.push({
            ...positionOf(log),
            type: isFull ? 'full' : 'template',
            id: `0x${topicWord(log.topics[2])}`,
            nodeAddress: addressFromWord(topicWord(log.topics[1])),
            requesterRequestCount: fields.requesterRequestCount,
            chainId: fields.chainId,
            requester: fields.requester,
            endpointId: isFull ? fields.idWord : null,
            templateId: isFull ? null : fields.idWord,
            sponsor: fields.sponsor,
            sponsorWallet: fields.sponsorWallet,
            fulfillAddress: fields.fulfillAddress,
            fulfillFunctionId: fields.fulfillFunctionId,
            encodedParameters: fields.encodedParameters,
            parameters: {},
          });
          break;
        }
        case topics.FulfilledRequest:
        case topics.FailedRequest:
          if (log.topics.length !== 3) throw new Error('wrong topic count');
          decoded.finishedRequestIds.add(`0x${topicWord(log.topics[2])}`);
          break;
        case topics.RequestedWithdrawal:
          if (log.topics.length !== 4 || log.data.length !== 2 + WORD) throw new Error('malformed withdrawal');
          decoded.withdrawals.push({
            ...positionOf(log),
            id: `0x${topicWord(log.topics[3])}`,
            nodeAddress: addressFromWord(topicWord(log.topics[1])),
            sponsor: addressFromWord(topicWord(log.topics[2])),
            sponsorWallet: addressFromWord(word(log.data, 0)),
          });
          break;
        case topics.FulfilledWithdrawal:
          if (log.topics.length !== 4) throw new Error('wrong topic count');
          decoded.fulfilledWithdrawalIds.add(`0x${topicWord(log.topics[3])}`);
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
