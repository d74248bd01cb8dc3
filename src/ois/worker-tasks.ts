// What the worker threads of the pool (worker-pool.ts) run, as plain functions: processing snippets in the
// QuickJS sandbox, and signer recovery for signed data. Both can take seconds of CPU on hostile input, so
// they never run on the thread that answers HTTP, health probes and metrics.
import { getBytes, hashMessage, recoverAddress } from 'ethers';
import { runInSandbox, SandboxError, type SandboxOptions } from './sandbox.js';

export type SnippetTask = { kind: 'snippet'; options: Omit<SandboxOptions, 'logs'>; collectLogs: boolean };
/** EIP-191 signer of a 32-byte message hash; the signature is r, s and a normalised v (27/28). */
export type RecoverTask = { kind: 'recover'; items: { messageHash: string; signature: RecoverableSignature }[] };
export type RecoverableSignature = string | { r: string; s: string; v: number };
export type WorkerTask = SnippetTask | RecoverTask;

export type TaskResult =
  | { ok: true; value: unknown; logs?: string[] }
  | { ok: false; message: string; sandboxError: boolean };

/** The signer address of each item, or undefined where the signature does not recover. */
export function recoverSigners(task: RecoverTask): (string | undefined)[] {
  return task.items.map(({ messageHash, signature }) => {
    try {
      return recoverAddress(hashMessage(getBytes(messageHash)), signature);
    } catch {
      return undefined;
    }
  });
}

export async function runTask(task: WorkerTask): Promise<TaskResult> {
  if (task.kind === 'recover') return { ok: true, value: recoverSigners(task) };
  const logs: string[] | undefined = task.collectLogs ? [] : undefined;
  try {
    const value = await runInSandbox({ ...task.options, logs });
    return { ok: true, value, ...(logs ? { logs } : {}) };
  } catch (error) {
    return {
      ok: false,
      message: error instanceof Error ? error.message : String(error),
      sandboxError: error instanceof SandboxError,
    };
  }
}
