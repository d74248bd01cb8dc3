import { expect } from 'chai';
import {
  type CycleRequestRecord,
  MAX_RECORDED_REQUESTS,
  mergeRequestLog,
  parseRequestLog,
  type RequestRecord,
} from '../../../src/contract/request-log.js';

const id = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;
const at = (minute: number) => ({ time: `2026-11-25T10:${String(minute).padStart(2, '0')}:00.000Z` });

function seenNow(n: number, minute: number, extra: Partial<CycleRequestRecord> = {}): CycleRequestRecord {
  return { chainId: '1', requestId: id(n), state: 'waitingForConfirmations', lastSeen: at(minute), ...extra };
}

describe('request log (contract)', () => {
  it('keeps the first sighting and counts the cycles of a request seen again', () => {
    const first = mergeRequestLog([], [seenNow(1, 0)]);
    const second = mergeRequestLog(first, [seenNow(1, 1, { state: 'fulfilled' })]);
    expect(second).to.have.length(1);
    expect(second[0]).to.include({ state: 'fulfilled', cycles: 2 });
    expect(second[0]!.firstSeen).to.deep.equal(at(0));
    expect(second[0]!.lastSeen).to.deep.equal(at(1));
  });

  it("keeps the API outcome of the cycle that called the API when a later cycle only saw the request's transaction", () => {
    const called = mergeRequestLog([], [seenNow(1, 0, { state: 'error', api: { outcome: '2xx', durationMs: 12 } })]);
    const retried = mergeRequestLog(called, [seenNow(1, 1, { state: 'fulfilled' })]);
    expect(retried[0]!.api).to.deep.equal({ outcome: '2xx', durationMs: 12 });
  });

  it('keeps the transaction that answered a request, and the side that sent it, through later sightings that sent none', () => {
    const tx = { hash: `0x${'ab'.repeat(32)}`, nonce: 7, provider: 'p1' };
    const served = mergeRequestLog(
      [],
      [seenNow(1, 0, { state: 'fulfilled', transaction: { ...tx, kind: 'fulfil' }, servedBy: 'standby' })],
    );
    const skipped = mergeRequestLog(served, [
      seenNow(1, 1, { state: 'skipped', reason: 'no longer awaiting fulfilment' }),
    ]);
    const again = mergeRequestLog(skipped, [
      seenNow(1, 2, { state: 'skipped', reason: 'no longer awaiting fulfilment' }),
    ]);
    expect(again[0]).to.deep.include({
      state: 'skipped',
      reason: 'no longer awaiting fulfilment',
      transaction: { ...tx, kind: 'fulfil' },
      servedBy: 'standby',
      cycles: 3,
    });
    expect(again[0]!.lastSeen).to.deep.equal(at(2));
    // An entry of an older engine (no kind): what it answered with is read from its state.
    const failed = mergeRequestLog([], [seenNow(2, 0, { state: 'failed', transaction: tx })]);
    expect(mergeRequestLog(failed, [seenNow(2, 1, { state: 'skipped' })])[0]!.transaction).to.deep.equal({
      ...tx,
      kind: 'fail',
    });
    // A later transaction (a stuck one replaced) is the one kept; a refused send answered nothing.
    const replaced = mergeRequestLog(served, [
      seenNow(1, 1, { state: 'fulfilled', transaction: { hash: `0x${'ef'.repeat(32)}`, kind: 'fulfil' } }),
    ]);
    expect(replaced[0]!.transaction!.hash).to.equal(`0x${'ef'.repeat(32)}`);
    const refused = mergeRequestLog([], [seenNow(3, 0, { state: 'error', transaction: tx })]);
    expect(mergeRequestLog(refused, [seenNow(3, 1, { state: 'skipped' })])[0]).to.not.have.property('transaction');
  });

  it('puts the requests of the newest cycle first and keeps at most MAX_RECORDED_REQUESTS entries', () => {
    let log: RequestRecord[] = [];
    for (let cycle = 0; cycle < 3; cycle++)
      log = mergeRequestLog(
        log,
        Array.from({ length: 150 }, (_, i) => seenNow(cycle * 150 + i, cycle)),
      );
    expect(log).to.have.length(MAX_RECORDED_REQUESTS);
    expect(log[0]!.requestId).to.equal(id(300));
    expect(log[149]!.requestId).to.equal(id(449));
    expect(log[150]!.requestId).to.equal(id(150));
    // Stored as JSON, the bounded log stays far below a ConfigMap's 1 MiB.
    const full = log.map((r) => ({
      ...r,
      reason: 'x'.repeat(300),
      transaction: { hash: id(1), nonce: 1, provider: 'p'.repeat(60) },
      api: { outcome: '5xx' as const, durationMs: 20_000 },
    }));
    expect(JSON.stringify(full).length).to.be.below(200_000);
  });

  it('reads back only well-formed entries, and nothing from text that is not a JSON array', () => {
    const good = mergeRequestLog([], [seenNow(1, 0)])[0]!;
    const parsed = parseRequestLog(
      JSON.stringify([good, { ...good, requestId: 'not an id' }, { ...good, state: 'teleported' }, 42, null]),
    );
    expect(parsed).to.deep.equal([good]);
    expect(parseRequestLog('{"a":1}')).to.deep.equal([]);
    expect(parseRequestLog('not json')).to.deep.equal([]);
    expect(parseRequestLog(undefined)).to.deep.equal([]);
    expect(parseRequestLog(JSON.stringify(Array.from({ length: 1000 }, () => good)))).to.have.length(
      MAX_RECORDED_REQUESTS,
    );
  });
});
