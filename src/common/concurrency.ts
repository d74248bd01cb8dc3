// Bounded concurrency without a library: the engine's fan-outs (shards, API calls, transaction plans) use it; and the
// one sleep that a stop (an AbortSignal) cuts short.

/** `fn` over `items` with at most `limit` running at a time; results in the items' order. */
export async function mapLimit<T, R>(
  items: T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return results;
}

/**
 * Each task's outcome, waiting for all of them but no longer than `graceMs` after the first one fulfilled: a task
 * still running then is `undefined` (it goes on; its outcome is not waited for). One that hangs does not hold back
 * the others once one answered.
 */
export function settleWithGrace<T>(
  tasks: Promise<T>[],
  graceMs: number,
): Promise<(PromiseSettledResult<T> | undefined)[]> {
  const outcomes = new Array<PromiseSettledResult<T> | undefined>(tasks.length).fill(undefined);
  if (tasks.length === 0) return Promise.resolve(outcomes);
  return new Promise((resolve) => {
    let pending = tasks.length;
    let timer: NodeJS.Timeout | undefined;
    const finish = () => {
      if (timer) clearTimeout(timer);
      resolve([...outcomes]);
    };
    tasks.forEach((task, index) => {
      task.then(
        (value) => {
          outcomes[index] = { status: 'fulfilled', value };
          if (--pending === 0) finish();
          else timer ??= setTimeout(finish, graceMs);
        },
        (reason: unknown) => {
          outcomes[index] = { status: 'rejected', reason };
          if (--pending === 0) finish();
        },
      );
    });
  });
}

/** Resolves after `ms`, or as soon as `signal` aborts (at once when it already has); never rejects. */
export function sleepUnlessAborted(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
