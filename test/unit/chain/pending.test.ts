// The pending-transaction rule (src/chain/pending.ts): leave a wallet's pending transactions alone, whoever sent
// them, until this process has seen them stuck; then replace them.
import { expect } from 'chai';
import {
  decidePending,
  MAX_HANDED_OVER_SIGHTINGS,
  PendingSightings,
  type PendingState,
  processPendingSightings,
  STUCK_AFTER_BLOCKS,
  sightingsKey,
} from '../../../src/chain/pending.js';

const state = (overrides: Partial<PendingState> = {}): PendingState => ({
  latestCount: 5,
  pendingCount: 8,
  seenPendingFor: 0,
  ...overrides,
});

describe('the pending-transaction rule', () => {
  it('sends from the mined count when nothing is pending', () => {
    expect(decidePending(state({ pendingCount: 5 }))).to.deep.equal({ action: 'send', firstNonce: 5 });
    // A provider whose pending count lags its latest one says nothing is pending.
    expect(decidePending(state({ pendingCount: 4 }))).to.deep.equal({ action: 'send', firstNonce: 5 });
  });

  it('goes on at the next nonce when every pending transaction is one the caller sent and still awaits', () => {
    // Nonces 5..7 pending, all the window's own: the wallet's next request takes nonce 8 at once.
    expect(decidePending(state({ inFlightNonces: [4, 5, 6, 7] }))).to.deep.equal({ action: 'send', firstNonce: 8 });
    // One pending nonce the caller does not know (another coordinator's): the rule as without the view.
    expect(decidePending(state({ inFlightNonces: [5, 7] })).action).to.equal('wait');
    expect(decidePending(state({ inFlightNonces: [] })).action).to.equal('wait');
  });

  it('leaves alone transactions this process has seen pending for fewer blocks than the threshold', () => {
    for (let seen = 0; seen < STUCK_AFTER_BLOCKS; seen++) {
      const decision = decidePending(state({ seenPendingFor: seen }));
      expect(decision, `seen for ${seen}`).to.include({ action: 'wait', pending: 3 });
      if (decision.action === 'wait') expect(decision.reason).to.match(/^3 pending transaction\(s\).*: not stuck$/);
    }
  });

  it('replaces them once this process has seen them pending for the threshold', () => {
    expect(decidePending(state({ seenPendingFor: STUCK_AFTER_BLOCKS }))).to.deep.equal({
      action: 'replace',
      firstNonce: 5,
      pending: 3,
    });
  });
});

