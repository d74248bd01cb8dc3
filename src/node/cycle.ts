// One coordinator cycle (airnode-facts §3): discovery on every (chain, provider) in parallel and
// isolated, the chain limit, aggregation by requestId across providers, the confirmation filter, then
// shards by sponsor wallet handed to an executor. Deliberate difference from the reference: each request
// is submitted once, through one provider, instead of once per provider (see docs/chain-cycle.md).

import { type DiscoveryOptions, discoverOnProvider, type ProviderDiscovery } from '../chain/discovery.js';
import { byLogPosition } from '../chain/logs.js';
import {
  headFaults,
  MAX_PROVIDER_LAG_BLOCKS,
  type ProviderFault,
  type ProviderMemory,
  processProviderMemory,
} from '../chain/provider-health.js';
import { applyChainLimit, type DiscoveredApiCall, filterByMinConfirmations } from '../chain/requests.js';
import { RpcAnswerTooLarge, RpcClient, withTimeout } from '../chain/rpc.js';
import { type SponsorWallets, sponsorWallets } from '../chain/sponsor-wallets.js';
import { DEFAULT_MIN_CONFIRMATIONS, type WithdrawalRequest } from '../chain/types.js';
import { errorMessage } from '../common/errors.js';
import type { Config } from '../config/index.js';
import type { ShardExecutor, ShardResult } from './executor.js';
import type { Logger } from './logger.js';
import { decodeParameters } from './ois-adapter.js';
import { requestedMinConfirmations, SHARD_FORMAT, type ShardInput, type ShardOutput } from './shard.js';

/** Budget of one provider's discovery (the reference's initializeProvider worker). */
export const PROVIDER_DISCOVERY_TIMEOUT_MS = 20_000;

export type CycleDeps = {
  executor: ShardExecutor;
  logger: Logger;
  wallets?: SponsorWallets;
  rpcClient?: (url: string) => RpcClient;
  /** Called with every client created, e.g. to count RPC calls. */
  discoveryTimeoutMs?: number;
  maxLogRange?: number;
  /** Chain ids and heads of providers seen in earlier cycles (default: this process's). */
  providerMemory?: ProviderMemory;
};

export type ProviderSummary = {
  chainId: string;
  provider: string;
  /** Answered and fit for the cycle: only such providers serve requests. */
  ok: boolean;
  /** Why the provider was left out of this cycle (absent when ok). */
  fault?: ProviderFault;
  currentBlock?: number;
  /** Blocks behind the best head of the chain in this cycle. */
  lagBlocks?: number;
  apiCalls?: number;
  withdrawals?: number;
  dropped?: number;
  error?: string;
  rpcCalls: number;
};

export type CycleSummary = {
  providers: ProviderSummary[];
  requests: { discovered: number; servable: number; waitingForConfirmations: number; overChainLimit: number };
  shards: { total: number; failed: number };
  transactions: { fulfilled: number; failed: number; withdrawn: number; skipped: number; errors: number };
  apiCalls: number;
  cacheHits: number;
  rpcCalls: number;
  /** Slowest chain's discovery and shard phases. */
  timings: { discoveryMs: number; shardsMs: number };
  /** Balances of the sponsor wallets that sent transactions in this cycle. */
  sponsorWallets: { chainId: string; sponsorWallet: string; balanceWei: string }[];
  /** Per chain, the highest gas price its transactions were priced at in this cycle (wei, decimal). */
  gasPrices: { chainId: string; gasPriceWei: string }[];
  /** Per chain and strategy, how many times a gas price strategy failed in this cycle (each logged at WARN). */
  gasPriceStrategyFailures: { chainId: string; strategy: string; count: number }[];
  results: ShardResult[];
  /** Every request discovered, servable or not (the request log's input). */
  seen?: SeenRequest[];
};

/** A request the cycle discovered, and where it stood before any shard ran: servable, or why not. */
export type SeenRequest = {
  chainId: string;
  id: string;
  state: 'servable' | 'waitingForConfirmations' | 'overChainLimit' | 'dropped';
  reason?: string;
  sponsorWallet?: string;
  blockNumber?: number;
  /** The confirmed head (lowest current block of the healthy providers). */
  headBlock: number;
};

type ProviderState = { name: string; discovery?: ProviderDiscovery; summary: ProviderSummary };

/** A provider that answered eth_chainId with another chain's id than its chain's. */
class WrongChain extends Error {
  constructor(readonly providerChainId: bigint) {
    super(`provider is on chain ${providerChainId}`);
    this.name = 'WrongChain';
  }
}

