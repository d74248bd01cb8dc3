// The express middleware of the gateway server, each a function of what it needs: per-request bookkeeping (metrics
// and a log line once answered), the lean JSON body parser, the body deadline, the per-gateway guard (method,
// CORS, draining), admission to a processing slot, and the JSON answers of the 404 and error handlers. The routes
// (routes.ts) run behind them; app.ts puts them in order.
import { randomUUID } from 'node:crypto';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { type Logger, secondsSince } from '../observability/index.js';
import { type GatewayMetrics, observeAnswer } from './metrics.js';
import { verifyRequestOrigin } from './validation.js';

export type GatewayName = 'httpGateway' | 'httpSignedDataGateway' | 'oevGateway';
export const GATEWAY_NAMES: readonly GatewayName[] = ['httpGateway', 'httpSignedDataGateway', 'oevGateway'];

/** What the bookkeeping knows of one request; the request id is drawn when something first reads it (a log line). */
export class RequestContext {
  gateway: GatewayName | 'none' = 'none';
  endpoint = '-';
  #requestId: string | undefined;

  get requestId(): string {
    this.#requestId ??= randomUUID();
    return this.#requestId;
  }
}

/** The context the bookkeeping middleware attached to this response. */
export function contextOf(res: Response): RequestContext {
  return res.locals.context;
}

export function sendError(res: Response, status: number, message: string): void {
  if (!res.headersSent) res.status(status).json({ message });
}

export function errorText(error: unknown): string {
  // Same rendering as the reference's `err.toString()` of an Error built from the message.
  return `Error: ${error instanceof Error ? error.message : String(error)}`;
}

/** Per-request bookkeeping: a context, then metrics and a log line once a gateway's answer is finished. */
export function requestBookkeeping(metrics: GatewayMetrics, logger: Logger): RequestHandler {
  return (req, res, next) => {
    const start = process.hrtime.bigint();
    const context = new RequestContext();
    res.locals.context = context;
    res.on('finish', () => {
      if (context.gateway === 'none') return;
      const labels = { gateway: context.gateway, endpoint: context.endpoint, status: String(res.statusCode) };
      observeAnswer(metrics, labels, secondsSince(start));
      if (res.statusCode >= 500) {
        logger.error({ requestId: context.requestId, ...labels, method: req.method }, 'gateway request failed');
      } else if (logger.isLevelEnabled('debug')) {
        logger.debug({ requestId: context.requestId, ...labels, method: req.method }, 'gateway request served');
      }
    });
    next();
  };
}

type BodyParserError = Error & { type?: string; status?: number };

const PLAIN_JSON_TYPES = new Set([
  'application/json',
  'application/json; charset=utf-8',
  'application/json;charset=utf-8',
]);
const JSON_WHITESPACE = new Set([' ', '\t', '\n', '\r']);

/** An error shaped as body-parser's, so that the error handler answers it the same way. */
function bodyError(type: string, message: string): BodyParserError {
  return Object.assign(new Error(message), { type, status: 400 });
}

/**
 * express.json() for the plain case, with less work per request: a UTF-8 JSON body (no content encoding) of a
 * declared length within the limit. It answers exactly as body-parser does (strict JSON: an object or an array,
 * an empty body is {}, a UTF-8 byte order mark is dropped; errors of the same types), and leaves every other
 * request (chunked, compressed, another charset or type, too large, no length) to body-parser itself.
 */
