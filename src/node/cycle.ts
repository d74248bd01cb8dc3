// One coordinator cycle (airnode-facts §3): discovery on every (chain, provider) in parallel and
// isolated (heads first, judged against each other, then the requests through the trusted providers), the chain
// limit, aggregation by requestId across providers, the confirmation filter, then shards by sponsor wallet handed
// to an executor. Deliberate difference from the reference: each request is submitted once, through one provider,
// instead of once per provider (see docs/chain-cycle.md).

import { readBalances } from '../chain/balances.js';
import { type ProviderMemory, processProviderMemory } from '../chain/provider-health.js';
import { RpcClient } from '../chain/rpc.js';
import { type SponsorWallets, sponsorWallets } from '../chain/sponsor-wallets.js';
import type { ChainConfig } from '../chain/types.js';
import { errorMessage } from '../common/errors.js';
import type { Config } from '../config/index.js';
import { Tracer } from '../observability/tracing.js';
import { type CycleDeps, roleOf } from './cycle-context.js';
import { planChainShards } from './cycle-plan.js';
import {
  addChainRun,
  type ChainRunReport,
  type CycleSummary,
  emptySummary,
  type SeenRequest,
} from './cycle-summary.js';
import { endRequestTraces, traceRequests } from './cycle-traces.js';
import type { ShardResult } from './executor.js';

// The cycle's steps live beside it: cycle-context.ts (what they read), cycle-providers.ts (the providers' judgement),
// cycle-plan.ts (the plan), cycle-summary.ts (the summary), cycle-traces.ts (the request traces).
export { type CycleDeps, type CycleWindow, PROVIDER_DISCOVERY_TIMEOUT_MS, roleOf } from './cycle-context.js';
export { type PlannedChain, planChainShards } from './cycle-plan.js';
export type { CycleSummary, ProviderSummary, SeenRequest } from './cycle-summary.js';

const NO_TRACER = new Tracer();

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
  chain: ChainConfig,
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
function forgetChainIdsOnSendErrors(chain: ChainConfig, results: ShardResult[], memory: ProviderMemory): void {
  const sendFailed = results.some((r) => !r.ok || r.output.outcomes.some((o) => o.outcome === 'error'));
  if (!sendFailed) return;
  for (const provider of Object.values(chain.providers)) memory.forgetChainId(provider.url);
}

/**
 * A chain's part of a cycle: its plan (the providers judged, the requests confirmed, the shards by sponsor wallet),
 * the shards through the executor with their requests' traces, then the wallets' balances. Undefined when the chain
 * failed (logged): the cycle's other chains go on.
 */
export async function runChain(
  config: Config,
  chain: ChainConfig,
  deps: CycleDeps & { wallets: SponsorWallets },
): Promise<ChainRunReport | undefined> {
  try {
    const started = performance.now();
    const startMs = Date.now();
    const planned = await planChainShards(config, chain, deps);
    const discovered = performance.now();
    const roots = traceRequests(deps.tracer ?? NO_TRACER, planned, { startMs, discoveredMs: Date.now() });
    const results = planned.shards.length
      ? await deps.executor.run(planned.shards, { concurrency: chain.maxConcurrency })
      : [];
    endRequestTraces(roots, results);
    forgetChainIdsOnSendErrors(chain, results, deps.providerMemory ?? processProviderMemory);
    const timings = { discoveryMs: discovered - started, shardsMs: performance.now() - discovered };
    const balances = await sponsorWalletBalances(chain, planned.servingProvider, { results, seen: planned.seen }, deps);
    return { planned, results, timings, balances };
  } catch (error) {
    deps.logger.error({ chainId: chain.id, err: errorMessage(error) }, 'chain cycle failed');
    return undefined;
  }
}

/**
 * One cycle on `chains` (every configured chain by default; a window's poll runs one), the chains in parallel and
 * isolated: one failing chain never stops another.
 */
export async function runCycle(
  config: Config,
  deps: CycleDeps,
  chains: readonly ChainConfig[] = config.chains,
): Promise<CycleSummary> {
  const wallets = deps.wallets ?? sponsorWallets(config.nodeSettings.nodeWalletMnemonic);
  const summary: CycleSummary = { role: roleOf(deps.standbyDelayBlocks), ...emptySummary() };
  const gasPrices = new Map<string, bigint>();
  const perChain = await Promise.all(chains.map((chain) => runChain(config, chain, { ...deps, wallets })));
  for (const chain of perChain) if (chain) addChainRun(summary, gasPrices, chain);
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
