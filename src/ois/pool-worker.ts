// The entry of one worker thread of the pool (worker-pool.ts): runs one task at a time and posts its result.
import { parentPort } from 'node:worker_threads';
import { runTask, type TaskResult, type WorkerTask } from './worker-tasks.js';

const port = parentPort;
if (!port) throw new Error('pool-worker.ts runs as a worker thread only');

port.on('message', async ({ id, task }: { id: number; task: WorkerTask }) => {
  const result = await runTask(task);
  try {
    port.postMessage({ id, result });
  } catch {
    // A value the structured clone cannot copy (e.g. nested too deeply) is still an answer, not a lost task.
    const failed: TaskResult = { ok: false, message: 'Processing output cannot be transferred', sandboxError: true };
    port.postMessage({ id, result: failed });
  }
});
