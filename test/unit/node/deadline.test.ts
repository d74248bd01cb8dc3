import { expect } from 'chai';
import { settleBy, WorkDeadline } from '../../../src/node/deadline.js';
import { steppableProcessWallClock } from '../../support/fake-clock.js';
import { waitFor } from '../../support/wait.js';

describe('WorkDeadline and settleBy', () => {
  it('is stopped at its hard end (by the clock) or by stop(), with the reason, and has no time left then', () => {
    let now = 1_000;
    const deadline = new WorkDeadline(6_000, () => now);
    expect(deadline.stopped).to.equal(false);
    expect(deadline.timeLeftMs()).to.equal(5_000);
    now = 6_000;
    expect(deadline.stopped).to.equal(true);
    expect(deadline.reason).to.equal("the window's hard end");
    expect(deadline.timeLeftMs()).to.equal(0);
    const open = new WorkDeadline(undefined);
    expect(open.timeLeftMs()).to.equal(Number.POSITIVE_INFINITY);
    open.stop('SIGTERM');
    expect(open.signal.aborted).to.equal(true);
    expect(open.reason).to.equal('SIGTERM');
  });

  it('a wall clock stepped forward does not end the work early, nor one stepped back keep it going past its end', async () => {
    const wall = steppableProcessWallClock();
    try {
      const deadline = WorkDeadline.after(60_000);
      wall.step(120_000);
      expect(deadline.stopped).to.equal(false);
      expect(deadline.timeLeftMs()).to.be.above(59_000);
      deadline.stop('test over');
      wall.step(-180_000);
      const soon = WorkDeadline.after(50);
      await waitFor(() => soon.stopped, 5_000, 'the hard end');
      expect(soon.reason).to.equal("the window's hard end");
    } finally {
      wall.restore();
    }
  });

  it('settleBy: the work when it settles, the fallback when it does not settle after the stop', async () => {
    const deadline = new WorkDeadline(undefined);
    expect(await settleBy(Promise.resolve('done'), deadline, () => 'given up', 0)).to.equal('done');
    const never = new Promise<string>(() => undefined);
    const waiting = settleBy(never, deadline, () => 'given up', 0);
    deadline.stop('SIGTERM');
    expect(await waiting).to.equal('given up');
    // Work that settles in the grace after the stop is kept.
    const late = Promise.withResolvers<string>();
    const kept = settleBy(late.promise, deadline, () => 'given up', 50);
    late.resolve('settled');
    expect(await kept).to.equal('settled');
  });

  it('stopUnless: stopped, with its reason and the signal aborted, at the first check after the condition fails', () => {
    let held = true;
    const deadline = new WorkDeadline(undefined);
    deadline.stopUnless(() => held, 'lease lost');
    expect(deadline.reason).to.equal(undefined);
    held = false;
    // No timer involved: the check itself stops it.
    expect(deadline.reason).to.equal('lease lost');
    expect(deadline.signal.aborted).to.equal(true);
    held = true;
    expect(deadline.stopped).to.equal(true);
    // Once the work is finished, the condition no longer applies.
    const finished = new WorkDeadline(undefined);
    finished.stopUnless(() => false, 'lease lost');
    finished.finish();
    expect(finished.stopped).to.equal(false);
  });
});