describe("a process's sightings of pending transactions", () => {
  const W = '31337:0xwallet';

  it('never makes a transaction stuck on first sight, however old the requests: only blocks seen pending count', () => {
    const sightings = new PendingSightings();
    // An overlapping coordinator's transactions, first seen by this process at block 100.
    expect(sightings.observe(W, { latestCount: 5, pendingCount: 10, block: 100 })).to.equal(0);
    expect(sightings.observe(W, { latestCount: 5, pendingCount: 10, block: 101 })).to.equal(1);
    expect(sightings.observe(W, { latestCount: 5, pendingCount: 10, block: 100 + STUCK_AFTER_BLOCKS })).to.equal(
      STUCK_AFTER_BLOCKS,
    );
    // Another process (another coordinator) has its own sightings: first sight there.
    expect(new PendingSightings().observe(W, { latestCount: 5, pendingCount: 10, block: 110 })).to.equal(0);
  });

  it('starts the count again when one is mined, when new ones join the pool, and when nothing is pending', () => {
    const sightings = new PendingSightings();
    sightings.observe(W, { latestCount: 5, pendingCount: 8, block: 100 });
    expect(sightings.observe(W, { latestCount: 6, pendingCount: 8, block: 104 })).to.equal(0);
    expect(sightings.observe(W, { latestCount: 6, pendingCount: 9, block: 105 })).to.equal(0);
    expect(sightings.observe(W, { latestCount: 6, pendingCount: 9, block: 107 })).to.equal(2);
    // Fewer pending (one left the pool): the rest keep their count; one more again is new.
    expect(sightings.observe(W, { latestCount: 6, pendingCount: 8, block: 108 })).to.equal(3);
    expect(sightings.observe(W, { latestCount: 6, pendingCount: 9, block: 109 })).to.equal(0);
    expect(sightings.observe(W, { latestCount: 9, pendingCount: 9, block: 110 })).to.equal(0);
    expect(sightings.observe(W, { latestCount: 9, pendingCount: 10, block: 111 })).to.equal(0);
  });

  it("counts this process's own sends from the block they were sent at, a replacement again from its own", () => {
    const sightings = new PendingSightings();
    sightings.sent(W, { latestCount: 5, nextNonce: 8, block: 100 });
    expect(sightings.observe(W, { latestCount: 5, pendingCount: 8, block: 103 })).to.equal(3);
    // Replaced at block 103 (same nonces): not stuck again before it has had its own blocks.
    sightings.sent(W, { latestCount: 5, nextNonce: 8, block: 103 });
    expect(sightings.observe(W, { latestCount: 5, pendingCount: 8, block: 104 })).to.equal(1);
    expect(sightings.observe(W, { latestCount: 5, pendingCount: 8, block: 106 })).to.equal(3);
  });

  describe('handed from one run to the next (with the hand-over Lease)', () => {
    const wallet = (i: number) => `31337:0x${i.toString(16).padStart(40, '0')}`;

    it('the next run goes on counting where the last one stopped, and a replacement is not repeated', () => {
      const first = new PendingSightings();
      first.observe(wallet(1), { latestCount: 5, pendingCount: 8, block: 100 });
      expect(first.observe(wallet(1), { latestCount: 5, pendingCount: 8, block: 101 })).to.equal(1);
      const second = new PendingSightings();
      expect(second.takeOver(first.toHandOver())).to.equal(1);
      // Seen since block 100 by the runs before: stuck at 100 + STUCK_AFTER_BLOCKS, not three blocks after this run began.
      expect(second.observe(wallet(1), { latestCount: 5, pendingCount: 8, block: 102 })).to.equal(2);
      expect(second.observe(wallet(1), { latestCount: 5, pendingCount: 8, block: 103 })).to.equal(STUCK_AFTER_BLOCKS);
      // Replaced at block 103: the run after counts the replacement from there.
      second.sent(wallet(1), { latestCount: 5, nextNonce: 8, block: 103 });
      const third = new PendingSightings();
      third.takeOver(second.toHandOver());
      expect(third.observe(wallet(1), { latestCount: 5, pendingCount: 8, block: 104 })).to.equal(1);
    });

    it('keeps its own sightings over handed-over ones, and hands over nothing when nothing is pending', () => {
      const own = new PendingSightings();
      own.observe(wallet(1), { latestCount: 5, pendingCount: 8, block: 110 });
      const before = new PendingSightings();
      before.observe(wallet(1), { latestCount: 5, pendingCount: 8, block: 90 });
      before.observe(wallet(2), { latestCount: 1, pendingCount: 2, block: 95 });
      expect(own.takeOver(before.toHandOver())).to.equal(1);
      expect(own.observe(wallet(1), { latestCount: 5, pendingCount: 8, block: 111 })).to.equal(1);
      expect(own.observe(wallet(2), { latestCount: 1, pendingCount: 2, block: 96 })).to.equal(1);
      expect(new PendingSightings().toHandOver()).to.equal(undefined);
    });

    it('reads a hand-over as untrusted input: anything malformed is left out, never thrown, and the size is bounded', () => {
      const garbage = [
        undefined,
        '',
        'not json',
        'null',
        '[]',
        JSON.stringify({ version: 2, sightings: { [wallet(1)]: [1, 2, 3] } }),
        JSON.stringify({ version: 1, sightings: null }),
        JSON.stringify({ version: 1, sightings: { 'not-a-key': [1, 2, 3] } }),
        JSON.stringify({ version: 1, sightings: { [wallet(1)]: [1, 2] } }),
        JSON.stringify({ version: 1, sightings: { [wallet(1)]: [1, -2, 3] } }),
        JSON.stringify({ version: 1, sightings: { [wallet(1)]: ['1', 2, 3] } }),
        JSON.stringify({ version: 1, sightings: { [wallet(1)]: [2, 2, 3] } }),
        JSON.stringify({ version: 1, sightings: { [wallet(1)]: [1, 2, 1e300] } }),
        'x'.repeat(70_000),
      ];
      for (const handedOver of garbage) expect(new PendingSightings().takeOver(handedOver), handedOver).to.equal(0);
      const many = new PendingSightings();
      for (let i = 0; i < MAX_HANDED_OVER_SIGHTINGS + 50; i++)
        many.observe(wallet(i), { latestCount: 0, pendingCount: 1, block: 1_000 - i });
      const handedOver = many.toHandOver()!;
      expect(handedOver.length).to.be.below(64 * 1024);
      const next = new PendingSightings();
      expect(next.takeOver(handedOver)).to.equal(MAX_HANDED_OVER_SIGHTINGS);
      // The longest seen are the ones handed over (the nearest to being replaced).
      expect(
        next.observe(wallet(MAX_HANDED_OVER_SIGHTINGS + 49), { latestCount: 0, pendingCount: 1, block: 1_000 }),
      ).to.equal(MAX_HANDED_OVER_SIGHTINGS + 49);
    });
  });
});

describe("the process's pending sightings (the shards' and a standby's cycle)", () => {
  it('are one store for the whole process, keyed by chain and wallet whatever the case of its address', () => {
    expect(processPendingSightings()).to.equal(processPendingSightings());
    const wallet = '0xAbCdEf0000000000000000000000000000000001';
    expect(sightingsKey('1', wallet)).to.equal(sightingsKey('1', wallet.toLowerCase()));
    expect(sightingsKey('1', wallet)).to.not.equal(sightingsKey('10', wallet));
  });
});
