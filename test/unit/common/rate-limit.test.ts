// Rates as providers count them (src/common/rate-limit.ts): at most N starts within any window, on a monotonic clock.
import { expect } from 'chai';
import fc from 'fast-check';
import { formatRate, parseRate, SlidingWindowLimiter } from '../../../src/common/rate-limit.js';

describe('common/rate-limit', () => {
  it('parseRate takes N/s and N/m; zero, fractions, other units and junk are refused', () => {
    expect(parseRate('20/s')).to.deep.equal({ calls: 20, windowMs: 1_000 });
    expect(parseRate(' 600/m ')).to.deep.equal({ calls: 600, windowMs: 60_000 });
    for (const bad of ['0/s', '1.5/s', '10/h', '10', '/s', '-1/s', '10/S', '1e3/s'])
      expect(parseRate(bad), bad).to.equal(undefined);
    expect(formatRate(parseRate('7/m')!)).to.equal('7/m');
  });

  it('admits N starts, then refuses with the time until the oldest leaves the window', () => {
    let now = 1_000;
    const limiter = new SlidingWindowLimiter({ calls: 2, windowMs: 1_000 }, () => now);
    expect(limiter.tryAcquire()).to.deep.equal({ ok: true });
    now += 400;
    expect(limiter.tryAcquire()).to.deep.equal({ ok: true });
    expect(limiter.tryAcquire()).to.deep.equal({ ok: false, retryAfterMs: 600 });
    now += 600;
    expect(limiter.tryAcquire()).to.deep.equal({ ok: true });
    expect(limiter.tryAcquire()).to.deep.equal({ ok: false, retryAfterMs: 400 });
  });

  it('never admits more than N within any window, whatever the arrival times (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        fc.array(fc.integer({ min: 0, max: 700 }), { minLength: 1, maxLength: 60 }),
        (calls, gaps) => {
          let now = 0;
          const limiter = new SlidingWindowLimiter({ calls, windowMs: 1_000 }, () => now);
          const admitted: number[] = [];
          for (const gap of gaps) {
            now += gap;
            if (limiter.tryAcquire().ok) admitted.push(now);
          }
          for (let i = calls; i < admitted.length; i++)
            expect(admitted[i]! - admitted[i - calls]!).to.be.at.least(1_000);
        },
      ),
    );
  });
});
