// The coordinator's side of a window's workers (docs/chain-cycle.md, "Worker pods that stay for the window"): an HTTP
// server on the pod network from which workers that stay for the window (`oracle-node worker --coordinator`) fetch
// the shards' API calls and to which they post the results, so no pod starts inside a request's time. It is the
// coordinator's ApiWorkers: while no worker of the window is there (the window's first seconds, or they are gone),
// each run goes to `fallback` (the per-poll worker Jobs) as before. Every call carries the window's random
// credential; every body is bounded and parsed by the contract; a result is taken only for the task id its poster
// was given (src/node/window-tasks.ts), and only for that task's requests.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorMessage } from '../common/errors.js';
import { createBoundedServer } from '../common/http-server.js';
import { monotonicNow } from '../common/time.js';
import {
  type ApiShardInput,
  MAX_SHARD_OUTPUT_BYTES,
  parseShardOutputBody,
  TASK_ID_PATTERN,
  WINDOW_PATHS,
} from '../contract/shard.js';
import { registerSecret } from '../observability/index.js';
import type { WorkDeadline } from './deadline.js';
import type { ApiShardResult, ApiWorkers } from './executor.js';
import type { Logger } from './logger.js';
import { WindowTaskQueue } from './window-tasks.js';

/** How long a worker's GET for work is held before it is told to ask again (204). */
export const LONG_POLL_MS = 20_000;
/** How often a worker keeps its task alive; its lease is a few of these. */
export const ALIVE_INTERVAL_MS = 1_000;
export const TASK_LEASE_MS = 5_000;
/** A worker asks again at once after each answer, so one not heard of for this long is gone. */
export const WORKER_GONE_MS = 5_000;
/**
 * How long any caller of the window's port may take to send a whole request (headers and body), cut within a second
 * after: a worker gives its own posts 10 s (window-worker.ts), so no worker's request takes longer.
 */
export const WINDOW_REQUEST_TIMEOUT_MS = 10_000;
/**
 * Connections open at once on the window's port; more are closed as they arrive. The window's workers (at most
 * MAX_WINDOW_WORKERS pods, each with a long poll or a result post and a task's keep-alive) use a few each: the cap
 * only bounds what anything else that reaches the port can hold in the coordinator's memory.
 */
export const MAX_WINDOW_CONNECTIONS = 64;
const SWEEP_MS = 250;
/** At most this many workers wait at once (a window has at most maxConcurrency pods); more asks are refused (503). */
const MAX_WAITERS = 256;

export type WindowWorkersOptions = {
  /** Where runs go while no worker of the window is there (and before the window starts). */
  fallback: ApiWorkers;
  logger: Logger;
  leaseMs?: number;
  workerGoneMs?: number;
  longPollMs?: number;
  now?: () => number;
};

export type WindowStart = {
  /** The address to listen on (the pod IP in a pod; loopback in tests) and port (0: any). */
  host: string;
  port: number;
  /** The window's hard end and SIGTERM: no task is handed out after it. */
  deadline?: WorkDeadline;
  /** Starts the window's workers (the worker Job) once the server listens, given where and how to reach it. */
  launch?: (coordinatorUrl: string, credential: string) => Promise<void>;
};

type Waiter = { response: ServerResponse; timer: ReturnType<typeof setTimeout> };

export class WindowWorkers implements ApiWorkers {
  private readonly queue: WindowTaskQueue;
  private readonly now: () => number;
  private server: Server | undefined;
  private credential: Buffer | undefined;
  private deadline: WorkDeadline | undefined;
  private sweeper: ReturnType<typeof setInterval> | undefined;
  private closed = false;
  private readonly waiters: Waiter[] = [];
  /** Runs that went to the fallback and to the window's workers (for the summary and tests). */
  readonly runs = { fallback: 0, window: 0 };
  /** Results refused: for a task id not given to the poster (or no longer its). */
  refusedResults = 0;

