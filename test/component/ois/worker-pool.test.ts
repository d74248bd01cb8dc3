import { expect } from 'chai';
import { WorkerPool } from '../../../src/ois/worker-pool.js';

const snippet = (i: number) =>
  ({
    kind: 'snippet',
    collectLogs: false,
    options: {
      code: '({ response }) => ({ response: response + 1 })',
      mode: 'function',
      globals: { payload: { response: i } },
      timeoutMs: 20_000,
      timeoutMessage: 'timeout',
    },
  }) as const;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('ois/worker-pool: warm workers', function () {
  this.timeout(120_000);

  it('keeps warm workers alive past the idle time, so that a snippet never waits for a worker to start', async () => {
    const pool = new WorkerPool({ size: 2, idleMs: 50, graceMs: 2_000, heapLimitMb: 64 });
    try {
      await pool.keepWarm();
      expect(pool.started).to.equal(2);
      await pause(300);
      expect(pool.size).to.equal(2);
      const results = await Promise.all([1, 2, 3, 4].map((i) => pool.run(snippet(i), 20_000)));
      expect(results.map((result) => (result.ok ? result.value : result.message))).to.deep.equal([
        { response: 2 },
        { response: 3 },
        { response: 4 },
        { response: 5 },
      ]);
      await pause(300);
      expect(pool.size).to.equal(2);
      expect(pool.started).to.equal(2);
    } finally {
      await pool.close();
    }
  });

  it('replaces a warm worker that was terminated by a warm one', async () => {
    const pool = new WorkerPool({ size: 1, idleMs: 50, graceMs: 100, heapLimitMb: 64 });
    try {
      await pool.keepWarm();
      // A snippet whose own deadline is far away, run with a limit of 1 ms: the backstop terminates its worker.
      const blocked = await pool.run(
        {
          kind: 'snippet',
          collectLogs: false,
          options: { code: 'while (true) {}', mode: 'sync', globals: {}, timeoutMs: 60_000, timeoutMessage: 'timeout' },
        },
        1,
        'terminated',
      );
      expect(blocked.ok ? 'answered' : blocked.message).to.equal('terminated');
      while (pool.started < 2) await pause(20);
      await pause(300);
      expect(pool.size).to.equal(1);
      const result = await pool.run(snippet(1), 20_000);
      expect(result.ok ? result.value : result.message).to.deep.equal({ response: 2 });
    } finally {
      await pool.close();
    }
  });
});