/**
 * The providers that answered and whose head is fit for the cycle (src/chain/provider-health.ts): one syncing,
 * lagging or stuck is logged at WARN with its lag and left out, so it neither holds requests back through the
 * confirmation filter nor takes transactions. Remembers every head for the next cycle's "not moved" rule.
 */
function leaveOutBehindProviders(
  chain: Config['chains'][number],
  states: ProviderState[],
  memory: ProviderMemory,
  logger: Logger,
): (ProviderState & { discovery: ProviderDiscovery })[] {
  const answered = states.filter(
    (s): s is ProviderState & { discovery: ProviderDiscovery } => s.discovery !== undefined,
  );
  const urlOf = (name: string) => chain.providers[name]!.url;
  const faults = headFaults(
    answered.map((s) => ({
      name: s.name,
      currentBlock: s.discovery.currentBlock,
      previousBlock: memory.previousHead(chain.id, urlOf(s.name)),
    })),
  );
  const bestBlock = Math.max(0, ...answered.map((s) => s.discovery.currentBlock));
  for (const state of answered) {
    memory.rememberHead(chain.id, urlOf(state.name), state.discovery.currentBlock);
    state.summary.lagBlocks = bestBlock - state.discovery.currentBlock;
    const fault = faults.get(state.name);
    if (!fault) continue;
    state.summary.ok = false;
    state.summary.fault = fault.fault;
    state.summary.error = `${fault.fault}: ${fault.lagBlocks} blocks behind the best provider`;
    logger.warn(
      {
        chainId: chain.id,
        provider: state.name,
        fault: fault.fault,
        currentBlock: state.discovery.currentBlock,
        bestBlock: fault.bestBlock,
        lagBlocks: fault.lagBlocks,
        maxLagBlocks: MAX_PROVIDER_LAG_BLOCKS,
      },
      'provider is behind the chain; not used this cycle',
    );
  }
  return answered.filter((s) => !faults.has(s.name));
}

export async function planChainShards(
  config: Config,
  chain: Config['chains'][number],
  deps: CycleDeps & { wallets: SponsorWallets },
): Promise<{
  shards: ShardInput[];
  providers: ProviderSummary[];
  discovered: number;
  waiting: number;
  overLimit: number;
  seen: SeenRequest[];
}> {
  const makeClient = deps.rpcClient ?? ((url: string) => new RpcClient(url));
  const options: DiscoveryOptions = {
    chain,
    nodeAddress: deps.wallets.nodeAddress,
    triggers: config.triggers.rrp,
    localTemplates: config.templates,
    decodeParameters,
    sponsorWalletOf: deps.wallets.addressOf,
    ...(deps.maxLogRange ? { maxLogRange: deps.maxLogRange } : {}),
  };
  const memory = deps.providerMemory ?? processProviderMemory;
  const expectedChainId = BigInt(chain.id);
  const states: ProviderState[] = await Promise.all(
    Object.entries(chain.providers).map(async ([name, provider]): Promise<ProviderState> => {
      const client = makeClient(provider.url);
      try {
        const discovery = await withTimeout(
          (async () => {
            const providerChainId = await memory.chainIdOf(client);
            if (providerChainId !== expectedChainId) throw new WrongChain(providerChainId);
            return discoverOnProvider(client, options);
          })(),
          deps.discoveryTimeoutMs ?? PROVIDER_DISCOVERY_TIMEOUT_MS,
          `discovery on ${name}`,
        );
        return {
          name,
          discovery,
          summary: {
            chainId: chain.id,
            provider: name,
            ok: true,
            currentBlock: discovery.currentBlock,
            apiCalls: discovery.apiCalls.length,
            withdrawals: discovery.withdrawals.length,
            dropped: discovery.dropped.length,
            rpcCalls: client.calls,
          },
        };
      } catch (error) {
        const fault: ProviderFault =
          error instanceof WrongChain
            ? 'wrong-chain'
            : error instanceof RpcAnswerTooLarge
              ? 'oversized'
              : 'unavailable';
        if (error instanceof WrongChain) {
          deps.logger.error(
            { chainId: chain.id, provider: name, providerChainId: String(error.providerChainId) },
            'provider is on another network (wrong chain id); refused',
          );
        } else {
          deps.logger.warn(
            { chainId: chain.id, provider: name, fault, err: errorMessage(error) },
            'provider unavailable this cycle',
          );
        }
        return {
          name,
          summary: {
            chainId: chain.id,
            provider: name,
            ok: false,
            fault,
            error: errorMessage(error),
            rpcCalls: client.calls,
          },
        };
      }
    }),
  );
  const healthy = leaveOutBehindProviders(chain, states, memory, deps.logger);
  if (healthy.length === 0)
    return { shards: [], providers: states.map((s) => s.summary), discovered: 0, waiting: 0, overLimit: 0, seen: [] };

  const discovered = new Set(healthy.flatMap((s) => s.discovery.apiCalls.map((c) => c.id))).size;
  const limited = applyChainLimit(
    healthy.map((s) => s.discovery),
    chain.maxConcurrency,
  );
  // Aggregate by id across providers: first occurrence (config order) wins, and the request is
  // submitted once, however many providers saw it.
  const apiCalls = new Map<string, DiscoveredApiCall>();
  const withdrawals = new Map<string, WithdrawalRequest>();
  for (const discovery of limited) {
    for (const call of discovery.apiCalls) if (!apiCalls.has(call.id)) apiCalls.set(call.id, call);
    for (const withdrawal of discovery.withdrawals)
      if (!withdrawals.has(withdrawal.id)) withdrawals.set(withdrawal.id, withdrawal);
  }
  const limitedCount = apiCalls.size;
  // The confirmation filter uses the lowest current block among healthy providers: a provider that is
  // ahead must not make a request look confirmed early.
  const confirmedHead = Math.min(...healthy.map((s) => s.discovery.currentBlock));
  const { kept, waiting } = filterByMinConfirmations([...apiCalls.values()], {
    currentBlock: confirmedHead,
    chainMinConfirmations: chain.minConfirmations ?? DEFAULT_MIN_CONFIRMATIONS,
    requestedMinConfirmations: (call) => requestedMinConfirmations(config, call),
  });

  const bySponsorWallet = new Map<string, ShardInput>();
  const shardOf = (sponsor: string, sponsorWallet: string) => {
    let shard = bySponsorWallet.get(sponsorWallet);
    if (!shard) {
      shard = {
        format: SHARD_FORMAT,
        chainId: chain.id,
        sponsor,
        sponsorWallet,
        providers: healthy.map((s) => s.name),
        // The lowest head among healthy providers: every provider a shard may use knows this block.
        currentBlock: confirmedHead,
        apiCalls: [],
        withdrawals: [],
      };
      bySponsorWallet.set(sponsorWallet, shard);
    }
    return shard;
  };
  const seen = seenRequests(chain.id, confirmedHead, { kept, waiting, limited: apiCalls, healthy });
  for (const call of kept.sort(byLogPosition)) shardOf(call.sponsor, call.sponsorWallet).apiCalls.push(call);
  for (const withdrawal of [...withdrawals.values()].sort(byLogPosition)) {
    shardOf(withdrawal.sponsor, withdrawal.sponsorWallet).withdrawals.push(withdrawal);
  }
  return {
    shards: [...bySponsorWallet.values()],
    providers: states.map((s) => ({ ...s.summary })),
    discovered,
    waiting: waiting.length,
    overLimit: discovered - limitedCount,
    seen,
  };
}

