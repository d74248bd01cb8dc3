// One coordinator cycle (airnode-facts §3): discovery on every (chain, provider) in parallel and
// isolated, the chain limit, aggregation by requestId across providers, the confirmation filter, then
// shards by sponsor wallet handed to an executor. Deliberate difference from the reference: each request
// is submitted once, through one provider, instead of once per provider (see docs/chain-cycle.md).

import { readBalances } from '../chain/balances.js';
import { type DiscoveryOptions, discoverOnProvider, type ProviderDiscovery } from '../chain/discovery.js';
import { type GasTargetJson, gasTargetToJson, getGasTarget } from '../chain/gas-price.js';
import type { ChainLogStore } from '../chain/log-store.js';
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
import { formatTraceparent, type Span, Tracer } from '../observability/tracing.js';
import { requestedMinConfirmations } from './endpoints.js';
import type { ShardExecutor, ShardResult } from './executor.js';
import type { Logger } from './logger.js';
import { decodeParameters } from './ois-adapter.js';
import type { ShardInput } from './shard-types.js';

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
  /** One trace per request: discovery and authorization here, the shard's spans as children (shard.traceparents). */
  tracer?: Tracer;
  /** Inside a coordinator window (src/node/window.ts): the logs kept between polls and the requests in flight. */
  window?: CycleWindow;
};