export function jsonBody(limitBytes: number): RequestHandler {
  const fallback = express.json({ limit: limitBytes });
  return (req, res, next) => {
    const { headers } = req;
    const declared = headers['content-length'];
    const type = headers['content-type'];
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
      fallback(req, res, next);
      return;
    }
    const chunks: Buffer[] = [];
    let done = false;
    const finish = (error?: BodyParserError) => {
      if (done) return;
      done = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('aborted', onAborted);
      req.off('error', onAborted);
      next(error);
    };
    const onData = (chunk: Buffer) => chunks.push(chunk);
    const onAborted = () => finish(bodyError('request.aborted', 'request aborted'));
    const onEnd = () => {
      let text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8');
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      if (text.length === 0) {
        req.body = {};
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
        req.body = JSON.parse(text);
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

/**
 * A body that does not arrive in time ends the request with 408 and closes the connection, so a caller that
 * sends headers and then nothing holds a socket for seconds, never a processing slot.
 */
export function bodyDeadline(timeoutMs: number, metrics: GatewayMetrics): RequestHandler {
  return (req, res, next) => {
    if (req.complete) {
      next();
      return;
    }
    const timer = setTimeout(() => {
      if (req.complete || res.headersSent) return;
      const context = contextOf(res);
      if (context.gateway !== 'none') metrics.rejected.inc({ gateway: context.gateway, reason: 'body_timeout' });
      res.set('Connection', 'close');
      sendError(res, 408, 'Request body not received in time');
      res.on('finish', () => req.socket.destroy());
    }, timeoutMs);
    const clear = () => clearTimeout(timer);
    req.on('end', clear);
    req.on('close', clear);
    res.on('close', clear);
    next();
  };
}

/**
 * In front of every method of a gateway's path: POST and OPTIONS only, the CORS pre-flight answered, and 503 while
 * the server drains.
 */
export function gatewayGuard(
  gateway: GatewayName,
  corsOrigins: readonly string[],
  draining: () => boolean,
  metrics: GatewayMetrics,
): RequestHandler {
  return (req, res, next) => {
    contextOf(res).gateway = gateway;
    if (req.method !== 'POST' && req.method !== 'OPTIONS') {
      res.set('Allow', 'OPTIONS, POST');
      sendError(res, 405, 'Method not allowed');
      return;
    }
    const origin = verifyRequestOrigin(corsOrigins, req.headers.origin);
    if (req.method === 'OPTIONS') {
      if (!origin.success) {
        res.status(400).json(origin.error);
        return;
      }
      res.set(origin.headers).status(204).send('');
      return;
    }
    // Not pre-flighted requests go through without CORS headers, so non-browser clients work.
    if (origin.success) res.set(origin.headers);
    if (draining()) {
      res.set('Connection', 'close');
      metrics.rejected.inc({ gateway, reason: 'shutting_down' });
      sendError(res, 503, 'Server is shutting down');
      return;
    }
    next();
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
 * A request takes a processing slot only once its body is read (this runs after the body parser): callers that
 * are slow to send theirs cannot hold the slots of everyone else. Over the limit: 429 with Retry-After.
 */
export function admission(
  gateway: GatewayName,
  maxConcurrency: number,
  slots: ProcessingSlots,
  metrics: GatewayMetrics,
  retryAfterSeconds: number,
): RequestHandler {
  const retryAfter = String(retryAfterSeconds);
  return (_req, res, next) => {
    if (!slots.tryTake(gateway, maxConcurrency)) {
      metrics.rejected.inc({ gateway, reason: 'concurrency' });
      res.set('Retry-After', retryAfter);
      sendError(res, 429, 'Too many requests');
      return;
    }
    metrics.inFlight.inc({ gateway });
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      slots.release(gateway);
      metrics.inFlight.dec({ gateway });
    };
    res.on('finish', release);
    res.on('close', release);
    next();
  };
}

/** Everything no route matched: JSON 404, never express's HTML page. */
export function notFound(_req: Request, res: Response): void {
  sendError(res, 404, 'Not found');
}

/** Body parser and other errors: JSON with a stable shape; 4xx when the request was at fault. */
export function errorHandler(metrics: GatewayMetrics, logger: Logger) {
  return (error: BodyParserError, _req: Request, res: Response, _next: NextFunction): void => {
    const gateway = contextOf(res)?.gateway ?? 'none';
    switch (error.type) {
      case 'entity.too.large':
        if (gateway !== 'none') metrics.rejected.inc({ gateway, reason: 'body_too_large' });
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
    const status = typeof error.status === 'number' && error.status >= 400 && error.status < 500 ? error.status : 500;
    if (status >= 500) logger.error({ err: error }, 'unexpected gateway error');
    sendError(res, status, status >= 500 ? 'Internal server error' : 'Invalid request');
  };
}
