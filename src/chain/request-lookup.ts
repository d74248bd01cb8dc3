// One request as the chain tells it, for `oracle-node request <requestId>`: its Made*Request event, its
// FulfilledRequest or FailedRequest event, whether the contract still awaits it, whether the node may serve its
// requester (the chain's authorizers), and its sponsor wallet's balance. Read-only; every call goes through the
// RpcClient (bounded in time and size).
import { authorizeRequests } from './authorization.js';
import { callView } from './calls.js';
import { rrpInterface, topics } from './contracts.js';
import { decodeLogs, fetchBlockNumber, fetchNodeLogs, type RawLog } from './logs.js';
import { asQuantity, type RpcClient } from './rpc.js';
import { type LocalTemplate, resolveTemplates } from './templates.js';
import { type ApiCallRequest, type ChainConfig, rrpAddressOf } from './types.js';

export type RequestFinish = {
  kind: 'fulfilled' | 'failed';
  transactionHash: string;
  blockNumber: number;
  /** The FailedRequest's message (public: it is on chain). */
  errorMessage?: string;
};

export type RequestOnChain = {
  chainId: string;
  currentBlock: number;
  /** The block range searched for the request's events. */
  fromBlock: number;
  made?: ApiCallRequest;
  finished?: RequestFinish;
  /** requestIsAwaitingFulfillment: true while neither fulfilled nor failed (also for an id never made). */
  awaiting: boolean;
  /** The endpoint the request names (for a template request, the template's); undefined when unknown. */
  endpointId?: string;
  /** Whether the chain's authorizers let the node serve it; undefined when it could not be told. */
  authorized?: boolean;
  sponsorWalletBalanceWei?: string;
};

function finishOf(log: RawLog): RequestFinish | undefined {
  const topic0 = String(log.topics?.[0]).toLowerCase();
  if (topic0 !== topics.FulfilledRequest && topic0 !== topics.FailedRequest) return undefined;
  const finish: RequestFinish = {
    kind: topic0 === topics.FulfilledRequest ? 'fulfilled' : 'failed',
    transactionHash: String(log.transactionHash),
    blockNumber: Number(asQuantity(log.blockNumber, 'log.blockNumber')),
  };
  if (finish.kind === 'failed') {
    try {
      const parsed = rrpInterface.parseLog({ topics: log.topics, data: log.data });
      const message = parsed?.args.getValue('errorMessage');
      if (typeof message === 'string') finish.errorMessage = message.slice(0, 300);
    } catch {
      // an undecodable message is left out
    }
  }
  return finish;
}

export async function lookUpRequest(
  client: RpcClient,
  input: {
    chain: ChainConfig;
    nodeAddress: string;
    requestId: string;
    /** How many blocks back from the current one to search (the node itself looks back blockHistoryLimit). */
    blocks: number;
    localTemplates: LocalTemplate[];
    maxLogRange?: number;
  },
): Promise<RequestOnChain> {
  const { chain, nodeAddress, requestId } = input;
  const rrpAddress = rrpAddressOf(chain);
  const currentBlock = await fetchBlockNumber(client);
  const fromBlock = Math.max(0, currentBlock - input.blocks);
  const logs = await fetchNodeLogs(client, {
    rrpAddress,
    nodeAddress,
    requestId,
    fromBlock,
    toBlock: currentBlock,
    ...(input.maxLogRange ? { maxRange: input.maxLogRange } : {}),
  });
  const ours = logs.filter((log) => typeof log === 'object' && log !== null && !log.removed);
  const made = decodeLogs(ours, rrpAddress).apiCalls.find((call) => call.id === requestId.toLowerCase());
  const finished = ours.map(finishOf).find((finish) => finish !== undefined);
  const [awaiting] = await callView<[boolean]>(
    client,
    { address: rrpAddress, iface: rrpInterface },
    'requestIsAwaitingFulfillment',
    [requestId],
  );
  const result: RequestOnChain = {
    chainId: chain.id,
    currentBlock,
    fromBlock,
    awaiting,
    ...(finished ? { finished } : {}),
  };
  if (!made) return result;
  result.made = made;
  let endpointId = made.endpointId ?? undefined;
  if (!endpointId && made.templateId) {
    const templates = await resolveTemplates(client, {
      rrpAddress,
      nodeAddress,
      templateIds: [made.templateId],
      localTemplates: input.localTemplates,
    });
    endpointId = templates.get(made.templateId)?.endpointId;
  }
  if (endpointId) {
    result.endpointId = endpointId.toLowerCase();
    const allowed = await authorizeRequests(client, {
      chain,
      rrpAddress,
      nodeAddress,
      requests: [{ id: made.id, endpointId, sponsor: made.sponsor, requester: made.requester }],
    });
    result.authorized = allowed.has(made.id);
  }
  const balance = await client.request('eth_getBalance', [made.sponsorWallet, 'latest']);
  if (typeof balance === 'string' && /^0x[0-9a-fA-F]{1,64}$/.test(balance))
    result.sponsorWalletBalanceWei = BigInt(balance).toString();
  return result;
}
