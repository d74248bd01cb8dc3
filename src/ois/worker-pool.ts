// A bounded pool of worker threads for CPU-heavy work on untrusted input (processing snippets, signer
// recovery), so that the main thread keeps answering HTTP, health probes and metrics while they run.
// - At most `size` tasks run at once; further tasks wait in order. The memory of snippets is bounded
//   process-wide by size x the sandbox's memory limit (each worker runs one QuickJS instance at a time).
// - A task that does not answer within its limit plus a grace period has its worker terminated (an
//   interrupt that cannot fire still cannot hold a thread); a worker that dies is replaced on demand.
// - Workers idle for `idleMs` are terminated, which gives their WebAssembly memory back to the system, except the
//   `warm` ones a server with processing snippets keeps (keepWarm): a new worker compiles and tiers up the sandbox's
//   WebAssembly before it is fast (about a second, and tens of slow calls), which a request should not pay.
// - Busy workers keep the process alive; idle ones do not (a command exits when its work is done).
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { SandboxError, type SandboxOptions } from './sandbox.js';
import type { RecoverableSignature, TaskResult, WorkerTask } from './worker-tasks.js';

export type WorkerPoolSettings = {
  /** Worker threads at most (tasks running at once). */
  size: number;
  /** An idle worker is terminated after this long. */
  idleMs: number;
  /** Extra time after a task's own limit before its worker is terminated. */
  graceMs: number;
  /** V8 heap of each worker (JSON in and out of the sandbox); WebAssembly memory is bounded by the sandbox. */
  heapLimitMb: number;
};

/** Snippet runs per mode with which keepWarm() brings a new worker's sandbox up to speed. */
export const WARM_UP_ROUNDS = 40;

export const DEFAULT_WORKER_POOL_SETTINGS: WorkerPoolSettings = {
  size: Math.max(2, Math.min(4, availableParallelism())),
  idleMs: 10_000,
  graceMs: 2_000,
  heapLimitMb: 128,
};

type Job = {
  id: number;
  task: WorkerTask;
  limitMs: number;
  timeoutMessage: string;
  resolve: (result: TaskResult) => void;
};

type Slot = { worker: Worker; job?: Job; backstop?: NodeJS.Timeout; idleTimer?: NodeJS.Timeout; warm?: boolean };

// tsx maps the .js URL to the .ts source under test; the build has the .js file next to this one.
const WORKER_URL = new URL('./pool-worker.js', import.meta.url);

export class WorkerPool {
  private readonly slots = new Set<Slot>();
  private readonly queue: Job[] = [];
  private nextId = 1;
  /** Workers started so far (for tests and the benchmark). */
  started = 0;
  /** Workers kept alive (and warm) when idle. */
  private warmWorkers = 0;
  private closed = false;

  constructor(readonly settings: WorkerPoolSettings = DEFAULT_WORKER_POOL_SETTINGS) {}

  /** Runs a task; `limitMs` is the task's own time limit (the worker is terminated after it plus graceMs). */
  run(task: WorkerTask, limitMs: number, timeoutMessage = 'Task timed out'): Promise<TaskResult> {
    return new Promise((resolve) => {
      this.queue.push({ id: this.nextId++, task, limitMs, timeoutMessage, resolve });
      this.dispatch();
    });
  }

  /** Workers alive, busy or idle. */
  get size(): number {
    return this.slots.size;
  }

  get pending(): number {
    return this.queue.length;
  }

  /**
   * Keeps `count` workers (at most the pool's size) alive when idle, each warmed up first (the sandbox compiled and
   * hot), so that processing never pays a worker's start. Resolves once they are warm; never rejects.
   */
  async keepWarm(count = this.settings.size): Promise<void> {
    this.warmWorkers = Math.min(count, this.settings.size);
    const warmUps: Promise<TaskResult>[] = [];
    while (this.slots.size < this.warmWorkers) {
      const slot = this.spawn();
      slot.warm = true;
      warmUps.push(
        new Promise((resolve) => {
          this.assign(slot, {
            id: this.nextId++,
            task: { kind: 'warm-up', rounds: WARM_UP_ROUNDS },
            limitMs: 60_000,
            timeoutMessage: 'Warm-up timed out',
            resolve,
          });
        }),
      );
    }
    let warm = 0;
    for (const slot of this.slots) {
      if (warm >= this.warmWorkers) break;
      slot.warm = true;
      warm++;
    }
    await Promise.all(warmUps);
  }

