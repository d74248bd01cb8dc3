// Discovery on one provider (airnode-facts §3 step 2): logs up to the provider's head, decoding, templates,
// verification and authorization. The head is read and judged against the other providers' first
// (src/chain/provider-health.ts), so a provider's logs are read only once its head is trusted. Any RPC failure
// rejects; the caller isolates providers from each other.
import { authorizeRequests } from './authorization.js';
import type { ChainLogStore } from './log-store.js';
import { decodeLogs, fetchNodeLogs, logWindow, type RawLog } from './logs.js';
import {
  type DiscoveredApiCall,
  type DroppedRequest,
  discoverRequests,
  pendingRequests,
  type RrpTrigger,
} from './requests.js';
import type { RpcClient } from './rpc.js';
import { type LocalTemplate, resolveTemplates } from './templates.js';
import { type ChainConfig, DEFAULT_BLOCK_HISTORY_LIMIT, rrpAddressOf, type WithdrawalRequest } from './types.js';

export type ProviderDiscovery = {
  currentBlock: number;
  apiCalls: DiscoveredApiCall[];
  withdrawals: WithdrawalRequest[];
  dropped: DroppedRequest[];
  undecodableLogs: number;
  /** When the authorizers were asked (epoch ms), for the requests' traces. */
  authorization?: { startMs: number; endMs: number };
};

export type DiscoveryOptions = {
  chain: ChainConfig;
  nodeAddress: string;
  triggers: RrpTrigger[];
  localTemplates: LocalTemplate[];
  decodeParameters: (encoded: string) => Record<string, unknown>;
  sponsorWalletOf: (sponsor: string) => string;
  /** Largest block range per eth_getLogs request (for providers with a known limit). */
  maxLogRange?: number;
  /**
   * In a coordinator window: the chain's log store. `remember` (the first cycle): the provider reads the whole
   * history window and the store keeps it; `poll`: the logs come from the store, which reads only the new blocks
   * (src/chain/log-store.ts).
   */
  logStore?: { store: ChainLogStore; mode: 'remember' | 'poll' };
};

/** The provider's requests up to `currentBlock`, its head as judged trustworthy for this cycle. */
export async function discoverOnProvider(
  client: RpcClient,
  options: DiscoveryOptions,
  currentBlock: number,
): Promise<ProviderDiscovery> {
  const { chain } = options;
  const rrpAddress = rrpAddressOf(chain);
  const logStore = options.logStore;
  // All logs up to the current block: fulfilments in the newest blocks must be seen too, so a request is
  // never served twice; confirmations are enforced per request afterwards (filterByMinConfirmations).
  const window = logWindow(currentBlock, chain.blockHistoryLimit ?? DEFAULT_BLOCK_HISTORY_LIMIT);
  const fetchLogs = (fromBlock: number, toBlock: number) =>
    fetchNodeLogs(client, {
      rrpAddress,
      nodeAddress: options.nodeAddress,
      fromBlock,
      toBlock,
      ...(options.maxLogRange ? { maxRange: options.maxLogRange } : {}),
    });
  let logs: RawLog[];
  if (logStore?.mode === 'poll') logs = await logStore.store.upTo(currentBlock, window.fromBlock, fetchLogs);
  else {
    logs = await fetchLogs(window.fromBlock, window.toBlock);
    logStore?.store.remember(logs, currentBlock);
  }
  const decoded = decodeLogs(logs, rrpAddress);
  // Requests must name this node; a provider that returns other logs is lying.
  decoded.apiCalls = decoded.apiCalls.filter((r) => r.nodeAddress === options.nodeAddress);
  decoded.withdrawals = decoded.withdrawals.filter((w) => w.nodeAddress === options.nodeAddress);

  const templateIds = pendingRequests(decoded)
    .apiCalls.filter((r) => r.type === 'template')
    .map((r) => r.templateId ?? '');
  const templates =
    templateIds.length === 0
      ? new Map()
      : await resolveTemplates(client, {
          rrpAddress,
          nodeAddress: options.nodeAddress,
          templateIds,
          localTemplates: options.localTemplates,
        });
  const discovered = discoverRequests({
    decoded,
    chainId: chain.id,
    rrpAddress,
    nodeAddress: options.nodeAddress,
    templates,
    triggers: options.triggers,
    decodeParameters: options.decodeParameters,
    sponsorWalletOf: options.sponsorWalletOf,
  });
  const authorizationStartMs = Date.now();
  const authorized = await authorizeRequests(client, {
    chain,
    rrpAddress,
    nodeAddress: options.nodeAddress,
    requests: discovered.apiCalls,
  });
  const dropped = [...discovered.dropped];
  const apiCalls = discovered.apiCalls.filter((call) => {
    if (authorized.has(call.id)) return true;
    dropped.push({ id: call.id, reason: 'requester is not authorized' });
    return false;
  });
  return {
    currentBlock,
    apiCalls,
    withdrawals: discovered.withdrawals,
    dropped,
    undecodableLogs: decoded.undecodable,
    authorization: { startMs: authorizationStartMs, endMs: Date.now() },
  };
}
