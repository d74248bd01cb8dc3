// A chain's plan, the steps after the providers' judgement (cycle-providers.ts): the open requests read through the
// trusted providers, the requests confirmed (chain limit, aggregation by id, confirmations), a standby's yield to
// pending transactions, one shard per sponsor wallet, and the chain's gas price for the shards.
import { type DiscoveryOptions, discoverOnProvider, type ProviderDiscovery } from '../chain/discovery.js';
import { transactionCount } from '../chain/fulfillment.js';
import { type GasTargetJson, gasTargetToJson, getGasTarget } from '../chain/gas-price.js';
import { byLogPosition } from '../chain/logs.js';
import { decidePending, processPendingSightings, sightingsKey } from '../chain/pending.js';
import { processProviderMemory } from '../chain/provider-health.js';
import {
  applyChainLimit,
  type DiscoveredApiCall,
  filterByMinConfirmations,
  withdrawalsPastStandbyDelay,
} from '../chain/requests.js';
import { RpcClient, withTimeout } from '../chain/rpc.js';
import type { SponsorWallets } from '../chain/sponsor-wallets.js';
import { type ChainConfig, DEFAULT_MIN_CONFIRMATIONS, type WithdrawalRequest } from '../chain/types.js';
import { errorMessage } from '../common/errors.js';
import type { Config } from '../config/index.js';
import { type CycleDeps, type PlanContext, PROVIDER_DISCOVERY_TIMEOUT_MS } from './cycle-context.js';
import {
  type DiscoveredProvider,
  discoverProviders,
  judgeProviders,
  leaveOut,
  type ProviderState,
} from './cycle-providers.js';
import { type ChainStrategyFailure, type ProviderSummary, type SeenRequest, seenRequests } from './cycle-summary.js';
import { requestedMinConfirmations } from './endpoints.js';
import type { Logger } from './logger.js';
import { decodeParameters } from './ois-adapter.js';
import type { ShardInput } from './shard-types.js';

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
  const context: PlanContext = {
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
      deferred: confirmed.deferred,
      standbyDelayBlocks: deps.standbyDelayBlocks ?? 0,
      limited: confirmed.aggregated,
      healthy: confirmed.open,
    }),
    ...authorizationWindow(healthy.map((s) => s.discovery.authorization)),
  };
}

/**
 * Step 3: the open requests, read through each trusted provider up to its own head (logs, templates, authorization),
 * isolated as the heads were; in a window, through the window's log store.
 */
async function openRequests(context: PlanContext, trusted: ProviderState[]): Promise<DiscoveredProvider[]> {
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

export type Confirmed = {
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
  /** Requests whose API failed for now, held back until their retry (src/node/api-retries.ts), and why. */
  deferred: { call: DiscoveredApiCall; reason: string }[];
};

/**
 * Step 4: the requests not in flight, within the chain limit, aggregated by id across providers (submitted once,
 * however many providers saw them), and split by their confirmations against the confirmed head.
 */
export function confirm(context: PlanContext, healthy: DiscoveredProvider[]): Confirmed {
  const { config, chain, deps, windowLogs } = context;
  // The lowest head among healthy providers: a provider that is ahead must not make a request look confirmed early,
  // and every provider a shard may use knows this block (its static calls and estimates run against it).
  const head = Math.min(...healthy.map((s) => s.head!));
  // In a window, a request whose fulfilment is in flight is neither planned again nor counted against the limit.
  const held = (call: DiscoveredApiCall) => deps.window?.holds(chain.id, call.id, head) === true;
  // A request whose API failed for now waits for its retry (not counted against the limit either); one past its
  // retry window is failed with the API's last error, without another call.
  const deferred = new Map<string, { call: DiscoveredApiCall; reason: string }>();
  const retried = (call: DiscoveredApiCall): DiscoveredApiCall | undefined => {
    if (!deps.apiRetries || call.errorMessage) return call;
    const gate = deps.apiRetries.gate(chain.id, call);
    if (gate.kind === 'call') return call;
    if (gate.kind === 'fail') return { ...call, errorMessage: gate.message };
    deferred.set(call.id, { call, reason: gate.reason });
    return undefined;
  };
  deps.apiRetries?.keepOpen(
    chain.id,
    new Set(healthy.flatMap((s) => s.discovery.apiCalls.map((call) => call.id.toLowerCase()))),
  );
  const open = healthy.map((s) => ({
    discovery: {
      ...s.discovery,
      apiCalls: s.discovery.apiCalls.flatMap((call) => {
        const kept = held(call) ? undefined : retried(call);
        return kept ? [kept] : [];
      }),
    },
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
    deferred: [...deferred.values()],
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
  context: PlanContext,
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
export function shardBySponsorWallet(
  context: PlanContext,
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
  context: PlanContext,
  provider: ProviderState,
  shards: ShardInput[],
): Promise<ChainStrategyFailure[]> {
  const failures: ChainStrategyFailure[] = [];
  if (shards.length === 0) return failures;
  const gasTarget = await chainGasTarget(context.chain, provider, context.makeClient, context.deps.logger, failures);
  if (gasTarget) for (const shard of shards) shard.gasTarget = gasTarget;
  return failures;
}

export function authorizationWindow(windows: ({ startMs: number; endMs: number } | undefined)[]) {
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
 * The chain's gas price for this cycle, read once through the first provider in use and handed to every shard: what
 * every sponsor wallet would otherwise read for itself (the strategies' blocks and the provider's price) costs the
 * chain's calls once. Undefined when the strategies fail without a constant fallback: the shards then try themselves.
 */
async function chainGasTarget(
  chain: ChainConfig,
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
