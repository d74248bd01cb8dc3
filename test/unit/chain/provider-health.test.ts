// The provider rules of src/chain/provider-health.ts, each with the heads (and times) that make it apply or not.
import { expect } from 'chai';
import {
  agreedHead,
  backoffPolls,
  headsToShow,
  judgeChainHeads,
  judgeHeads,
  MAX_BACKOFF_POLLS,
  MAX_PROVIDER_LAG_BLOCKS,
  type ProviderHead,
  ProviderMemory,
  readCeiling,
  STALLED_AFTER_MS,
  verifiedBlockHash,
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

describe('a block shown at a head', () => {
  const hash = (digit: string) => `0x${digit.repeat(64)}`;
  const block = (number: number, parent = hash('1'), own = hash('2')) => ({
    number: `0x${number.toString(16)}`,
    hash: own,
    parentHash: parent,
  });

  it('is the block asked for: its number, a hash and a parent hash', () => {
    expect(verifiedBlockHash(block(1050), 1050)).to.equal(hash('2'));
    // Another block (the newest the provider really has), null, or something else: not shown.
    expect(verifiedBlockHash(block(1000), 1050)).to.equal(undefined);
    expect(verifiedBlockHash(null, 1050)).to.equal(undefined);
    expect(verifiedBlockHash('0x41a', 1050)).to.equal(undefined);
    expect(verifiedBlockHash({ ...block(1050), number: 1050 }, 1050)).to.equal(undefined);
    expect(verifiedBlockHash({ ...block(1050), hash: '0x12' }, 1050)).to.equal(undefined);
    expect(verifiedBlockHash({ ...block(1050), parentHash: undefined }, 1050)).to.equal(undefined);
    expect(verifiedBlockHash(block(1050, hash('2'), hash('2')), 1050)).to.equal(undefined);
  });

  it('is the child of the block before it when that one was shown earlier', () => {
    expect(verifiedBlockHash(block(1050, hash('a')), 1050, hash('A'))).to.equal(hash('2'));
    expect(verifiedBlockHash(block(1050, hash('b')), 1050, hash('a'))).to.equal(undefined);
  });

  it('ProviderMemory keeps the hashes of the newest shown blocks of each chain', () => {
    const memory = new ProviderMemory();
    for (let n = 0; n < 100; n++) memory.rememberBlock('1', n, hash('3'));
    expect(memory.verifiedBlock('1', 99)).to.equal(hash('3'));
    expect(memory.verifiedBlock('1', 10)).to.equal(undefined);
    expect(memory.verifiedBlock('2', 99)).to.equal(undefined);
  });
});

describe('how far the trusted providers read', () => {
  it('no further than a block two heads reach or a head shown; one provider configured: its head', () => {
    expect(
      readCeiling([
        { name: 'a', currentBlock: 1005 },
        { name: 'b', currentBlock: 1000 },
      ]),
    ).to.equal(1000);
    expect(
      readCeiling([
        { name: 'a', currentBlock: 1005, shown: true },
        { name: 'b', currentBlock: 1000 },
      ]),
    ).to.equal(1005);
    expect(
      readCeiling([
        { name: 'a', currentBlock: 1050, shown: false },
        { name: 'b', currentBlock: 1000 },
        { name: 'c', currentBlock: 1001 },
      ]),
    ).to.equal(1000);
    expect(readCeiling([{ name: 'only', currentBlock: 1000 }])).to.equal(1000);
    expect(readCeiling([{ name: 'alone', currentBlock: 1000 }], 2)).to.equal(undefined);
  });

  /** judgeChainHeads with a `show` that answers from `shows` and records who was asked. */
  async function judged(heads: ProviderHead[], shows: Record<string, boolean>, configured = heads.length) {
    const asked: string[] = [];
    const show = async (name: string) => {
      asked.push(name);
      return shows[name] ?? false;
    };
    const { faults, readTo } = await judgeChainHeads(heads, show, { configured, nowMs: 0 });
    return { asked: asked.sort(), faults: Object.fromEntries([...faults].map(([n, f]) => [n, f.fault])), readTo };
  }

  it('heads that agree: nobody asked, read to the block both have', async () => {
    expect(
      await judged(
        [
          { name: 'a', currentBlock: 1001 },
          { name: 'b', currentBlock: 1000 },
        ],
        {},
      ),
    ).to.deep.equal({ asked: [], faults: {}, readTo: 1000 });
  });

  it('a head 50 ahead answered with another block: left out, the honest head shown and read to (a lie held or of one poll alike)', async () => {
    expect(
      await judged(
        [
          { name: 'liar', currentBlock: 1050 },
          { name: 'honest', currentBlock: 1000 },
        ],
        { honest: true },
      ),
    ).to.deep.equal({ asked: ['honest', 'liar'], faults: { liar: 'ahead' }, readTo: 1000 });
  });

  it('a head a few blocks ahead, within the lag threshold: kept, but nothing read past the other head', async () => {
    expect(
      await judged(
        [
          { name: 'liar', currentBlock: 1005 },
          { name: 'honest', currentBlock: 1000 },
        ],
        {},
      ),
    ).to.deep.equal({ asked: [], faults: {}, readTo: 1000 });
  });

  it('a head ahead for real that shows its block: the other lags, read to the shown head', async () => {
    expect(
      await judged(
        [
          { name: 'ahead', currentBlock: 1050 },
          { name: 'behind', currentBlock: 1000 },
        ],
        { ahead: true },
      ),
    ).to.deep.equal({ asked: ['ahead'], faults: { behind: 'lagging' }, readTo: 1050 });
  });

  it('the one trusted head above a stalled provider is shown, and read to; not shown, read only to the stalled head', async () => {
    const heads = (): ProviderHead[] => [
      { name: 'good', currentBlock: 1003 },
      { name: 'stuck', currentBlock: 1000, behindSinceMs: -STALLED_AFTER_MS },
    ];
    expect(await judged(heads(), { good: true })).to.deep.equal({
      asked: ['good'],
      faults: { stuck: 'stalled' },
      readTo: 1003,
    });
    expect((await judged(heads(), {})).readTo).to.equal(1000);
  });

  it('when nothing confirms any head (the only believable one cannot show its block), nothing is trusted', async () => {
    const { faults, readTo } = await judged(
      [
        { name: 'liar', currentBlock: 1050 },
        { name: 'honest', currentBlock: 1000 },
      ],
      {},
    );
    expect(faults).to.deep.equal({ liar: 'ahead', honest: 'ahead' });
    expect(readTo).to.equal(undefined);
  });

  it('one provider configured: never asked, read to its head', async () => {
    expect(await judged([{ name: 'only', currentBlock: 1000 }], {})).to.deep.equal({
      asked: [],
      faults: {},
      readTo: 1000,
    });
  });
});

describe('back-off of a provider whose head read timed out', () => {
  it('sits out 1, 2, 4, ... polls after failures in a row, bounded by MAX_BACKOFF_POLLS', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 10].map(backoffPolls)).to.deep.equal([0, 1, 2, 4, 8, 16, 16, 16]);
    expect(backoffPolls(100)).to.equal(MAX_BACKOFF_POLLS);
  });
});
