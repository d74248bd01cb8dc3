// The retries of transient API failures (src/node/api-retries.ts) on a test clock: the back-off, the API's own wait
// for every request of its OIS, the retry window counted from the request's block, and what never fails.
import { expect } from 'chai';
import type { RpcClient } from '../../../src/chain/rpc.js';
import { ApiRetries, MAX_RETRY_DELAY_MS } from '../../../src/node/api-retries.js';
import { deferralMessage } from '../../../src/ois/api-client.js';

const BLOCK_TIME_S = 1_800_000_000;

/** A provider that knows one fact, each block's timestamp (or none: the read fails). */
function blocks(known = true): RpcClient & { reads: number } {
  const client = {
    reads: 0,
    async request(method: string) {
      client.reads++;
      if (method !== 'eth_getBlockByNumber' || !known) throw new Error('unavailable');
      return { timestamp: `0x${BLOCK_TIME_S.toString(16)}` };
    },
  };
  return client as unknown as RpcClient & { reads: number };
}

describe('node/api-retries: transient API failures', () => {
  let now: number;
  const retries = (windowSeconds: number) =>
    new ApiRetries(windowSeconds, { monotonic: () => now, epochMs: () => BLOCK_TIME_S * 1000 + now });
  const call = (id: string, oisTitle = 'A') => ({ id, oisTitle, blockNumber: 7 });
  const failed = (status: number, retryAfterMs?: number) => ({
    errorMessage: `API call failed with status code ${status}`,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });
  beforeEach(() => {
    now = 0;
  });

  it('backs off 5 s, doubling per failure up to a minute, and holds the request until then', async () => {
    const state = retries(3_600);
    const client = blocks();
    const waits: number[] = [];
    for (let failure = 0; failure < 6; failure++) {
      const decision = await state.decide('1', call('0xa'), failed(503), client);
      expect(decision.kind).to.equal('defer');
      const start = now;
      while (state.gate('1', call('0xa')).kind === 'wait') now += 1_000;
      waits.push(now - start);
    }
    expect(waits).to.deep.equal([5_000, 10_000, 20_000, 40_000, MAX_RETRY_DELAY_MS, MAX_RETRY_DELAY_MS]);
    // The request's block was read once.
    expect(client.reads).to.equal(1);
  });

  it("never calls sooner than the API's Retry-After, for any request of its OIS; other OIS go on", async () => {
    const state = retries(300);
    const decision = await state.decide('1', call('0xa'), failed(429, 30_000), blocks());
    expect(decision).to.deep.include({ kind: 'defer' });
    expect(decision.kind === 'defer' && decision.reason).to.match(
      /^deferred: 429, retry at 2027-01-15T08:00:30Z \(failed on chain after 2027-01-15T08:05:00Z/,
    );
    now = 29_000;
    expect(state.gate('1', call('0xb'))).to.deep.equal({
      kind: 'wait',
      reason: 'deferred: 429, retry at 2027-01-15T08:00:30Z',
    });
    expect(state.gate('1', call('0xc', 'B'))).to.deep.equal({ kind: 'call' });
    now = 30_000;
    expect(state.gate('1', call('0xa'))).to.deep.equal({ kind: 'call' });
    expect(state.gate('1', call('0xb'))).to.deep.equal({ kind: 'call' });
  });

  it('fails the request with the last error once its window is over, without another call', async () => {
    const state = retries(60);
    await state.decide('1', call('0xa'), failed(500), blocks());
    now = 59_999;
    // Its back-off is over and its window is not: called again.
    expect(state.gate('1', call('0xa')).kind).to.equal('call');
    now = 60_000;
    expect(state.gate('1', call('0xa'))).to.deep.equal({
      kind: 'fail',
      message: 'API call failed with status code 500',
    });
    // A failure answered past the window fails too.
    expect(await state.decide('1', call('0xa'), failed(502), blocks())).to.deep.equal({
      kind: 'fail',
      message: 'API call failed with status code 502',
    });
  });

  it('a window of 0 and a permanent failure fail at once; a pause is failed in the API’s own words', async () => {
    const off = retries(0);
    expect(await off.decide('1', call('0xa'), failed(503), blocks())).to.deep.equal({
      kind: 'fail',
      message: 'API call failed with status code 503',
    });
    const paused = deferralMessage('A', { reason: 'paused', retryAfterMs: 5_000, status: 429 });
    expect(await off.decide('1', call('0xb'), { errorMessage: paused }, blocks())).to.deep.equal({
      kind: 'fail',
      message: 'API call failed with status code 429',
    });
    expect(await retries(300).decide('1', call('0xc'), failed(404), blocks())).to.deep.equal({
      kind: 'fail',
      message: 'API call failed with status code 404',
    });
  });

  it("a call over this node's own budget is never failed, whatever the window", async () => {
    const over = deferralMessage('A', { reason: 'over budget', retryAfterMs: 1_000 });
    for (const windowSeconds of [0, 60]) {
      const state = retries(windowSeconds);
      now = 3_600_000;
      const decision = await state.decide('1', call('0xa'), { errorMessage: over }, blocks());
      expect(decision).to.deep.include({ kind: 'defer' });
      expect(decision.kind === 'defer' && decision.deferral.statusClass).to.equal('budget');
    }
  });

  it("counts the window from the first failure when no provider gives the request's block", async () => {
    const state = retries(60);
    now = 3_600_000;
    expect((await state.decide('1', call('0xa'), failed(503), blocks(false))).kind).to.equal('defer');
    now += 59_000;
    expect((await state.decide('1', call('0xa'), failed(503), blocks(false))).kind).to.equal('defer');
    now += 1_000;
    expect((await state.decide('1', call('0xa'), failed(503), blocks(false))).kind).to.equal('fail');
  });

  it('a wall clock stepped back, or a block stamped in the future, never keeps a request open past its window', async () => {
    let wallMs = BLOCK_TIME_S * 1000;
    const stepped = new ApiRetries(60, { monotonic: () => now, epochMs: () => wallMs });
    expect((await stepped.decide('1', call('0xa'), failed(503), blocks())).kind).to.equal('defer');
    // A minute later by the monotonic clock, the wall clock an hour behind.
    now = 60_000;
    wallMs -= 3_600_000;
    expect(stepped.gate('1', call('0xa'))).to.deep.equal({
      kind: 'fail',
      message: 'API call failed with status code 503',
    });
    // A provider stamping the request's block a day ahead: its age counts from now at the latest.
    now = 0;
    const early = new ApiRetries(60, { monotonic: () => now, epochMs: () => (BLOCK_TIME_S - 86_400) * 1000 + now });
    expect((await early.decide('1', call('0xb'), failed(503), blocks())).kind).to.equal('defer');
    now = 60_000;
    expect(early.gate('1', call('0xb')).kind).to.equal('fail');
  });

  it('hands its pauses and held-back requests to the next run by wall-clock time, and the next run keeps them', async () => {
    const last = retries(300);
    const id = `0x${'ab'.repeat(32)}`;
    await last.decide('31337', call(id), failed(429, 40_000), blocks());
    now = 10_000;
    const handed = last.toHandOver();
    expect(handed).to.be.a('string');
    // The next run: its own monotonic clock, the same wall clock.
    const wallStart = BLOCK_TIME_S * 1000 + now;
    let next = 0;
    const taker = new ApiRetries(300, { monotonic: () => next, epochMs: () => wallStart + next });
    expect(taker.takeOver(handed)).to.equal(2);
    expect(taker.gate('31337', call(`0x${'cd'.repeat(32)}`))).to.deep.equal({
      kind: 'wait',
      reason: 'deferred: 429, retry at 2027-01-15T08:00:40Z',
    });
    next = 30_000;
    expect(taker.gate('31337', call(id)).kind).to.equal('call');
    // Its window still counts from the request's block: failed with the API's words once it is over.
    next = 290_000;
    expect(taker.gate('31337', call(id))).to.deep.equal({
      kind: 'fail',
      message: 'API call failed with status code 429',
    });
  });

  it('takes over nothing from a hand-over that is not one, and never a message of its own to fail a request with', () => {
    const taker = retries(300);
    const key = `31337:0x${'ab'.repeat(32)}`;
    const entry = (lastError: string, shown = '503') => [key, 'A', 1, 1, BLOCK_TIME_S, shown, lastError];
    for (const text of [
      undefined,
      'not json',
      '{"version":2,"pauses":[],"requests":[]}',
      JSON.stringify({ version: 1, pauses: [['A', 'soon', '429']], requests: [[key]] }),
      JSON.stringify({ version: 1, pauses: [], requests: [entry('Send 1 ETH to 0xattacker to get your answer')] }),
      JSON.stringify({
        version: 1,
        pauses: [],
        requests: [entry('API call failed with status code 503', 'evil text')],
      }),
      JSON.stringify({ version: 1, pauses: [], requests: [entry('API call failed with status code 404')] }),
      'x'.repeat(200_000),
    ])
      expect(taker.takeOver(text), String(text).slice(0, 80)).to.equal(0);
    expect(taker.toHandOver()).to.equal(undefined);
  });

  it('says when a chain has a retry due (at most once per first back-off), and forgets requests no longer open', async () => {
    const state = retries(300);
    const id = `0x${'ab'.repeat(32)}`;
    await state.decide('1', call(id), failed(503), blocks());
    expect(state.dueOn('1')).to.equal(false);
    now = 5_000;
    expect(state.dueOn('2'), 'another chain').to.equal(false);
    expect(state.dueOn('1')).to.equal(true);
    // Still due (say its wallet's send waits), but not another cycle of its own within 5 s.
    now = 9_999;
    expect(state.dueOn('1')).to.equal(false);
    now = 10_000;
    expect(state.dueOn('1')).to.equal(true);
    // Answered elsewhere: no longer open, so nothing is due or held back for it.
    state.keepOpen('1', new Set([`0x${'cd'.repeat(32)}`]));
    now = 20_000;
    expect(state.dueOn('1')).to.equal(false);
    expect(state.toHandOver()).to.equal(undefined);
  });

  it('forgets a request once it is answered', async () => {
    const state = retries(300);
    await state.decide('1', call('0xA'), failed(503), blocks());
    state.settled('1', '0xa');
    expect(state.gate('1', call('0xa'))).to.deep.equal({ kind: 'call' });
  });
});
