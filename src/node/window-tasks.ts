// The queue of a coordinator window's API tasks (docs/chain-cycle.md, "Worker pods that stay for the window"), pure:
// no clock, no I/O, no randomness of its own. A task is one shard's API calls; a worker takes it with a fresh
// task id (the capability to answer that task and no other), keeps it alive while it works, and posts its results.
// Only the results of the requests that task carried are taken. Each run's tasks are dispatched at most
// `concurrency` at a time (the chain's maxConcurrency). A task whose worker vanished (its lease ran out) goes back to
// the queue once; the second time, or when no worker is left, it fails: nothing is sent for it and the next poll
// plans its requests again, as after a worker Job that died.
import { type ApiShardInput, type ApiShardOutput, resultsFor } from '../contract/shard.js';
import type { ApiShardResult } from './executor.js';

export type WindowTaskQueueOptions = {
  /** A dispatched task whose worker neither posted nor kept it alive for this long: its worker vanished. */
  leaseMs: number;
  /** A queued task fails when no worker has asked for work for this long (all of them gone). */
  workerGoneMs: number;
  /** A fresh unguessable task id for each dispatch. */
  newTaskId: () => string;
};

type Group = { concurrency: number; inFlight: number };

type Task = {
  shard: ApiShardInput;
  group: Group;
  /** The id of its current dispatch; undefined while queued. */
  dispatched: string | undefined;
  leaseUntil: number;
  putBack: boolean;
  resolve: (result: ApiShardResult) => void;
};

export type TakeResult = { task: string; shard: ApiShardInput };

export class WindowTaskQueue {
  /** Tasks not yet settled, in the order they were added (a task put back keeps its place). */
  private readonly tasks: Task[] = [];
  private readonly byId = new Map<string, Task>();
  private lastWorkerAt = Number.NEGATIVE_INFINITY;
  /** Tasks put back after their worker vanished. */
  putBackCount = 0;

  constructor(private readonly options: WindowTaskQueueOptions) {}

  /** Whether a worker asked for work within `workerGoneMs` (the window's workers are there). */
  ready(now: number): boolean {
    return now - this.lastWorkerAt < this.options.workerGoneMs;
  }

  /** A worker is there (it asks for work, waits for it, or keeps its task alive). */
  workerSeen(now: number): void {
    this.lastWorkerAt = Math.max(this.lastWorkerAt, now);
  }

  /** One run's shards, each settled once: its worker's results (only for its requests), or why there are none. */
  add(shards: ApiShardInput[], concurrency: number): Promise<ApiShardResult>[] {
    const group: Group = { concurrency: Math.max(1, Math.floor(concurrency)), inFlight: 0 };
    return shards.map(
      (shard) =>
        new Promise<ApiShardResult>((resolve) => {
          this.tasks.push({ shard, group, dispatched: undefined, leaseUntil: 0, putBack: false, resolve });
        }),
    );
  }

  /** The first queued task whose run has room, dispatched under a fresh id; undefined when none. */
  take(now: number): TakeResult | undefined {
    this.workerSeen(now);
    const task = this.tasks.find((t) => t.dispatched === undefined && t.group.inFlight < t.group.concurrency);
    if (!task) return undefined;
    const id = this.options.newTaskId();
    task.dispatched = id;
    task.leaseUntil = now + this.options.leaseMs;
    task.group.inFlight++;
    this.byId.set(id, task);
    return { task: id, shard: task.shard };
  }

  /** The worker of task `id` still works on it: false when the task is no longer its (settled, or put back). */
  renew(id: string, now: number): boolean {
    const task = this.byId.get(id);
    if (!task) return false;
    this.workerSeen(now);
    task.leaseUntil = now + this.options.leaseMs;
    return true;
  }

  /**
   * The results posted for task `id`: taken (only those of the requests it carried, the first of each) when `id` is
   * the task's current dispatch; false otherwise (an id never given, settled, or put back since).
   */
  complete(id: string, output: ApiShardOutput, now: number): boolean {
    const task = this.byId.get(id);
    if (!task) return false;
    this.workerSeen(now);
    const results = [...resultsFor(task.shard, output).values()];
    this.settle(task, { ok: true, output: { ...output, results } });
    return true;
  }

  /**
   * What time does: a dispatched task whose lease ran out goes back to the queue once, then fails; queued tasks
   * fail once no worker has been seen for `workerGoneMs`. Returns whether a task went back (a waiting worker may
   * take it).
   */
  sweep(now: number): boolean {
    let requeued = false;
    for (const task of [...this.tasks]) {
      if (task.dispatched !== undefined && now >= task.leaseUntil) {
        if (task.putBack) {
          this.settle(task, { ok: false, error: "the window's worker vanished twice with this task" });
          continue;
        }
        this.byId.delete(task.dispatched);
        task.dispatched = undefined;
        task.group.inFlight--;
        task.putBack = true;
        this.putBackCount++;
        requeued = true;
      }
    }
    if (!this.ready(now))
      for (const task of [...this.tasks])
        if (task.dispatched === undefined) this.settle(task, { ok: false, error: 'no worker of the window is left' });
    return requeued;
  }

  /** Fails every unsettled task whose shard is in `only` (a run's deadline), or all of them (the window is over). */
  cancel(reason: string, only?: ReadonlySet<ApiShardInput>): void {
    for (const task of [...this.tasks])
      if (!only || only.has(task.shard)) this.settle(task, { ok: false, error: reason });
  }

  /** Tasks queued or dispatched. */
  get size(): number {
    return this.tasks.length;
  }

  private settle(task: Task, result: ApiShardResult): void {
    const at = this.tasks.indexOf(task);
    if (at < 0) return;
    this.tasks.splice(at, 1);
    if (task.dispatched !== undefined) {
      this.byId.delete(task.dispatched);
      task.group.inFlight--;
    }
    task.resolve(result);
  }
}
