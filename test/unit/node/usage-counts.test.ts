// The outcome class of a request's API call, as the metrics and the heartbeat count it (src/node/usage-counts.ts).
import { expect } from 'chai';
import type { ShardOutcome } from '../../../src/node/shard-types.js';
import { apiCallOutcome } from '../../../src/node/usage-counts.js';
import { DEFERRED_PREFIX } from '../../../src/ois/deferral.js';

const outcome = (overrides: Partial<ShardOutcome>): ShardOutcome => ({
  id: '0x01',
  kind: 'api',
  outcome: 'fulfilled',
  ...overrides,
});

describe('the API call outcome label', () => {
  it('is the status class, with no response as no_response', () => {
    expect(apiCallOutcome(outcome({ api: { outcome: '2xx', durationMs: 5 } }))).to.equal('2xx');
    expect(apiCallOutcome(outcome({ outcome: 'failed', api: { outcome: '5xx', durationMs: 5 } }))).to.equal('5xx');
    const silent = outcome({ outcome: 'failed', api: { outcome: 'no response', durationMs: 10_000 } });
    expect(apiCallOutcome(silent)).to.equal('no_response');
  });

  it('is deferred for a call the rate budget or a pause kept back, the class of a call the API failed, absent for no call', () => {
    const keptBack = outcome({
      outcome: 'deferred',
      reason: `${DEFERRED_PREFIX}over the rate budget of Test API; retry after 1 s; left open for a later poll`,
      api: { outcome: 'not called', durationMs: 0 },
    });
    expect(apiCallOutcome(keptBack)).to.equal('deferred');
    const retried = outcome({ outcome: 'deferred', api: { outcome: '5xx', durationMs: 40 } });
    expect(apiCallOutcome(retried)).to.equal('5xx');
    expect(apiCallOutcome(outcome({ api: { outcome: 'cached', durationMs: 0 } }))).to.equal(undefined);
    expect(apiCallOutcome(outcome({ outcome: 'failed', api: { outcome: 'not called', durationMs: 0 } }))).to.equal(
      undefined,
    );
    expect(apiCallOutcome(outcome({ kind: 'withdrawal', outcome: 'withdrawn' }))).to.equal(undefined);
  });
});
