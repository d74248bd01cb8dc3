// The worker's side of a window's workers (docs/chain-cycle.md, "Worker pods that stay for the window"): `oracle-node
// worker --coordinator` asks the coordinator for a task (one shard's API calls), calls the APIs as a per-shard worker
// does, keeps the task alive while it works and posts the results, then asks again, until the coordinator says the
// window is over (410). It holds no key, no provider and no Kubernetes token: only its OIS's API credentials, the
// coordinator's address and the window's credential.
import { errorMessage } from '../common/errors.js';
import { monotonicNow } from '../common/time.js';
import type { Config } from '../config/index.js';
import { MAX_SHARD_INPUT_BYTES, parseWindowTask, WINDOW_PATHS, type WindowTask } from '../contract/shard.js';
import type { Tracer } from '../observability/tracing.js';
import { callShardApis } from './api-call.js';
import type { Logger } from './logger.js';
import { ALIVE_INTERVAL_MS, LONG_POLL_MS } from './window-workers.js';

/** A coordinator not reached for this long is gone (its window ended without telling, or its pod went). */
export const COORDINATOR_GONE_MS = 15_000;
const RETRY_MS = 500;

export type WindowWorkerOptions = {
  coordinatorUrl: string;
  credential: string;
  config: Config;
  tracer?: Tracer;
  logger: Logger;
  /** Where each task's output line goes besides the coordinator (stdout in the CLI). */
  print?: (line: string) => void;
};

/**
 * Serves tasks until the window is over or the coordinator is gone (0), or the coordinator refuses the credential (1).
 * Each task's output is also printed as a line on stdout, as `--shard` prints it: the pod's log shows what it answered.
 */
export async function serveWindowTasks(options: WindowWorkerOptions): Promise<number> {
  const base = options.coordinatorUrl.replace(/\/+$/, '');
  const headers = { authorization: `Bearer ${options.credential}` };
  const callApis = (shard: WindowTask['shard']) =>
    callShardApis(shard, { config: options.config, ...(options.tracer ? { tracer: options.tracer } : {}) });
  let unreachableSince: number | undefined;
  for (;;) {
    let response: Response;
    try {
      response = await fetch(`${base}${WINDOW_PATHS.next}`, {
        headers,
        signal: AbortSignal.timeout(LONG_POLL_MS + 10_000),
      });
    } catch {
      unreachableSince ??= monotonicNow();
      if (monotonicNow() - unreachableSince > COORDINATOR_GONE_MS) {
        // Its window is over without telling (its pod went): nothing is left to do, and a failed pod would only be
        // replaced by another that finds no coordinator either.
        options.logger.warn('the coordinator is not reachable: the worker ends');
        return 0;
      }
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      continue;
    }
    unreachableSince = undefined;
    if (response.status === 410) {
      await response.body?.cancel();
      options.logger.info('the window is over: the worker ends');
      return 0;
    }
    if (response.status !== 200) {
      await response.body?.cancel();
      if (response.status === 401) {
        options.logger.error('the coordinator refused the window credential');
        return 1;
      }
      // 204: no task yet, ask again now; anything else (503: too many waiting) after a pause.
      if (response.status !== 204) await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      continue;
    }
    const text = await boundedText(response, MAX_SHARD_INPUT_BYTES);
    const parsed = text === undefined ? { error: 'over the bound' } : parseWindowTask(text);
    if ('error' in parsed) {
      options.logger.warn({ err: parsed.error }, 'not a task: ignored');
      continue;
    }
    const { task, shard } = parsed.task;
    const alive = setInterval(() => {
      fetch(`${base}${WINDOW_PATHS.alive(task)}`, { method: 'POST', headers, signal: AbortSignal.timeout(5_000) })
        .then((r) => r.body?.cancel())
        .catch(() => undefined);
    }, ALIVE_INTERVAL_MS);
    let body: string;
    try {
      body = JSON.stringify(await callApis(shard));
      options.print?.(body);
    } catch (error) {
      // No output: the task's lease runs out and it goes back once; the coordinator sends nothing for it meanwhile.
      options.logger.error({ err: errorMessage(error) }, 'task failed');
      continue;
    } finally {
      clearInterval(alive);
    }
    try {
      const posted = await fetch(`${base}${WINDOW_PATHS.result(task)}`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body,
        signal: AbortSignal.timeout(10_000),
      });
      await posted.body?.cancel();
      if (posted.status !== 204)
        options.logger.warn({ status: posted.status }, 'the coordinator did not take the result');
    } catch {
      options.logger.warn('the result could not be posted');
    }
  }
}

/** The response's text, or undefined past `limit` bytes. */
async function boundedText(response: Response, limit: number): Promise<string | undefined> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > limit) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