  constructor(private readonly options: WindowWorkersOptions) {
    // Task leases and a worker's last sign of life are durations: the monotonic clock.
    this.now = options.now ?? monotonicNow;
    this.queue = new WindowTaskQueue({
      leaseMs: options.leaseMs ?? TASK_LEASE_MS,
      workerGoneMs: options.workerGoneMs ?? WORKER_GONE_MS,
      newTaskId: () => randomBytes(16).toString('hex'),
    });
  }

  /** Whether runs go to the window's workers now (one of them asked for work lately). */
  get ready(): boolean {
    return this.server !== undefined && !this.closed && this.queue.ready(this.now());
  }

  /** Tasks put back after their worker vanished. */
  get tasksPutBack(): number {
    return this.queue.putBackCount;
  }

  /** Workers waiting for a task now. */
  get waitingWorkers(): number {
    return this.waiters.length;
  }

  /** Listens, then launches the workers; returns the URL they reach it at. */
  async start(window: WindowStart): Promise<string> {
    const credential = randomBytes(32).toString('base64url');
    // Never in a log line or an error (an API error about the Job could quote its environment).
    registerSecret(credential);
    this.credential = Buffer.from(credential);
    this.deadline = window.deadline;
    const server = createBoundedServer(
      {
        headersTimeoutMs: WINDOW_REQUEST_TIMEOUT_MS,
        requestTimeoutMs: WINDOW_REQUEST_TIMEOUT_MS,
        maxConnections: MAX_WINDOW_CONNECTIONS,
      },
      (request, response) => this.handle(request, response),
    );
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(window.port, window.host, () => resolve());
    });
    this.server = server;
    this.sweeper = setInterval(() => this.sweep(), SWEEP_MS);
    this.sweeper.unref();
    window.deadline?.signal.addEventListener('abort', () => void this.endWaits(), { once: true });
    const { port } = server.address() as AddressInfo;
    const host = window.host.includes(':') ? `[${window.host}]` : window.host;
    const url = `http://${host}:${port}`;
    if (window.launch) {
      try {
        await window.launch(url, credential);
      } catch (error) {
        // No workers for the window: every run goes to the fallback, as without them.
        this.options.logger.warn(
          { err: errorMessage(error) },
          "the window's workers did not start; each poll starts its own",
        );
      }
    }
    return url;
  }

  /** The window is over: tasks not done fail, waiting workers are told to exit (410), the server closes. */
  async stop(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.sweeper) clearInterval(this.sweeper);
    this.queue.cancel("the window's workers stopped");
    const server = this.server;
    if (!server) return;
    // New asks are answered 410 too (handingOutEnded); those waiting are answered before the connections close.
    await Promise.race([this.endWaits(), new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
      // A worker still posting is not waited for: the window is over.
      setTimeout(() => server.closeAllConnections(), 1_000).unref();
    });
  }

  async run(
    shards: ApiShardInput[],
    options: { concurrency: number; deadline?: WorkDeadline },
  ): Promise<ApiShardResult[]> {
    if (shards.length === 0) return [];
    if (!this.ready) {
      this.runs.fallback++;
      return this.options.fallback.run(shards, options);
    }
    const { deadline } = options;
    if (deadline?.stopped) return shards.map(() => ({ ok: false, error: `no task handed out: ${deadline.reason}` }));
    this.runs.window++;
    const results = this.queue.add(shards, options.concurrency);
    this.pump();
    // At the run's deadline its tasks not done fail: nothing is sent for them, their requests stay open.
    const cancel = () => this.queue.cancel(`no result before ${deadline?.reason}`, new Set(shards));
    deadline?.signal.addEventListener('abort', cancel, { once: true });
    try {
      return await Promise.all(results);
    } finally {
      deadline?.signal.removeEventListener('abort', cancel);
    }
  }

  private sweep(): void {
    // A worker waiting for work is there.
    if (this.waiters.length > 0) this.queue.workerSeen(this.now());
    if (this.queue.sweep(this.now())) this.pump();
  }

  /** Hands queued tasks to waiting workers while both are there. */
  private pump(): void {
    while (this.waiters.length > 0 && !this.handingOutEnded()) {
      const next = this.queue.take(this.now());
      if (!next) return;
      const waiter = this.waiters.shift()!;
      clearTimeout(waiter.timer);
      send(waiter.response, 200, JSON.stringify(next));
    }
  }

  private handingOutEnded(): boolean {
    return this.closed || this.deadline?.stopped === true;
  }

  /** Tells every waiting worker the window is over (410); resolves once those answers are written. */
  private endWaits(): Promise<void> {
    const written = this.waiters.splice(0).map((waiter) => {
      clearTimeout(waiter.timer);
      return new Promise<void>((resolve) => {
        waiter.response.once('close', resolve);
        send(waiter.response, 410, undefined, { connection: 'close' });
      });
    });
    return Promise.all(written).then(() => undefined);
  }

  private authorized(request: IncomingMessage): boolean {
    const header = request.headers.authorization ?? '';
    const given = Buffer.from(header.startsWith('Bearer ') ? header.slice(7) : '');
    return (
      this.credential !== undefined &&
      given.length === this.credential.length &&
      timingSafeEqual(given, this.credential)
    );
  }

  private handle(request: IncomingMessage, response: ServerResponse): void {
    if (!this.authorized(request)) {
      request.resume();
      send(response, 401);
      return;
    }
    const path = (request.url ?? '').split('?')[0]!;
    if (request.method === 'GET' && path === WINDOW_PATHS.next) {
      this.next(response);
      return;
    }
    const match = /^\/v1\/tasks\/([^/]+)\/(alive|result)$/.exec(path);
    const task = match?.[1];
    if (request.method !== 'POST' || !match || !task || !TASK_ID_PATTERN.test(task)) {
      request.resume();
      send(response, 404);
      return;
    }
    if (match[2] === 'alive') {
      request.resume();
      send(response, this.queue.renew(task, this.now()) ? 204 : 404);
      return;
    }
    void readBounded(request, MAX_SHARD_OUTPUT_BYTES).then((body) => {
      if (body === undefined) return send(response, 413);
      const output = parseShardOutputBody(body);
      if (!output) return send(response, 400);
      if (this.queue.complete(task, output, this.now())) return send(response, 204);
      this.refusedResults++;
      this.options.logger.warn({ task: task.slice(0, 8) }, 'a result for a task not given to its poster was ignored');
      send(response, 404);
    });
  }

  private next(response: ServerResponse): void {
    if (this.handingOutEnded()) {
      send(response, 410, undefined, { connection: 'close' });
      return;
    }
    if (this.waiters.length >= MAX_WAITERS) {
      send(response, 503);
      return;
    }
    if (!this.queue.ready(this.now()))
      this.options.logger.info("a worker of the window asks for work: the polls' API calls go to the window's workers");
    this.queue.workerSeen(this.now());
    const waiter: Waiter = {
      response,
      timer: setTimeout(() => {
        const at = this.waiters.indexOf(waiter);
        if (at >= 0) this.waiters.splice(at, 1);
        send(response, 204);
      }, this.options.longPollMs ?? LONG_POLL_MS),
    };
    response.once('close', () => {
      const at = this.waiters.indexOf(waiter);
      if (at >= 0) {
        this.waiters.splice(at, 1);
        clearTimeout(waiter.timer);
      }
    });
    this.waiters.push(waiter);
    this.pump();
  }
}

function send(response: ServerResponse, status: number, body?: string, headers: Record<string, string> = {}): void {
  if (response.headersSent || response.destroyed) return;
  response.writeHead(status, { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) });
  response.end(body);
}

/** The request's body, or undefined past `limit` bytes (the rest is not read). */
function readBounded(request: IncomingMessage, limit: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        request.destroy();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', () => resolve(undefined));
  });
}
