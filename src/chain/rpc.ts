// A small JSON-RPC client: every call is bounded by a timeout and retried with a jittered back-off, and
// every answer is checked for shape, so a dead, slow or lying provider only ever produces an error here.
// Plain fetch (no ethers provider) keeps the number of RPC calls exact and free of hidden polling.

export type RpcOptions = {
  /** Per-attempt timeout. */
  timeoutMs?: number;
  /** Total attempts (1 = no retry). */
  attempts?: number;
  /** Back-off before a retry: uniformly random in [min, max]. */
  backoffMs?: { min: number; max: number };
  /**
   * Why the caller's work has stopped (undefined while it goes on), asked when the call leaves for the provider: a
   * call still queued then is not sent (RpcCallStopped), however long the provider kept it waiting.
   */
  stopReason?: () => string | undefined;
};

/** A call that was never sent: the caller's work stopped while it waited for the provider (RpcOptions.stopReason). */
export class RpcCallStopped extends Error {
  constructor(readonly reason: string) {
    super(`not sent: ${reason}`);
    this.name = 'RpcCallStopped';
  }
}

export class RpcError extends Error {
  constructor(
    message: string,
    readonly code?: number,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

/** A transport-level problem (no answer, timeout, not JSON-RPC): worth trying another provider. */
export class RpcTransportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RpcTransportError';
  }
}

/** An answer over MAX_ANSWER_BYTES: abandoned unread, the provider counts as failed for the call. */
export class RpcAnswerTooLarge extends RpcTransportError {
  constructor(limit: number) {
    super(`provider answer larger than ${limit} bytes`);
    this.name = 'RpcAnswerTooLarge';
  }
}

/**
 * The provider refused a JSON-RPC batch as a batch (batchRefusal): none of its calls was carried out. Remembered for
 * the provider, whose later batches are refused here without a call (RpcClient.takesBatches).
 */
export class RpcBatchRefused extends RpcError {
  constructor(message: string, code?: number) {
    super(message, code);
    this.name = 'RpcBatchRefused';
  }
}

/** An HTTP answer that is not JSON, with its status: what a proxy or a gateway in front of the provider says. */
export class RpcHttpError extends RpcTransportError {
  constructor(readonly status: number) {
    super(`provider returned non-JSON (HTTP ${status})`);
    this.name = 'RpcHttpError';
  }
}

/** "Invalid Request": what a provider that takes no batches answers for each call of one. */
const INVALID_REQUEST = -32600;
const MENTIONS_BATCH = /\bbatch/i;
/**
 * HTTP statuses of a refused request that say nothing about its shape: credentials, a timeout, a rate limit. Any other
 * 4xx to a batch (400, 405, 413 Payload Too Large, 422, ...) refuses the batch, which was not carried out.
 */
const NOT_ABOUT_THE_BATCH = new Set([401, 403, 407, 408, 429]);

type ErrorObject = { code?: number; message?: string };
const errorOf = (entry: unknown): ErrorObject | undefined => {
  if (typeof entry !== 'object' || entry === null || !('error' in entry)) return undefined;
  const { error } = entry as { error?: unknown };
  return typeof error === 'object' && error !== null ? (error as ErrorObject) : { message: String(error) };
};

/**
 * Why a provider refused a JSON-RPC batch as a batch, or undefined when it took it (its entries then answer each call).
 * Providers refuse in several shapes, and none of them carries out any call of the batch: one error object for the
 * whole batch; an array with one error and none of the batch's ids (`id: null`); every call answered with
 * -32600 Invalid Request (the calls are well formed: it is their being in a batch that is refused), or with an error
 * that names batches ("batch requests are not supported"). An HTTP 4xx to a batch is the fourth shape (batchRefusalOf).
 */
export function batchRefusal(answer: unknown, ids: readonly unknown[]): ErrorObject | undefined {
  if (!Array.isArray(answer)) return errorOf(answer);
  const ours = new Set(ids);
  const answered = answer.filter((entry) => ours.has((entry as { id?: unknown } | null)?.id));
  if (answered.length === 0) return answer.map(errorOf).find((error) => error !== undefined);
  if (answered.length < ids.length) return undefined;
  const errors = answered.map(errorOf);
  const refusesBatches = (error: ErrorObject | undefined) =>
    error !== undefined && (error.code === INVALID_REQUEST || MENTIONS_BATCH.test(error.message ?? ''));
  return errors.every(refusesBatches) ? errors[0] : undefined;
}

