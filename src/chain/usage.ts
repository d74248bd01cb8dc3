// Usage to bill from, read from the chain itself (`oracle-node usage`): over a block range, per sponsor, per
// requester and per endpoint, the requests made to the node, the ones it fulfilled or failed, and the gas their
// sponsor wallets paid for those transactions (each receipt's gasUsed x effectiveGasPrice). Nothing the node
// recorded is needed: the events and receipts are the provider's bill and the sponsors' money, so a restart, a
// second node or a lost ConfigMap change nothing. Read-only, through the RpcClient (bounded in time and size).
import { topics } from './contracts.js';
import { decodeLogs, fetchBlockNumber, fetchBlockTimestamp, fetchNodeLogs, type RawLog } from './logs.js';
import { asQuantity, type BatchEntry, MAX_CALLS_PER_BATCH, RpcBatchRefused, type RpcClient } from './rpc.js';
import { type LocalTemplate, resolveTemplates } from './templates.js';
import { type ApiCallRequest, type ChainConfig, rrpAddressOf } from './types.js';

export type UsageCounts = { requests: number; fulfilled: number; failed: number; gasPaidWei: bigint };

export type UsageReport = {
  chainId: string;
  fromBlock: number;
  toBlock: number;
  sponsors: ({ sponsor: string } & UsageCounts)[];
  requesters: ({ requester: string } & UsageCounts)[];
  endpoints: ({ endpointId: string } & UsageCounts)[];
  totals: UsageCounts;
};

/** A FulfilledRequest or FailedRequest event of the node. */
export type RequestFinish = { requestId: string; kind: 'fulfilled' | 'failed'; transactionHash: string; block: number };

/** Who a finish is billed to when its request was made before the logs read (not attributable). */
export const UNKNOWN = 'unknown';

const zero = (): UsageCounts => ({ requests: 0, fulfilled: 0, failed: 0, gasPaidWei: 0n });

/**
 * The report of a range, from the node's requests (made in the range or within the look-back before it, so that a
 * request fulfilled in the range is attributed to its sponsor), its finishes and the gas of their transactions.
 * Requests count when made in [fromBlock, toBlock], finishes and gas when their event is in it. Pure.
 */
export function summarizeUsage(input: {
  chainId: string;
  fromBlock: number;
  toBlock: number;
  requests: Pick<ApiCallRequest, 'id' | 'blockNumber' | 'sponsor' | 'requester' | 'endpointId'>[];
  finishes: RequestFinish[];
  gasByTransaction: ReadonlyMap<string, bigint>;
}): UsageReport {
  const sponsors = new Map<string, UsageCounts>();
  const requesters = new Map<string, UsageCounts>();
  const endpoints = new Map<string, UsageCounts>();
  const totals = zero();
  const rowIn = (table: Map<string, UsageCounts>, key: string): UsageCounts => {
    const row = table.get(key) ?? zero();
    table.set(key, row);
    return row;
  };
  const rowsOf = (request: { sponsor: string; requester: string; endpointId: string | null } | undefined) => [
    rowIn(sponsors, request?.sponsor ?? UNKNOWN),
    rowIn(requesters, request?.requester ?? UNKNOWN),
    rowIn(endpoints, request?.endpointId?.toLowerCase() ?? UNKNOWN),
  ];
  const inRange = (block: number) => block >= input.fromBlock && block <= input.toBlock;
  const byId = new Map(input.requests.map((request) => [request.id.toLowerCase(), request]));
  for (const request of input.requests) {
    if (!inRange(request.blockNumber)) continue;
    totals.requests++;
    for (const row of rowsOf(request)) row.requests++;
  }
  // One finish per request (the contract allows one); a provider repeating a log is not billed twice.
  const seen = new Set<string>();
  for (const finish of input.finishes) {
    const id = finish.requestId.toLowerCase();
    if (!inRange(finish.block) || seen.has(id)) continue;
    seen.add(id);
    const gas = input.gasByTransaction.get(finish.transactionHash.toLowerCase()) ?? 0n;
    totals[finish.kind]++;
    totals.gasPaidWei += gas;
    for (const row of rowsOf(byId.get(id))) {
      row[finish.kind]++;
      row.gasPaidWei += gas;
    }
  }
  const sorted = <K extends string>(map: Map<string, UsageCounts>, key: K) =>
    [...map.entries()]
      .map(([id, counts]) => ({ [key]: id, ...counts }) as { [P in K]: string } & UsageCounts)
      .sort(
        (a, b) => b.requests - a.requests || (b.gasPaidWei > a.gasPaidWei ? 1 : b.gasPaidWei < a.gasPaidWei ? -1 : 0),
      );
  return {
    chainId: input.chainId,
    fromBlock: input.fromBlock,
    toBlock: input.toBlock,
    sponsors: sorted(sponsors, 'sponsor'),
    requesters: sorted(requesters, 'requester'),
    endpoints: sorted(endpoints, 'endpointId'),
    totals,
  };
}

