// What the worker threads of the pool (worker-pool.ts) run, as plain functions: processing snippets in the
// QuickJS sandbox, and signer recovery for signed data. Both can take seconds of CPU on hostile input, so
// they never run on the thread that answers HTTP, health probes and metrics.
import { getBytes, hashMessage, recoverAddress } from 'ethers';
import { runInSandbox, SandboxError, type SandboxOptions } from './sandbox.js';

export type SnippetTask = { kind: 'snippet'; options: Omit<SandboxOptions, 'logs'>; collectLogs: boolean };
/** EIP-191 signer of a 32-byte message hash; the signature is r, s and a normalised v (27/28). */
export type RecoverTask = { kind: 'recover'; items: { messageHash: string; signature: RecoverableSignature }[] };
export type RecoverableSignature = string | { r: string; s: string; v: number };
/** Runs a small snippet in each mode `rounds` times, so that the sandbox's WebAssembly is compiled and hot. */
export type WarmUpTask = { kind: 'warm-up'; rounds: number };
export type WorkerTask = SnippetTask | RecoverTask | WarmUpTask;

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

const WARM_UP_SNIPPETS: { code: string; mode: SandboxOptions['mode'] }[] = [
  {
    code: '({ response }) => ({ response: { ...response, value: Math.round(response.value * 100) / 100 } })',
    mode: 'function',
  },
  { code: 'const output = { value: input.value * 2, list: [1, 2, 3].map((x) => x + 1) };', mode: 'sync' },
  { code: 'setTimeout(() => resolve(input), 0);', mode: 'callback' },
];

async function warmUp(rounds: number): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    for (const { code, mode } of WARM_UP_SNIPPETS) {
      const value = { value: round + 0.123 };
      await runInSandbox({
        code,
        mode,
        globals: { input: value, payload: { response: value } },
        timeoutMs: 5_000,
        timeoutMessage: 'Warm-up timed out',
      });
    }
  }
}

export async function runTask(task: WorkerTask): Promise<TaskResult> {
  if (task.kind === 'recover') return { ok: true, value: recoverSigners(task) };
  if (task.kind === 'warm-up') {
    try {
      await warmUp(task.rounds);
      return { ok: true, value: undefined };
    } catch (error) {
      return { ok: false, message: error instanceof Error ? error.message : String(error), sandboxError: true };
    }
  }
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
