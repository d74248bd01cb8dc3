import { expect } from 'chai';
import { apiOutcomeOf } from '../../../src/node/api-call.js';
import type { CycleSummary } from '../../../src/node/cycle.js';
import { emptySummary } from '../../../src/node/cycle-summary.js';
import { cycleRequestRecords } from '../../../src/node/request-log.js';
import { clearSecrets, registerSecret } from '../../../src/observability/index.js';

const id = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;
const wallet = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;
const hash = `0x${'cd'.repeat(32)}`;

function summary(parts: Pick<CycleSummary, 'results' | 'seen'>): CycleSummary {
  return { ...emptySummary(), ...parts };
}

const output = (
  outcomes: NonNullable<Extract<CycleSummary['results'][number], { ok: true }>>['output']['outcomes'],
) => ({
  ok: true as const,
  output: {
    chainId: '1',
    sponsorWallet: wallet(1),
    outcomes,
    apiCalls: 1,
    cacheHits: 0,
    rpcCalls: 1,
    timings: { apiMs: 0, planMs: 0, sendMs: 0 },
  },
});

describe('request log of a cycle', () => {
  afterEach(() => clearSecrets());

  it('records served requests with their API outcome and transaction first, then the waiting, over the limit and dropped ones', () => {
    const time = new Date('2026-11-25T10:00:00Z');
    const records = cycleRequestRecords(
      summary({
        seen: [
          { chainId: '1', id: id(4), state: 'dropped', reason: 'requester is not authorized', headBlock: 20 },
          {
            chainId: '1',
            id: id(3),
            state: 'overChainLimit',
            reason: 'over the chain limit',
            blockNumber: 9,
            headBlock: 20,
          },
          { chainId: '1', id: id(2), state: 'waitingForConfirmations', blockNumber: 19, headBlock: 20 },
          { chainId: '1', id: id(1), state: 'servable', sponsorWallet: wallet(1), blockNumber: 10, headBlock: 20 },
        ],
        results: [
          output([
            {
              id: id(1),
              kind: 'api',
              outcome: 'fulfilled',
              txHash: hash,
              nonce: 3,
              provider: 'p1',
              api: { outcome: '2xx', durationMs: 42 },
            },
            { id: id(9), kind: 'withdrawal', outcome: 'withdrawn', txHash: hash },
          ]),
        ],
      }),
      { job: 'node-coordinator-1', time },
    );
    expect(records.map((r) => [r.requestId, r.state])).to.deep.equal([
      [id(1), 'fulfilled'],
      [id(2), 'waitingForConfirmations'],
      [id(3), 'overChainLimit'],
      [id(4), 'dropped'],
    ]);
    expect(records[0]).to.deep.equal({
      chainId: '1',
      requestId: id(1),
      state: 'fulfilled',
      lastSeen: { job: 'node-coordinator-1', time: time.toISOString() },
      madeInBlock: 10,
      headBlock: 20,
      api: { outcome: '2xx', durationMs: 42 },
      transaction: { hash, nonce: 3, provider: 'p1', kind: 'fulfil' },
      servedBy: 'primary',
    });
    expect(records[3]).to.include({ reason: 'requester is not authorized', headBlock: 20 });
  });

  it('a request fulfilled in one poll of a window and skipped at a later one (no longer awaiting fulfilment) keeps the transaction that served it', () => {
    const skippedLater = cycleRequestRecords(
      {
        ...summary({
          seen: [
            { chainId: '1', id: id(1), state: 'servable', sponsorWallet: wallet(1), blockNumber: 10, headBlock: 25 },
          ],
          // A window's results, oldest poll first.
          results: [
            output([
              {
                id: id(1),
                kind: 'api',
                outcome: 'fulfilled',
                txHash: hash,
                nonce: 3,
                provider: 'p1',
                api: { outcome: '2xx', durationMs: 42 },
              },
            ]),
            output([{ id: id(1), kind: 'api', outcome: 'skipped', reason: 'no longer awaiting fulfilment' }]),
          ],
        }),
        role: 'standby',
      },
      { time: new Date('2026-11-25T10:00:00Z') },
    );
    expect(skippedLater).to.have.length(1);
    expect(skippedLater[0]).to.deep.include({
      state: 'skipped',
      reason: 'no longer awaiting fulfilment',
      api: { outcome: '2xx', durationMs: 42 },
      transaction: { hash, nonce: 3, provider: 'p1', kind: 'fulfil' },
      servedBy: 'standby',
    });
  });

  it("a standby's transactions are recorded as served by the standby; what it left to the primary, with that reason", () => {
    const records = cycleRequestRecords(
      {
        ...summary({
          seen: [
            { chainId: '1', id: id(1), state: 'servable', sponsorWallet: wallet(1), blockNumber: 10, headBlock: 20 },
            {
              chainId: '1',
              id: id(2),
              state: 'waitingForConfirmations',
              reason: 'standby: left to the primary for 8 block(s)',
              blockNumber: 17,
              headBlock: 20,
            },
          ],
          results: [output([{ id: id(1), kind: 'api', outcome: 'fulfilled', txHash: hash, nonce: 0 }])],
        }),
        role: 'standby',
      },
      { time: new Date('2026-11-25T10:00:00Z') },
    );
    expect(records[0]).to.include({ requestId: id(1), state: 'fulfilled', servedBy: 'standby' });
    expect(records[1]).to.include({ requestId: id(2), state: 'waitingForConfirmations' });
    expect(records[1]).to.not.have.property('servedBy');
    expect(records[1]!.reason).to.equal('standby: left to the primary for 8 block(s)');
  });

  it("records a failed worker's reason on every request of its sponsor wallet, with registered secrets redacted", () => {
    registerSecret('https://rpc.example/key-123');
    const records = cycleRequestRecords(
      summary({
        seen: [
          { chainId: '1', id: id(1), state: 'servable', sponsorWallet: wallet(1), headBlock: 5 },
          { chainId: '1', id: id(2), state: 'servable', sponsorWallet: wallet(2), headBlock: 5 },
        ],
        results: [
          { ok: false, chainId: '1', sponsorWallet: wallet(1), error: 'fetch https://rpc.example/key-123 failed' },
        ],
      }),
      { time: new Date(0) },
    );
    expect(records).to.have.length(1);
    expect(records[0]).to.include({ requestId: id(1), state: 'shardFailed' });
    expect(records[0]!.reason).to.not.include('key-123');
  });

  it('classes an API call by the status code in the engine message, never keeping the message', () => {
    const failed = (errorMessage: string) => apiOutcomeOf({ success: false, errorMessage });
    expect(apiOutcomeOf({ success: true, rawValue: 1, encodedValue: '0x', values: [] })).to.equal('2xx');
    expect(failed('API call failed with status code 404')).to.equal('4xx');
    expect(failed('API call failed with status code 503')).to.equal('5xx');
    expect(failed('API call failed with no response')).to.equal('no response');
    expect(failed('Processing failed: secret-ish detail')).to.equal('failed');
  });
});