/** An error thrown by a batch's transport that refuses the batch as such (an HTTP 4xx about it), else undefined. */
function batchRefusalOf(error: unknown): ErrorObject | undefined {
  if (!(error instanceof RpcHttpError) || error.status < 400 || error.status > 499) return undefined;
  return NOT_ABOUT_THE_BATCH.has(error.status) ? undefined : { message: `HTTP ${error.status}` };
}

export type BatchEntry = { ok: true; result: unknown } | { ok: false; error: RpcError };

export type RpcTransport = (url: string, body: string, timeoutMs: number) => Promise<unknown>;

/**
 * A provider URL split into what fetch accepts: fetch refuses a URL with `user:password@`, which self-hosted
 * RPC nodes use, so the credentials travel as a Basic Authorization header instead.
 */
export function providerRequestTarget(url: string): { url: string; headers: Record<string, string> } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new RpcTransportError('provider URL is not a valid URL');
  }
  if (!parsed.username && !parsed.password) return { url, headers: {} };
  const user = decodeURIComponent(parsed.username);
  const password = decodeURIComponent(parsed.password);
  parsed.username = '';
  parsed.password = '';
  const token = Buffer.from(`${user}:${password}`, 'utf8').toString('base64');
  return { url: parsed.toString(), headers: { authorization: `Basic ${token}` } };
}

/** Why fetch failed, without the URL (fetch and undici put it in some messages; it may carry credentials). */
function transportReason(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } }).cause;
  if (error instanceof Error && error.name === 'TimeoutError') return 'timed out';
  if (cause && typeof cause.code === 'string') return cause.code;
  return error instanceof Error ? error.name : 'error';
}

/**
 * The largest answer read from a provider, in bytes. The biggest legitimate answer is an eth_getLogs page: a request
 * log is ~1.7 KB of JSON (bench: 1,000 requests in one page are 1.7 MB), so 10,000 logs, the page limit of common
 * hosted providers, are ~17 MB; the cap leaves twice that. Beyond it the answer is not read further and the provider
 * counts as failed for the call: reading a 700 MB answer whole took a coordinator to 2.3 GB (an OOM kill in a pod).
 */
export const MAX_ANSWER_BYTES = 32 * 1024 * 1024;

/** The body as text, read chunk by chunk and abandoned as soon as it passes `limit` bytes. */
export async function readCappedBody(response: Response, limit: number): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (declared > limit) {
    await response.body?.cancel().catch(() => undefined);
    throw new RpcAnswerTooLarge(limit);
  }
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw new RpcAnswerTooLarge(limit);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** JSON-RPC over HTTP POST with fetch; answers over `maxAnswerBytes` are abandoned (RpcAnswerTooLarge). */
export const httpTransport =
  (maxAnswerBytes = MAX_ANSWER_BYTES): RpcTransport =>
  async (url, body, timeoutMs) => {
    const target = providerRequestTarget(url);
    let response: Response;
    try {
      response = await fetch(target.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...target.headers },
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw new RpcTransportError(`provider unreachable: ${transportReason(error)}`);
    }
    let text: string;
    try {
      text = await readCappedBody(response, maxAnswerBytes);
    } catch (error) {
      if (error instanceof RpcTransportError) throw error;
      throw new RpcTransportError(`provider answer unreadable: ${transportReason(error)}`);
    }
    try {
      return JSON.parse(text);
    } catch {
      throw new RpcHttpError(response.status);
    }
  };

const fetchTransport = httpTransport();

const DEFAULTS: Required<Omit<RpcOptions, 'stopReason'>> = {
  timeoutMs: 5_000,
  attempts: 2,
  backoffMs: { min: 200, max: 1_000 },
};

/**
 * In-flight requests per provider URL, shared by every client of the process: fifty shards planning at
 * once must queue here rather than flood one provider (and then time out against it). The timeout of a
 * call starts when it leaves the queue.
 */
export const MAX_IN_FLIGHT_PER_PROVIDER = 32;

