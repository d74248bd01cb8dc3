// The summary of a cycle: what it reports (its types), the empty summary, one chain's run folded into its cycle's,
// a window's cycles merged into one report, the gas price strategies' failures counted, and the requests the cycle
// saw (the request log's input).
import type { ProviderDiscovery } from '../chain/discovery.js';
import type { ProviderFault } from '../chain/provider-health.js';
import type { DiscoveredApiCall } from '../chain/requests.js';
import type { NodeRole } from '../contract/request-log.js';
import type { ShardResult } from './executor.js';

export type ProviderSummary = {
  chainId: string;
  provider: string;
  /** Answered and fit for the cycle: only such providers serve requests. */
  ok: boolean;
  /** Why the provider was left out of this cycle (absent when ok). */
  fault?: ProviderFault;
  currentBlock?: number;
  /** Blocks behind the head the chain's providers agree on in this cycle (negative: ahead of it). */
  lagBlocks?: number;
  apiCalls?: number;
  withdrawals?: number;
  dropped?: number;
  error?: string;
  rpcCalls: number;
};

export type CycleSummary = {
  /** The node's role in this cycle; absent in summaries of older engines (read as primary). */
  role?: NodeRole;
  providers: ProviderSummary[];
  requests: { discovered: number; servable: number; waitingForConfirmations: number; overChainLimit: number };
  shards: { total: number; failed: number };
  /** Outcomes of the requests; `replaced`: stuck transactions replaced (their request was counted when first sent). */
  transactions: {
    fulfilled: number;
    failed: number;
    withdrawn: number;
    skipped: number;
    /** Left open after a transient API failure (or this node's rate budget), retried later (api-retries.ts). */
    deferred: number;
    errors: number;
    replaced: number;
  };
  apiCalls: number;
  cacheHits: number;
  rpcCalls: number;
  /** Slowest chain's discovery and shard phases. */
  timings: { discoveryMs: number; shardsMs: number };
  /** Balances of the sponsor wallets with an open request or a transaction in this cycle, and their open requests. */
  sponsorWallets: { chainId: string; sponsorWallet: string; balanceWei: string; openRequests?: number }[];
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
  state: 'servable' | 'waitingForConfirmations' | 'overChainLimit' | 'dropped' | 'deferred';
  reason?: string;
  sponsorWallet?: string;
  endpointId?: string;
  blockNumber?: number;
  /** The confirmed head (lowest current block of the healthy providers). */
  headBlock: number;
};

/** A gas price strategy that failed on a chain (logged at WARN where it failed). */
export type ChainStrategyFailure = { chainId: string; strategy: string };

/** A cycle that did nothing (the first cycle, when the run stopped before it settled). */
export function emptySummary(): CycleSummary {
  return {
    providers: [],
    requests: { discovered: 0, servable: 0, waitingForConfirmations: 0, overChainLimit: 0 },
    shards: { total: 0, failed: 0 },
    transactions: { fulfilled: 0, failed: 0, withdrawn: 0, skipped: 0, deferred: 0, errors: 0, replaced: 0 },
    apiCalls: 0,
    cacheHits: 0,
    rpcCalls: 0,
    timings: { discoveryMs: 0, shardsMs: 0 },
    sponsorWallets: [],
    gasPrices: [],
    gasPriceStrategyFailures: [],
    results: [],
    seen: [],
  };
}

/** What one chain's run adds to its cycle's summary (cycle.ts, runChain). */
export type ChainRunReport = {
  planned: {
    shards: readonly { apiCalls: readonly unknown[] }[];
    providers: ProviderSummary[];
    seen: SeenRequest[];
    discovered: number;
    waiting: number;
    overLimit: number;
    gasPriceStrategyFailures: ChainStrategyFailure[];
  };
  results: ShardResult[];
  timings: { discoveryMs: number; shardsMs: number };
  balances: { wallets: CycleSummary['sponsorWallets']; rpcCalls: number };
};