function seenRequests(
  chainId: string,
  headBlock: number,
  planned: {
    kept: DiscoveredApiCall[];
    waiting: DiscoveredApiCall[];
    limited: Map<string, DiscoveredApiCall>;
    healthy: { discovery: ProviderDiscovery }[];
  },
): SeenRequest[] {
  const seen = new Map<string, SeenRequest>();
  const add = (call: DiscoveredApiCall, state: SeenRequest['state'], reason?: string) => {
    if (seen.has(call.id)) return;
    seen.set(call.id, {
      chainId,
      id: call.id,
      state,
      ...(reason ? { reason } : {}),
      sponsorWallet: call.sponsorWallet,
      blockNumber: call.blockNumber,
      headBlock,
    });
  };
  for (const call of planned.kept) add(call, 'servable');
  for (const call of planned.waiting) add(call, 'waitingForConfirmations');
  for (const { discovery } of planned.healthy)
    for (const call of discovery.apiCalls)
      if (!planned.limited.has(call.id))
        add(call, 'overChainLimit', 'over the chain limit (maxConcurrency) this cycle');
  for (const { discovery } of planned.healthy)
    for (const dropped of discovery.dropped)
      if (!seen.has(dropped.id))
        seen.set(dropped.id, { chainId, id: dropped.id, state: 'dropped', reason: dropped.reason, headBlock });
  return [...seen.values()];
}

