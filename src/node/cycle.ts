// One coordinator cycle (airnode-facts §3): discovery on every (chain, provider) in parallel and
// isolated (heads first, judged against each other, then the requests through the trusted providers), the chain
// limit, aggregation by requestId across providers, the confirmation filter, then shards by sponsor wallet handed
// to an executor. Deliberate difference from the reference: each request is submitted once, through one provider,
// instead of once per provider (see docs/chain-cycle.md).

import { readBalances } from '../chain/balances.js';
import { type DiscoveryOptions, discoverOnProvider, type ProviderDiscovery } from '../chain/discovery.js';
import { transactionCount } from '../chain/fulfillment.js';
import { type GasTargetJson, gasTargetToJson, getGasTarget } from '../chain/gas-price.js';
import type { ChainLogStore } from '../chain/log-store.js';
import { byLogPosition, fetchBlockNumber } from '../chain/logs.js';
import { decidePending, type PendingSightings } from '../chain/pending.js';
import {
  HEAD_GRACE_MS,
  HEAD_TIMEOUT_MS,
  judgeChainHeads,
  MAX_PROVIDER_LAG_BLOCKS,
  type ProviderFault,
  type ProviderHead,
  type ProviderMemory,
  processProviderMemory,
  showsBlock,
} from '../chain/provider-health.js';
import {
  applyChainLimit,
  type DiscoveredApiCall,
  filterByMinConfirmations,
  withdrawalsPastStandbyDelay,
} from '../chain/requests.js';
import { RpcAnswerTooLarge, RpcClient, withTimeout } from '../chain/rpc.js';
import { type SponsorWallets, sponsorWallets } from '../chain/sponsor-wallets.js';
import { DEFAULT_MIN_CONFIRMATIONS, type WithdrawalRequest } from '../chain/types.js';
import { settleWithGrace } from '../common/concurrency.js';
import { errorMessage } from '../common/errors.js';
import type { Config } from '../config/index.js';
import type { NodeRole } from '../contract/request-log.js';
import { formatTraceparent, type Span, Tracer } from '../observability/tracing.js';
import { requestedMinConfirmations } from './endpoints.js';
import type { ShardExecutor, ShardResult } from './executor.js';
import type { Logger } from './logger.js';
import { decodeParameters } from './ois-adapter.js';
import { processPendingSightings, sightingsKey } from './shard.js';
import type { ShardInput } from './shard-types.js';

/** Budget of each of a provider's discovery steps, its head and its requests (the reference's initializeProvider). */
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
  /**
   * A standby node (`--standby-delay-blocks`, spec.redundancy.standbyDelayBlocks): serves a request only once it has
   * been servable for this many blocks and is still open (docs/chain-cycle.md, "Standby"); 0 or absent: a primary.
   */
  standbyDelayBlocks?: number;
  /** What this process has seen of the wallets' pending transactions: the shards' (default: the process's). */
  pendingSightings?: PendingSightings;
};

/** A node with a standby delay is a standby (docs/chain-cycle.md, "Standby"). */
export const roleOf = (standbyDelayBlocks: number | undefined): NodeRole =>
  (standbyDelayBlocks ?? 0) > 0 ? 'standby' : 'primary';

