// The coordinator's side of a window's workers (src/node/window-workers.ts) on loopback HTTP: the deadlines (nothing
// handed out after the hard end or SIGTERM; a run's tasks not done then fail, so nothing is sent for them) and the
// bounds of what a worker may post.
import { expect } from 'chai';
import { type ApiShardInput, SHARD_FORMAT, WINDOW_PATHS } from '../../../src/contract/shard.js';
import { WorkDeadline } from '../../../src/node/deadline.js';
import { silentLogger } from '../../../src/node/logger.js';
import { WindowWorkers } from '../../../src/node/window-workers.js';
import { waitFor } from '../../support/wait.js';

const shard: ApiShardInput = { format: SHARD_FORMAT, chainId: '31337', requests: [] };

async function started(deadline?: WorkDeadline) {
  const pool = new WindowWorkers({
    fallback: { run: async (shards) => shards.map(() => ({ ok: false, error: 'fallback' })) },
    logger: silentLogger,
  });
  let credential = '';
  const url = await pool.start({
    host: '127.0.0.1',
    port: 0,
    ...(deadline ? { deadline } : {}),
    launch: async (_, given) => {
      credential = given;
    },
  });
  const headers = { authorization: `Bearer ${credential}` };
  const ask = () => fetch(`${url}${WINDOW_PATHS.next}`, { headers });
  return { pool, url, headers, ask };
}

describe("the coordinator's side of a window's workers", () => {
  it("SIGTERM (or the hard end): the run's tasks fail, waiting workers are told to exit, nothing more is handed out", async () => {
    const deadline = WorkDeadline.after(60_000);
    const { pool, ask } = await started(deadline);
    const first = ask();
    await waitFor(() => pool.ready, 5_000, 'a worker asks');
    const running = pool.run([shard, shard], { concurrency: 1, deadline });
    expect((await first).status, 'the first task handed out').to.equal(200);
    const waiting = ask();
    await waitFor(() => pool.waitingWorkers === 1, 5_000, 'the worker asks again');
    deadline.stop('SIGTERM');
    expect(await running).to.deep.equal([
      { ok: false, error: 'no result before SIGTERM' },
      { ok: false, error: 'no result before SIGTERM' },
    ]);
    expect((await waiting).status).to.equal(410);
    expect((await ask()).status).to.equal(410);
    await pool.stop();
  });

  it('a run whose deadline has passed hands out nothing', async () => {
    const { pool, ask } = await started();
    const waiting = ask();
    await waitFor(() => pool.ready, 5_000, 'a worker asks');
    const deadline = WorkDeadline.after(60_000);
    deadline.stop('SIGTERM');
    expect(await pool.run([shard], { concurrency: 1, deadline })).to.deep.equal([
      { ok: false, error: 'no task handed out: SIGTERM' },
    ]);
    expect(pool.waitingWorkers).to.equal(1);
    await pool.stop();
    expect((await waiting).status).to.equal(410);
  });

  it('refuses a malformed or oversized result, a task id of another form, and what is not the protocol', async () => {
    const { pool, url, headers, ask } = await started();
    const first = ask();
    await waitFor(() => pool.ready, 5_000, 'a worker asks');
    const running = pool.run([shard], { concurrency: 1 });
    const { task } = (await (await first).json()) as { task: string };
    const post = (path: string, body: string) => fetch(`${url}${path}`, { method: 'POST', headers, body });
    expect((await post(WINDOW_PATHS.result(task), '{"format":"other"}')).status).to.equal(400);
    expect((await post(WINDOW_PATHS.result('../../etc'), '{}')).status).to.equal(404);
    expect((await fetch(`${url}/metrics`, { headers })).status).to.equal(404);
    const oversized = await post(WINDOW_PATHS.result(task), ' '.repeat(9 * 1024 * 1024)).catch(() => undefined);
    expect(oversized?.status ?? 413, 'refused (or the connection cut) past the bound').to.equal(413);
    // The task is still its worker's: a well-formed result is taken.
    const ok = await post(WINDOW_PATHS.result(task), JSON.stringify({ format: SHARD_FORMAT, results: [], apiMs: 1 }));
    expect(ok.status).to.equal(204);
    expect((await running)[0]).to.deep.include({ ok: true });
    await pool.stop();
  });
});
