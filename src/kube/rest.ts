// A small REST transport over node:http(s) for the Kubernetes API. Every call, watches and lists included, waits
// on one client-side QPS/burst token bucket, is counted in rest_client_requests_total, and is retried with jittered
// exponential backoff (honouring Retry-After) when sending it again cannot do anything twice (mayRetry). Credentials
// come from the ClientConfig (runtime/kubeconfig.ts) on every request, so rotated in-cluster tokens are picked up.
import type * as http from 'node:http';
import type * as https from 'node:https';
import type { Logger } from 'pino';
import { errorMessage } from '../common/errors.js';
import { nodeHttp, nodeHttps } from '../common/node-http.js';
import { Backoff, TokenBucket } from './backoff.js';
import { type Clock, systemClock } from './clock.js';
import { ApiError } from './errors.js';
import type { ClientConfig } from './kubeconfig.js';
import type { RuntimeMetrics } from './metrics.js';

export type RestClientOptions = {
  qps: number;
  burst: number;
  metrics?: RuntimeMetrics;
  logger?: Logger;
  clock?: Clock;
  userAgent?: string;
  /** Attempts after the first on a retryable failure. */
  maxRetries?: number;
  retryInitialMs?: number;
  retryMaxMs?: number;
  /** No response headers within this time aborts the attempt (watches use their own inactivity timeout). */
  requestTimeoutMs?: number;
};

export type RequestOptions = {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
  /** Retry what mayRetry allows (default true). */
  retry?: boolean;
  /** The Accept header (default application/json), e.g. PARTIAL_METADATA_LIST for metadata-only lists. */
  accept?: string;
  /**
   * A 2xx answer's body is read and dropped, never parsed, and the request resolves with undefined: for writes
   * whose answer nobody reads (an apply returns the whole object, managedFields included, which the informer
   * delivers anyway). Error bodies are still parsed into the ApiError.
   */
  discardBody?: boolean;
  /** A 2xx answer's body as the text it is (a pod's log), never parsed as JSON; error bodies are still parsed. */
  text?: boolean;
};

export type WatchEvent = {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: Record<string, unknown>;
};

export type WatchOptions = {
  path: string;
  query: Record<string, string | number | boolean | undefined>;
  signal: AbortSignal;
  /** Abort when nothing (not even a bookmark) arrives for this long. */
  inactivityTimeoutMs: number;
  /** The Accept header (default application/json), e.g. PARTIAL_METADATA for a metadata-only watch. */
  accept?: string;
};

/**
 * Accept headers that make the apiserver send PartialObjectMetadata (metadata only, no spec or data), with plain
 * JSON as the fallback of servers that cannot. How controller-runtime watches objects it must not cache in full.
 */
export const PARTIAL_METADATA = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';
export const PARTIAL_METADATA_LIST =
  'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';

