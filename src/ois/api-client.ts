// Calls an API over pooled keep-alive connections (undici's HTTP/1.1 client; node:http/https for the rare
// request whose headers undici refuses to send, see needsNodeHttp). As the reference: attempt 1 gets
// 10 s, attempt 2 gets 20 s, any failure is retried once, a non-2xx answer becomes
// "API call failed with status code N" and no answer "API call failed with no response". Beyond it:
// the answer must be JSON, its size is capped (also after decompression), and redirects are followed
// only within the same origin so credentials never travel to another host. Error messages never
// contain the URL, headers or body, so credentials cannot leak through them.

import dns from 'node:dns';
import type { Agent, ClientRequest } from 'node:http';
import { createRequire } from 'node:module';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import type { Dispatcher, Agent as UndiciAgentType } from 'undici';
import { nodeHttp, nodeHttps } from '../common/node-http.js';
import { type ApiDeferral, type BudgetAnswer, rateLimitWaitMs } from './budget.js';
import { DEFERRED_PREFIX } from './deferral.js';
import { destinationPolicy, isPrivateAddress } from './destinations.js';
import { MAX_RESPONSE_DEPTH, nestedDeeperThan } from './limits.js';
import type { HttpRequest } from './request.js';

export const DEFAULT_API_TIMEOUTS_MS: readonly number[] = [10_000, 20_000];
export const DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
export const MAX_REDIRECTS = 5;
/** Statuses whose Retry-After (or RateLimit reset) pauses the API: too many requests, and unavailable for now. */
const WAIT_STATUSES = new Set([429, 503]);

export type ApiCallOptions = {
  /** One entry per attempt: the whole attempt (connect, headers, body) must finish within it. */
  timeoutsMs?: readonly number[] | undefined;
  maxResponseBytes?: number | undefined;
  /**
   * Asked before every attempt (the API's rate budget, budget.ts): an attempt starts only once admitted, and a
   * refusal ends the call without it, as a deferral.
   */
  admit?: (() => BudgetAnswer | Promise<BudgetAnswer>) | undefined;
  /** Told of a 429 or 503 that names how long to wait (ms, capped) and which it was: the budget pauses the API. */
  onRateLimited?: ((waitMs: number, status: number) => void) | undefined;
};

export type ApiCallResult =
  | { success: true; data: unknown; status: number }
  | {
      success: false;
      errorMessage: string;
      /** The API answered, but with something the node refuses to process (an upstream fault). */
      unusableResponse?: boolean;
      /** A 429 or 503 that named a wait (Retry-After, RateLimit-Reset): how long, in ms. */
      retryAfterMs?: number;
      /** The call was not made (over budget, or the API paused): not the API's failure. */
      deferred?: ApiDeferral;
    };

// undici's client costs the gateway about a fifth less CPU per API call than node:http's ClientRequest (CPU
// profile of the HTTP gateway under load, docs/benchmarks.md "Gateways: where the time goes"). HTTP/1.1 only
// (allowH2: false) as before; one pool per origin, as many connections as node:http's maxSockets.
const UNDICI_OPTIONS = { connections: 256, allowH2: false, keepAliveTimeout: 4_000 } as const;
// undici's Agent alone (22 modules) rather than its index (109, fetch, WebSocket and caches included): about 50 ms
// less of every engine start. The deep path is pinned with undici's version (package-lock.json), and the
// api-client tests go through it.
const UndiciAgent = createRequire(import.meta.url)('undici/lib/dispatcher/agent.js') as typeof UndiciAgentType;
type UndiciAgent = UndiciAgentType;

let plainDispatcher: UndiciAgent | undefined;
let guardedDispatcher: UndiciAgent | undefined;
function dispatcher(denyPrivate: boolean): UndiciAgent {
  if (!denyPrivate) {
    plainDispatcher ??= new UndiciAgent(UNDICI_OPTIONS);
    return plainDispatcher;
  }
  guardedDispatcher ??= new UndiciAgent({ ...UNDICI_OPTIONS, connect: { lookup: guardedLookup } });
  return guardedDispatcher;
}

