import { expect } from 'chai';
import { Backoff, ItemExponentialBackoff, TokenBucket } from '../../../src/kube/backoff.js';
import { FakeClock } from '../../support/fake-clock.js';

describe('operator runtime: backoff and token bucket', () => {
  it('TokenBucket grants the burst at once, then one token per 1/rate', async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(5, 3, clock);
    expect([bucket.reserve(), bucket.reserve(), bucket.reserve()]).to.deep.equal([0, 0, 0]);
    expect(bucket.reserve()).to.equal(200);
    expect(bucket.reserve()).to.equal(400); // callers queue up behind each other, no busy-waiting
    await clock.advance(1000);
    // 5 tokens refilled, 2 were owed: 3 left.
    expect(Math.round(bucket.available())).to.equal(3);
  });

  it('TokenBucket never accumulates more than the burst', async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(100, 2, clock);
    await clock.advance(60_000);
    expect(bucket.available()).to.equal(2);
  });

  it('TokenBucket.take waits for its token on the clock', async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(1, 1, clock);
    await bucket.take();
    let taken = false;
    void bucket.take().then(() => {
      taken = true;
    });
    await clock.advance(999);
    expect(taken).to.equal(false);
    await clock.advance(1);
    expect(taken).to.equal(true);
  });

  it('TokenBucket rejects a zero rate or burst', () => {
    expect(() => new TokenBucket(0, 1)).to.throw();
    expect(() => new TokenBucket(1, 0)).to.throw();
  });

  it('Backoff grows exponentially, stays within its jitter and cap, and resets', () => {
    const backoff = new Backoff({ initialMs: 100, maxMs: 1000, jitter: 0.2 }, () => 1);
    const delays = Array.from({ length: 6 }, () => backoff.next());
    expect(delays).to.deep.equal([120, 240, 480, 960, 1000, 1000]);
    backoff.reset();
    expect(backoff.next()).to.equal(120);
    const low = new Backoff({ initialMs: 100, maxMs: 1000, jitter: 0.2 }, () => 0);
    expect(low.next()).to.equal(80);
  });

  it('ItemExponentialBackoff is 5 ms * 2^n up to 1000 s by default', () => {
    const backoff = new ItemExponentialBackoff<string>();
    const delays = Array.from({ length: 30 }, () => backoff.next('x'));
    expect(delays[0]).to.equal(5);
    expect(delays[10]).to.equal(5 * 1024);
    expect(delays[29]).to.equal(1_000_000);
  });
});
