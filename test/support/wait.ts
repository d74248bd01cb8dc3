// Waiting in tests, once for every tier: poll a condition until it holds, and describe what went wrong on the way
// (an API error with its status and body). The timeout only bounds the wait; tests assert on states, never on
// how long something took.
import { ApiException } from '@kubernetes/client-node';

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** An error as a line for a test failure: a Kubernetes API error with its status and the start of its body. */
export function describeError(err: unknown): string {
  if (err instanceof ApiException) {
    const body = typeof err.body === 'string' ? err.body : JSON.stringify(err.body);
    return `HTTP ${err.code}: ${body?.slice(0, 500)}`;
  }
  return err instanceof Error ? err.message : String(err);
}

export interface WaitOptions {
  /** Poll interval in ms (default 250). */
  intervalMs?: number;
  /** Included in the timeout error; a function is asked at the timeout (a process's output as it is then). */
  description?: string | (() => string);
}

/**
 * Polls `condition` until it returns a value other than undefined/null/false and returns that value. Errors thrown
 * by `condition` count as "not yet" (the last one is reported on timeout). `options` may be just the description.
 */
export async function waitFor<T>(
  condition: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs: number,
  options: WaitOptions | string = {},
): Promise<T> {
  const { intervalMs = 250, description = 'condition' } =
    typeof options === 'string' ? { description: options } : options;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await condition();
      if (value !== undefined && value !== null && value !== false) return value;
      last = value;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const detail = lastError ? `last error: ${describeError(lastError)}` : `last value: ${String(last)}`;
      const described = typeof description === 'function' ? description() : description;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${described} (${detail})`);
    }
    await sleep(intervalMs);
  }
}
