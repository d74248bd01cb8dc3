// settleWithGrace: a task that hangs does not hold back the others once one answered (the window's head reads).
import { expect } from 'chai';
import { settleWithGrace } from '../../../src/common/concurrency.js';

const never = new Promise<number>(() => {});

describe('settleWithGrace', () => {
  it('waits for every task that settles, and gives up on one still running the grace after the first answer', async () => {
    const outcomes = await settleWithGrace([Promise.resolve(1), Promise.reject(new Error('down')), never], 20);
    expect(outcomes[0]).to.deep.equal({ status: 'fulfilled', value: 1 });
    expect(outcomes[1]?.status).to.equal('rejected');
    expect(outcomes[2]).to.equal(undefined);
  });

  it('does not start the grace on failures alone: it waits for an answer that comes after them', async () => {
    const late = new Promise<number>((resolve) => setTimeout(() => resolve(2), 50));
    const outcomes = await settleWithGrace([Promise.reject(new Error('down')), late], 10);
    expect(outcomes[1]).to.deep.equal({ status: 'fulfilled', value: 2 });
  });

  it('answers at once for no tasks', async () => {
    expect(await settleWithGrace([], 10)).to.deep.equal([]);
  });
});