/**
 * Calls that queue for the same provider leave together, as one JSON-RPC batch of up to this many: under load
 * (a thousand static calls from fifty shards) one HTTP exchange then carries many calls, which a provider
 * answers several times faster than the same calls one by one (anvil: ~10x for simple calls). Without a
 * queue nothing waits: a call issued alone goes alone, at once.
 */
export const MAX_CALLS_PER_BATCH = 50;

/** Answers a provider's measured latency is taken over. */
const LATENCY_WINDOW = 8;

type QueuedCall = {
  method: string;
  params: unknown[];
  timeoutMs: number;
  transport: RpcTransport;
  stopReason: (() => string | undefined) | undefined;
  resolve: (answer: unknown) => void;
  reject: (error: unknown) => void;
};

/** The in-flight limit of one provider URL, and the queue of calls and batches waiting for it. */
class ProviderQueue {
  private active = 0;
  private calls: QueuedCall[] = [];
  private readonly batches: (() => void)[] = [];
  private scheduled = false;
  /** Cleared for good once the provider refuses a batch as such (batchRefusal): from then on, one call at a time. */
  private batching = true;
  /** How long the provider's last answers took (ms), newest last: its measured latency (see `latencyMs`). */
  private readonly answerTimes: number[] = [];

  /** Whether the provider takes JSON-RPC batches, as far as this process has seen. */
  get takesBatches(): boolean {
    return this.batching;
  }

  /** The provider refused a batch as such: nothing is sent to it as a batch again in this process. */
  refuseBatches(): void {
    this.batching = false;
  }

  /** The slowest of the provider's last few answers, undefined before the first one. */
  get latencyMs(): number | undefined {
    return this.answerTimes.length === 0 ? undefined : Math.max(...this.answerTimes);
  }

  private recordAnswerTime(ms: number): void {
    this.answerTimes.push(ms);
    if (this.answerTimes.length > LATENCY_WINDOW) this.answerTimes.shift();
  }

  constructor(
    readonly url: string,
    readonly limit: number,
  ) {}

  /** A slot for one explicit batch (RpcClient.batch), kept whole. */
  async acquire(): Promise<() => void> {
    await new Promise<void>((resolve) => {
      this.batches.push(resolve);
      this.schedule();
    });
    return () => {
      this.active--;
      this.schedule();
    };
  }

  /** One call's JSON-RPC answer object (its `result` or `error` still to be checked by the caller). */
  call(
    method: string,
    params: unknown[],
    timeoutMs: number,
    transport: RpcTransport,
    stopReason?: () => string | undefined,
  ): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.calls.push({ method, params, timeoutMs, transport, stopReason, resolve, reject });
      this.schedule();
    });
  }

  // Once per microtask: the calls issued in the same turn (a Promise.all) can leave as one batch.
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    this.dropStopped();
    while (this.active < this.limit) {
      const batch = this.batches.shift();
      if (batch) {
        this.active++;
        batch();
        continue;
      }
      if (this.calls.length === 0) return;
      const transport = this.calls[0]!.transport;
      const size = this.batching ? MAX_CALLS_PER_BATCH : 1;
      const taken: QueuedCall[] = [];
      const rest: QueuedCall[] = [];
      for (const call of this.calls) (taken.length < size && call.transport === transport ? taken : rest).push(call);
      this.calls = rest;
      this.active++;
      void this.send(taken).finally(() => {
        this.active--;
        this.schedule();
      });
    }
  }

  /** Calls whose caller stopped while they waited leave the queue unsent. */
  private dropStopped(): void {
    this.calls = this.calls.filter((call) => {
      const reason = call.stopReason?.();
      if (reason !== undefined) call.reject(new RpcCallStopped(reason));
      return reason === undefined;
    });
  }

  private async send(calls: QueuedCall[]): Promise<void> {
    // A batch carries many calls' work: it gets twice the longest budget among them.
    const timeoutMs = Math.max(...calls.map((c) => c.timeoutMs)) * (calls.length > 1 ? 2 : 1);
    const what = calls.length === 1 ? calls[0]!.method : `batch of ${calls.length}`;
    const entries = calls.map((c, i) => ({ jsonrpc: '2.0', id: i + 1, method: c.method, params: c.params }));
    // Refused as a batch (none of its calls carried out): the same calls again, one by one, and never a batch again.
    const refused = () => {
      this.batching = false;
      this.calls.unshift(...calls);
    };
    let answer: unknown;
    try {
      const body = JSON.stringify(calls.length === 1 ? entries[0] : entries);
      const started = performance.now();
      answer = await withTimeout(calls[0]!.transport(this.url, body, timeoutMs), timeoutMs, what);
      this.recordAnswerTime(performance.now() - started);
    } catch (error) {
      if (calls.length > 1 && batchRefusalOf(error)) return refused();
      for (const call of calls) call.reject(error);
      return;
    }
    if (calls.length === 1) {
      calls[0]!.resolve(answer);
      return;
    }
    if (
      !Array.isArray(answer) ||
      batchRefusal(
        answer,
        entries.map((entry) => entry.id),
      )
    )
      return refused();
    const byId = new Map<unknown, unknown>();
    for (const entry of answer) {
      if (typeof entry === 'object' && entry !== null && 'id' in entry) byId.set((entry as { id: unknown }).id, entry);
    }
    calls.forEach((call, i) => {
      const entry = byId.get(i + 1);
      if (entry === undefined) call.reject(new RpcTransportError(`${call.method}: no answer in the batch`));
      else call.resolve(entry);
    });
  }
}

