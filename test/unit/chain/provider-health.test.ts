// The provider rules of src/chain/provider-health.ts, each with the heads (and times) that make it apply or not.
import { expect } from 'chai';
import {
  agreedHead,
  backoffPolls,
  headsToShow,
  judgeHeads,
  MAX_BACKOFF_POLLS,
  MAX_PROVIDER_LAG_BLOCKS,
  ProviderMemory,
  STALLED_AFTER_MS,
} from '../../../src/chain/provider-health.js';

const faultsOf = (...args: Parameters<typeof judgeHeads>) => Object.fromEntries(judgeHeads(...args).faults);

describe('provider heads fit for a cycle', () => {
  it('keeps providers within the lag threshold of the agreed head', () => {
    expect(
      faultsOf([
        { name: 'a', currentBlock: 1000 },
        { name: 'b', currentBlock: 1000 - MAX_PROVIDER_LAG_BLOCKS },
      ]),
    ).to.deep.equal({});
  });

  it('leaves out a provider more than the threshold behind, with its lag', () => {
    const heads = [
      { name: 'stale', currentBlock: 900 },
      { name: 'good', currentBlock: 1000 },
      { name: 'good2', currentBlock: 999 },
    ];
    expect(faultsOf(heads)).to.deep.equal({ stale: { fault: 'lagging', lagBlocks: 100, bestBlock: 1000 } });
  });

  it('calls a head of 0 syncing, unless every provider says 0', () => {
    const heads = [
      { name: 'a', currentBlock: 0 },
      { name: 'b', currentBlock: 5 },
    ];
    expect(faultsOf(heads)['a']?.fault).to.equal('syncing');
    expect(faultsOf([{ name: 'a', currentBlock: 0 }])).to.deep.equal({});
  });

  describe('a head far ahead', () => {
    it('is left out as ahead when the others agree on a lower head: it does not make them look behind', () => {
      const heads = [
        { name: 'liar', currentBlock: 1050 },
        { name: 'good', currentBlock: 1000 },
        { name: 'good2', currentBlock: 999 },
      ];
      expect(agreedHead(heads)).to.equal(1000);
      expect(faultsOf(heads)).to.deep.equal({ liar: { fault: 'ahead', lagBlocks: -50, bestBlock: 1000 } });
    });

    it('with two providers that disagree, the higher head is shown first: not shown, it is ahead; shown, the other lags', () => {
      const heads = [
        { name: 'high', currentBlock: 1050 },
        { name: 'low', currentBlock: 1000 },
      ];
      expect(headsToShow(heads)).to.deep.equal(['high']);
      expect(faultsOf([{ ...heads[0]!, shown: false }, heads[1]!])).to.deep.equal({
        high: { fault: 'ahead', lagBlocks: -50, bestBlock: 1000 },
      });
      expect(faultsOf([{ ...heads[0]!, shown: true }, heads[1]!])).to.deep.equal({
        low: { fault: 'lagging', lagBlocks: 50, bestBlock: 1050 },
      });
    });

    it('asks nobody to show a head when the heads agree, or when there is one provider (nothing changes with one)', () => {
      expect(
        headsToShow([
          { name: 'a', currentBlock: 1000 },
          { name: 'b', currentBlock: 1003 },
        ]),
      ).to.deep.equal([]);
      expect(headsToShow([{ name: 'only', currentBlock: 1000 }])).to.deep.equal([]);
      expect(faultsOf([{ name: 'only', currentBlock: 1000 }])).to.deep.equal({});
    });

    it("the only head of a chain whose other providers gave none is shown first, and nothing is trusted when it can't be", () => {
      const alone = [{ name: 'alone', currentBlock: 1050 }];
      expect(headsToShow(alone, MAX_PROVIDER_LAG_BLOCKS, 3)).to.deep.equal(['alone']);
      const { agreed, faults } = judgeHeads([{ ...alone[0]!, shown: false }]);
      expect(agreed).to.equal(undefined);
      expect(faults.get('alone')?.fault).to.equal('ahead');
      expect(faultsOf([{ ...alone[0]!, shown: true }])).to.deep.equal({});
    });

    it('a good head above two providers that lag together is shown, and kept', () => {
      const heads = [
        { name: 'stale', currentBlock: 900 },
        { name: 'stale2', currentBlock: 901 },
        { name: 'good', currentBlock: 1000 },
      ];
      expect(headsToShow(heads)).to.deep.equal(['good']);
      expect(Object.keys(faultsOf([heads[0]!, heads[1]!, { ...heads[2]!, shown: true }]))).to.deep.equal([
        'stale',
        'stale2',
      ]);
    });
  });

  describe('stalled: behind at the same head over a span of time, not between two polls', () => {
    it('is stalled once behind at the same head for STALLED_AFTER_MS, not before', () => {
      const heads = (behindSinceMs: number) => [
        { name: 'stuck', currentBlock: 998, behindSinceMs },
        { name: 'good', currentBlock: 1000 },
      ];
      expect(faultsOf(heads(0), { nowMs: STALLED_AFTER_MS - 1 })).to.deep.equal({});
      expect(faultsOf(heads(0), { nowMs: STALLED_AFTER_MS })).to.deep.equal({
        stuck: { fault: 'stalled', lagBlocks: 2, bestBlock: 1000 },
      });
    });

    it('a provider that sees each new block one poll (1 s) later is never stalled, nor one on a quiet chain', () => {
      let clock = 0;
      const memory = new ProviderMemory(() => clock);
      // Good sees block n at poll n; late sees it at poll n + 1. Blocks every 3 polls, polls every second, a minute.
      for (let poll = 0; poll < 60; poll++, clock += 1000) {
        const good = 1000 + Math.floor(poll / 3);
        const late = 1000 + Math.floor(Math.max(0, poll - 1) / 3);
        const heads = [
          { name: 'good', currentBlock: good, behindSinceMs: memory.behindSince('1', 'good', good) },
          { name: 'late', currentBlock: late, behindSinceMs: memory.behindSince('1', 'late', late) },
        ];
        const { agreed, faults } = judgeHeads(heads, { nowMs: clock });
        expect(Object.fromEntries(faults), `poll ${poll}`).to.deep.equal({});
        for (const head of heads) memory.rememberHead('1', head.name, head.currentBlock, head.currentBlock < agreed!);
      }
      expect(faultsOf([{ name: 'quiet', currentBlock: 7, behindSinceMs: undefined }], { nowMs: 1e9 })).to.deep.equal(
        {},
      );
    });

    it('ProviderMemory keeps since when a provider is behind at the same head, and forgets it when the head moves', () => {
      let clock = 1000;
      const memory = new ProviderMemory(() => clock);
      memory.rememberHead('1', 'p', 10, true);
      clock = 5000;
      memory.rememberHead('1', 'p', 10, true);
      expect(memory.behindSince('1', 'p', 10)).to.equal(1000);
      memory.rememberHead('1', 'p', 11, true);
      expect(memory.behindSince('1', 'p', 11)).to.equal(5000);
      memory.rememberHead('1', 'p', 11, false);
      expect(memory.behindSince('1', 'p', 11)).to.equal(undefined);
    });
  });

  it('never leaves out the provider with the agreed head', () => {
    const { agreed, faults } = judgeHeads(
      [
        { name: 'a', currentBlock: 1000, behindSinceMs: 0 },
        { name: 'b', currentBlock: 10 },
      ],
      { nowMs: 1e9 },
    );
    expect(agreed).to.equal(1000);
    expect(faults.has('a')).to.equal(false);
  });
});

describe('back-off of a provider whose head read timed out', () => {
  it('sits out 1, 2, 4, ... polls after failures in a row, bounded by MAX_BACKOFF_POLLS', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 10].map(backoffPolls)).to.deep.equal([0, 1, 2, 4, 8, 16, 16, 16]);
    expect(backoffPolls(100)).to.equal(MAX_BACKOFF_POLLS);
  });
});