/**
 * Headers undici refuses (or handles differently) that node:http sends as given: a request with one of them goes
 * through node:http so that it is sent exactly as before.
 */
const NODE_HTTP_HEADERS = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'expect',
  'host',
  'content-length',
]);

function needsNodeHttp(headers: Record<string, string>): boolean {
  for (const name of Object.keys(headers)) if (NODE_HTTP_HEADERS.has(name.toLowerCase())) return true;
  return false;
}

const NODE_AGENT_OPTIONS = { keepAlive: true, maxSockets: 256, maxFreeSockets: 32, timeout: 60_000 };
let httpAgent: Agent | undefined;
let httpsAgent: Agent | undefined;

/** The node:http(s) agent of a scheme, made on first use: a node that calls only HTTP APIs never loads node:https. */
function nodeAgent(isHttps: boolean): Agent {
  if (isHttps) {
    httpsAgent ??= new (nodeHttps().Agent)(NODE_AGENT_OPTIONS);
    return httpsAgent;
  }
  httpAgent ??= new nodeHttp.Agent(NODE_AGENT_OPTIONS);
  return httpAgent;
}

/** A failure with a message that is safe to show (no URL, no credentials). */
class ApiCallError extends Error {}

type Attempt = { request: HttpRequest; timeoutMs: number; maxResponseBytes: number };

type ResponseHeaders = Record<string, string | string[] | undefined>;
type RawResponse = { status: number; headers: ResponseHeaders; body: Buffer };

/** One header's value as text (undici gives repeated headers as an array; node:http joins most of them). */
function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

function hasHeader(headers: Record<string, string>, name: string): boolean {
  return Object.keys(headers).some((key) => key.toLowerCase() === name);
}

function withDefaultHeaders(request: HttpRequest): Record<string, string> {
  const headers = { ...request.headers };
  if (!hasHeader(headers, 'accept')) headers['Accept'] = 'application/json, text/plain, */*';
  if (!hasHeader(headers, 'accept-encoding')) headers['Accept-Encoding'] = 'gzip, deflate, br';
  return headers;
}

function decoder(encoding: string | undefined): zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | null {
  switch ((encoding ?? '').trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return zlib.createGunzip();
    case 'deflate':
      return zlib.createInflate();
    case 'br':
      return zlib.createBrotliDecompress();
    default:
      return null;
  }
}