const queues = new Map<string, ProviderQueue>();
function queueFor(url: string, limit: number): ProviderQueue {
  let queue = queues.get(url);
  if (!queue) {
    queue = new ProviderQueue(url, limit);
    queues.set(url, queue);
  }
  return queue;
}

export class RpcClient {
  private nextId = 1;
  /** Number of JSON-RPC requests sent, retries included (for the benchmark and tests). */
  calls = 0;

  private readonly queue: ProviderQueue;

  constructor(
    readonly url: string,
    private readonly defaults: RpcOptions = {},
    private readonly transport: RpcTransport = fetchTransport,
    maxInFlight = MAX_IN_FLIGHT_PER_PROVIDER,
  ) {
    this.queue = queueFor(url, maxInFlight);
  }

  /**
   * How long this provider takes to answer, as measured in this process (the slowest of its last few answers;
   * undefined before its first): what timeouts that should follow the provider's pace are derived from.
   */
  get latencyMs(): number | undefined {
    return this.queue.latencyMs;
  }

  async request<T = unknown>(method: string, params: unknown[], options: RpcOptions = {}): Promise<T> {
    const { timeoutMs, attempts, backoffMs, stopReason } = { ...DEFAULTS, ...this.defaults, ...options };
    let lastError: unknown;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      try {
        return await this.once<T>(method, params, timeoutMs, stopReason);
      } catch (error) {
        lastError = error;
        // A JSON-RPC error answer (revert, nonce too low, …) is deterministic: retrying will not help.
        if (error instanceof RpcError || error instanceof RpcCallStopped) throw error;
        if (attempt < attempts) {
          const wait = backoffMs.min + Math.random() * Math.max(0, backoffMs.max - backoffMs.min);
          await new Promise((resolve) => setTimeout(resolve, wait));
        }
      }
    }
    throw lastError;
  }

  /** Whether this provider takes JSON-RPC batches (false once it refused one in this process). */
  get takesBatches(): boolean {
    return this.queue.takesBatches;
  }

  /**
   * Several calls in one JSON-RPC batch (one HTTP exchange), answered in the order given. Each entry settles on
   * its own: a result, or the RpcError the provider answered for it. Sent once (no retry: a batch may carry
   * transactions, and a lost answer is settled by reading nonces, not by resending). A provider that refuses
   * batches (batchRefusal, or an HTTP 4xx to the batch) gets an RpcBatchRefused, so the caller can send one at a
   * time; the refusal is remembered for the provider, and its later batches are refused here without a call.
   */
  async batch(
    calls: { method: string; params: unknown[] }[],
    options: Pick<RpcOptions, 'timeoutMs' | 'stopReason'> = {},
  ): Promise<BatchEntry[]> {
    if (calls.length === 0) return [];
    const timeoutMs = options.timeoutMs ?? this.defaults.timeoutMs ?? DEFAULTS.timeoutMs;
    const what = `batch of ${calls.length} (${calls[0]!.method})`;
    if (!this.queue.takesBatches) throw new RpcBatchRefused(`${what}: the provider takes no batches`);
    const refused = (error: ErrorObject) => {
      this.queue.refuseBatches();
      return new RpcBatchRefused(`${what}: ${error.message ?? 'refused'}`, error.code);
    };
    const ids = calls.map(() => this.nextId++);
    const body = JSON.stringify(calls.map((call, i) => ({ jsonrpc: '2.0', id: ids[i], ...call })));
    const release = await this.queue.acquire();
    let answer: unknown;
    try {
      // Asked again once the provider has a slot for the batch: it may have kept the batch waiting.
      const stopped = options.stopReason?.();
      if (stopped !== undefined) throw new RpcCallStopped(stopped);
      this.calls += calls.length;
      answer = await withTimeout(this.transport(this.url, body, timeoutMs), timeoutMs, what);
    } catch (error) {
      const refusal = batchRefusalOf(error);
      throw refusal ? refused(refusal) : error;
    } finally {
      release();
    }
    const refusal = batchRefusal(answer, ids);
    if (refusal) throw refused(refusal);
    if (!Array.isArray(answer)) throw new RpcTransportError(`${what}: malformed JSON-RPC answer`);
    // Batch answers may come in any order: match them by id, and every call must have exactly one.
    const byId = new Map<unknown, unknown>();
    for (const entry of answer) {
      if (typeof entry === 'object' && entry !== null && 'id' in entry) byId.set((entry as { id: unknown }).id, entry);
    }
    return calls.map((call, i): BatchEntry => {
      const entry = byId.get(ids[i]) as
        | { result?: unknown; error?: { code?: number; message?: string; data?: unknown } }
        | undefined;
      if (!entry) throw new RpcTransportError(`${what}: no answer for call ${i}`);
      if (entry.error) {
        return {
          ok: false,
          error: new RpcError(
            `${call.method}: ${entry.error.message ?? 'unknown error'}`,
            entry.error.code,
            entry.error.data,
          ),
        };
      }
      if (!('result' in entry)) throw new RpcTransportError(`${what}: answer without result for call ${i}`);
      return { ok: true, result: entry.result };
    });
  }

  private async once<T>(
    method: string,
    params: unknown[],
    timeoutMs: number,
    stopReason: (() => string | undefined) | undefined,
  ): Promise<T> {
    this.calls++;
    const answer = await this.queue.call(method, params, timeoutMs, this.transport, stopReason);
    if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) {
      throw new RpcTransportError(`${method}: malformed JSON-RPC answer`);
    }
    const { result, error } = answer as {
      result?: unknown;
      error?: { code?: number; message?: string; data?: unknown };
    };
    if (error) throw new RpcError(`${method}: ${error.message ?? 'unknown error'}`, error.code, error.data);
    if (!('result' in answer)) throw new RpcTransportError(`${method}: JSON-RPC answer without result`);
    return result as T;
  }
}

/**
 * Whether an error came from a provider (an error answer, no answer in time, an answer that is not what JSON-RPC
 * promises): only those count as the provider's fault. Anything else was raised by the node's own code, and every
 * provider would have met it.
 */
export function isProviderError(error: unknown): boolean {
  return error instanceof RpcError || error instanceof RpcTransportError;
}

export async function withTimeout<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RpcTransportError(`${what}: timed out after ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// Answer validation: a lying provider must not crash the cycle with a TypeError somewhere deeper.
export function asQuantity(value: unknown, what: string): bigint {
  if (typeof value !== 'string' || !/^0x[0-9a-fA-F]{1,64}$/.test(value)) {
    throw new RpcTransportError(`${what}: not a hex quantity`);
  }
  return BigInt(value);
}

export function asData(value: unknown, what: string): string {
  if (typeof value !== 'string' || !/^0x([0-9a-fA-F]{2})*$/.test(value)) {
    throw new RpcTransportError(`${what}: not hex data`);
  }
  return value;
}

export function toQuantity(value: bigint | number): string {
  return `0x${BigInt(value).toString(16)}`;
}