/** What a coordinator window lends each of its cycles. */
export type CycleWindow = {
  /**
   * The chain's log store, and in a poll the head each provider answered (a provider without one is left out of
   * the poll; the heads are judged against each other before any is used); undefined: the chain is read as in a
   * one-shot cycle.
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

type ChainConfig = Config['chains'][number];

/** A provider through the cycle's steps: its head once read, its discovery once its head is trusted. */
type ProviderState = {
  name: string;
  url: string;
  client: RpcClient;
  head?: number;
  discovery?: ProviderDiscovery;
  summary: ProviderSummary;
};
type DiscoveredProvider = ProviderState & { discovery: ProviderDiscovery };

/** What every step of a chain's plan reads. */
type ChainContext = {
  config: Config;
  chain: ChainConfig;
  deps: CycleDeps & { wallets: SponsorWallets };
  makeClient: (url: string) => RpcClient;
  memory: ProviderMemory;
  windowLogs: ReturnType<CycleWindow['logsOf']>;
};

/** A provider that answered eth_chainId with another chain's id than its chain's. */
class WrongChain extends Error {
  constructor(readonly providerChainId: bigint) {
    super(`provider is on chain ${providerChainId}`);
    this.name = 'WrongChain';
  }
}

/** A provider that sits out a window's poll: it gave no head in time, or is backed off (src/node/window.ts). */
class NoHeadThisPoll extends Error {
  constructor() {
    super('no head in this poll');
    this.name = 'NoHeadThisPoll';
  }
}

export type PlannedChain = {
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
};

/**
 * The chain's part of a cycle, as named steps: each provider's chain id and head, the heads judged against each other
 * (src/chain/provider-health.ts), the open requests read through the trusted providers only, the chain limit and the
 * confirmations, the shards by sponsor wallet, and the chain's gas price for them.
 */
export async function planChainShards(
  config: Config,
  chain: ChainConfig,
  deps: CycleDeps & { wallets: SponsorWallets },
): Promise<PlannedChain> {
  const context: ChainContext = {
    config,
    chain,
    deps,
    makeClient: deps.rpcClient ?? ((url: string) => new RpcClient(url)),
    memory: deps.providerMemory ?? processProviderMemory,
    windowLogs: deps.window?.logsOf(chain.id),
  };
  const providers = await discoverProviders(context);
  const trusted = await judgeProviders(context, providers);
  const healthy = await openRequests(context, trusted);
  const summaries = () => providers.map((p) => ({ ...p.summary }));
  if (healthy.length === 0) {
    return {
      shards: [],
      providers: summaries(),
      gasPriceStrategyFailures: [],
      discovered: 0,
      waiting: 0,
      overLimit: 0,
      seen: [],
    };
  }
  const confirmed = confirm(context, healthy);
  const shards = await yieldToPendingTransactions(
    context,
    healthy[0]!,
    confirmed,
    shardBySponsorWallet(context, healthy, confirmed),
  );
  const gasPriceStrategyFailures = await priceShards(context, healthy[0]!, shards);
  return {
    shards,
    providers: summaries(),
    servingProvider: healthy[0]!.name,
    gasPriceStrategyFailures,
    discovered: confirmed.discovered,
    waiting: confirmed.waiting.length + confirmed.yielded.length,
    overLimit: confirmed.discovered - confirmed.aggregated.size,
    seen: seenRequests(chain.id, confirmed.head, {
      kept: confirmed.kept,
      waiting: confirmed.waiting,
      leftToPrimary: confirmed.leftToPrimary,
      yielded: confirmed.yielded,
      standbyDelayBlocks: deps.standbyDelayBlocks ?? 0,
      limited: confirmed.aggregated,
      healthy: confirmed.open,
    }),
    ...authorizationWindow(healthy.map((s) => s.discovery.authorization)),
  };
}

/**
 * Step 1: each provider's chain id (when not verified) and head, in parallel and isolated; in a window's poll, the
 * head the poll read. Once one provider gave its head, the others get HEAD_GRACE_MS more: one that hangs is
 * `unavailable` for this cycle instead of holding the chain back.
 */
async function discoverProviders(context: ChainContext): Promise<ProviderState[]> {
  const { chain, deps, memory, windowLogs } = context;
  const expectedChainId = BigInt(chain.id);
  const states: ProviderState[] = Object.entries(chain.providers).map(([name, provider]) => ({
    name,
    url: provider.url,
    client: context.makeClient(provider.url),
    summary: { chainId: chain.id, provider: name, ok: false, rpcCalls: 0 },
  }));
  const readHead = async (state: ProviderState): Promise<number> => {
    const pollHead = windowLogs?.heads ? windowLogs.heads.get(state.name) : undefined;
    if (windowLogs?.heads && pollHead === undefined) throw new NoHeadThisPoll();
    const providerChainId = await memory.chainIdOf(state.client);
    if (providerChainId !== expectedChainId) throw new WrongChain(providerChainId);
    return pollHead ?? (await fetchBlockNumber(state.client));
  };
  const timeoutMs = deps.discoveryTimeoutMs ?? PROVIDER_DISCOVERY_TIMEOUT_MS;
  const outcomes = await settleWithGrace(
    states.map((state) => withTimeout(readHead(state), timeoutMs, `head of ${state.name}`)),
    HEAD_GRACE_MS,
  );
  states.forEach((state, index) => {
    const outcome = outcomes[index];
    if (outcome?.status === 'fulfilled') {
      state.head = outcome.value;
      Object.assign(state.summary, { ok: true, currentBlock: outcome.value });
    } else {
      const error = outcome?.reason ?? new Error(`no head within ${HEAD_GRACE_MS} ms of another provider's`);
      leaveOut(context, state, error);
    }
  });
  return states;
}

/**
 * Step 2: the heads judged against each other (src/chain/provider-health.ts). A head no other provider confirms and
 * above the others is first shown (the provider asked for that block); then a provider syncing, lagging, ahead or
 * stalled is logged at WARN and left out, so it neither holds requests back through the confirmation filter, nor
 * sets the block confirmations and static calls use, nor moves a window's log store, nor takes transactions. The
 * trusted providers read no further than the read ceiling (`judgeChainHeads`).
 */
async function judgeProviders(context: ChainContext, states: ProviderState[]): Promise<ProviderState[]> {
  const { chain, deps, memory } = context;
  const answered = states.filter((s) => s.head !== undefined);
  const heads: ProviderHead[] = answered.map((s) => ({
    name: s.name,
    currentBlock: s.head!,
    behindSinceMs: memory.behindSince(chain.id, s.url, s.head!),
  }));
  const show = (name: string, block: number) =>
    withTimeout(
      showsBlock(answered.find((s) => s.name === name)!.client, block, { memory, chainId: chain.id }),
      HEAD_TIMEOUT_MS,
      'block',
    ).catch(() => false);
  const { agreed, faults, readTo } = await judgeChainHeads(heads, show, {
    configured: states.length,
    nowMs: memory.nowMs(),
  });
  for (const state of answered) {
    const lagBlocks = (agreed ?? state.head!) - state.head!;
    memory.rememberHead(chain.id, state.url, state.head!, lagBlocks > 0);
    state.summary.lagBlocks = lagBlocks;
    state.summary.rpcCalls = state.client.calls;
    const fault = faults.get(state.name);
    if (!fault) continue;
    memory.forgetChainId(state.url);
    Object.assign(state.summary, {
      ok: false,
      fault: fault.fault,
      error:
        fault.lagBlocks < 0
          ? `${fault.fault}: ${-fault.lagBlocks} blocks ahead of the head the providers agree on`
          : `${fault.fault}: ${fault.lagBlocks} blocks behind the head the providers agree on`,
    });
    deps.logger.warn(
      {
        chainId: chain.id,
        provider: state.name,
        fault: fault.fault,
        currentBlock: state.head,
        bestBlock: fault.bestBlock,
        lagBlocks: fault.lagBlocks,
        maxLagBlocks: MAX_PROVIDER_LAG_BLOCKS,
      },
      fault.fault === 'ahead'
        ? 'provider is ahead of the chain; not used this cycle'
        : 'provider is behind the chain; not used this cycle',
    );
  }
  const trusted = answered.filter((s) => !faults.has(s.name));
  // Read no further than another provider or a shown block confirms (readCeiling).
  for (const state of trusted) state.head = Math.min(state.head!, readTo ?? state.head!);
  return trusted;
}

/**
 * Step 3: the open requests, read through each trusted provider up to its own head (logs, templates, authorization),
 * isolated as the heads were; in a window, through the window's log store.
 */
async function openRequests(context: ChainContext, trusted: ProviderState[]): Promise<DiscoveredProvider[]> {
  const { config, chain, deps, windowLogs } = context;
  const options: DiscoveryOptions = {
    chain,
    nodeAddress: deps.wallets.nodeAddress,
    triggers: config.triggers.rrp,
    localTemplates: config.templates,
    decodeParameters,
    sponsorWalletOf: deps.wallets.addressOf,
    ...(deps.maxLogRange ? { maxLogRange: deps.maxLogRange } : {}),
    ...(windowLogs ? { logStore: { store: windowLogs.store, mode: windowLogs.heads ? 'poll' : 'remember' } } : {}),
  };
  const timeoutMs = deps.discoveryTimeoutMs ?? PROVIDER_DISCOVERY_TIMEOUT_MS;
  await Promise.all(
    trusted.map(async (state) => {
      try {
        state.discovery = await withTimeout(
          discoverOnProvider(state.client, options, state.head!),
          timeoutMs,
          `discovery on ${state.name}`,
        );
        Object.assign(state.summary, {
          apiCalls: state.discovery.apiCalls.length,
          withdrawals: state.discovery.withdrawals.length,
          dropped: state.discovery.dropped.length,
        });
      } catch (error) {
        leaveOut(context, state, error);
      } finally {
        state.summary.rpcCalls = state.client.calls;
      }
    }),
  );
  return trusted.filter((s): s is DiscoveredProvider => s.discovery !== undefined);
}

/** A provider that failed a step: logged with its fault and left out of this cycle. */
function leaveOut(context: ChainContext, state: ProviderState, error: unknown): void {
  const { chain, deps, memory } = context;
  const fault: ProviderFault =
    error instanceof WrongChain ? 'wrong-chain' : error instanceof RpcAnswerTooLarge ? 'oversized' : 'unavailable';
  Object.assign(state.summary, { ok: false, fault, error: errorMessage(error), rpcCalls: state.client.calls });
  if (error instanceof WrongChain) {
    deps.logger.error(
      { chainId: chain.id, provider: state.name, providerChainId: String(error.providerChainId) },
      'provider is on another network (wrong chain id); refused',
    );
    return;
  }
  // Asked again next cycle: a provider that fails may be one that moved to another network. One that only sat a
  // poll out (no head in time, or backed off) said nothing about its network.
  if (!(error instanceof NoHeadThisPoll)) memory.forgetChainId(state.url);
  deps.logger.warn(
    { chainId: chain.id, provider: state.name, fault, err: errorMessage(error) },
    'provider unavailable this cycle',
  );
}

type Confirmed = {
  /** The confirmed head: the lowest head of the healthy providers, a block every one of them knows. */
  head: number;
  /** The healthy providers' discoveries without the requests the window holds in flight. */
  open: { discovery: ProviderDiscovery }[];
  discovered: number;
  /** Requests within the chain limit, by id (first provider in config order wins). */
  aggregated: Map<string, DiscoveredApiCall>;
  withdrawals: WithdrawalRequest[];
  kept: DiscoveredApiCall[];
  waiting: DiscoveredApiCall[];
  /** A standby's requests past their confirmations but within its delay: the primary's to serve. */
  leftToPrimary: DiscoveredApiCall[];
  /** A standby's requests past its delay whose wallet has transactions pending, not stuck (step 5b), and why. */
  yielded: { call: DiscoveredApiCall; reason: string }[];
};

/**
 * Step 4: the requests not in flight, within the chain limit, aggregated by id across providers (submitted once,
 * however many providers saw them), and split by their confirmations against the confirmed head.
 */
function confirm(context: ChainContext, healthy: DiscoveredProvider[]): Confirmed {
  const { config, chain, deps, windowLogs } = context;
  // The lowest head among healthy providers: a provider that is ahead must not make a request look confirmed early,
  // and every provider a shard may use knows this block (its static calls and estimates run against it).
  const head = Math.min(...healthy.map((s) => s.head!));
  // In a window, a request whose fulfilment is in flight is neither planned again nor counted against the limit.
  const held = (call: DiscoveredApiCall) => deps.window?.holds(chain.id, call.id, head) === true;
  const open = healthy.map((s) => ({
    discovery: { ...s.discovery, apiCalls: s.discovery.apiCalls.filter((call) => !held(call)) },
  }));
  const discovered = new Set(open.flatMap((s) => s.discovery.apiCalls.map((c) => c.id))).size;
  const limited = applyChainLimit(
    open.map((s) => s.discovery),
    chain.maxConcurrency,
  );
  const aggregated = new Map<string, DiscoveredApiCall>();
  const withdrawals = new Map<string, WithdrawalRequest>();
  for (const discovery of limited) {
    for (const call of discovery.apiCalls) if (!aggregated.has(call.id)) aggregated.set(call.id, call);
    for (const withdrawal of discovery.withdrawals)
      if (!withdrawals.has(withdrawal.id)) withdrawals.set(withdrawal.id, withdrawal);
  }
  const { kept, waiting, leftToPrimary } = filterByMinConfirmations([...aggregated.values()], {
    currentBlock: head,
    chainMinConfirmations: chain.minConfirmations ?? DEFAULT_MIN_CONFIRMATIONS,
    requestedMinConfirmations: (call) => requestedMinConfirmations(config, call),
    standbyDelayBlocks: deps.standbyDelayBlocks ?? 0,
  });
  // A request held back by its confirmations (or a standby's delay) stays in the blocks the window reads again: one
  // whose block vanishes in a reorg meanwhile is gone before it is served, whatever its own `_minConfirmations`.
  windowLogs?.store.rereadFrom(waiting.length > 0 ? Math.min(...waiting.map((call) => call.blockNumber)) : undefined);
  return {
    head,
    open,
    discovered,
    aggregated,
    withdrawals: withdrawalsPastStandbyDelay([...withdrawals.values()], {
      currentBlock: head,
      standbyDelayBlocks: deps.standbyDelayBlocks ?? 0,
    }),
    kept,
    waiting,
    leftToPrimary,
    yielded: [],
  };
}

/**
 * Step 5b, a standby's only: a wallet with transactions in the pool that this process has not seen stuck (the
 * primary's fulfilments, late) gets no shard this poll, so the standby makes no API call for requests the primary
 * may be answering; the shard would send nothing for it anyway (the pending-transaction rule, src/chain/pending.ts).
 * The same sightings as the shards': once stuck, the shard runs and replaces them. Through the first provider in use;
 * a wallet whose counts cannot be read keeps its shard, which reads them itself.
 */
async function yieldToPendingTransactions(
  context: ChainContext,
  provider: DiscoveredProvider,
  confirmed: Confirmed,
  shards: ShardInput[],
): Promise<ShardInput[]> {
  const { chain, deps } = context;
  if ((deps.standbyDelayBlocks ?? 0) <= 0 || shards.length === 0) return shards;
  const sightings = deps.pendingSightings ?? processPendingSightings();
  const client = context.makeClient(provider.url);
  try {
    const decisions = await Promise.all(
      shards.map(async (shard) => {
        try {
          const [latestCount, pendingCount] = await Promise.all([
            transactionCount(client, shard.sponsorWallet, 'latest'),
            transactionCount(client, shard.sponsorWallet, 'pending'),
          ]);
          const seenPendingFor = sightings.observe(sightingsKey(chain.id, shard.sponsorWallet), {
            latestCount,
            pendingCount,
            block: confirmed.head,
          });
          return decidePending({
            latestCount,
            pendingCount,
            seenPendingFor,
            ...(shard.inFlightNonces ? { inFlightNonces: shard.inFlightNonces } : {}),
          });
        } catch {
          return undefined;
        }
      }),
    );
    return shards.filter((shard, index) => {
      const decision = decisions[index];
      if (decision?.action !== 'wait') return true;
      deps.logger.info(
        { chainId: chain.id, sponsorWallet: shard.sponsorWallet, pending: decision.pending },
        'standby: pending transactions of the wallet left alone; no API call',
      );
      for (const call of shard.apiCalls) confirmed.yielded.push({ call, reason: `standby: ${decision.reason}` });
      return false;
    });
  } finally {
    provider.summary.rpcCalls += client.calls;
  }
}

/**
 * Step 5: one shard per sponsor wallet (its own nonce sequence), with the servable requests and withdrawals in log
 * order, the healthy providers to send through, the confirmed head, and in a window the nonces it holds in flight.
 */
function shardBySponsorWallet(
  context: ChainContext,
  healthy: DiscoveredProvider[],
  confirmed: Confirmed,
): ShardInput[] {
  const { chain, deps } = context;
  const bySponsorWallet = new Map<string, ShardInput>();
  const shardOf = (sponsor: string, sponsorWallet: string) => {
    let shard = bySponsorWallet.get(sponsorWallet);
    if (!shard) {
      shard = {
        chainId: chain.id,
        sponsor,
        sponsorWallet,
        providers: healthy.map((s) => s.name),
        currentBlock: confirmed.head,
        apiCalls: [],
        withdrawals: [],
      };
      bySponsorWallet.set(sponsorWallet, shard);
    }
    return shard;
  };
  for (const call of [...confirmed.kept].sort(byLogPosition))
    shardOf(call.sponsor, call.sponsorWallet).apiCalls.push(call);
  for (const withdrawal of [...confirmed.withdrawals].sort(byLogPosition)) {
    shardOf(withdrawal.sponsor, withdrawal.sponsorWallet).withdrawals.push(withdrawal);
  }
  const shards = [...bySponsorWallet.values()];
  for (const shard of shards) {
    const inFlightNonces = deps.window?.inFlightNonces(chain.id, shard.sponsorWallet, confirmed.head) ?? [];
    if (inFlightNonces.length > 0) shard.inFlightNonces = inFlightNonces;
  }
  return shards;
}

/** Step 6: the chain's gas price, read once through the first healthy provider for all its shards. */
async function priceShards(
  context: ChainContext,
  provider: ProviderState,
  shards: ShardInput[],
): Promise<ChainStrategyFailure[]> {
  const failures: ChainStrategyFailure[] = [];
  if (shards.length === 0) return failures;
  const gasTarget = await chainGasTarget(context.chain, provider, context.makeClient, context.deps.logger, failures);
  if (gasTarget) for (const shard of shards) shard.gasTarget = gasTarget;
  return failures;
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
  planned: PlannedChain,
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
    leftToPrimary: DiscoveredApiCall[];
    yielded: { call: DiscoveredApiCall; reason: string }[];
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
function openRequestsByWallet(seen: SeenRequest[]): Map<string, number> {
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
    role: roleOf(deps.standbyDelayBlocks),
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
