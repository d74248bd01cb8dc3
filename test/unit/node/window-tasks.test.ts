// The window's task queue (src/node/window-tasks.ts): dispatch in order within a run's concurrency, results only for
// the requests of the task given to the poster, a vanished worker's task put back once, and no worker left.
import { expect } from 'chai';
import { type ApiShardInput, type ApiShardOutput, SHARD_FORMAT } from '../../../src/contract/shard.js';
import type { ApiShardResult } from '../../../src/node/executor.js';
import { WindowTaskQueue } from '../../../src/node/window-tasks.js';

const id = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;
const address = `0x${'1'.repeat(40)}`;

function shard(...ids: number[]): ApiShardInput {
  return {
    format: SHARD_FORMAT,
    chainId: '31337',
    requests: ids.map((n) => ({
      id: id(n),
      endpointId: id(1000),
      oisTitle: 'ois',
      endpointName: 'price',
      parameters: {},
      requester: address,
      sponsor: address,
      sponsorWallet: address,
    })),
  };
}

function output(...ids: number[]): ApiShardOutput {
  return {
    format: SHARD_FORMAT,
    apiMs: 1,
    results: ids.map((n) => ({
      id: id(n),
      result: { success: true, encodedValue: '0x01' },
      api: { outcome: '2xx', durationMs: 1 },
    })),
  };
}

function queue(options: { leaseMs?: number; workerGoneMs?: number } = {}) {
  let next = 0;
  return new WindowTaskQueue({
    leaseMs: options.leaseMs ?? 5_000,
    workerGoneMs: options.workerGoneMs ?? 5_000,
    newTaskId: () => (next++).toString(16).padStart(32, '0'),
  });
}

/** Which of the promises have settled, and with what. */
async function settled(promises: Promise<ApiShardResult>[]): Promise<(ApiShardResult | undefined)[]> {
  const pending = Symbol('pending');
  const values = await Promise.all(promises.map((p) => Promise.race([p, Promise.resolve(pending)])));
  return values.map((v) => (v === pending ? undefined : (v as ApiShardResult)));
}

