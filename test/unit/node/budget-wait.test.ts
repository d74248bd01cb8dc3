// The wait a cycle's or a worker's API call is allowed for its turn in the API's budget (src/node/budget-wait.ts):
// never past the time its run has left, at most a window's length, none once the time is gone.
import { expect } from 'chai';
import {
  budgetWaitWithin,
  callEndpointWaiting,
  WORKER_ANSWER_MARGIN_MS,
  workerTimeLeft,
} from '../../../src/node/budget-wait.js';
import type { CallEndpointInput } from '../../../src/node/ois-adapter.js';
import { MAX_BUDGET_WAIT_MS } from '../../../src/ois/index.js';

describe('budget waits within a run (budget-wait.ts)', () => {
  it('allows the time left, at most a window, none once it is gone; the signal goes with it', () => {
    const stopped = new AbortController();
    let left = 12_345.6;
    const wait = budgetWaitWithin(() => left, stopped.signal);
    expect(wait()).to.deep.equal({ maxWaitMs: 12_345, signal: stopped.signal });
    left = Number.POSITIVE_INFINITY;
    expect(wait().maxWaitMs).to.equal(MAX_BUDGET_WAIT_MS);
    left = -5_000;
    expect(wait().maxWaitMs).to.equal(0);
    expect(budgetWaitWithin(() => 1_000)()).to.deep.equal({ maxWaitMs: 1_000 });
  });

  it('gives each call the wait of its own start', async () => {
    const seen: unknown[] = [];
    let left = 3_000;
    const call = callEndpointWaiting(
      budgetWaitWithin(() => left),
      async (input) => {
        seen.push(input.budget);
        return { success: false, errorMessage: 'stand-in' };
      },
    );
    await call({} as CallEndpointInput);
    left = 1_000;
    await call({} as CallEndpointInput);
    expect(seen).to.deep.equal([{ maxWaitMs: 3_000 }, { maxWaitMs: 1_000 }]);
  });

  it("counts a worker's time to its Job's deadline once on the wall clock, then on the monotonic clock, less the margin", () => {
    let monotonic = 500;
    const left = workerTimeLeft(String(1_000_000 + 20_000), 1_000_000, () => monotonic)!;
    expect(left()).to.equal(20_000 - WORKER_ANSWER_MARGIN_MS);
    monotonic += 4_000;
    expect(left()).to.equal(16_000 - WORKER_ANSWER_MARGIN_MS);
    // A deadline already past leaves no wait (budgetWaitWithin floors it at 0).
    expect(workerTimeLeft('999000', 1_000_000, () => 0)!()).to.be.below(0);
    for (const bad of [undefined, '', 'soon', '-5', '1e12', '12.5', '1'.repeat(20)])
      expect(workerTimeLeft(bad, 1_000_000), String(bad)).to.equal(undefined);
  });
});
