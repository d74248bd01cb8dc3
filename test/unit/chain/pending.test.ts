// The pending-transaction rule (src/chain/pending.ts): leave a wallet's pending transactions alone, whoever sent
// them, until they are stuck; then replace them.
import { expect } from 'chai';
import { decidePending, needsCountBefore, type PendingState, STUCK_AFTER_BLOCKS } from '../../../src/chain/pending.js';

const state = (overrides: Partial<PendingState> = {}): PendingState => ({
  latestCount: 5,
  pendingCount: 8,
  currentBlock: 100,
  oldestServableBlock: 100,
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
    expect(needsCountBefore(state({ inFlightNonces: [5, 6, 7], oldestServableBlock: 0 }))).to.equal(false);
    // One pending nonce the caller does not know (another coordinator's): the rule as without the view.
    expect(decidePending(state({ inFlightNonces: [5, 7] })).action).to.equal('wait');
    expect(decidePending(state({ inFlightNonces: [] })).action).to.equal('wait');
  });

  it('leaves alone transactions that can have been sent only in the last blocks (an overlapping coordinator)', () => {
    for (let age = 0; age < STUCK_AFTER_BLOCKS; age++) {
      const decision = decidePending(state({ oldestServableBlock: 100 - age }));
      expect(decision.action, `age ${age}`).to.equal('wait');
      expect(decision).to.include({ pending: 3 });
    }
  });

  it('replaces them once the oldest request has been servable for the threshold and nothing was mined meanwhile', () => {
    const old = { oldestServableBlock: 100 - STUCK_AFTER_BLOCKS };
    expect(decidePending(state({ ...old, latestCountBefore: 5 }))).to.deep.equal({
      action: 'replace',
      firstNonce: 5,
      pending: 3,
    });
    // A provider that cannot tell the count of an older block: the requests' age decides.
    expect(decidePending(state(old)).action).to.equal('replace');
  });

  it('leaves them alone while the wallet still gets transactions mined (a backlog being served, not a stuck one)', () => {
    const decision = decidePending(state({ oldestServableBlock: 50, latestCountBefore: 3 }));
    expect(decision.action).to.equal('wait');
  });

  it('asks for the older count only for a wallet with pending transactions that may be stuck', () => {
    expect(needsCountBefore(state({ pendingCount: 5, oldestServableBlock: 0 }))).to.equal(false);
    expect(needsCountBefore(state({ oldestServableBlock: 100 }))).to.equal(false);
    expect(needsCountBefore(state({ oldestServableBlock: 100 - STUCK_AFTER_BLOCKS }))).to.equal(true);
  });
});