describe('WindowTaskQueue', () => {
  it('is ready only while a worker asked for work within workerGoneMs', () => {
    const q = queue({ workerGoneMs: 1_000 });
    expect(q.ready(0)).to.equal(false);
    expect(q.take(10)).to.equal(undefined);
    expect(q.ready(500)).to.equal(true);
    expect(q.ready(1_010)).to.equal(false);
  });

  it("hands out a run's tasks in order, at most its concurrency at a time", async () => {
    const q = queue();
    const shards = [shard(1), shard(2), shard(3)];
    const results = q.add(shards, 2);
    const first = q.take(0)!;
    const second = q.take(0)!;
    expect([first.shard, second.shard]).to.deep.equal([shards[0], shards[1]]);
    expect(q.take(0), 'the run has 2 in flight').to.equal(undefined);
    expect(q.complete(first.task, output(1), 1)).to.equal(true);
    const third = q.take(1)!;
    expect(third.shard).to.equal(shards[2]);
    expect(new Set([first.task, second.task, third.task]).size, 'a fresh id per dispatch').to.equal(3);
    q.complete(second.task, output(2), 2);
    q.complete(third.task, output(3), 2);
    expect((await Promise.all(results)).map((r) => r.ok)).to.deep.equal([true, true, true]);
  });

  it("keeps each run's own concurrency: two runs (two chains) at once", () => {
    const q = queue();
    q.add([shard(1), shard(2)], 1);
    q.add([shard(3)], 1);
    expect(q.take(0)!.shard.requests[0]!.id).to.equal(id(1));
    expect(q.take(0)!.shard.requests[0]!.id).to.equal(id(3));
    expect(q.take(0)).to.equal(undefined);
  });

  it('takes only the results of the requests the task carried, the first of each', async () => {
    const q = queue();
    const [result] = q.add([shard(1, 2)], 1);
    const { task } = q.take(0)!;
    const posted = output(2, 1, 99);
    posted.results.push({ id: id(1), result: { success: false, errorMessage: 'later' }, api: posted.results[0]!.api });
    expect(q.complete(task, posted, 1)).to.equal(true);
    const value = await result!;
    expect(value.ok).to.equal(true);
    if (!value.ok) return;
    expect(value.output.results.map((r) => r.id)).to.deep.equal([id(2), id(1)]);
    expect(value.output.results[1]!.result).to.deep.equal({ success: true, encodedValue: '0x01' });
  });

  it('refuses a result for a task id never given, or already answered', async () => {
    const q = queue();
    const [result] = q.add([shard(1)], 1);
    const { task } = q.take(0)!;
    expect(q.complete('f'.repeat(32), output(1), 1)).to.equal(false);
    expect((await settled([result!]))[0], 'still waiting for its worker').to.equal(undefined);
    expect(q.complete(task, output(1), 1)).to.equal(true);
    expect(q.complete(task, output(1), 2)).to.equal(false);
    expect(q.renew(task, 2)).to.equal(false);
  });

  it("puts a vanished worker's task back once, under a new id; the old id is refused; the second time it fails", async () => {
    const q = queue({ leaseMs: 1_000, workerGoneMs: 60_000 });
    const [result] = q.add([shard(1)], 1);
    const first = q.take(0)!;
    expect(q.renew(first.task, 900)).to.equal(true);
    expect(q.sweep(1_800), 'kept alive').to.equal(false);
    expect(q.sweep(1_900), 'lease ran out').to.equal(true);
    expect((await settled([result!]))[0]).to.equal(undefined);
    const second = q.take(2_000)!;
    expect(second.task).to.not.equal(first.task);
    expect(q.complete(first.task, output(1), 2_001), 'the vanished dispatch no longer answers').to.equal(false);
    q.sweep(3_000);
    expect(await result!).to.deep.equal({ ok: false, error: "the window's worker vanished twice with this task" });
    expect(q.size).to.equal(0);
  });

  it('a put-back task frees its place in the run for the next one', () => {
    const q = queue({ leaseMs: 1_000, workerGoneMs: 60_000 });
    q.add([shard(1), shard(2)], 1);
    q.take(0);
    q.sweep(1_000);
    expect(q.take(1_000)!.shard.requests[0]!.id, 'the put-back task keeps its place').to.equal(id(1));
  });

  it('fails queued tasks once no worker is left; dispatched ones wait for their lease', async () => {
    const q = queue({ leaseMs: 10_000, workerGoneMs: 1_000 });
    const results = q.add([shard(1), shard(2)], 1);
    const { task } = q.take(0)!;
    q.sweep(500);
    expect(await settled(results)).to.deep.equal([undefined, undefined]);
    q.sweep(1_000);
    expect(await settled(results)).to.deep.equal([undefined, { ok: false, error: 'no worker of the window is left' }]);
    expect(q.complete(task, output(1), 1_100)).to.equal(true);
    expect((await results[0]!).ok).to.equal(true);
  });

  it("cancels a run's unsettled tasks (its deadline) and leaves the others", async () => {
    const q = queue();
    const mine = [shard(1), shard(2)];
    const results = q.add(mine, 2);
    const [other] = q.add([shard(3)], 1);
    const { task } = q.take(0)!;
    q.cancel('no result before SIGTERM', new Set(mine));
    expect(await Promise.all(results)).to.deep.equal([
      { ok: false, error: 'no result before SIGTERM' },
      { ok: false, error: 'no result before SIGTERM' },
    ]);
    expect(q.renew(task, 1)).to.equal(false);
    expect((await settled([other!]))[0]).to.equal(undefined);
    expect(q.take(1)!.shard.requests[0]!.id).to.equal(id(3));
  });
});