/** Reads at most `limit` bytes (after decompression) or fails, destroying the socket early. */
function readBody(response: Readable, headers: ResponseHeaders, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(headerText(headers['content-length']));
    if (Number.isFinite(declared) && declared > limit) {
      response.destroy();
      reject(new ApiCallError(`API call failed with a response larger than ${limit} bytes`));
      return;
    }
    const decompress = decoder(headerText(headers['content-encoding']));
    const stream: Readable = decompress ? response.pipe(decompress) : response;
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      response.destroy();
      decompress?.destroy();
      reject(error);
    };
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        fail(new ApiCallError(`API call failed with a response larger than ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    stream.on('end', () => {
      if (settled) return;
      settled = true;
      resolve(Buffer.concat(chunks));
    });
    const onError = (message: string) => () => fail(new ApiCallError(message));
    // A broken connection (or the attempt's deadline, which destroys the request) is "no response"; a body that
    // does not decompress is the API's fault.
    response.on('error', onError('API call failed with no response'));
    decompress?.on('error', onError('API call failed with a response that could not be decompressed'));
  });
}

const DESTINATION_DENIED = 'API call refused: the API server is at a private, loopback or link-local address';
const DENIED_CODE = 'EDESTINATIONDENIED';

/** dns.lookup that fails for private addresses (the deny list, when it is on). */
const guardedLookup = ((hostname: string, options: dns.LookupOptions, callback: (...args: unknown[]) => void) => {
  dns.lookup(hostname, options, (error, address, family) => {
    if (error) {
      callback(error, address, family);
      return;
    }
    const entries = Array.isArray(address) ? address : [{ address, family }];
    if (entries.some((entry) => isPrivateAddress(entry.address))) {
      callback(Object.assign(new Error(DESTINATION_DENIED), { code: DENIED_CODE }), address, family);
      return;
    }
    callback(null, address, family);
  });
}) as unknown as typeof dns.lookup;

/**
 * The deadline of one attempt: when it passes, the request in progress is destroyed (a timer and a destroy()
 * rather than an AbortSignal per request: the same effect for less work on every call).
 */
type Deadline = { expired: boolean; onExpire: (() => void) | undefined };

function send(
  method: string,
  url: URL,
  headers: Record<string, string>,
  body: string | undefined,
  attempt: Attempt,
  deadline: Deadline,
): Promise<RawResponse> {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return Promise.reject(new ApiCallError('API call failed in building the HTTP request'));
  }
  if (deadline.expired) return Promise.reject(new ApiCallError('API call failed with no response'));
  const denyPrivate = destinationPolicy().denyPrivate;
  if (denyPrivate && isPrivateAddress(url.hostname.replace(/^\[|\]$/g, ''))) {
    return Promise.reject(new ApiCallError(DESTINATION_DENIED));
  }
  if (needsNodeHttp(headers) || url.username || url.password) {
    return sendWithNodeHttp(method, url, headers, body, attempt, deadline, denyPrivate);
  }
  return new Promise((resolve, reject) => {
    dispatcher(denyPrivate).dispatch(
      {
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        // node:http sends the method upper-cased; so does this client.
        method: method.toUpperCase() as Dispatcher.HttpMethod,
        headers,
        body: body ?? null,
        // The attempt's deadline covers the whole exchange; undici's own timers would only cut it shorter.
        headersTimeout: 0,
        bodyTimeout: 0,
      },
      new ResponseCollector(attempt.maxResponseBytes, deadline, resolve, reject),
    );
  });
}

const NO_RESPONSE = 'API call failed with no response';

/**
 * undici's lowest-level handler for one exchange: the body's chunks are collected (and decompressed) as they come,
 * without the stream, promise and abort signal of undici's request() for every call. The size cap holds before and
 * after decompression; the attempt's deadline aborts the exchange.
 */
class ResponseCollector implements Dispatcher.DispatchHandler {
  readonly #limit: number;
  readonly #deadline: Deadline;
  readonly #resolve: (response: RawResponse) => void;
  readonly #reject: (error: ApiCallError) => void;
  #controller: Dispatcher.DispatchController | undefined;
  #status = 0;
  #headers: ResponseHeaders = {};
  #chunks: Buffer[] = [];
  #size = 0;
  #decompress: zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | null = null;
  #settled = false;

  constructor(
    limit: number,
    deadline: Deadline,
    resolve: (response: RawResponse) => void,
    reject: (error: ApiCallError) => void,
  ) {
    this.#limit = limit;
    this.#deadline = deadline;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#deadline.expired) {
      this.#fail(new ApiCallError(NO_RESPONSE));
      return;
    }
    this.#deadline.onExpire = () => this.#fail(new ApiCallError(NO_RESPONSE));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: ResponseHeaders): void {
    if (statusCode < 200) return;
    this.#status = statusCode;
    this.#headers = headers;
    const declared = Number(headerText(headers['content-length']));
    if (Number.isFinite(declared) && declared > this.#limit) {
      this.#fail(new ApiCallError(`API call failed with a response larger than ${this.#limit} bytes`));
      return;
    }
    const decompress = decoder(headerText(headers['content-encoding']));
    if (!decompress) return;
    this.#decompress = decompress;
    decompress.on('data', (chunk: Buffer) => this.#collect(chunk));
    decompress.on('end', () => this.#finish());
    // A body that does not decompress is the API's fault.
    decompress.on('error', () =>
      this.#fail(new ApiCallError('API call failed with a response that could not be decompressed')),
    );
    // Backpressure: the socket pauses while the decompressor is behind.
    decompress.on('drain', () => this.#controller?.resume());
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#settled) return;
    if (this.#decompress) {
      if (!this.#decompress.write(chunk)) controller.pause();
      return;
    }
    this.#collect(chunk);
  }

  onResponseEnd(): void {
    if (this.#decompress) this.#decompress.end();
    else this.#finish();
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: NodeJS.ErrnoException): void {
    if (error instanceof ApiCallError) {
      this.#fail(error);
      return;
    }
    if (error.code === DENIED_CODE) {
      this.#fail(new ApiCallError(DESTINATION_DENIED));
      return;
    }
    if (error.code === 'UND_ERR_INVALID_ARG' || error.code === 'UND_ERR_NOT_SUPPORTED') {
      // Invalid header names or values, as node:http's synchronous throw.
      this.#fail(new ApiCallError('API call failed in building the HTTP request'));
      return;
    }
    // A broken connection (or the attempt's deadline) is "no response".
    this.#fail(new ApiCallError(NO_RESPONSE));
  }

  #collect(chunk: Buffer): void {
    if (this.#settled) return;
    this.#size += chunk.length;
    if (this.#size > this.#limit) {
      this.#fail(new ApiCallError(`API call failed with a response larger than ${this.#limit} bytes`));
      return;
    }
    this.#chunks.push(chunk);
  }

  #finish(): void {
    if (this.#settled) return;
    this.#settled = true;
    const body = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks);
    const response = { status: this.#status, headers: this.#headers, body };
    // undici puts the connection back into its pool on the turn of the event loop after the body ended (an
    // immediate it queues once this returns): answering after it lets a caller that starts its next call at once
    // reuse this connection instead of opening a second one.
    queueMicrotask(() => setImmediate(this.#resolve, response));
  }

  #fail(error: ApiCallError): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#decompress?.destroy();
    // Aborting an exchange that already ended (or never started) is a no-op.
    this.#controller?.abort(error);
    this.#reject(error);
  }
}

function sendWithNodeHttp(
  method: string,
  url: URL,
  headers: Record<string, string>,
  body: string | undefined,
  attempt: Attempt,
  deadline: Deadline,
  denyPrivate: boolean,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const isHttps = url.protocol === 'https:';
    const hostname = url.hostname.replace(/^\[|\]$/g, '');
    const requestHeaders =
      body === undefined ? headers : { ...headers, 'Content-Length': String(Buffer.byteLength(body)) };
    let request: ClientRequest;
    try {
      // The parts of the URL as options (what node:http would derive from the URL object on every call).
      request = (isHttps ? nodeHttps() : nodeHttp).request({
        protocol: url.protocol,
        hostname,
        port: url.port,
        path: `${url.pathname}${url.search}`,
        ...(url.username || url.password
          ? { auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` }
          : {}),
        method,
        headers: requestHeaders,
        agent: nodeAgent(isHttps),
        ...(denyPrivate ? { lookup: guardedLookup } : {}),
      });
    } catch {
      // Invalid header names or values: node:http throws synchronously.
      reject(new ApiCallError('API call failed in building the HTTP request'));
      return;
    }
    deadline.onExpire = () => request.destroy(new ApiCallError('API call failed with no response'));
    request.on('error', (error: NodeJS.ErrnoException) =>
      reject(new ApiCallError(error.code === DENIED_CODE ? DESTINATION_DENIED : 'API call failed with no response')),
    );
    request.on('response', (response) => {
      readBody(response, response.headers, attempt.maxResponseBytes).then(
        (buffer) => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: buffer }),
        reject,
      );
    });
    request.end(body);
  });
}

async function runAttempt(attempt: Attempt): Promise<ApiCallResult> {
  const deadline: Deadline = { expired: false, onExpire: undefined };
  const timer = setTimeout(() => {
    deadline.expired = true;
    deadline.onExpire?.();
  }, attempt.timeoutMs);
  try {
    let method: string = attempt.request.method;
    let body = attempt.request.body;
    let url: URL;
    try {
      url = new URL(attempt.request.url);
    } catch {
      throw new ApiCallError('API call failed in building the HTTP request');
    }
    const headers = withDefaultHeaders(attempt.request);
    for (let redirects = 0; ; redirects++) {
      const response = await send(method, url, headers, body, attempt, deadline);
      const location = response.headers.location;
      if (response.status >= 300 && response.status < 400 && location && redirects < MAX_REDIRECTS) {
        let next: URL | null = null;
        try {
          next = new URL(location, url);
        } catch {
          next = null;
        }
        // Same origin only: a redirect elsewhere would carry credentials (headers, query) to another host.
        if (next && next.origin === url.origin) {
          if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === 'POST')) {
            method = 'GET';
            body = undefined;
            for (const key of Object.keys(headers)) {
              if (key.toLowerCase() === 'content-type') delete headers[key];
            }
          }
          url = next;
          continue;
        }
      }
      if (response.status < 200 || response.status >= 300) {
        // Both ask a client to come back later, and may say when (RFC 9110 10.2.3, RFC 6585 4).
        const retryAfterMs = WAIT_STATUSES.has(response.status) ? rateLimitWaitMs(response.headers) : undefined;
        return {
          success: false,
          errorMessage: `API call failed with status code ${response.status}`,
          ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
        };
      }
      let data: unknown;
      try {
        data = JSON.parse(response.body.toString('utf8'));
      } catch {
        return { success: false, errorMessage: 'API call failed with a response that is not valid JSON' };
      }
      if (nestedDeeperThan(data, MAX_RESPONSE_DEPTH)) {
        return {
          success: false,
          errorMessage: `API call failed with a response nested deeper than ${MAX_RESPONSE_DEPTH} levels`,
          unusableResponse: true,
        };
      }
      return { success: true, status: response.status, data };
    }
  } catch (error) {
    if (error instanceof ApiCallError) return { success: false, errorMessage: error.message };
    return { success: false, errorMessage: 'API call failed with no response' };
  } finally {
    clearTimeout(timer);
  }
}

/** The message of a call not made: it names the OIS's budget or pause and when to come back, nothing of the call. */
export function deferralMessage(oisTitle: string, deferral: ApiDeferral): string {
  const seconds = Math.max(1, Math.ceil(deferral.retryAfterMs / 1000));
  return deferral.reason === 'paused'
    ? `${DEFERRED_PREFIX}the API of ${oisTitle} answered ${deferral.status ?? 429} and is paused; retry after ${seconds} s`
    : `${DEFERRED_PREFIX}over the rate budget of ${oisTitle}; retry after ${seconds} s`;
}

/**
 * Calls the API with one attempt per timeout; the last failure's message is returned. Each attempt is first admitted
 * by the budget (`admit`): after a 429 that named a wait, the next attempt waits for it or is deferred, never sent
 * sooner.
 */
export async function callApi(
  request: HttpRequest,
  options: ApiCallOptions = {},
  oisTitle = 'the OIS',
): Promise<ApiCallResult> {
  const timeouts = options.timeoutsMs && options.timeoutsMs.length > 0 ? options.timeoutsMs : DEFAULT_API_TIMEOUTS_MS;
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  let result: ApiCallResult = { success: false, errorMessage: 'API call failed' };
  for (const timeoutMs of timeouts) {
    if (options.admit) {
      const admitted = options.admit();
      const answer = admitted instanceof Promise ? await admitted : admitted;
      if (!answer.ok) {
        const deferred: ApiDeferral = {
          reason: answer.reason,
          retryAfterMs: answer.retryAfterMs,
          ...(answer.status === undefined ? {} : { status: answer.status }),
        };
        return { success: false, errorMessage: deferralMessage(oisTitle, deferred), deferred };
      }
    }
    result = await runAttempt({ request, timeoutMs, maxResponseBytes });
    if (result.success) return result;
    if (result.retryAfterMs !== undefined) options.onRateLimited?.(result.retryAfterMs, statusOf(result));
  }
  return result;
}

/** The status code a failed attempt's message names (429 when it names none: only a 429 or 503 gets here). */
function statusOf(result: ApiCallResult): number {
  const code = result.success ? undefined : /status code (\d{3})$/.exec(result.errorMessage)?.[1];
  return code === undefined ? 429 : Number(code);
}