export async function runCycle(config: Config, deps: CycleDeps): Promise<CycleSummary> {
  const wallets = deps.wallets ?? sponsorWallets(config.nodeSettings.nodeWalletMnemonic);
  const summary: CycleSummary = {
    providers: [],
    requests: { discovered: 0, servable: 0, waitingForConfirmations: 0, overChainLimit: 0 },
    shards: { total: 0, failed: 0 },
    transactions: { fulfilled: 0, failed: 0, withdrawn: 0, skipped: 0, errors: 0 },
    apiCalls: 0,
    cacheHits: 0,
    rpcCalls: 0,
    timings: { discoveryMs: 0, shardsMs: 0 },
    sponsorWallets: [],
    gasPrices: [],
    gasPriceStrategyFailures: [],
    results: [],
  };
  const seen: SeenRequest[] = [];
  summary.seen = seen;
  const gasPrices = new Map<string, bigint>();
  // Chains are independent: one failing chain never stops another.
  const perChain = await Promise.all(
    config.chains.map(async (chain) => {
      try {
        const started = performance.now();
        const planned = await planChainShards(config, chain, { ...deps, wallets });
        const discovered = performance.now();
        const results = planned.shards.length
          ? await deps.executor.run(planned.shards, { concurrency: chain.maxConcurrency })
          : [];
        const timings = { discoveryMs: discovered - started, shardsMs: performance.now() - discovered };
        return { planned, results, timings };
      } catch (error) {
        deps.logger.error({ chainId: chain.id, err: errorMessage(error) }, 'chain cycle failed');
        return undefined;
      }
    }),
  );
  for (const chain of perChain) {
    if (!chain) continue;
    const { planned, results, timings } = chain;
    summary.timings.discoveryMs = Math.max(summary.timings.discoveryMs, Math.round(timings.discoveryMs));
    summary.timings.shardsMs = Math.max(summary.timings.shardsMs, Math.round(timings.shardsMs));
    summary.providers.push(...planned.providers);
    seen.push(...planned.seen);
    summary.requests.discovered += planned.discovered;
    summary.requests.waitingForConfirmations += planned.waiting;
    summary.requests.overChainLimit += planned.overLimit;
    summary.requests.servable += planned.shards.reduce((n, s) => n + s.apiCalls.length, 0);
    summary.shards.total += planned.shards.length;
    summary.rpcCalls += planned.providers.reduce((n, p) => n + p.rpcCalls, 0);
    for (const result of results) {
      summary.results.push(result);
      if (!result.ok) {
        summary.shards.failed++;
        continue;
      }
      summary.apiCalls += result.output.apiCalls;
      summary.cacheHits += result.output.cacheHits;
      if (result.output.balanceWei !== undefined) {
        const { chainId, sponsorWallet, balanceWei } = result.output;
        summary.sponsorWallets.push({ chainId, sponsorWallet, balanceWei });
      }
      summary.rpcCalls += result.output.rpcCalls;
      // A worker's output is read back from its pod log: only a decimal integer counts.
      const gasPrice = result.output.gasPriceWei;
      if (typeof gasPrice === 'string' && /^[0-9]{1,78}$/.test(gasPrice)) {
        const { chainId } = result.output;
        if (BigInt(gasPrice) > (gasPrices.get(chainId) ?? -1n)) gasPrices.set(chainId, BigInt(gasPrice));
      }
      for (const failure of strategyFailuresOf(result.output)) {
        const counted = summary.gasPriceStrategyFailures.find(
          (f) => f.chainId === result.output.chainId && f.strategy === failure.strategy,
        );
        if (counted) counted.count++;
        else
          summary.gasPriceStrategyFailures.push({
            chainId: result.output.chainId,
            strategy: failure.strategy,
            count: 1,
          });
      }
      for (const outcome of result.output.outcomes) {
        if (outcome.outcome === 'fulfilled') summary.transactions.fulfilled++;
        else if (outcome.outcome === 'failed') summary.transactions.failed++;
        else if (outcome.outcome === 'withdrawn') summary.transactions.withdrawn++;
        else if (outcome.outcome === 'skipped') summary.transactions.skipped++;
        else summary.transactions.errors++;
      }
    }
  }
  summary.gasPrices = [...gasPrices].map(([chainId, wei]) => ({ chainId, gasPriceWei: String(wei) }));
  deps.logger.info(
    {
      requests: summary.requests,
      transactions: summary.transactions,
      providers: summary.providers.map((p) => ({
        chainId: p.chainId,
        provider: p.provider,
        ok: p.ok,
        ...(p.fault ? { fault: p.fault } : {}),
      })),
    },
    'cycle finished',
  );
  return summary;
}

/** A worker's gas price strategy failures, read as untrusted (its output comes back through a pod log). */
function strategyFailuresOf(output: ShardOutput): { strategy: string }[] {
  const failures: unknown = output.gasPriceStrategyFailures;
  if (!Array.isArray(failures)) return [];
  return failures.filter(
    (f): f is { strategy: string } =>
      typeof f === 'object' && f !== null && typeof f.strategy === 'string' && /^[A-Za-z0-9]{1,64}$/.test(f.strategy),
  );
}
