import { expect } from 'chai';
import { headFaults, MAX_PROVIDER_LAG_BLOCKS } from '../../../src/chain/provider-health.js';

describe('provider heads fit for a cycle', () => {
  it('keeps providers within the lag threshold of the best head', () => {
    const faults = headFaults([
      { name: 'a', currentBlock: 1000 },
      { name: 'b', currentBlock: 1000 - MAX_PROVIDER_LAG_BLOCKS },
    ]);
    expect([...faults]).to.deep.equal([]);
  });

  it('leaves out a provider more than the threshold behind, with its lag', () => {
    const faults = headFaults([
      { name: 'stale', currentBlock: 900 },
      { name: 'good', currentBlock: 1000 },
    ]);
    expect(Object.fromEntries(faults)).to.deep.equal({ stale: { fault: 'lagging', lagBlocks: 100, bestBlock: 1000 } });
  });

  it('calls a head of 0 syncing, unless every provider says 0', () => {
    expect(
      headFaults([
        { name: 'a', currentBlock: 0 },
        { name: 'b', currentBlock: 5 },
      ]).get('a')?.fault,
    ).to.equal('syncing');
    expect(headFaults([{ name: 'a', currentBlock: 0 }]).size).to.equal(0);
  });

  it('calls a provider stalled when its head has not moved since the previous cycle and another is ahead', () => {
    const faults = headFaults([
      { name: 'stuck', currentBlock: 998, previousBlock: 998 },
      { name: 'good', currentBlock: 1000, previousBlock: 990 },
      // Not moved, but nobody is ahead: a quiet chain, not a stuck provider.
    ]);
    expect(Object.fromEntries(faults)).to.deep.equal({ stuck: { fault: 'stalled', lagBlocks: 2, bestBlock: 1000 } });
    expect(headFaults([{ name: 'quiet', currentBlock: 7, previousBlock: 7 }]).size).to.equal(0);
  });

  it('never leaves out the provider with the best head', () => {
    const faults = headFaults([
      { name: 'a', currentBlock: 1000, previousBlock: 1000 },
      { name: 'b', currentBlock: 10 },
    ]);
    expect(faults.has('a')).to.equal(false);
  });
});
