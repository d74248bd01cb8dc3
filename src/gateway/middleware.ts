// The steps every gateway request goes through before its route (routes.ts), each a plain function on node:http's
// request and response: per-request bookkeeping (metrics and a log line once answered), the JSON body (a lean reader
// for the plain case, body-parser for the rest) under its deadline, the per-gateway guard (method, CORS, draining),
// admission to a processing slot, and the JSON answers: the redacted JSON writer, 404 and the error answers.
// app.ts puts them in order.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Logger, redact, secondsSince } from '../observability/index.js';
import { type GatewayMetrics, observeAnswer } from './metrics.js';
import { verifyRequestOrigin } from './validation.js';

export type GatewayName = 'httpGateway' | 'httpSignedDataGateway' | 'oevGateway';
export const GATEWAY_NAMES: readonly GatewayName[] = ['httpGateway', 'httpSignedDataGateway', 'oevGateway'];

/** What the steps know of one gateway request; the request id is drawn when something first reads it (a log line). */
export class RequestContext {
  gateway: GatewayName | 'none' = 'none';
  /** The endpoint id for metrics and logs: '-' until the request named a known endpoint (bounded cardinality). */
  endpoint = '-';
  /** The endpoint id of the path, decoded (HTTP and signed-data gateways). */
  endpointId = '';
  /** The caller's name when the gateway has callers (callers.ts); never its key. */
  caller: string | undefined;
  /** The parsed JSON body (undefined when the body is not JSON). */
  body: unknown;
  readonly start = process.hrtime.bigint();
  #requestId: string | undefined;

  get requestId(): string {
    this.#requestId ??= randomUUID();
    return this.#requestId;
  }
}

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * Every JSON answer leaves through here and so through the secret redactor: an upstream answer or an error that
 * echoes an API key or another secret reaches the caller with "[REDACTED]" in its place. Headers set before
 * (CORS, Retry-After, Connection) are kept; a HEAD request gets the headers alone (Node drops the body).
 */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = redact(JSON.stringify(body) ?? 'null');
  res.statusCode = status;
  res.setHeader('Content-Type', JSON_CONTENT_TYPE);
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

export function sendError(res: ServerResponse, status: number, message: string): void {
  if (!res.headersSent) sendJson(res, status, { message });
}

export function errorText(error: unknown): string {
  // Same rendering as the reference's `err.toString()` of an Error built from the message.
  return `Error: ${error instanceof Error ? error.message : String(error)}`;
}

/** Bookkeeping of a gateway request: metrics and a log line once its answer is finished. */
export function recordWhenAnswered(
  req: IncomingMessage,
  res: ServerResponse,
  context: RequestContext,
  metrics: GatewayMetrics,
  logger: Logger,
): void {
  res.once('finish', () => {
    if (context.gateway === 'none') return;
    const labels = { gateway: context.gateway, endpoint: context.endpoint, status: String(res.statusCode) };
    observeAnswer(metrics, labels, secondsSince(context.start));
    if (context.caller !== undefined)
      metrics.callerRequests.inc({ gateway: context.gateway, caller: context.caller, status: labels.status });
    const caller = context.caller !== undefined ? { caller: context.caller } : {};
    if (res.statusCode >= 500) {
      logger.error(
        { requestId: context.requestId, ...labels, ...caller, method: req.method },
        'gateway request failed',
      );
    } else if (logger.isLevelEnabled('debug')) {
      logger.debug(
        { requestId: context.requestId, ...labels, ...caller, method: req.method },
        'gateway request served',
      );
    }
  });
}

/** A failure to read a body, typed as body-parser's errors so that answerError answers both the same way. */
export type BodyError = Error & { type?: string; status?: number };

const PLAIN_JSON_TYPES = new Set([
  'application/json',
  'application/json; charset=utf-8',
  'application/json;charset=utf-8',
]);
const JSON_WHITESPACE = new Set([' ', '\t', '\n', '\r']);

function bodyError(type: string, message: string): BodyError {
  return Object.assign(new Error(message), { type, status: 400 });
}

type BodyParser = (req: IncomingMessage, res: ServerResponse, next: (error?: BodyError) => void) => void;
let bodyParser: Promise<(limit: number) => BodyParser> | undefined;

