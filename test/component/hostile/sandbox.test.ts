// Hostile processing snippets against the real QuickJS sandbox and the worker-thread pool: timers longer
// than the budget, memory exhaustion, and many allocating snippets at once.
import { expect } from 'chai';
import { runInSandbox, SandboxError } from '../../../src/ois/sandbox.js';
import { WorkerPool } from '../../../src/ois/worker-pool.js';

async function sandboxMessage(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(SandboxError);
    return (error as Error).message;
  }
  return 'no error';
}

describe('hostile input: processing snippets', function () {
  this.timeout(120_000);

  it('a timer that cannot fire within the budget never fires: the run times out, every time', async () => {
    for (let i = 0; i < 5; i++) {
      const message = await sandboxMessage(
        runInSandbox({
          code: 'async () => { await new Promise((resolve) => setTimeout(resolve, 3600000)); return 1; }',
          mode: 'function',
          globals: { payload: {} },
          timeoutMs: 200,
          timeoutMessage: 'Full timeout exceeded',
        }),
      );
      expect(message).to.equal('Full timeout exceeded');
    }
  });

  it('out of memory is reported as such, never as "null", and the instance is not reused', async () => {
    for (let i = 0; i < 2; i++) {
      const message = await sandboxMessage(
        runInSandbox({
          code: '() => { const a = []; while (true) a.push({ a: 1, b: [1, 2, 3] }); }',
          mode: 'function',
          globals: { payload: {} },
          timeoutMs: 20_000,
          timeoutMessage: 'Full timeout exceeded',
        }),
      );
      expect(message).to.match(/^Processing exceeded the memory limit of \d+ bytes$/);
    }
    // The next snippet gets a healthy instance.
    expect(
      await runInSandbox({
        code: '(p) => p.x + 1',
        mode: 'function',
        globals: { payload: { x: 1 } },
        timeoutMs: 5_000,
        timeoutMessage: 'x',
      }),
    ).to.equal(2);
  });

  it('20 allocating snippets at once run at most pool-size at a time, and idle workers give their memory back', async () => {
    const pool = new WorkerPool({ size: 2, idleMs: 100, graceMs: 2_000, heapLimitMb: 64 });
    let largest = 0;
    const sample = setInterval(() => {
      largest = Math.max(largest, pool.size);
    }, 5);
    try {
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          pool.run(
            {
              kind: 'snippet',
              collectLogs: false,
              options: {
                code: '(p) => { const a = []; for (let i = 0; i < 300000; i++) a.push(i); return a.length + p.i; }',
                mode: 'function',
                globals: { payload: { i } },
                timeoutMs: 20_000,
                timeoutMessage: 'timeout',
              },
            },
            20_000,
          ),
        ),
      );
      expect(results.map((result) => (result.ok ? result.value : result.message))).to.deep.equal(
        Array.from({ length: 20 }, (_, i) => 300_000 + i),
      );
      expect(largest).to.be.within(1, 2);
      expect(pool.started).to.be.at.most(20);
      // Idle workers are terminated, which returns their WebAssembly memory.
      while (pool.size > 0) await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      clearInterval(sample);
      await pool.close();
    }
  });

  it('a snippet that blocks its worker past the grace period gets its worker terminated, and the pool goes on', async () => {
    const pool = new WorkerPool({ size: 1, idleMs: 1_000, graceMs: 100, heapLimitMb: 64 });
    try {
      // The in-sandbox deadline is long; only the pool's limit (100 ms + grace) ends it.
      const hung = pool.run(
        {
          kind: 'snippet',
          collectLogs: false,
          options: { code: 'while (true) {}', mode: 'sync', globals: {}, timeoutMs: 60_000, timeoutMessage: 'slow' },
        },
        100,
        'Processing timed out',
      );
      const next = pool.run(
        {
          kind: 'snippet',
          collectLogs: false,
          options: { code: 'output = 7', mode: 'sync', globals: {}, timeoutMs: 5_000, timeoutMessage: 'x' },
        },
        5_000,
      );
      expect(await hung).to.deep.equal({ ok: false, message: 'Processing timed out', sandboxError: true });
      expect(await next).to.deep.equal({ ok: true, value: 7 });
      expect(pool.started).to.equal(2);
    } finally {
      await pool.close();
    }
  });
});
