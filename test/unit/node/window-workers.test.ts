// The coordinator's side of a window's workers (src/node/window-workers.ts) on loopback HTTP: the deadlines (nothing
// handed out after the hard end or SIGTERM; a run's tasks not done then fail, so nothing is sent for them), the
// bounds of what a worker may post, and of what any other caller of the port can hold (slow headers, connections).
import { connect } from 'node:net';
import { expect } from 'chai';
import { TIMEOUT_CHECK_INTERVAL_MS } from '../../../src/common/http-server.js';
import { type ApiShardInput, SHARD_FORMAT, WINDOW_PATHS } from '../../../src/contract/shard.js';
import { WorkDeadline } from '../../../src/node/deadline.js';
import { silentLogger } from '../../../src/node/logger.js';
import { MAX_WINDOW_CONNECTIONS, WINDOW_REQUEST_TIMEOUT_MS, WindowWorkers } from '../../../src/node/window-workers.js';
import { steppableProcessWallClock } from '../../support/fake-clock.js';
import { waitFor } from '../../support/wait.js';

const shard: ApiShardInput = { format: SHARD_FORMAT, chainId: '31337', requests: [] };

async function started(deadline?: WorkDeadline, options: { leaseMs?: number } = {}) {
  const pool = new WindowWorkers({
    fallback: { run: async (shards) => shards.map(() => ({ ok: false, error: 'fallback' })) },
    logger: silentLogger,
    ...options,
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
  return { pool, url, headers, ask, port: Number(new URL(url).port) };
}

/** A raw connection to the port: what the server wrote, and whether it closed the connection. */
function rawConnection(port: number) {
  const socket = connect(port, '127.0.0.1');
  const seen = { answer: '', closed: false };
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    seen.answer += chunk;
  });
  socket.on('error', () => undefined);
  socket.on('close', () => {
    seen.closed = true;
  });
  const connected = new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return { socket, seen, connected };
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

  it('a task whose worker vanished goes back when its lease runs out, even with the wall clock stepped back', async () => {
    const wall = steppableProcessWallClock();
    const { pool, ask } = await started(undefined, { leaseMs: 500 });
    try {
      const first = ask();
      await waitFor(() => pool.ready, 5_000, 'a worker asks');
      const running = pool.run([shard], { concurrency: 1 });
      expect((await first).status, 'the task handed out').to.equal(200);
      // Its worker never renews nor posts; an NTP step back must not stretch the lease by as much.
      wall.step(-60_000);
      await waitFor(() => pool.tasksPutBack === 1, 5_000, 'the task put back after its 0.5 s lease');
      await pool.stop();
      expect((await running)[0]).to.deep.include({ ok: false });
    } finally {
      wall.restore();
      await pool.stop();
    }
  });

  it('a caller that dribbles its headers, or sends nothing, is cut within the request bound; workers are served meanwhile', async function () {
    this.timeout(60_000);
    const { pool, port } = await started();
    const callers = Array.from({ length: 8 }, () => rawConnection(port));
    await Promise.all(callers.map((caller) => caller.connected));
    const dribblers = callers.slice(1);
    for (const { socket } of dribblers) socket.write(`GET ${WINDOW_PATHS.next} HTTP/1.1\r\nHost: x\r\n`);
    const dribbling = setInterval(() => {
      for (const { socket, seen } of dribblers) if (!seen.closed) socket.write('X-Slow: a\r\n');
    }, 250);
    try {
      // A worker's ask is answered while they hold their connections (401 here: no window credential).
      const answered = await fetch(`http://127.0.0.1:${port}${WINDOW_PATHS.next}`);
      expect(answered.status).to.equal(401);
      // The bound: the request timeout, checked every second (plus a second for a loaded machine), not Node's 30 s.
      await waitFor(
        () => callers.every(({ seen }) => seen.closed),
        WINDOW_REQUEST_TIMEOUT_MS + TIMEOUT_CHECK_INTERVAL_MS + 1_000,
        'every slow caller cut',
      );
      for (const { seen } of callers) expect(seen.answer).to.match(/^HTTP\/1\.1 408 /);
    } finally {
      clearInterval(dribbling);
      for (const { socket } of callers) socket.destroy();
      await pool.stop();
    }
  });

  it('connections beyond the cap are closed as they arrive, and served again once the others go', async () => {
    const { pool, port } = await started();
    const held = Array.from({ length: MAX_WINDOW_CONNECTIONS }, () => rawConnection(port));
    const over = rawConnection(port);
    try {
      await Promise.all(held.map((caller) => caller.connected));
      // A whole request on one connection too many: closed unanswered (accepted in order, after the held ones).
      await over.connected;
      over.socket.write(`GET ${WINDOW_PATHS.next} HTTP/1.1\r\nHost: x\r\n\r\n`);
      await waitFor(() => over.seen.closed, 5_000, 'the connection over the cap closed');
      expect(over.seen.answer).to.equal('');
      expect(held.some(({ seen }) => seen.closed)).to.equal(false);
      for (const { socket } of held) socket.destroy();
      const answered = await waitFor(
        () => fetch(`http://127.0.0.1:${port}${WINDOW_PATHS.next}`).catch(() => undefined),
        5_000,
        'served again',
      );
      expect(answered.status).to.equal(401);
    } finally {
      for (const { socket } of [...held, over]) socket.destroy();
      await pool.stop();
    }
  });
});