/** body-parser's JSON parser, loaded on the first request that needs it (most never do). */
function fullJsonParser(limitBytes: number): () => Promise<BodyParser> {
  let parser: BodyParser | undefined;
  return async () => {
    bodyParser ??= import('body-parser').then((module) => (limit: number) => module.default.json({ limit }));
    parser ??= (await bodyParser)(limitBytes);
    return parser;
  };
}

/**
 * Reads a request's JSON body into context.body, then calls done (with a body error, if any). The plain case (a
 * UTF-8 JSON body of a declared length within the limit, no content encoding) is read here with less work per
 * request; it answers exactly as body-parser does (strict JSON: an object or an array, an empty body is {}, a
 * UTF-8 byte order mark is dropped; errors of the same types). Every other request (chunked, compressed, another
 * charset or type, too large, no length) goes to body-parser itself, which leaves a body that is not declared as
 * JSON unread (context.body stays undefined). A body that does not arrive within timeoutMs is answered 408 (see
 * answerStalledBody): a caller that sends headers and then nothing holds a socket for seconds, never a slot.
 */
export function jsonBodyReader(limitBytes: number, timeoutMs: number, metrics: GatewayMetrics) {
  const fullParser = fullJsonParser(limitBytes);
  return (req: IncomingMessage, res: ServerResponse, context: RequestContext, done: (error?: BodyError) => void) => {
    const { headers } = req;
    const declared = headers['content-length'];
    const type = headers['content-type'];
    const timer = req.complete ? undefined : setTimeout(answerStalledBody, timeoutMs, req, res, context, metrics);
    if (
      declared === undefined ||
      type === undefined ||
      headers['content-encoding'] !== undefined ||
      headers['transfer-encoding'] !== undefined ||
      !PLAIN_JSON_TYPES.has(type.toLowerCase()) ||
      !/^\d{1,9}$/.test(declared) ||
      Number(declared) > limitBytes ||
      req.readableEnded
    ) {
      if (timer) {
        const clear = () => clearTimeout(timer);
        req.once('end', clear);
        req.once('close', clear);
        res.once('close', clear);
      }
      fullParser().then(
        (parse) =>
          parse(req, res, (error) => {
            context.body = (req as IncomingMessage & { body?: unknown }).body;
            done(error);
          }),
        (error: BodyError) => done(error),
      );
      return;
    }
    const chunks: Buffer[] = [];
    let finished = false;
    const finish = (error?: BodyError) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('aborted', onAborted);
      req.off('error', onAborted);
      if (!res.headersSent) done(error);
    };
    const onData = (chunk: Buffer) => chunks.push(chunk);
    const onAborted = () => finish(bodyError('request.aborted', 'request aborted'));
    const onEnd = () => {
      let text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8');
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      if (text.length === 0) {
        context.body = {};
        finish();
        return;
      }
      let first = 0;
      while (first < text.length && JSON_WHITESPACE.has(text[first]!)) first++;
      if (text[first] !== '{' && text[first] !== '[') {
        finish(bodyError('entity.parse.failed', 'Unexpected token in JSON'));
        return;
      }
      try {
        context.body = JSON.parse(text);
      } catch (error) {
        finish(bodyError('entity.parse.failed', error instanceof Error ? error.message : 'Invalid JSON'));
        return;
      }
      finish();
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('aborted', onAborted);
    req.on('error', onAborted);
  };
}

/** A body not received in time: 408 JSON, and the connection closed once it is written. */
function answerStalledBody(
  req: IncomingMessage,
  res: ServerResponse,
  context: RequestContext,
  metrics: GatewayMetrics,
): void {
  if (req.complete || res.headersSent || req.socket.destroyed) return;
  if (context.gateway !== 'none') metrics.rejected.inc({ gateway: context.gateway, reason: 'body_timeout' });
  res.setHeader('Connection', 'close');
  sendError(res, 408, 'Request body not received in time');
  res.once('finish', () => req.socket.destroy());
}

/**
 * In front of every method of a gateway's path: POST and OPTIONS only, the CORS pre-flight answered, and 503 while
 * the server drains. True when the request goes on (a POST to serve).
 */
