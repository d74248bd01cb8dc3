// When the feed fetches next: within the reference's bounds (one interval after the last fetch started, plus at most
// `jitter` of the interval), and on the grid of the clock, so that updates due within one slot share a wake-up.
import { expect } from 'chai';
import fc from 'fast-check';
import { FETCH_GRID_MS, nextFetchDelayMs } from '../../../src/feed/engine.js';

const timings = fc.record({
  nowMs: fc.integer({ min: 1_700_000_000_000, max: 1_800_000_000_000 }),
  // How long ago the last fetch started: from just now to well past the interval (a fetch that overran).
  sinceStartMs: fc.integer({ min: 0, max: 120_000 }),
  intervalMs: fc.integer({ min: 1, max: 60_000 }),
  jitter: fc.constantFrom(0, 0.01, 0.1, 0.5),
  gridMs: fc.constantFrom(0, 10, FETCH_GRID_MS, 1000),
  random: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
});

describe('feed: nextFetchDelayMs', () => {
  it('stays within the reference’s bounds: one interval after the last start (at once if overrun), plus at most the jitter', () => {
    fc.assert(
      fc.property(timings, ({ nowMs, sinceStartMs, intervalMs, jitter, gridMs, random }) => {
        const startedMs = nowMs - sinceStartMs;
        const delay = nextFetchDelayMs({ nowMs, startedMs, intervalMs, jitter, gridMs, random: () => random });
        const earliest = Math.max(nowMs, startedMs + intervalMs);
        expect(nowMs + delay).to.be.at.least(earliest - 1e-6);
        expect(nowMs + delay).to.be.at.most(earliest + intervalMs * jitter + 1e-6);
      }),
    );
  });

  it('lands on the grid of the clock, whatever the last start and the random draw', () => {
    fc.assert(
      fc.property(timings, ({ nowMs, sinceStartMs, intervalMs, jitter, gridMs, random }) => {
        const grid = Math.min(gridMs, intervalMs * jitter);
        fc.pre(grid > 0 && Number.isInteger(grid));
        const delay = nextFetchDelayMs({
          nowMs,
          startedMs: nowMs - sinceStartMs,
          intervalMs,
          jitter,
          gridMs,
          random: () => random,
        });
        expect((nowMs + delay) % grid).to.equal(0);
      }),
    );
  });

  it('updates due within one slot start together, as one wake-up', () => {
    // 100 updates of 5 s whose last fetches started over one second: without a grid each has its own time.
    const nowMs = 1_750_000_000_000;
    const startTimes = new Set<number>();
    for (let index = 0; index < 100; index++) {
      const timing = { nowMs, startedMs: nowMs - index * 10, intervalMs: 5000, jitter: 0.1, gridMs: FETCH_GRID_MS };
      startTimes.add(nowMs + nextFetchDelayMs({ ...timing, random: () => (index * 0.37) % 1 }));
    }
    // From 4,010 to 5,500 ms ahead: at most 7 slots of 250 ms.
    expect(startTimes.size).to.be.at.most(7);
  });

  it('draws the random extra over the whole range of the reference’s jitter, slot by slot', () => {
    const timing = { nowMs: 0, startedMs: 0, intervalMs: 5000, jitter: 0.1, gridMs: FETCH_GRID_MS };
    expect(nextFetchDelayMs({ ...timing, random: () => 0 })).to.equal(5000);
    expect(nextFetchDelayMs({ ...timing, random: () => 0.5 })).to.equal(5250);
    expect(nextFetchDelayMs({ ...timing, random: () => 0.999 })).to.equal(5500);
  });

  it('without jitter, no grid: exactly one interval after the last start', () => {
    expect(
      nextFetchDelayMs({
        nowMs: 1003,
        startedMs: 1000,
        intervalMs: 1000,
        jitter: 0,
        gridMs: FETCH_GRID_MS,
        random: () => 0.7,
      }),
    ).to.equal(997);
  });
});
