// The providers' judgement, the first steps of a chain's plan: each provider's chain id and head (discover), the
// heads judged against each other (judge), and a provider that fails a step left out of the cycle with its fault
// (wrong chain, no head in a window's poll, unavailable, oversized).

import type { ProviderDiscovery } from '../chain/discovery.js';
import { fetchBlockNumber } from '../chain/logs.js';
import {
  HEAD_GRACE_MS,
  HEAD_TIMEOUT_MS,
  judgeChainHeads,
  MAX_PROVIDER_LAG_BLOCKS,
  type ProviderFault,
  type ProviderHead,
  showsBlock,
} from '../chain/provider-health.js';
import { isProviderError, RpcAnswerTooLarge, type RpcClient, RpcTransportError, withTimeout } from '../chain/rpc.js';
import { settleWithGrace } from '../common/concurrency.js';
import { errorMessage } from '../common/errors.js';
import { type PlanContext, PROVIDER_DISCOVERY_TIMEOUT_MS } from './cycle-context.js';
import type { ProviderSummary } from './cycle-summary.js';

/** A provider through the cycle's steps: its head once read, its discovery once its head is trusted. */
export type ProviderState = {
  name: string;
  url: string;
  client: RpcClient;
  head?: number;
  discovery?: ProviderDiscovery;
  summary: ProviderSummary;
};
export type DiscoveredProvider = ProviderState & { discovery: ProviderDiscovery };

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

/**
 * Step 1: each provider's chain id (when not verified) and head, in parallel and isolated; in a window's poll, the
 * head the poll read. Once one provider gave its head, the others get HEAD_GRACE_MS more: one that hangs is
 * `unavailable` for this cycle instead of holding the chain back.
 */
export async function discoverProviders(context: PlanContext): Promise<ProviderState[]> {
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
      const error =
        outcome?.reason ?? new RpcTransportError(`no head within ${HEAD_GRACE_MS} ms of another provider's`);
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
export async function judgeProviders(context: PlanContext, states: ProviderState[]): Promise<ProviderState[]> {
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

/** A provider that failed a step: logged with its fault and left out of this cycle. */
export function leaveOut(context: PlanContext, state: ProviderState, error: unknown): void {
  const { chain, deps, memory } = context;
  if (!isProviderError(error) && !(error instanceof WrongChain) && !(error instanceof NoHeadThisPoll)) {
    // The node's own error (every provider would meet it): the provider stays up and without a fault.
    Object.assign(state.summary, { error: `node error: ${errorMessage(error)}`, rpcCalls: state.client.calls });
    deps.logger.error(
      { chainId: chain.id, provider: state.name, err: errorMessage(error) },
      "node error on this chain (not the provider's fault): its requests wait",
    );
    return;
  }
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
