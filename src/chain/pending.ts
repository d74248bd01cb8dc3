// The pending-transaction rule: what a cycle does about a sponsor wallet's transactions that are in the pool but
// not mined yet. Anything may have sent them: this coordinator's previous cycle, another coordinator whose cycle
// overlaps this one (a stage rollout, a manual `oracle-node cycle`, a CronJob that outlived its minute), a worker
// that was killed after sending. Replacing them is only right when they are stuck; replacing a transaction that
// is about to be mined costs 20 % more gas and makes two coordinators report the same fulfilments. Pure: the
// counts are read from the chain by the caller (src/node/shard.ts), the decision and the sightings are kept here.
import { isCount, isRecord, parseJsonText } from '../common/json.js';

/**
 * A wallet's pending transactions are stuck once this process has seen them pending for this many blocks while none
 * of the wallet's transactions was mined (docs/chain-cycle.md, "Pending transactions").
 */
export const STUCK_AFTER_BLOCKS = 3;

export type PendingState = {
  /** The wallet's transaction count at `latest`: its mined transactions. */
  latestCount: number;
  /** The wallet's transaction count at `pending`: mined plus those in the pool. */
  pendingCount: number;
  /**
   * For how many blocks this process has seen these transactions pending with the wallet's mined count unmoved
   * (PendingSightings.observe): 0 on first sight, whatever the age of the requests they may answer.
   */
  seenPendingFor: number;
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

export function decidePending(state: PendingState): PendingDecision {
  const pending = state.pendingCount - state.latestCount;
  if (pending <= 0) return { action: 'send', firstNonce: state.latestCount };
  // Every pending nonce is one the caller sent and still awaits: nothing unknown to wait for or replace.
  if (allPendingInFlight(state)) return { action: 'send', firstNonce: state.pendingCount };
  if (state.seenPendingFor < STUCK_AFTER_BLOCKS) {
    return {
      action: 'wait',
      pending,
      reason: `${pending} pending transaction(s) of this wallet, seen pending by this coordinator for ${Math.max(0, state.seenPendingFor)} block(s): not stuck`,
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

type Sighting = { latestCount: number; pendingCount: number; since: number };

/**
 * What this process has seen of each wallet's pending transactions: since which block its pending count has stood
 * above a mined count that did not move. Neither a request's age nor the chain can say how long ago another
 * coordinator sent a transaction (one overlapping this one sent it a moment ago, for requests that waited long), so
 * only the process's own sightings make a transaction stuck. The count starts again when a transaction is mined (the
 * wallet is being served), when new ones join the pool, and when this process sends (a replacement gets its blocks
 * too, so it is never bumped again on the next poll). In memory, and handed from one coordinator run to the next with
 * the hand-over Lease (`toHandOver`, `takeOver`: docs/chain-cycle.md, "Pending transactions"), so the count goes on
 * across runs shorter than STUCK_AFTER_BLOCKS blocks.
 */
export class PendingSightings {
  private readonly byWallet = new Map<string, Sighting>();

  /**
   * The sightings as the next run takes them over (takeOver): JSON, at most MAX_HANDED_OVER_SIGHTINGS wallets (those
   * seen pending the longest first: the nearest to being replaced). Undefined when there are none.
   */
  toHandOver(): string | undefined {
    if (this.byWallet.size === 0) return undefined;
    const oldest = [...this.byWallet].sort(([, a], [, b]) => a.since - b.since).slice(0, MAX_HANDED_OVER_SIGHTINGS);
    const sightings = Object.fromEntries(oldest.map(([key, s]) => [key, [s.latestCount, s.pendingCount, s.since]]));
    return JSON.stringify({ version: HAND_OVER_VERSION, sightings });
  }

  /**
   * Takes over the sightings of the run before (toHandOver), read back as untrusted input: what is not a sighting is
   * left out, and a wallet this process has seen itself keeps its own. Answers how many were taken.
   */
  takeOver(handedOver: string | undefined): number {
    const sightings = parseHandOver(handedOver);
    let taken = 0;
    for (const [key, sighting] of sightings) {
      if (this.byWallet.has(key) || this.byWallet.size >= MAX_HANDED_OVER_SIGHTINGS) continue;
      this.byWallet.set(key, sighting);
      taken++;
    }
    return taken;
  }

  /** Records a read of the wallet's counts at `block`; answers for how many blocks they have been seen pending. */
  observe(wallet: string, counts: { latestCount: number; pendingCount: number; block: number }): number {
    const { latestCount, pendingCount, block } = counts;
    if (pendingCount <= latestCount) {
      this.byWallet.delete(wallet);
      return 0;
    }
    const seen = this.byWallet.get(wallet);
    if (!seen || seen.latestCount !== latestCount || pendingCount > seen.pendingCount) {
      this.byWallet.set(wallet, { latestCount, pendingCount, since: block });
      return 0;
    }
    seen.pendingCount = pendingCount; // fewer: some left the pool; a later rise is then seen as new ones
    return Math.max(0, block - seen.since);
  }

  /** This process sent the wallet's transactions up to `nextNonce` - 1 at `block`: pending from there. */
  sent(wallet: string, sent: { latestCount: number; nextNonce: number; block: number }): void {
    const pendingCount = Math.max(sent.nextNonce, this.byWallet.get(wallet)?.pendingCount ?? 0);
    this.byWallet.set(wallet, { latestCount: sent.latestCount, pendingCount, since: sent.block });
  }
}

/** The sightings of this process: every shard, cycle and window poll it runs adds to them. */
const PROCESS_SIGHTINGS = new PendingSightings();

/** The process's sightings: the shards' (src/node/shard.ts), and a standby's cycle reads them before its shards. */
export const processPendingSightings = (): PendingSightings => PROCESS_SIGHTINGS;

/** The key of a wallet's sightings: the same for the shards and a standby's cycle. */
export const sightingsKey = (chainId: string, wallet: string): string => `${chainId}:${wallet.toLowerCase()}`;

/** The most wallets whose sightings a run hands over: a Lease annotation of about 20 KiB at most. */
export const MAX_HANDED_OVER_SIGHTINGS = 256;
const HAND_OVER_VERSION = 1;
/** A sighting's key (a chain id and a wallet address) as the shards make it: bounded, and nothing else. */
const SIGHTING_KEY = /^[0-9]{1,20}:0x[0-9a-f]{40}$/;

/** The sightings in a hand-over (PendingSightings.toHandOver); anything else is left out, never thrown. */
function parseHandOver(handedOver: string | undefined): Map<string, Sighting> {
  const sightings = new Map<string, Sighting>();
  if (handedOver === undefined || handedOver.length > 64 * 1024) return sightings;
  const parsed = parseJsonText(handedOver);
  if (!isRecord(parsed)) return sightings;
  const { version, sightings: entries } = parsed;
  if (version !== HAND_OVER_VERSION || typeof entries !== 'object' || entries === null) return sightings;
  for (const [key, value] of Object.entries(entries)) {
    if (sightings.size >= MAX_HANDED_OVER_SIGHTINGS) break;
    if (!SIGHTING_KEY.test(key) || !Array.isArray(value) || value.length !== 3 || !value.every(isCount)) continue;
    const [latestCount, pendingCount, since] = value as [number, number, number];
    if (pendingCount > latestCount) sightings.set(key, { latestCount, pendingCount, since });
  }
  return sightings;
}
