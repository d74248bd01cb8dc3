// The APIs' rate budgets (src/ois/budget.ts) on a fake monotonic clock: decisions, waits, pauses, and the headers a
// 429 names its wait in.
import { expect } from 'chai';
import fc from 'fast-check';
import { ApiBudgets, MAX_PAUSE_MS, rateLimitWaitMs } from '../../../src/ois/budget.js';

/** A monotonic clock that moves only when told, and a sleep that moves it (as a timer would fire). */
function fakeTime(start = 5_000) {
  let now = start;
  const sleeps: number[] = [];
  return {
    now: () => now,
    advance: (ms: number) => {
      now += ms;
    },
    sleeps,
    sleep: async (ms: number, signal?: AbortSignal) => {
      sleeps.push(ms);
      if (!signal?.aborted) now += ms;
    },
  };
}

const perSecond = (calls: number) => ({ calls, windowMs: 1_000 });
const perMinute = (calls: number) => ({ calls, windowMs: 60_000 });

describe('ois/budget', () => {
  describe('rateLimitWaitMs', () => {
    const now = Date.parse('2026-11-29T04:00:00Z');

    it('reads Retry-After as seconds or as an HTTP date', () => {
      expect(rateLimitWaitMs({ 'retry-after': '30' }, now)).to.equal(30_000);
      expect(rateLimitWaitMs({ 'retry-after': '1.5' }, now)).to.equal(1_500);
      expect(rateLimitWaitMs({ 'retry-after': '0' }, now)).to.equal(0);
      expect(rateLimitWaitMs({ 'retry-after': 'Sun, 29 Nov 2026 04:00:45 GMT' }, now)).to.equal(45_000);
      // A date already past asks for no wait.
      expect(rateLimitWaitMs({ 'retry-after': 'Sun, 29 Nov 2026 03:59:00 GMT' }, now)).to.equal(0);
    });

    it('reads the RateLimit field (t= or reset=), then RateLimit-Reset and X-RateLimit-Reset (delay or Unix time)', () => {
      expect(rateLimitWaitMs({ ratelimit: '"default";r=0;t=12' }, now)).to.equal(12_000);
      expect(rateLimitWaitMs({ ratelimit: 'limit=100, remaining=0, reset=7' }, now)).to.equal(7_000);
      expect(rateLimitWaitMs({ 'ratelimit-reset': '20' }, now)).to.equal(20_000);
      expect(rateLimitWaitMs({ 'x-ratelimit-reset': String(now / 1000 + 90) }, now)).to.equal(90_000);
      // Retry-After wins over the others.
      expect(rateLimitWaitMs({ 'retry-after': '3', 'ratelimit-reset': '50' }, now)).to.equal(3_000);
    });

    it('caps the wait, and names none for absent, negative or unreadable values', () => {
      expect(rateLimitWaitMs({ 'retry-after': '86400' }, now)).to.equal(MAX_PAUSE_MS);
      expect(rateLimitWaitMs({ 'retry-after': 'Fri, 01 Jan 2100 00:00:00 GMT' }, now)).to.equal(MAX_PAUSE_MS);
      for (const headers of [
        {},
        { 'retry-after': '-5' },
        { 'retry-after': 'soon' },
        { 'retry-after': '' },
        { 'retry-after': '1e3' },
        { ratelimit: 'remaining=0' },
        { 'ratelimit-reset': 'later' },
      ])
        expect(rateLimitWaitMs(headers, now), JSON.stringify(headers)).to.equal(undefined);
    });

    it('never throws and never answers outside [0, cap] (property)', () => {
      fc.assert(
        fc.property(
          fc.record({
            'retry-after': fc.option(fc.string(), { nil: undefined }),
            ratelimit: fc.option(fc.string(), { nil: undefined }),
            'ratelimit-reset': fc.option(fc.string(), { nil: undefined }),
          }),
          (headers) => {
            const wait = rateLimitWaitMs(headers, now);
            if (wait !== undefined) expect(wait).to.be.within(0, MAX_PAUSE_MS);
          },
        ),
        { seed: 46 },
      );
    });
  });

  describe('ApiBudgets', () => {
    it('admits N calls of an OIS within a second, then defers with the time until a turn', () => {
      const time = fakeTime();
      const budgets = new ApiBudgets([{ ois: 'A', rate: perSecond(2) }], time);
      expect(budgets.check('A', 'x')).to.deep.equal({ ok: true });
      time.advance(300);
      expect(budgets.check('A', 'y')).to.deep.equal({ ok: true });
      expect(budgets.check('A', 'x')).to.deep.equal({ ok: false, reason: 'over budget', retryAfterMs: 700 });
      // Another OIS has no budget of its own.
      expect(budgets.check('B', 'x')).to.deep.equal({ ok: true });
      time.advance(700);
      expect(budgets.check('A', 'x')).to.deep.equal({ ok: true });
    });

    it("applies an endpoint's own limit together with its OIS's, charging neither when one refuses", () => {
      const time = fakeTime();
      const budgets = new ApiBudgets(
        [
          { ois: 'A', rate: perSecond(3) },
          { ois: 'A', endpoint: 'slow', rate: perSecond(1) },
        ],
        time,
      );
      expect(budgets.check('A', 'slow').ok).to.equal(true);
      // The endpoint's limit refuses: the OIS's turn is not spent on it.
      expect(budgets.check('A', 'slow')).to.deep.include({ ok: false, reason: 'over budget' });
      expect(budgets.check('A', 'fast').ok).to.equal(true);
      expect(budgets.check('A', 'fast').ok).to.equal(true);
      // Now the OIS's limit (3 in the second) refuses the other endpoint too.
      expect(budgets.check('A', 'fast').ok).to.equal(false);
    });

    it('applies two windows of one OIS together (a per-minute budget with a per-second burst)', () => {
      const time = fakeTime();
      const budgets = new ApiBudgets(
        [
          { ois: 'A', rate: perMinute(3) },
          { ois: 'A', rate: perSecond(2) },
        ],
        time,
      );
      expect(budgets.check('A', 'x').ok).to.equal(true);
      expect(budgets.check('A', 'x').ok).to.equal(true);
      expect(budgets.check('A', 'x')).to.deep.equal({ ok: false, reason: 'over budget', retryAfterMs: 1_000 });
      time.advance(1_000);
      expect(budgets.check('A', 'x').ok).to.equal(true);
      expect(budgets.check('A', 'x')).to.deep.equal({ ok: false, reason: 'over budget', retryAfterMs: 59_000 });
    });

    it('a share of 0 calls closes the API (or the endpoint) to the process', () => {
      const budgets = new ApiBudgets([{ ois: 'A', endpoint: 'x', rate: perMinute(0) }], fakeTime());
      for (let i = 0; i < 3; i++)
        expect(budgets.check('A', 'x')).to.deep.equal({ ok: false, reason: 'over budget', retryAfterMs: 60_000 });
      expect(budgets.check('A', 'y')).to.deep.equal({ ok: true });
    });

    it('lets a call wait for its turn within the wait allowed, else defers it without waiting', async () => {
      const time = fakeTime();
      const budgets = new ApiBudgets([{ ois: 'A', rate: perSecond(1) }], time);
      expect(budgets.acquire('A', 'x')).to.deep.equal({ ok: true });
      // No wait allowed (a gateway's default): deferred at once, synchronously.
      expect(budgets.acquire('A', 'x')).to.deep.equal({ ok: false, reason: 'over budget', retryAfterMs: 1_000 });
      // Allowed 1.5 s: it waits the 1 s and goes.
      expect(await budgets.acquire('A', 'x', { maxWaitMs: 1_500 })).to.deep.equal({ ok: true });
      expect(time.sleeps).to.deep.equal([1_000]);
      // Allowed less than the turn is away: deferred without sleeping.
      expect(await budgets.acquire('A', 'x', { maxWaitMs: 500 })).to.deep.include({ ok: false, reason: 'over budget' });
      expect(time.sleeps).to.have.length(1);
      expect(budgets.counts().get('A')).to.deep.equal({ overBudget: 2, paused: 0, waited: 1, rateLimited: 0 });
    });

    it('a process default wait applies to callers that give none; an aborted signal ends the wait', async () => {
      const time = fakeTime();
      const budgets = new ApiBudgets([{ ois: 'A', rate: perSecond(1) }], { ...time, defaultMaxWaitMs: 5_000 });
      budgets.check('A', 'x');
      expect(await budgets.acquire('A', 'x')).to.deep.equal({ ok: true });
      const stopped = new AbortController();
      stopped.abort('deadline');
      expect(await budgets.acquire('A', 'x', { maxWaitMs: 5_000, signal: stopped.signal })).to.deep.include({
        ok: false,
      });
    });

    it("a 429's wait pauses every endpoint of the OIS, budget or not; a shorter one never cuts it short", () => {
      const time = fakeTime();
      const budgets = new ApiBudgets([], time);
      budgets.pause('A', 30_000);
      expect(budgets.check('A', 'x')).to.deep.equal({ ok: false, reason: 'paused', retryAfterMs: 30_000, status: 429 });
      expect(budgets.check('B', 'x')).to.deep.equal({ ok: true });
      time.advance(10_000);
      budgets.pause('A', 5_000);
      expect(budgets.pausedForMs('A')).to.equal(20_000);
      expect(budgets.acquire('A', 'y')).to.deep.equal({
        ok: false,
        reason: 'paused',
        retryAfterMs: 20_000,
        status: 429,
      });
      time.advance(20_000);
      expect(budgets.check('A', 'x')).to.deep.equal({ ok: true });
      expect(budgets.counts().get('A')).to.deep.equal({ overBudget: 0, paused: 1, waited: 0, rateLimited: 2 });
    });

    it('never starts more than N calls within any window, however calls arrive and wait (property)', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 4 }),
          fc.array(fc.record({ gap: fc.integer({ min: 0, max: 900 }), wait: fc.integer({ min: 0, max: 2_000 }) }), {
            minLength: 1,
            maxLength: 40,
          }),
          async (calls, arrivals) => {
            const time = fakeTime(0);
            const budgets = new ApiBudgets([{ ois: 'A', rate: perSecond(calls) }], time);
            const starts: number[] = [];
            for (const { gap, wait } of arrivals) {
              time.advance(gap);
              if ((await budgets.acquire('A', 'x', { maxWaitMs: wait })).ok) starts.push(time.now());
            }
            for (let i = calls; i < starts.length; i++) expect(starts[i]! - starts[i - calls]!).to.be.at.least(1_000);
          },
        ),
        { seed: 46 },
      );
    });
  });
});