function finishOf(log: RawLog): RequestFinish | undefined {
  const topic0 = String(log.topics?.[0]).toLowerCase();
  if (topic0 !== topics.FulfilledRequest && topic0 !== topics.FailedRequest) return undefined;
  const requestId = log.topics[2];
  if (typeof requestId !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(requestId)) return undefined;
  return {
    requestId: requestId.toLowerCase(),
    kind: topic0 === topics.FulfilledRequest ? 'fulfilled' : 'failed',
    transactionHash: String(log.transactionHash).toLowerCase(),
    block: Number(asQuantity(log.blockNumber, 'log.blockNumber')),
  };
}

/** gasUsed x effectiveGasPrice of a receipt (gasPrice before London); undefined when it has neither. */
export function gasPaidOf(receipt: unknown): bigint | undefined {
  if (typeof receipt !== 'object' || receipt === null) return undefined;
  const { gasUsed, effectiveGasPrice, gasPrice } = receipt as Record<string, unknown>;
  try {
    const price = effectiveGasPrice ?? gasPrice;
    if (price === undefined || gasUsed === undefined) return undefined;
    return asQuantity(gasUsed, 'gasUsed') * asQuantity(price, 'effectiveGasPrice');
  } catch {
    return undefined;
  }
}

/** Receipts' gas of the transactions, in batches; one at a time from a provider that refuses batches. */
async function gasOfTransactions(client: RpcClient, hashes: string[]): Promise<Map<string, bigint>> {
  const gas = new Map<string, bigint>();
  let batches = true;
  for (let i = 0; i < hashes.length; i += MAX_CALLS_PER_BATCH) {
    const chunk = hashes.slice(i, i + MAX_CALLS_PER_BATCH);
    const calls = chunk.map((hash) => ({ method: 'eth_getTransactionReceipt', params: [hash] }));
    let entries: BatchEntry[] | undefined;
    if (batches) {
      try {
        entries = await client.batch(calls);
      } catch (error) {
        if (!(error instanceof RpcBatchRefused)) throw error;
        batches = false;
      }
    }
    entries ??= await Promise.all(
      calls.map(
        async (call): Promise<BatchEntry> => ({ ok: true, result: await client.request(call.method, call.params) }),
      ),
    );
    entries.forEach((entry, j) => {
      const paid = entry.ok ? gasPaidOf(entry.result) : undefined;
      if (paid === undefined) throw new Error(`no receipt with gas for transaction ${chunk[j]}`);
      gas.set(chunk[j]!, paid);
    });
  }
  return gas;
}

/** The first block whose timestamp is at or after `unixSeconds` (binary search: about log2(head) reads). */
export async function firstBlockAtOrAfter(client: RpcClient, unixSeconds: number, head: number): Promise<number> {
  const timestampOf = (block: number): Promise<number> => fetchBlockTimestamp(client, block);
  let low = 0;
  let high = head;
  if ((await timestampOf(head)) < unixSeconds) return head + 1;
  while (low < high) {
    const middle = Math.floor((low + high) / 2);
    if ((await timestampOf(middle)) < unixSeconds) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * Reads the node's events over [fromBlock, toBlock] (and its requests `lookbackBlocks` before, the node's own
 * blockHistoryLimit: it never serves an older request) and the receipts of its fulfil and fail transactions.
 */
export async function readUsage(
  client: RpcClient,
  input: {
    chain: ChainConfig;
    nodeAddress: string;
    fromBlock: number;
    /** The head when absent. */
    toBlock?: number;
    lookbackBlocks: number;
    localTemplates: LocalTemplate[];
    maxLogRange?: number;
  },
): Promise<UsageReport> {
  const rrpAddress = rrpAddressOf(input.chain);
  const toBlock = input.toBlock ?? (await fetchBlockNumber(client));
  const logs = (
    await fetchNodeLogs(client, {
      rrpAddress,
      nodeAddress: input.nodeAddress,
      fromBlock: Math.max(0, input.fromBlock - input.lookbackBlocks),
      toBlock,
      ...(input.maxLogRange ? { maxRange: input.maxLogRange } : {}),
    })
  ).filter((log) => typeof log === 'object' && log !== null && !log.removed);
  const requests = decodeLogs(logs, rrpAddress).apiCalls;
  const templateIds = [...new Set(requests.flatMap((request) => (request.templateId ? [request.templateId] : [])))];
  if (templateIds.length) {
    const templates = await resolveTemplates(client, {
      rrpAddress,
      nodeAddress: input.nodeAddress,
      templateIds,
      localTemplates: input.localTemplates,
    });
    for (const request of requests)
      if (!request.endpointId && request.templateId)
        request.endpointId = templates.get(request.templateId.toLowerCase())?.endpointId ?? null;
  }
  const finishes = logs
    .flatMap((log) => (log.address.toLowerCase() === rrpAddress.toLowerCase() ? [finishOf(log)] : []))
    .filter((finish): finish is RequestFinish => finish !== undefined && finish.block >= input.fromBlock);
  const gasByTransaction = await gasOfTransactions(client, [
    ...new Set(finishes.map((finish) => finish.transactionHash)),
  ]);
  return summarizeUsage({
    chainId: input.chain.id,
    fromBlock: input.fromBlock,
    toBlock,
    requests,
    finishes,
    gasByTransaction,
  });
}
