// The rule that bounds the sponsors' label values (src/common/sponsor-labels.ts): labels go to the biggest sponsors
// while there are free ones, never taken back, at most N, the rest `other`.
import { expect } from 'chai';
import fc from 'fast-check';
import { labelSponsors, OTHER_SPONSOR, SponsorLabels, sponsorKey } from '../../../src/common/sponsor-labels.js';

const volumes = (entries: Record<string, number>) => new Map(Object.entries(entries));

describe('sponsor labels (top N by volume, never taken back)', () => {
  it('gives the free labels to the biggest sponsors of the observation, ties by key', () => {
    const labelled = labelSponsors(new Set(), volumes({ '1/0xc': 1, '1/0xa': 5, '1/0xb': 5, '1/0xd': 9 }), 3);
    expect([...labelled]).to.deep.equal(['1/0xd', '1/0xa', '1/0xb']);
  });

  it('keeps a labelled sponsor when a bigger newcomer arrives, and the newcomer goes to other', () => {
    const first = labelSponsors(new Set(), volumes({ '1/0xa': 1, '1/0xb': 2 }), 2);
    const second = labelSponsors(first, volumes({ '1/0xc': 1000, '1/0xa': 0 }), 2);
    expect([...second].sort()).to.deep.equal(['1/0xa', '1/0xb']);
  });

  it('fills labels left free by an earlier observation, and ignores sponsors with nothing counted', () => {
    const first = labelSponsors(new Set(), volumes({ '1/0xa': 3, '1/0xz': 0 }), 3);
    expect([...first]).to.deep.equal(['1/0xa']);
    const second = labelSponsors(first, volumes({ '1/0xb': 1, '1/0xc': 2, '1/0xd': 3 }), 3);
    expect([...second]).to.deep.equal(['1/0xa', '1/0xd', '1/0xc']);
  });

  it('labels nobody with N = 0', () => {
    const labels = new SponsorLabels(0);
    labels.observe(volumes({ [sponsorKey('1', '0xAB')]: 7 }));
    expect(labels.labelOf('1', '0xAB')).to.equal(OTHER_SPONSOR);
  });

  it('labels a sponsor per chain, by its lowercase address whatever case it came in', () => {
    const labels = new SponsorLabels(1);
    labels.observe(volumes({ [sponsorKey('5', '0xABcd')]: 1 }));
    expect(labels.labelOf('5', '0xabCD')).to.equal('0xabcd');
    expect(labels.labelOf('1', '0xabcd')).to.equal(OTHER_SPONSOR);
  });

  it('never labels more than N, never takes a label back, whatever the observations', () => {
    const observation = fc.dictionary(
      fc.constantFrom(...Array.from({ length: 30 }, (_, i) => `1/0x${i.toString(16)}`)),
      fc.nat(50),
    );
    fc.assert(
      fc.property(fc.nat(10), fc.array(observation, { maxLength: 8 }), (limit, observations) => {
        let labelled = new Set<string>();
        for (const seen of observations) {
          const next = labelSponsors(labelled, volumes(seen), limit);
          expect(next.size).to.be.at.most(limit);
          for (const key of labelled) expect(next.has(key), key).to.equal(true);
          labelled = next;
        }
      }),
    );
  });
});