/** What a coordinator window lends each of its cycles. */
export type CycleWindow = {
  /**
   * The chain's log store, and in a poll the head each provider answered (a provider without one is left out of
   * the poll); undefined: the chain is read as in a one-shot cycle.
   */
  logsOf(chainId: string): { store: ChainLogStore; heads?: ReadonlyMap<string, number> } | undefined;
  /** Whether the request's fulfilment was sent in this window and is not stuck yet at `head`: not planned again. */
  holds(chainId: string, requestId: string, head: number): boolean;
  /** The nonces of the wallet's transactions the window holds at `head` (see `holds`). */
  inFlightNonces(chainId: string, sponsorWallet: string, head: number): number[];
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
  /** Outcomes of the requests; `replaced`: stuck transactions replaced (their request was counted when first sent). */
  transactions: {
    fulfilled: number;
    failed: number;
    withdrawn: number;
    skipped: number;
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
  state: 'servable' | 'waitingForConfirmations' | 'overChainLimit' | 'dropped';
  reason?: string;
  sponsorWallet?: string;
  endpointId?: string;
  blockNumber?: number;
  /** The confirmed head (lowest current block of the healthy providers). */
  headBlock: number;
};

type ChainStrategyFailure = { chainId: string; strategy: string };

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
    memory.forgetChainId(urlOf(state.name));
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
  /** The first provider in use: the one shards send through unless it fails. */
  servingProvider?: string;
  /** Gas price strategies that failed when the chain's price was read for the shards (each logged at WARN). */
  gasPriceStrategyFailures: ChainStrategyFailure[];
  discovered: number;
  waiting: number;
  overLimit: number;
  seen: SeenRequest[];
  /** When the healthy providers asked the authorizers (epoch ms, widest window). */
  authorization?: { startMs: number; endMs: number };
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
  const windowLogs = deps.window?.logsOf(chain.id);
  const discoveryOptions = (name: string): DiscoveryOptions => {
    if (!windowLogs) return options;
    if (!windowLogs.heads) return { ...options, logStore: { store: windowLogs.store, mode: 'remember' } };
    const head = windowLogs.heads.get(name);
    if (head === undefined) throw new Error('no head in this poll');
    return { ...options, logStore: { store: windowLogs.store, mode: 'poll', head } };
  };
  const states: ProviderState[] = await Promise.all(
    Object.entries(chain.providers).map(async ([name, provider]): Promise<ProviderState> => {
      const client = makeClient(provider.url);
      try {
        const discovery = await withTimeout(
          (async () => {
            const providerOptions = discoveryOptions(name);
            const providerChainId = await memory.chainIdOf(client);
            if (providerChainId !== expectedChainId) throw new WrongChain(providerChainId);
            return discoverOnProvider(client, providerOptions);
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
        // Asked again next cycle: a provider that fails may be one that moved to another network.
        if (!(error instanceof WrongChain)) memory.forgetChainId(provider.url);
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
    return {
      shards: [],
      providers: states.map((s) => s.summary),
      gasPriceStrategyFailures: [],
      discovered: 0,
      waiting: 0,
      overLimit: 0,
      seen: [],
    };

  // In a window, a request whose fulfilment is in flight is neither planned again nor counted against the limit.
  const head = Math.min(...healthy.map((s) => s.discovery.currentBlock));
  const held = (call: DiscoveredApiCall) => deps.window?.holds(chain.id, call.id, head) === true;
  const open = healthy.map((s) => ({
    ...s,
    discovery: { ...s.discovery, apiCalls: s.discovery.apiCalls.filter((call) => !held(call)) },
  }));
  const discovered = new Set(open.flatMap((s) => s.discovery.apiCalls.map((c) => c.id))).size;
  const limited = applyChainLimit(
    open.map((s) => s.discovery),
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
  // A request held back by its confirmations stays in the blocks the window reads again: one whose block vanishes
  // in a reorg meanwhile is gone before it is served, whatever its own `_minConfirmations`.
  windowLogs?.store.rereadFrom(waiting.length > 0 ? Math.min(...waiting.map((call) => call.blockNumber)) : undefined);

  const bySponsorWallet = new Map<string, ShardInput>();
  const shardOf = (sponsor: string, sponsorWallet: string) => {
    let shard = bySponsorWallet.get(sponsorWallet);
    if (!shard) {
      shard = {
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
  const seen = seenRequests(chain.id, confirmedHead, { kept, waiting, limited: apiCalls, healthy: open });
  for (const call of kept.sort(byLogPosition)) shardOf(call.sponsor, call.sponsorWallet).apiCalls.push(call);
  for (const withdrawal of [...withdrawals.values()].sort(byLogPosition)) {
    shardOf(withdrawal.sponsor, withdrawal.sponsorWallet).withdrawals.push(withdrawal);
  }
  const shards = [...bySponsorWallet.values()];
  for (const shard of shards) {
    const inFlightNonces = deps.window?.inFlightNonces(chain.id, shard.sponsorWallet, confirmedHead) ?? [];
    if (inFlightNonces.length > 0) shard.inFlightNonces = inFlightNonces;
  }
  const gasPriceStrategyFailures: ChainStrategyFailure[] = [];
  if (shards.length > 0) {
    const gasTarget = await chainGasTarget(chain, healthy[0]!, makeClient, deps.logger, gasPriceStrategyFailures);
    if (gasTarget) for (const shard of shards) shard.gasTarget = gasTarget;
  }
  return {
    shards,
    providers: states.map((s) => ({ ...s.summary })),
    servingProvider: healthy[0]!.name,
    gasPriceStrategyFailures,
    discovered,
    waiting: waiting.length,
    overLimit: discovered - limitedCount,
    seen,
    ...authorizationWindow(healthy.map((s) => s.discovery.authorization)),
  };
}

function authorizationWindow(windows: ({ startMs: number; endMs: number } | undefined)[]) {
  const known = windows.filter((w) => w !== undefined);
  if (known.length === 0) return {};
  return {
    authorization: {
      startMs: Math.min(...known.map((w) => w.startMs)),
      endMs: Math.max(...known.map((w) => w.endMs)),
    },
  };
}

/**
 * The root span of each request the chain's cycle saw, with its discovery and authorization spans; servable requests'
 * trace contexts go into their shards, so the worker's spans join the same trace.
 */
function traceRequests(
  tracer: Tracer,
  planned: Awaited<ReturnType<typeof planChainShards>>,
  window: { startMs: number; discoveredMs: number },
): Map<string, Span> {
  const roots = new Map<string, Span>();
  if (!tracer.enabled) return roots;
  for (const request of planned.seen) {
    const attributes = { requestId: request.id, chainId: request.chainId, endpointId: request.endpointId };
    const root = tracer.startSpan('oracle-node request', {
      startMs: window.startMs,
      attributes: {
        ...attributes,
        'oracle_node.state': request.state,
        'oracle_node.reason': request.reason,
        'oracle_node.block': request.blockNumber,
      },
    });
    roots.set(request.id, root);
    tracer
      .startSpan('discovery', {
        parent: root.context,
        startMs: window.startMs,
        attributes: { ...attributes, 'rpc.system': 'jsonrpc', 'rpc.method': 'eth_getLogs' },
      })
      .end(window.discoveredMs);
    const unauthorized = request.reason === 'requester is not authorized';
    if (request.state === 'dropped' && !unauthorized) continue;
    const authorization = tracer.startSpan('authorization', {
      parent: root.context,
      startMs: planned.authorization?.startMs ?? window.discoveredMs,
      attributes: { ...attributes, 'oracle_node.authorized': !unauthorized },
    });
    if (unauthorized) authorization.fail('requester is not authorized');
    authorization.end(planned.authorization?.endMs ?? window.discoveredMs);
  }
  for (const shard of planned.shards) {
    const traceparents: Record<string, string> = {};
    for (const call of shard.apiCalls) {
      const root = roots.get(call.id);
      if (root) traceparents[call.id] = formatTraceparent(root.context);
    }
    shard.traceparents = traceparents;
  }
  return roots;
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
      endpointId: call.endpointId,
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

const NO_TRACER = new Tracer();

/** Each request's root span ends with its shard, carrying the outcome. */
function endRequestTraces(roots: Map<string, Span>, results: ShardResult[]): void {
  if (roots.size === 0) return;
  for (const result of results) {
    if (!result.ok) continue;
    for (const outcome of result.output.outcomes) {
      const root = roots.get(outcome.id);
      root?.setAttributes({ 'oracle_node.outcome': outcome.outcome, 'oracle_node.transaction_hash': outcome.txHash });
      if (outcome.outcome === 'error') root?.fail(outcome.reason ?? 'transaction not accepted');
    }
  }
  for (const root of roots.values()) root.end();
}

/**
 * The chain's gas price for this cycle, read once through the first provider in use and handed to every shard: what
 * every sponsor wallet would otherwise read for itself (the strategies' blocks and the provider's price) costs the
 * chain's calls once. Undefined when the strategies fail without a constant fallback: the shards then try themselves.
 */
async function chainGasTarget(
  chain: Config['chains'][number],
  provider: ProviderState,
  makeClient: (url: string) => RpcClient,
  logger: Logger,
  failures: ChainStrategyFailure[],
): Promise<GasTargetJson | undefined> {
  const client = makeClient(chain.providers[provider.name]!.url);
  try {
    const target = await getGasTarget(client, chain.options.gasPriceOracle, chain.options.fulfillmentGasLimit, {
      logger: logger.child({ chainId: chain.id, provider: provider.name }),
      onFailure: (failure) => failures.push({ chainId: chain.id, strategy: failure.strategy }),
    });
    return gasTargetToJson(target);
  } catch (error) {
    logger.warn(
      { chainId: chain.id, provider: provider.name, err: errorMessage(error) },
      'gas price not read for the chain; each shard reads its own',
    );
    return undefined;
  } finally {
    provider.summary.rpcCalls += client.calls;
  }
}

/** The sponsor wallets of a chain's open requests (servable, waiting or over the limit), with how many each has. */
export function openRequestsByWallet(seen: SeenRequest[]): Map<string, number> {
  const open = new Map<string, number>();
  for (const request of seen)
    if (request.state !== 'dropped' && request.sponsorWallet !== undefined)
      open.set(request.sponsorWallet, (open.get(request.sponsorWallet) ?? 0) + 1);
  return open;
}

/**
 * The balances of the sponsor wallets that have an open request or sent a transaction in the cycle (for the
 * low-balance alert and `oracle-node status`): a wallet that was never funded, or whose sends were all refused,
 * shows while its requests wait. All in one call through the provider the shards sent through, at 'pending' so
 * this cycle's transactions are already paid for. Best effort: a failure leaves the balances unreported for this
 * cycle.
 */
async function sponsorWalletBalances(
  chain: Config['chains'][number],
  providerName: string | undefined,
  planned: { results: ShardResult[]; seen: SeenRequest[] },
  deps: CycleDeps,
): Promise<{ wallets: CycleSummary['sponsorWallets']; rpcCalls: number }> {
  const open = openRequestsByWallet(planned.seen);
  const senders = planned.results.flatMap((r) =>
    r.ok && r.output.outcomes.some((o) => o.txHash !== undefined) ? [r.output.sponsorWallet] : [],
  );
  const watched = [...new Set([...open.keys(), ...senders])];
  const url = providerName === undefined ? undefined : chain.providers[providerName]?.url;
  if (watched.length === 0 || url === undefined) return { wallets: [], rpcCalls: 0 };
  const client = (deps.rpcClient ?? ((u: string) => new RpcClient(u)))(url);
  try {
    const balances = await readBalances(client, watched);
    return {
      wallets: watched.map((sponsorWallet) => ({
        chainId: chain.id,
        sponsorWallet,
        balanceWei: String(balances.get(sponsorWallet)),
        openRequests: open.get(sponsorWallet) ?? 0,
      })),
      rpcCalls: client.calls,
    };
  } catch (error) {
    deps.logger.warn({ chainId: chain.id, err: errorMessage(error) }, 'sponsor wallet balances not read');
    return { wallets: [], rpcCalls: client.calls };
  }
}

/**
 * A transaction is signed for the configured chain id (EIP-155), so a provider on another network refuses it: after
 * a failed shard or a send that ended in `error`, the chain's providers are asked their chain id again next cycle.
 */
function forgetChainIdsOnSendErrors(
  chain: Config['chains'][number],
  results: ShardResult[],
  memory: ProviderMemory,
): void {
  const sendFailed = results.some((r) => !r.ok || r.output.outcomes.some((o) => o.outcome === 'error'));
  if (!sendFailed) return;
  for (const provider of Object.values(chain.providers)) memory.forgetChainId(provider.url);
}

export async function runCycle(config: Config, deps: CycleDeps): Promise<CycleSummary> {
  const wallets = deps.wallets ?? sponsorWallets(config.nodeSettings.nodeWalletMnemonic);
  const summary: CycleSummary = {
    providers: [],
    requests: { discovered: 0, servable: 0, waitingForConfirmations: 0, overChainLimit: 0 },
    shards: { total: 0, failed: 0 },
    transactions: { fulfilled: 0, failed: 0, withdrawn: 0, skipped: 0, errors: 0, replaced: 0 },
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
        const startMs = Date.now();
        const planned = await planChainShards(config, chain, { ...deps, wallets });
        const discovered = performance.now();
        const roots = traceRequests(deps.tracer ?? NO_TRACER, planned, { startMs, discoveredMs: Date.now() });
        const results = planned.shards.length
          ? await deps.executor.run(planned.shards, { concurrency: chain.maxConcurrency })
          : [];
        endRequestTraces(roots, results);
        forgetChainIdsOnSendErrors(chain, results, deps.providerMemory ?? processProviderMemory);
        const timings = { discoveryMs: discovered - started, shardsMs: performance.now() - discovered };
        const balances = await sponsorWalletBalances(
          chain,
          planned.servingProvider,
          { results, seen: planned.seen },
          deps,
        );
        return { planned, results, timings, balances };
      } catch (error) {
        deps.logger.error({ chainId: chain.id, err: errorMessage(error) }, 'chain cycle failed');
        return undefined;
      }
    }),
  );
  for (const chain of perChain) {
    if (!chain) continue;
    const { planned, results, timings, balances } = chain;
    summary.sponsorWallets.push(...balances.wallets);
    for (const failure of planned.gasPriceStrategyFailures)
      countStrategyFailure(summary, failure.chainId, failure.strategy);
    summary.rpcCalls += balances.rpcCalls;
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
      summary.rpcCalls += result.output.rpcCalls;
      const gasPrice = result.output.gasPriceWei;
      if (gasPrice !== undefined) {
        const { chainId } = result.output;
        if (BigInt(gasPrice) > (gasPrices.get(chainId) ?? -1n)) gasPrices.set(chainId, BigInt(gasPrice));
      }
      for (const failure of result.output.gasPriceStrategyFailures ?? []) {
        countStrategyFailure(summary, result.output.chainId, failure.strategy);
      }
      for (const outcome of result.output.outcomes) {
        // A replacement of a stuck transaction was counted when the first one was sent.
        if (outcome.replacement === true) summary.transactions.replaced++;
        else if (outcome.outcome === 'fulfilled') summary.transactions.fulfilled++;
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

function countStrategyFailure(summary: CycleSummary, chainId: string, strategy: string): void {
  const counted = summary.gasPriceStrategyFailures.find((f) => f.chainId === chainId && f.strategy === strategy);
  if (counted) counted.count++;
  else summary.gasPriceStrategyFailures.push({ chainId, strategy, count: 1 });
}
