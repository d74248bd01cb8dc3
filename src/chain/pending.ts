// The pending-transaction rule: what a cycle does about a sponsor wallet's transactions that are in the pool but
// not mined yet. Anything may have sent them: this coordinator's previous cycle, another coordinator whose cycle
// overlaps this one (a stage rollout, a manual `oracle-node cycle`, a CronJob that outlived its minute), a worker
// that was killed after sending. Replacing them is only right when they are stuck; replacing a transaction that
// is about to be mined costs 20 % more gas and makes two coordinators report the same fulfilments. Pure: the
// inputs are read from the chain by the caller (src/node/shard.ts), the decision is made here.

/**
 * A wallet's pending transactions are stuck once none of its transactions was mined for this many blocks while
 * its oldest open request has been servable for at least as long (docs/chain-cycle.md, "Pending transactions").
 */
export const STUCK_AFTER_BLOCKS = 3;

export type PendingState = {
  /** The wallet's transaction count at `latest`: its mined transactions. */
  latestCount: number;
  /** The wallet's transaction count at `pending`: mined plus those in the pool. */
  pendingCount: number;
  /** The head this cycle works at (the discovery block). */
  currentBlock: number;
  /**
   * The earliest block at which any open request or withdrawal of the wallet could be served (its block plus
   * the confirmations it needs): no transaction for it can have been sent before.
   */
  oldestServableBlock: number;
  /**
   * The wallet's transaction count STUCK_AFTER_BLOCKS blocks before `currentBlock`, when the provider could tell
   * (providers without that state answer with an error: then the requests' age alone decides).
   */
  latestCountBefore?: number;
  /**
   * Nonces of the wallet's transactions that the caller itself sent and knows to be in flight, not stuck (a
   * coordinator window's fulfilments, src/node/window.ts). When they are all that is pending, the wallet goes on
   * at the next nonce instead of waiting for them.
   */
  inFlightNonces?: readonly number[];
};

export type PendingDecision =
  /** Nothing pending: send from the mined count. */
  | { action: 'send'; firstNonce: number }
  /** Pending and not stuck: send nothing for the wallet this cycle; the pending transactions may be mined. */
  | { action: 'wait'; pending: number; reason: string }
  /** Stuck: replace them (same nonces, from the mined count) at a higher price. */
  | { action: 'replace'; firstNonce: number; pending: number };

/** Whether the caller must read `latestCountBefore` to decide (one more call, only for a wallet with pending ones). */
export function needsCountBefore(state: Omit<PendingState, 'latestCountBefore'>): boolean {
  return (
    state.pendingCount > state.latestCount && !allPendingInFlight(state) && servableFor(state) >= STUCK_AFTER_BLOCKS
  );
}

export function decidePending(state: PendingState): PendingDecision {
  const pending = state.pendingCount - state.latestCount;
  if (pending <= 0) return { action: 'send', firstNonce: state.latestCount };
  // Every pending nonce is one the caller sent and still awaits: nothing unknown to wait for or replace.
  if (allPendingInFlight(state)) return { action: 'send', firstNonce: state.pendingCount };
  const age = servableFor(state);
  if (age < STUCK_AFTER_BLOCKS) {
    return {
      action: 'wait',
      pending,
      reason: `${pending} pending transaction(s) of this wallet, sent at most ${Math.max(0, age)} block(s) ago: not stuck`,
    };
  }
  if (state.latestCountBefore !== undefined && state.latestCountBefore !== state.latestCount) {
    return {
      action: 'wait',
      pending,
      reason: `${pending} pending transaction(s) of this wallet, which had transactions mined in the last ${STUCK_AFTER_BLOCKS} blocks: not stuck`,
    };
  }
  return { action: 'replace', firstNonce: state.latestCount, pending };
}

function allPendingInFlight(state: Pick<PendingState, 'latestCount' | 'pendingCount' | 'inFlightNonces'>): boolean {
  if (!state.inFlightNonces || state.pendingCount <= state.latestCount) return false;
  const known = new Set(state.inFlightNonces);
  for (let nonce = state.latestCount; nonce < state.pendingCount; nonce++) if (!known.has(nonce)) return false;
  return true;
}

function servableFor(state: Pick<PendingState, 'currentBlock' | 'oldestServableBlock'>): number {
  return state.currentBlock - state.oldestServableBlock;
}