/** One chain's run folded into its cycle's summary; `gasPrices` keeps each chain's highest price of the cycle. */
export function addChainRun(summary: CycleSummary, gasPrices: Map<string, bigint>, chain: ChainRunReport): void {
  const { planned, results, timings, balances } = chain;
  summary.sponsorWallets.push(...balances.wallets);
  for (const failure of planned.gasPriceStrategyFailures)
    countStrategyFailure(summary.gasPriceStrategyFailures, failure);
  summary.rpcCalls += balances.rpcCalls;
  summary.timings.discoveryMs = Math.max(summary.timings.discoveryMs, Math.round(timings.discoveryMs));
  summary.timings.shardsMs = Math.max(summary.timings.shardsMs, Math.round(timings.shardsMs));
  summary.providers.push(...planned.providers);
  summary.seen ??= [];
  summary.seen.push(...planned.seen);
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
    summary.rpcCalls += result.output.rpcCalls;
    const gasPrice = result.output.gasPriceWei;
    if (gasPrice !== undefined) {
      const { chainId } = result.output;
      if (BigInt(gasPrice) > (gasPrices.get(chainId) ?? -1n)) gasPrices.set(chainId, BigInt(gasPrice));
    }
    for (const failure of result.output.gasPriceStrategyFailures ?? []) {
      countStrategyFailure(summary.gasPriceStrategyFailures, {
        chainId: result.output.chainId,
        strategy: failure.strategy,
      });
    }
    for (const outcome of result.output.outcomes) {
      // A replacement of a stuck transaction was counted when the first one was sent.
      if (outcome.replacement === true) summary.transactions.replaced++;
      else if (outcome.outcome === 'fulfilled') summary.transactions.fulfilled++;
      else if (outcome.outcome === 'failed') summary.transactions.failed++;
      else if (outcome.outcome === 'withdrawn') summary.transactions.withdrawn++;
      else if (outcome.outcome === 'skipped') summary.transactions.skipped++;
      else if (outcome.outcome === 'deferred') summary.transactions.deferred++;
      else summary.transactions.errors++;
    }
  }
}

const byKey = <T>(items: T[], key: (item: T) => string): T[] => [...new Map(items.map((i) => [key(i), i])).values()];

/** The report of a whole window: counts added up, the latest state of each provider, wallet and request. */
export function mergeSummaries(total: CycleSummary, cycle: CycleSummary): CycleSummary {
  const add = <K extends string>(a: Record<K, number>, b: Record<K, number>) =>
    Object.fromEntries(Object.keys(a).map((k) => [k, a[k as K] + b[k as K]])) as Record<K, number>;
  const gasPrices = new Map(total.gasPrices.map((g) => [g.chainId, BigInt(g.gasPriceWei)]));
  for (const g of cycle.gasPrices)
    if (BigInt(g.gasPriceWei) > (gasPrices.get(g.chainId) ?? -1n)) gasPrices.set(g.chainId, BigInt(g.gasPriceWei));
  const failures = total.gasPriceStrategyFailures.map((f) => ({ ...f }));
  for (const f of cycle.gasPriceStrategyFailures) countStrategyFailure(failures, f, f.count);
  const role = cycle.role ?? total.role;
  return {
    ...(role ? { role } : {}),
    providers: byKey([...total.providers, ...cycle.providers], (p) => `${p.chainId}\n${p.provider}`),
    requests: add(total.requests, cycle.requests),
    shards: add(total.shards, cycle.shards),
    transactions: add(total.transactions, cycle.transactions),
    apiCalls: total.apiCalls + cycle.apiCalls,
    cacheHits: total.cacheHits + cycle.cacheHits,
    rpcCalls: total.rpcCalls + cycle.rpcCalls,
    timings: add(total.timings, cycle.timings),
    sponsorWallets: byKey(
      [...total.sponsorWallets, ...cycle.sponsorWallets],
      (w) => `${w.chainId}\n${w.sponsorWallet}`,
    ),
    gasPrices: [...gasPrices].map(([chainId, wei]) => ({ chainId, gasPriceWei: String(wei) })),
    gasPriceStrategyFailures: failures,
    results: [...total.results, ...cycle.results],
    seen: byKey([...(total.seen ?? []), ...(cycle.seen ?? [])], (r) => `${r.chainId}\n${r.id}`),
  };
}

/** Counts `count` more failures of a chain's gas price strategy in `failures` (a summary's, one entry per pair). */
export function countStrategyFailure(
  failures: CycleSummary['gasPriceStrategyFailures'],
  failure: ChainStrategyFailure,
  count = 1,
): void {
  const counted = failures.find((f) => f.chainId === failure.chainId && f.strategy === failure.strategy);
  if (counted) counted.count += count;
  else failures.push({ chainId: failure.chainId, strategy: failure.strategy, count });
}

/**
 * Every request a chain's plan saw, once each, and where it stood before any shard ran: yielded by a standby, servable,
 * left to the primary, waiting for confirmations, over the chain limit, or dropped at discovery (with the reason).
 */
export function seenRequests(
  chainId: string,
  headBlock: number,
  planned: {
    kept: DiscoveredApiCall[];
    waiting: DiscoveredApiCall[];
    leftToPrimary: DiscoveredApiCall[];
    yielded: { call: DiscoveredApiCall; reason: string }[];
    deferred?: { call: DiscoveredApiCall; reason: string }[];
    standbyDelayBlocks: number;
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
      endpointId: call.endpointId,
      blockNumber: call.blockNumber,
      headBlock,
    });
  };
  for (const { call, reason } of planned.yielded) add(call, 'waitingForConfirmations', reason);
  for (const { call, reason } of planned.deferred ?? []) add(call, 'deferred', reason);
  for (const call of planned.kept) add(call, 'servable');
  for (const call of planned.leftToPrimary)
    add(call, 'waitingForConfirmations', `standby: left to the primary for ${planned.standbyDelayBlocks} block(s)`);
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