  /** Terminates every worker; queued tasks are answered with an error. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.resolve(failure('Worker pool closed'));
    await Promise.all([...this.slots].map((slot) => this.retire(slot, failure('Worker pool closed'))));
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      // The first idle worker: in back-to-back traffic, the one that has just answered and is still tidying up (the
      // sandbox disposes the last execution and prepares the next, ~0.15 ms). Waking the other, sleeping, worker
      // instead was measured: a lower median but twice the p99 on two shared cores (docs/benchmarks.md, "Near the
      // floor").
      let slot = [...this.slots].find((candidate) => !candidate.job);
      if (!slot) {
        if (this.slots.size >= this.settings.size) return;
        slot = this.spawn();
      }
      this.assign(slot, this.queue.shift()!);
    }
  }

  private spawn(): Slot {
    const worker = new Worker(WORKER_URL, {
      resourceLimits: { maxOldGenerationSizeMb: this.settings.heapLimitMb, maxYoungGenerationSizeMb: 32 },
    });
    this.started++;
    const slot: Slot = { worker };
    this.slots.add(slot);
    worker.on('message', ({ id, result }: { id: number; result: TaskResult }) => {
      if (slot.job?.id !== id) return;
      this.finish(slot, result);
    });
    worker.on('error', (error: Error & { code?: string }) => {
      const message =
        error.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? 'Processing exceeded the memory limit of its worker'
          : 'Processing worker failed';
      void this.retire(slot, failure(message));
    });
    worker.on('exit', () => {
      void this.retire(slot, failure('Processing worker failed'));
    });
    worker.unref();
    return slot;
  }

  private assign(slot: Slot, job: Job): void {
    clearTimeout(slot.idleTimer);
    slot.job = job;
    slot.worker.ref();
    slot.backstop = setTimeout(() => {
      void this.retire(slot, failure(job.timeoutMessage, true));
    }, job.limitMs + this.settings.graceMs);
    slot.worker.postMessage({ id: job.id, task: job.task });
  }

  private finish(slot: Slot, result: TaskResult): void {
    const job = slot.job;
    clearTimeout(slot.backstop);
    slot.job = undefined;
    slot.worker.unref();
    if (!slot.warm) {
      slot.idleTimer = setTimeout(() => void this.retire(slot), this.settings.idleMs);
      slot.idleTimer.unref();
    }
    job?.resolve(result);
    this.dispatch();
  }

  /** Removes a worker for good (answering its task, if any, with `result`) and lets the queue move on. */
  private async retire(slot: Slot, result?: TaskResult): Promise<void> {
    if (!this.slots.delete(slot)) return;
    // A warm worker that died (a snippet that blocked it, out of memory) is replaced by a warm one.
    if (slot.warm && !this.closed) void this.keepWarm(this.warmWorkers);
    clearTimeout(slot.backstop);
    clearTimeout(slot.idleTimer);
    const job = slot.job;
    slot.job = undefined;
    if (job) job.resolve(result ?? failure('Processing worker failed'));
    this.dispatch();
    await slot.worker.terminate();
  }
}

function failure(message: string, sandboxError = false): TaskResult {
  return { ok: false, message, sandboxError };
}

let shared: WorkerPool | undefined;

/** The process-wide pool (created on first use). */
export function workerPool(): WorkerPool {
  shared ??= new WorkerPool();
  return shared;
}

/** Replaces the process-wide pool's settings (before first use, e.g. from a command-line flag or a test). */
export function configureWorkerPool(settings: Partial<WorkerPoolSettings>): WorkerPool {
  const previous = shared;
  shared = new WorkerPool({ ...DEFAULT_WORKER_POOL_SETTINGS, ...settings });
  void previous?.close();
  return shared;
}

/**
 * runInSandbox on a worker thread of the process-wide pool: same options, same result and SandboxError
 * messages, with the snippet's console lines copied into `options.logs`.
 */
export async function runSnippet(options: SandboxOptions): Promise<unknown> {
  const { logs, ...rest } = options;
  const result = await workerPool().run(
    { kind: 'snippet', options: rest, collectLogs: logs !== undefined },
    options.timeoutMs,
    options.timeoutMessage,
  );
  if (result.ok) {
    if (logs && result.logs) logs.push(...result.logs);
    return result.value;
  }
  throw new SandboxError(result.message);
}

/** The signer of each (message hash, signature), or undefined where it does not recover; off the main thread. */
export async function recoverSignersInPool(
  items: { messageHash: string; signature: RecoverableSignature }[],
  limitMs = 30_000,
): Promise<(string | undefined)[]> {
  if (items.length === 0) return [];
  const result = await workerPool().run({ kind: 'recover', items }, limitMs, 'Signature recovery timed out');
  if (!result.ok) throw new Error(result.message);
  return result.value as (string | undefined)[];
}
