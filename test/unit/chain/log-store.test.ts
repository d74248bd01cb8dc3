// The window's log store against a chain played as a list of logs per block: what each read asks for, and what a
// reorg (a block whose logs change between two reads) leaves in the store.
import { expect } from 'chai';
import { ChainLogStore, NEWEST_BLOCKS_REREAD } from '../../../src/chain/log-store.js';
import type { RawLog } from '../../../src/chain/logs.js';

const hex = (n: number) => `0x${n.toString(16)}`;
const log = (block: number, tx: string): RawLog => ({
  address: '0x0000000000000000000000000000000000000001',
  topics: [],
  data: '0x',
  blockNumber: hex(block),
  logIndex: '0x0',
  transactionHash: tx,
});

/** The chain as the provider sees it now (`current`, replaced to play a reorg); `reads` records each eth_getLogs range. */
class PlayedChain {
  readonly reads: [number, number][] = [];
  constructor(public current: RawLog[]) {}
  readonly fetch = async (fromBlock: number, toBlock: number) => {
    this.reads.push([fromBlock, toBlock]);
    return this.current.filter((l) => Number(l.blockNumber) >= fromBlock && Number(l.blockNumber) <= toBlock);
  };
}

const txs = (logs: RawLog[]) => logs.map((l) => l.transactionHash).sort();

describe('ChainLogStore (the coordinator window keeps the logs it read)', () => {
  it('reads only the blocks after the last read, and the last reorgDepth blocks again', async () => {
    const provider = new PlayedChain([log(10, 'a'), log(12, 'b')]);
    const store = new ChainLogStore(2);
    store.remember(provider.current, 12);
    provider.current = [...provider.current, log(14, 'c')];
    expect(txs(await store.upTo(15, 0, provider.fetch))).to.deep.equal(['a', 'b', 'c']);
    expect(provider.reads).to.deep.equal([[11, 15]]);
    // The head has not moved: nothing is read.
    await store.upTo(15, 0, provider.fetch);
    expect(provider.reads).to.have.length(1);
  });

  it('a request whose block vanished in a reorg within reorgDepth is gone from the store', async () => {
    const provider = new PlayedChain([log(10, 'a'), log(12, 'request')]);
    const store = new ChainLogStore(2);
    store.remember(provider.current, 12);
    // Block 12 is replaced: the request is not in the new chain.
    provider.current = [log(10, 'a'), log(13, 'other')];
    expect(txs(await store.upTo(13, 0, provider.fetch))).to.deep.equal(['a', 'other']);
  });

  it('keeps the block of a request that waits for its own _minConfirmations in the re-read (rereadFrom)', async () => {
    const provider = new PlayedChain([log(12, 'request')]);
    const store = new ChainLogStore(0);
    store.remember(provider.current, 12);
    store.rereadFrom(12);
    // A reorg of three blocks drops the request; the chain's own depth (0) would not read block 12 again.
    provider.current = [log(15, 'other')];
    expect(txs(await store.upTo(15, 0, provider.fetch))).to.deep.equal(['other']);
    expect(provider.reads).to.deep.equal([[Math.min(12, 13 - NEWEST_BLOCKS_REREAD), 15]]);
    // Nothing waits any more: back to the chain's depth (and the newest blocks a provider's index may have missed).
    store.rereadFrom(undefined);
    await store.upTo(16, 0, provider.fetch);
    expect(provider.reads.at(-1)).to.deep.equal([16 - NEWEST_BLOCKS_REREAD, 16]);
  });

  it('with reorgDepth 0, reads the newest blocks again and adds the logs an index behind its head had left out', async () => {
    const provider = new PlayedChain([log(10, 'a')]);
    const store = new ChainLogStore(0);
    store.remember(provider.current, 12);
    // The log of block 12 was missing from that answer; the next read (head 13) covers block 12 again.
    provider.current = [log(10, 'a'), log(12, 'request'), log(13, 'b')];
    expect(txs(await store.upTo(13, 0, provider.fetch))).to.deep.equal(['a', 'b', 'request']);
    expect(provider.reads).to.deep.equal([[13 - NEWEST_BLOCKS_REREAD, 13]]);
    // A re-read that misses a stored log (an index behind again) does not remove it: only a reorg depth replaces.
    provider.current = [log(14, 'c')];
    expect(txs(await store.upTo(14, 0, provider.fetch))).to.deep.equal(['a', 'b', 'c', 'request']);
  });

  it('never reads before the history window, and forgets what falls out of it', async () => {
    const provider = new PlayedChain([log(5, 'old'), log(12, 'b')]);
    const store = new ChainLogStore(0);
    store.remember(provider.current, 12);
    store.rereadFrom(3);
    expect(txs(await store.upTo(13, 8, provider.fetch))).to.deep.equal(['b']);
    expect(provider.reads).to.deep.equal([[8, 13]]);
  });
});