export function gatewayGuard(
  gateway: GatewayName,
  corsOrigins: readonly string[],
  draining: () => boolean,
  metrics: GatewayMetrics,
) {
  return (req: IncomingMessage, res: ServerResponse): boolean => {
    if (req.method !== 'POST' && req.method !== 'OPTIONS') {
      res.setHeader('Allow', 'OPTIONS, POST');
      sendError(res, 405, 'Method not allowed');
      return false;
    }
    const origin = verifyRequestOrigin(corsOrigins, req.headers.origin);
    if (req.method === 'OPTIONS') {
      if (!origin.success) {
        sendJson(res, 400, origin.error);
        return false;
      }
      // No body, hence no content headers.
      res.writeHead(204, origin.headers).end();
      return false;
    }
    // Not pre-flighted requests go through without CORS headers, so non-browser clients work.
    if (origin.success) for (const [name, value] of Object.entries(origin.headers)) res.setHeader(name, value);
    if (draining()) {
      res.setHeader('Connection', 'close');
      metrics.rejected.inc({ gateway, reason: 'shutting_down' });
      sendError(res, 503, 'Server is shutting down');
      return false;
    }
    return true;
  };
}

/** Requests holding a processing slot, per gateway. */
export class ProcessingSlots {
  readonly #taken = new Map<GatewayName, number>(GATEWAY_NAMES.map((name) => [name, 0]));

  /** Takes a slot unless the gateway already has `limit` requests in progress. */
  tryTake(gateway: GatewayName, limit: number): boolean {
    const current = this.#taken.get(gateway) ?? 0;
    if (current >= limit) return false;
    this.#taken.set(gateway, current + 1);
    return true;
  }

  release(gateway: GatewayName): void {
    this.#taken.set(gateway, (this.#taken.get(gateway) ?? 0) - 1);
  }

  /** Requests in progress, all gateways together. */
  total(): number {
    let sum = 0;
    for (const value of this.#taken.values()) sum += value;
    return sum;
  }
}

/**
 * A request takes a processing slot only once its body is read (this runs after the body reader): callers that
 * are slow to send theirs cannot hold the slots of everyone else. Over the limit: 429 with Retry-After. True when
 * the request holds a slot, until its answer is finished or its connection closes.
 */
export function admission(
  gateway: GatewayName,
  maxConcurrency: number,
  slots: ProcessingSlots,
  metrics: GatewayMetrics,
  retryAfterSeconds: number,
) {
  const retryAfter = String(retryAfterSeconds);
  const inFlight = metrics.inFlight.labels({ gateway });
  return (res: ServerResponse): boolean => {
    if (!slots.tryTake(gateway, maxConcurrency)) {
      metrics.rejected.inc({ gateway, reason: 'concurrency' });
      res.setHeader('Retry-After', retryAfter);
      sendError(res, 429, 'Too many requests');
      return false;
    }
    inFlight.inc();
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      slots.release(gateway);
      inFlight.dec();
    };
    // 'close' follows 'finish' and also comes alone when the caller goes away first.
    res.once('close', release);
    return true;
  };
}

/** Everything no route matched: JSON 404, never an HTML page. */
export function notFound(res: ServerResponse): void {
  sendError(res, 404, 'Not found');
}

/** Body errors and anything else thrown on the way to a route: JSON with a stable shape; 4xx when the request was at fault. */
export function answerError(
  error: BodyError,
  res: ServerResponse,
  context: RequestContext,
  metrics: GatewayMetrics,
  logger: Logger,
): void {
  switch (error?.type) {
    case 'entity.too.large':
      if (context.gateway !== 'none') metrics.rejected.inc({ gateway: context.gateway, reason: 'body_too_large' });
      sendError(res, 413, 'Request body too large');
      return;
    case 'entity.parse.failed':
      sendError(res, 400, 'Invalid request body');
      return;
    case 'encoding.unsupported':
    case 'charset.unsupported':
      sendError(res, 415, 'Unsupported content encoding');
      return;
    case 'request.aborted':
    case 'request.size.invalid':
      sendError(res, 400, 'Invalid request body');
      return;
  }
  const status = typeof error?.status === 'number' && error.status >= 400 && error.status < 500 ? error.status : 500;
  if (status >= 500) logger.error({ err: error }, 'unexpected gateway error');
  sendError(res, status, status >= 500 ? 'Internal server error' : 'Invalid request');
}
