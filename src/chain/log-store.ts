// The node's logs of one chain, kept for the length of a coordinator window (docs/chain-cycle.md, "The window"):
// the window's first cycle reads the whole history window through every provider, as the one-shot cycle does,
// and the store keeps them; each later poll reads only the blocks after the last one read, through one provider,
// so a poll never re-scans history. The last `reorgDepth` blocks are read again each time (within the same
// eth_getLogs call), and what was stored for them is replaced: a request whose block vanished in a reorg is gone
// before its confirmations let it be served. A request that waits for more confirmations than the chain's (its own
// `_minConfirmations`, at most 300) keeps its block in that re-read too (`rereadFrom`), for the same reason. And the
// newest NEWEST_BLOCKS_REREAD blocks are read again whatever the confirmations (merged, not replaced): a provider whose
// log index was a block behind its head (common behind load balancers) answered them without their logs, and with
// `minConfirmations: 0` nothing else would read them again in this window.

import type { RawLog } from './logs.js';
import { asQuantity } from './rpc.js';

const blockOf = (log: RawLog) => Number(asQuantity(log.blockNumber, 'log.blockNumber'));
const keyOf = (log: RawLog) => `${String(log.transactionHash)}:${String(log.logIndex)}`;

/**
 * Blocks before the last read that each read covers again, beyond the reorg depth, in the same eth_getLogs: what a
 * provider's index may be behind its own head. Their logs are added to what was read, never removed.
 */
export const NEWEST_BLOCKS_REREAD = 2;

export class ChainLogStore {
  private readonly logs = new Map<string, RawLog>();
  private scannedTo: number | undefined;
  private waitingFrom: number | undefined;
  /** Reads are one at a time: providers asking together share one read. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly reorgDepth: number) {}

  /** The highest block read so far (undefined before the first cycle). */
  get head(): number | undefined {
    return this.scannedTo;
  }

  /** Every log kept so far (the window's latency reads the answers of its requests here). */
  stored(): RawLog[] {
    return [...this.logs.values()];
  }

  /**
   * The oldest block of a request still waiting for its confirmations (undefined: none waits): the next reads
   * start there at the latest, so a reorg that drops it is seen before it is served.
   */
  rereadFrom(block: number | undefined): void {
    this.waitingFrom = block;
  }

  /** A provider's own logs of the history window up to `toBlock` (the first cycle), kept for the polls. */
  remember(logs: RawLog[], toBlock: number): void {
    for (const log of logs) if (!log.removed) this.logs.set(keyOf(log), log);
    this.scannedTo = Math.max(this.scannedTo ?? toBlock, toBlock);
  }

  /**
   * The stored logs up to `head`, reading through `fetch` only the blocks after the last read (and the last
   * `reorgDepth`, at least NEWEST_BLOCKS_REREAD, again), never before `fromLimit` (the history window).
   */
  upTo(head: number, fromLimit: number, fetch: (fromBlock: number, toBlock: number) => Promise<RawLog[]>) {
    const next = this.queue.then(async () => {
      if (this.scannedTo === undefined || head > this.scannedTo) {
        const afterLastRead = (this.scannedTo ?? fromLimit - 1) + 1;
        // Blocks from here on may have changed in a reorg: what was stored for them is replaced.
        const replaceFrom = Math.max(
          fromLimit,
          Math.min(afterLastRead - this.reorgDepth, this.waitingFrom ?? Number.POSITIVE_INFINITY),
        );
        const fromBlock = Math.max(fromLimit, Math.min(replaceFrom, afterLastRead - NEWEST_BLOCKS_REREAD));
        const fetched = await fetch(fromBlock, head);
        for (const [key, log] of this.logs) if (blockOf(log) >= replaceFrom) this.logs.delete(key);
        for (const log of fetched) if (!log.removed) this.logs.set(keyOf(log), log);
        this.scannedTo = head;
      }
      for (const [key, log] of this.logs) if (blockOf(log) < fromLimit) this.logs.delete(key);
      return [...this.logs.values()].filter((log) => blockOf(log) <= head);
    });
    this.queue = next.catch(() => undefined);
    return next;
  }
}