function retryAfterMs(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** Connection errors that come before a byte of the request left: it cannot have reached the server. */
const NOT_SENT_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN']);

/** A request that failed before it was sent (its connection was refused or its host did not resolve). */
class RequestNotSentError extends ApiError {}

/**
 * Whether a failed attempt may be sent again, client-go's rule (rest.Request) with reads a little freer. A read
 * (GET) is repeated after any connection error, timeout, 429 or 5xx (not 501): doing it twice changes nothing. A
 * write (POST, PUT, PATCH, DELETE) is repeated only when it cannot have happened: the server answered 429 or 5xx
 * with Retry-After, its word that it refused the request unprocessed (max-in-flight, priority and fairness, a
 * shutting-down apiserver), or it was never sent (connection refused, host not found). A write whose answer was
 * lost (reset, timeout) or that got a plain 5xx may have been done: sent again, a Job create comes back 409
 * AlreadyExists and an update 409 Conflict, so the error goes to the caller, which knows what it meant to write.
 */
export function mayRetry(method: RequestOptions['method'], error: ApiError): boolean {
  if (!error.retryable) return false;
  if (method === 'GET' || error instanceof RequestNotSentError) return true;
  return error.status !== 0 && error.retryAfterMs !== undefined;
}

export class RestClient {
  readonly server: URL;
  readonly host: string;
  readonly limiter: TokenBucket;
  private readonly clock: Clock;
  private agent: http.Agent | undefined;
  private readonly options: RestClientOptions;

  constructor(
    private readonly kubeConfig: ClientConfig,
    options: RestClientOptions,
  ) {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    this.server = new URL(cluster.server);
    this.host = this.server.host;
    this.options = options;
    this.clock = options.clock ?? systemClock;
    this.limiter = new TokenBucket(options.qps, options.burst, this.clock);
  }

  /** Connection options and credentials from the kubeconfig; the agent (TLS material) is built once. */
  private async connectionOptions(): Promise<https.RequestOptions> {
    const options: https.RequestOptions = {};
    await this.kubeConfig.applyToHTTPSOptions(options);
    if (!this.agent) {
      this.agent =
        this.server.protocol === 'https:'
          ? new (nodeHttps().Agent)({
              keepAlive: true,
              maxSockets: 64,
              ca: options.ca,
              cert: options.cert,
              key: options.key,
              pfx: options.pfx,
              passphrase: options.passphrase,
              rejectUnauthorized: options.rejectUnauthorized,
              servername: options.servername,
            })
          : new nodeHttp.Agent({ keepAlive: true, maxSockets: 64 });
    }
    return { headers: { ...(options.headers as Record<string, string>) }, auth: options.auth };
  }

  private url(path: string, query?: RequestOptions['query']): URL {
    const base = this.server.pathname.replace(/\/$/, '');
    const url = new URL(base + path, this.server);
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    return url;
  }

  private async throttle(verb: string, signal?: AbortSignal): Promise<void> {
    const started = this.clock.monotonic();
    await this.limiter.take(signal);
    const waited = (this.clock.monotonic() - started) / 1000;
    this.options.metrics?.restRateLimiterDuration.observe({ verb, host: this.host }, waited);
    if (signal?.aborted) throw signal.reason ?? new Error('aborted');
  }

  private count(code: string, method: string, seconds: number): void {
    this.options.metrics?.restRequests.inc({ code, method, host: this.host });
    this.options.metrics?.restDuration.observe({ verb: method, host: this.host }, seconds);
  }

  /** One request with retries; resolves with the parsed JSON body (undefined for an empty one), or its text. */
  async request<T = unknown>(request: RequestOptions): Promise<T> {
    const maxRetries = request.retry === false ? 0 : (this.options.maxRetries ?? 5);
    const backoff = new Backoff({
      initialMs: this.options.retryInitialMs ?? 250,
      maxMs: this.options.retryMaxMs ?? 30_000,
    });
    for (let attempt = 0; ; attempt++) {
      try {
        return (await this.attempt(request)) as T;
      } catch (error) {
        if (
          !(error instanceof ApiError) ||
          !mayRetry(request.method, error) ||
          attempt >= maxRetries ||
          request.signal?.aborted
        )
          throw error;
        const delay = Math.min(Math.max(backoff.next(), error.retryAfterMs ?? 0), this.options.retryMaxMs ?? 30_000);
        this.options.logger?.debug(
          { method: request.method, path: request.path, status: error.status, attempt: attempt + 1, delayMs: delay },
          'retrying Kubernetes API request',
        );
        await this.clock.sleep(delay, request.signal);
        if (request.signal?.aborted) throw error;
      }
    }
  }

  private async attempt(request: RequestOptions): Promise<unknown> {
    const verb = request.method;
    await this.throttle(verb, request.signal);
    const connection = await this.connectionOptions();
    const url = this.url(request.path, request.query);
    const payload = request.body === undefined ? undefined : Buffer.from(JSON.stringify(request.body));
    const headers: Record<string, string | number> = {
      ...(connection.headers as Record<string, string>),
      accept: request.accept ?? 'application/json',
      'user-agent': this.options.userAgent ?? 'oracle-node-operator',
    };
    if (payload) {
      headers['content-type'] = request.contentType ?? 'application/json';
      headers['content-length'] = payload.length;
    }
    const started = process.hrtime.bigint();
    const seconds = () => Number(process.hrtime.bigint() - started) / 1e9;
    const transport = url.protocol === 'https:' ? nodeHttps() : nodeHttp;
    return await new Promise<unknown>((resolve, reject) => {
      const req = transport.request(
        url,
        { method: request.method, headers, agent: this.agent, auth: connection.auth, signal: request.signal },
        (res) => {
          const chunks: Buffer[] = [];
          const status = res.statusCode ?? 0;
          const keep = !(request.discardBody && status >= 200 && status < 300);
          res.on('data', (chunk: Buffer) => {
            if (keep) chunks.push(chunk);
          });
          res.on('error', (error) => {
            this.count('<error>', verb, seconds());
            reject(new ApiError(`${request.method} ${request.path}: ${error.message}`, 0));
          });
          res.on('end', () => {
            this.count(String(status), verb, seconds());
            if (!keep) return resolve(undefined);
            const text = Buffer.concat(chunks).toString('utf8');
            if (request.text && status >= 200 && status < 300) return resolve(text);
            let body: unknown;
            try {
              body = text ? JSON.parse(text) : undefined;
            } catch {
              body = text;
            }
            if (status >= 200 && status < 300) return resolve(body);
            const statusBody = (body ?? {}) as { message?: string; reason?: string };
            reject(
              new ApiError(
                `${request.method} ${request.path}: ${status} ${statusBody.message ?? (typeof body === 'string' ? body.slice(0, 200) : '')}`.trim(),
                status,
                statusBody.reason,
                retryAfterMs(res.headers['retry-after']),
                body,
              ),
            );
          });
        },
      );
      req.setTimeout(this.options.requestTimeoutMs ?? 30_000, () => req.destroy(new Error('request timed out')));
      req.on('error', (error: NodeJS.ErrnoException) => {
        if (request.signal?.aborted) return reject(request.signal.reason ?? error);
        this.count('<error>', verb, seconds());
        const message = `${request.method} ${request.path}: ${error.message}`;
        reject(NOT_SENT_CODES.has(error.code ?? '') ? new RequestNotSentError(message, 0) : new ApiError(message, 0));
      });
      req.end(payload);
    });
  }

  /**
   * Opens a watch and yields its events until the server closes it (a clean end), the signal aborts, or nothing
   * arrives for `inactivityTimeoutMs` (an ApiError with status 0). Opening is rate-limited but not retried: the
   * informer owns the reconnect policy. Counted as method GET (the HTTP method), as client-go does.
   */
  async *watch(options: WatchOptions): AsyncGenerator<WatchEvent> {
    await this.throttle('GET', options.signal);
    const connection = await this.connectionOptions();
    const url = this.url(options.path, { ...options.query, watch: true });
    const headers = {
      ...(connection.headers as Record<string, string>),
      accept: options.accept ?? 'application/json',
      'user-agent': this.options.userAgent ?? 'oracle-node-operator',
    };
    const started = process.hrtime.bigint();
    const transport = url.protocol === 'https:' ? nodeHttps() : nodeHttp;
    const abort = new AbortController();
    const onAbort = () => abort.abort(options.signal.reason);
    if (options.signal.aborted) return;
    options.signal.addEventListener('abort', onAbort, { once: true });
    let inactivity: NodeJS.Timeout | undefined;
    let timedOut = false;
    const arm = () => {
      clearTimeout(inactivity);
      inactivity = setTimeout(() => {
        timedOut = true;
        abort.abort(new Error('watch inactivity timeout'));
      }, options.inactivityTimeoutMs);
    };
    try {
      arm();
      const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
        const req = transport.request(
          url,
          { method: 'GET', headers, agent: this.agent, auth: connection.auth, signal: abort.signal },
          resolve,
        );
        req.on('error', reject);
        req.end();
      }).catch((error: Error) => {
        this.count('<error>', 'GET', Number(process.hrtime.bigint() - started) / 1e9);
        if (options.signal.aborted) throw error;
        throw new ApiError(`watch ${options.path}: ${timedOut ? 'no response' : error.message}`, 0);
      });
      const status = res.statusCode ?? 0;
      this.count(String(status), 'GET', Number(process.hrtime.bigint() - started) / 1e9);
      if (status < 200 || status >= 300) {
        const chunks: Buffer[] = [];
        for await (const chunk of res) chunks.push(chunk as Buffer);
        let body: { message?: string; reason?: string } = {};
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {}
        throw new ApiError(
          `watch ${options.path}: ${status} ${body.message ?? ''}`,
          status,
          body.reason,
          retryAfterMs(res.headers['retry-after']),
          body,
        );
      }
      // One streaming decoder for the whole response: a multi-byte character split across two chunks is held
      // back until its last byte arrives instead of becoming U+FFFD.
      const decoder = new TextDecoder('utf-8');
      let buffered = '';
      try {
        for await (const chunk of res) {
          arm();
          buffered += decoder.decode(chunk as Buffer, { stream: true });
          let newline = buffered.indexOf('\n');
          while (newline >= 0) {
            const line = buffered.slice(0, newline).trim();
            buffered = buffered.slice(newline + 1);
            if (line) yield JSON.parse(line) as WatchEvent;
            newline = buffered.indexOf('\n');
          }
        }
      } catch (error) {
        if (options.signal.aborted) return;
        throw new ApiError(`watch ${options.path}: ${timedOut ? 'inactivity timeout' : errorMessage(error)}`, 0);
      }
      if (timedOut) throw new ApiError(`watch ${options.path}: inactivity timeout`, 0);
    } finally {
      clearTimeout(inactivity);
      options.signal.removeEventListener('abort', onAbort);
      if (!abort.signal.aborted) abort.abort();
    }
  }

  close(): void {
    this.agent?.destroy();
  }
}
