// One express 5 server for the three gateways (airnode-facts §6): HTTP gateway, HTTP signed-data gateway and
// OEV gateway, each only when enabled. Paths, bodies and error messages follow the reference's local server;
// on top of it: in-flight limits per gateway (429), a body size limit (413), JSON for every error (never an
// HTML page), /healthz /readyz /metrics, and a graceful shutdown that drains in-flight requests.
import { randomUUID } from 'node:crypto';
import { createServer, type Server, STATUS_CODES } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import { type Config, DEFAULT_GATEWAY_SERVER_PORT, GATEWAY_BASE_PATHS } from '../config/index.js';
import {
  createLogger,
  createMetricsRegistry,
  type Logger,
  type ObservabilityServer,
  observabilityHandler,
  redact,
  registerSecret,
  secondsSince,
  startObservabilityServer,
} from '../observability/index.js';
import { decodeParameters } from '../ois/abi.js';
import type { ApiCredential, EndpointCall, EndpointResult, Ois } from '../ois/index.js';
import { recoverSignersInPool } from '../ois/worker-pool.js';
import { nodeWallet } from '../protocol/wallet.js';
import { coalescingKey, InFlightCalls } from './coalescing.js';
import { gatewayMetrics, observeAnswer } from './metrics.js';
import { cachingSigner } from './signature-cache.js';
import {
  type NodeSigner,
  signHttpSignedData,
  signOevData,
  signOevDataBodySchema,
  verifySignOevDataRequestAsync,
} from './signing.js';

export const DEFAULT_PATH_KEY = '01234567-abcd-abcd-abcd-012345678abc';
export const HTTP_BASE_PATH = GATEWAY_BASE_PATHS.httpGateway;
export const HTTP_SIGNED_DATA_BASE_PATH = GATEWAY_BASE_PATHS.httpSignedDataGateway;
export const OEV_BASE_PATH = GATEWAY_BASE_PATHS.oevGateway;
export const DEFAULT_BODY_LIMIT_BYTES = 64 * 1024;
export const DEFAULT_RETRY_AFTER_SECONDS = 1;
export const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;
/** A caller has this long to send its request headers, and this long for its body once they arrived. */
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
export const DEFAULT_BODY_TIMEOUT_MS = 10_000;

export type GatewayName = 'httpGateway' | 'httpSignedDataGateway' | 'oevGateway';
export const GATEWAY_NAMES: readonly GatewayName[] = ['httpGateway', 'httpSignedDataGateway', 'oevGateway'];

// ---------------------------------------------------------------------------------------------------------------
// The engine (src/ois) is injected, so that tests and benchmarks can pass the real one or a stand-in.

export type { EndpointCall, EndpointResult };
export type CallEndpoint = (call: EndpointCall) => Promise<EndpointResult>;

// ---------------------------------------------------------------------------------------------------------------
// Request validation, as the reference (workers/local-gateways/{server,validation}.ts)

// Extra fields are allowed (no .strict()), as in the reference.
const httpRequestBodySchema = z.object({ parameters: z.record(z.string(), z.any()) });
const httpSignedDataBodySchema = z.object({ encodedParameters: z.string() });

export type ErrorBody = { message: string };
export type Validation<T> = ({ success: true } & T) | { success: false; statusCode: number; error: ErrorBody };

type GatewayConfig = { enabled: true; maxConcurrency: number; corsOrigins: string[] } | { enabled: false };

function findTrigger(config: Config, list: 'http' | 'httpSignedData', endpointId: string) {
  return config.triggers[list].find((trigger) => trigger.endpointId === endpointId);
}

export function validateHttpRequest(
  config: Config,
  body: unknown,
  endpointId: string,
): Validation<{ parameters: Record<string, unknown>; trigger: Config['triggers']['http'][number] }> {
  const parsed = httpRequestBodySchema.safeParse(body);
  if (!parsed.success) return { success: false, statusCode: 400, error: { message: 'Invalid request body' } };
  const trigger = findTrigger(config, 'http', endpointId);
  if (!trigger) {
    return { success: false, statusCode: 400, error: { message: `Unable to find endpoint with ID:'${endpointId}'` } };
  }
  return { success: true, parameters: parsed.data.parameters, trigger };
}

export function validateHttpSignedDataRequest(
  config: Config,
  body: unknown,
  endpointId: string,
): Validation<{
  encodedParameters: string;
  parameters: Record<string, unknown>;
  trigger: Config['triggers']['httpSignedData'][number];
}> {
  const parsed = httpSignedDataBodySchema.safeParse(body);
  if (!parsed.success) return { success: false, statusCode: 400, error: { message: 'Invalid request body' } };
  const { encodedParameters } = parsed.data;
  // The reference decodes before it looks the endpoint up, so a bad encoding wins over an unknown endpoint.
  let parameters: Record<string, unknown>;
  try {
    parameters = decodeParameters(encodedParameters);
  } catch {
    return {
      success: false,
      statusCode: 400,
      error: { message: `Request contains invalid encodedParameters: ${encodedParameters}` },
    };
  }
  const trigger = findTrigger(config, 'httpSignedData', endpointId);
  if (!trigger) {
    return { success: false, statusCode: 400, error: { message: `Unable to find endpoint with ID:'${endpointId}'` } };
  }
  return { success: true, encodedParameters, parameters, trigger };
}

/** The reference's verifyRequestOrigin: "*" or the exact Origin; the matched entry is echoed. */
export function verifyRequestOrigin(
  allowedOrigins: readonly string[],
  origin: string | undefined,
): { success: true; headers: Record<string, string> } | { success: false; error: ErrorBody } {
  const allowed =
    allowedOrigins.find((entry) => entry === '*') || (origin && allowedOrigins.find((entry) => entry === origin));
  if (allowed) {
    return {
      success: true,
      headers: {
        'Access-Control-Allow-Origin': allowed,
        'Access-Control-Allow-Methods': 'OPTIONS,POST',
        'Access-Control-Allow-Headers': 'Content-Type',
      },
    };
  }
  return { success: false, error: { message: 'CORS origin verification failed.' } };
}

// ---------------------------------------------------------------------------------------------------------------
// Metrics

// ---------------------------------------------------------------------------------------------------------------
// The app

export type GatewayAppOptions = {
  config: Config;
  callEndpoint: CallEndpoint;
  /** The node key; derived from nodeSettings.nodeWalletMnemonic when absent. */
  signer?: NodeSigner;
  logger?: Logger;
  registry?: Registry;
  /** Path key in place of the reference's fixed one, e.g. taken from a secret. */
  pathKey?: string;
  bodyLimitBytes?: number;
  /** Time allowed to receive a request body once its headers arrived (408 after). */
  bodyTimeoutMs?: number;
  /** False: /healthz, /readyz and /metrics are not served by this app (they have a port of their own). */
  serveObservability?: boolean;
  retryAfterSeconds?: number;
  /** Extra readiness condition (e.g. the engine warmed up). */
  ready?: () => boolean;
};

export type GatewayApp = {
  app: express.Express;
  registry: Registry;
  logger: Logger;
  /** Requests in progress, all gateways together. */
  inFlight(): number;
  /** Refuse new gateway requests (503) and report not ready; in-flight ones complete. */
  startDraining(): void;
  /** What /readyz answers. */
  readiness(): { ready: boolean; reason?: string };
  enabledGateways: GatewayName[];
  paths: Partial<Record<GatewayName, string>>;
};

/** What the bookkeeping knows of one request; the request id is drawn when something first reads it (a log line). */
class RequestContext {
  gateway: GatewayName | 'none' = 'none';
  endpoint = '-';
  #requestId: string | undefined;

  get requestId(): string {
    this.#requestId ??= randomUUID();
    return this.#requestId;
  }
}

function sendError(res: Response, status: number, message: string): void {
  if (!res.headersSent) res.status(status).json({ message });
}

function errorText(error: unknown): string {
  // Same rendering as the reference's `err.toString()` of an Error built from the message.
  return `Error: ${error instanceof Error ? error.message : String(error)}`;
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
function leanJsonBody(
  limitBytes: number,
  fallback: (req: Request, res: Response, next: NextFunction) => void,
): (req: Request, res: Response, next: NextFunction) => void {
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
 * The status of a failed endpoint call: a caller's parameters that cannot be used 400, an API answer the node
 * refuses 502, and everything else 500 with the engine's message, as the reference answers.
 */
function failureStatus(result: { cause?: 'parameters' | 'upstream' }): number {
  if (result.cause === 'parameters') return 400;
  if (result.cause === 'upstream') return 502;
  return 500;
}

export function createGatewayApp(options: GatewayAppOptions): GatewayApp {
  const { config, callEndpoint } = options;
  const settings = config.nodeSettings;
  const logger =
    options.logger ??
    createLogger({ format: settings.logFormat, level: settings.logLevel, bindings: { component: 'gateway' } });
  const registry = options.registry ?? createMetricsRegistry({ defaultMetrics: true });
  const metrics = gatewayMetrics(registry);
  let signer: NodeSigner | undefined;
  const nodeSigner = (): NodeSigner => {
    signer ??= cachingSigner(options.signer ?? nodeWallet(settings.nodeWalletMnemonic!));
    return signer;
  };
  const endpointCalls = new InFlightCalls<EndpointResult>();
  const pathKey = options.pathKey ?? DEFAULT_PATH_KEY;
  // A private path key is a credential: keep it out of the logs (the public default is not).
  if (options.pathKey && options.pathKey !== DEFAULT_PATH_KEY) registerSecret(options.pathKey);
  const retryAfter = String(options.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS);
  const inFlight = new Map<GatewayName, number>(GATEWAY_NAMES.map((name) => [name, 0]));
  let draining = false;

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  // Every JSON answer leaves through the secret redactor: an upstream answer or an error that echoes an API
  // key or another secret reaches the caller with "[REDACTED]" in its place. Set once on this app's response
  // prototype (express gives each app its own), not per request.
  app.response.json = function redactedJson(this: Response, body: unknown) {
    const text = redact(JSON.stringify(body) ?? 'null');
    if (!this.get('Content-Type')) this.set('Content-Type', 'application/json; charset=utf-8');
    return this.send(text);
  };

  // Per-request bookkeeping: request id, metrics and a log line once the response is finished.
  app.use((req: Request, res: Response, next: NextFunction) => {
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
  });

  const readiness = () => {
    if (draining) return { ready: false, reason: 'shutting down' };
    if (options.ready && !options.ready()) return { ready: false, reason: 'not ready' };
    return { ready: true };
  };
  const health = observabilityHandler({ registry, ready: readiness });
  if (options.serveObservability !== false) {
    app.use((req, res, next) => {
      void health(req, res, next);
    });
  }

  const bodyLimitBytes = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  const jsonBody = leanJsonBody(bodyLimitBytes, express.json({ limit: bodyLimitBytes }));
  const bodyTimeoutMs = options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS;

  // A body that does not arrive in time ends the request with 408 and closes the connection, so a caller that
  // sends headers and then nothing holds a socket for seconds, never a processing slot.
  const bodyDeadline = (req: Request, res: Response, next: NextFunction) => {
    if (req.complete) {
      next();
      return;
    }
    const timer = setTimeout(() => {
      if (req.complete || res.headersSent) return;
      const context = res.locals.context as RequestContext;
      if (context.gateway !== 'none') metrics.rejected.inc({ gateway: context.gateway, reason: 'body_timeout' });
      res.set('Connection', 'close');
      sendError(res, 408, 'Request body not received in time');
      res.on('finish', () => req.socket.destroy());
    }, bodyTimeoutMs);
    const clear = () => clearTimeout(timer);
    req.on('end', clear);
    req.on('close', clear);
    res.on('close', clear);
    next();
  };
  const enabledGateways: GatewayName[] = [];
  const paths: Partial<Record<GatewayName, string>> = {};

  function mount(
    gateway: GatewayName,
    path: string,
    handle: (req: Request, res: Response, context: RequestContext) => Promise<void>,
  ): void {
    const gatewayConfig = settings[gateway] as GatewayConfig;
    if (!gatewayConfig.enabled) {
      logger.info({ gateway }, 'gateway not enabled');
      return;
    }
    enabledGateways.push(gateway);
    paths[gateway] = path;
    const { corsOrigins, maxConcurrency } = gatewayConfig;

    // One route per gateway: the router matches the path and decodes :endpointId once per request.
    const route = app.route(path);
    route.all((req: Request, res: Response, next: NextFunction) => {
      const context = res.locals.context as RequestContext;
      context.gateway = gateway;
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
      if (draining) {
        res.set('Connection', 'close');
        metrics.rejected.inc({ gateway, reason: 'shutting_down' });
        sendError(res, 503, 'Server is shutting down');
        return;
      }
      next();
    });

    // A request takes a processing slot only once its body is read: callers that are slow to send theirs
    // cannot hold the slots of everyone else.
    const admit = (_req: Request, res: Response, next: NextFunction) => {
      const current = inFlight.get(gateway)!;
      if (current >= maxConcurrency) {
        metrics.rejected.inc({ gateway, reason: 'concurrency' });
        res.set('Retry-After', retryAfter);
        sendError(res, 429, 'Too many requests');
        return;
      }
      inFlight.set(gateway, current + 1);
      metrics.inFlight.inc({ gateway });
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        inFlight.set(gateway, inFlight.get(gateway)! - 1);
        metrics.inFlight.dec({ gateway });
      };
      res.on('finish', release);
      res.on('close', release);
      next();
    };

    route.post(bodyDeadline, jsonBody, admit, async (req: Request, res: Response) => {
      const context = res.locals.context as RequestContext;
      try {
        await handle(req, res, context);
      } catch (error) {
        // A bug of ours or an engine crash on a valid request: 500 in the reference's error shape, with the
        // request id to find the log line rather than an internal message.
        metrics.failures.inc({ gateway, endpoint: context.endpoint, stage: 'internal' });
        logger.error({ requestId: context.requestId, err: error }, 'gateway handler error');
        sendError(res, 500, `Error: Internal error (request ${context.requestId})`);
      }
    });
    logger.info({ gateway, path }, 'gateway listening');
  }

  async function runEndpoint(
    gateway: GatewayName,
    context: RequestContext,
    trigger: { oisTitle: string; endpointName: string },
    parameters: Record<string, unknown>,
  ): Promise<EndpointResult> {
    const ois = config.ois.find((candidate) => candidate.title === trigger.oisTitle);
    if (!ois) return { success: false, errorMessage: `Unknown OIS title: ${trigger.oisTitle}` };
    const apiCredentials = config.apiCredentials.filter((credential) => credential.oisTitle === trigger.oisTitle);
    const start = process.hrtime.bigint();
    let outcome = 'error';
    try {
      const call = endpointCalls.run(coalescingKey(ois as unknown as Ois, trigger.endpointName, parameters), () =>
        callEndpoint({
          ois: ois as unknown as Ois,
          endpointName: trigger.endpointName,
          parameters,
          apiCredentials: apiCredentials as ApiCredential[],
        }),
      );
      if (call.shared) metrics.coalesced.inc({ gateway, endpoint: context.endpoint });
      const result = await call.result;
      outcome = result.success ? 'success' : result.rawValue !== undefined ? 'extraction_failed' : 'failed';
      return result;
    } finally {
      metrics.apiCall.observe({ gateway, endpoint: context.endpoint, outcome }, secondsSince(start));
    }
  }

  mount('httpGateway', `${HTTP_BASE_PATH}/${pathKey}/:endpointId`, async (req, res, context) => {
    const endpointId = String(req.params.endpointId);
    const validation = validateHttpRequest(config, req.body, endpointId);
    if (!validation.success) {
      res.status(validation.statusCode).json(validation.error);
      return;
    }
    context.endpoint = endpointId;
    const result = await runEndpoint('httpGateway', context, validation.trigger, validation.parameters);
    if (result.success) {
      res.status(200).json({ rawValue: result.rawValue, encodedValue: result.encodedValue, values: result.values });
      return;
    }
    if (result.rawValue !== undefined) {
      // The reference's special case: a successful API call whose extraction failed still answers 200.
      logger.warn({ requestId: context.requestId, reason: result.errorMessage }, 'extraction failed after API call');
      res.status(200).json({ rawValue: result.rawValue });
      return;
    }
    metrics.failures.inc({ gateway: 'httpGateway', endpoint: endpointId, stage: 'endpoint' });
    logger.warn({ requestId: context.requestId, reason: result.errorMessage }, 'endpoint call failed');
    sendError(res, failureStatus(result), errorText(result.errorMessage));
  });

  mount('httpSignedDataGateway', `${HTTP_SIGNED_DATA_BASE_PATH}/${pathKey}/:endpointId`, async (req, res, context) => {
    const endpointId = String(req.params.endpointId);
    const validation = validateHttpSignedDataRequest(config, req.body, endpointId);
    if (!validation.success) {
      res.status(validation.statusCode).json(validation.error);
      return;
    }
    context.endpoint = endpointId;
    const result = await runEndpoint('httpSignedDataGateway', context, validation.trigger, validation.parameters);
    if (!result.success) {
      metrics.failures.inc({ gateway: 'httpSignedDataGateway', endpoint: endpointId, stage: 'endpoint' });
      logger.warn({ requestId: context.requestId, reason: result.errorMessage }, 'endpoint call failed');
      sendError(res, failureStatus(result), errorText(result.errorMessage));
      return;
    }
    let signed: ReturnType<typeof signHttpSignedData>;
    try {
      signed = signHttpSignedData({
        signer: nodeSigner(),
        endpointId,
        encodedParameters: validation.encodedParameters,
        encodedValue: result.encodedValue,
        timestamp: result.timestamp,
      });
    } catch (error) {
      metrics.failures.inc({ gateway: 'httpSignedDataGateway', endpoint: endpointId, stage: 'signing' });
      sendError(res, 500, errorText(error));
      return;
    }
    res
      .status(200)
      .json({ timestamp: signed.timestamp, encodedValue: signed.encodedValue, signature: signed.signature });
  });

  mount('oevGateway', `${OEV_BASE_PATH}/${pathKey}`, async (req, res, context) => {
    const parsed = signOevDataBodySchema.safeParse(req.body);
    if (!parsed.success) {
      sendError(res, 400, 'Invalid request body');
      return;
    }
    const signerNow = nodeSigner();
    // Signature recovery costs milliseconds per beacon: it runs on the worker pool, never on this thread.
    const verification = await verifySignOevDataRequestAsync(parsed.data, signerNow.address, recoverSignersInPool);
    if (!verification.success) {
      logger.debug({ requestId: context.requestId, reason: verification.reason }, 'OEV request rejected');
      res.status(verification.statusCode).json(verification.error);
      return;
    }
    try {
      res.status(200).json(signOevData(signerNow, verification.beacons, verification.oevUpdateHash));
    } catch (error) {
      metrics.failures.inc({ gateway: 'oevGateway', endpoint: '-', stage: 'signing' });
      sendError(res, 500, `Error: Can't sign the data: ${errorText(error)}`);
    }
  });

  // Everything else: JSON 404, never express's HTML page.
  app.use((_req: Request, res: Response) => {
    sendError(res, 404, 'Not found');
  });

  // Body parser and other errors: JSON with a stable shape; 4xx when the request was at fault.
  app.use((error: BodyParserError, _req: Request, res: Response, _next: NextFunction) => {
    const context = res.locals.context as RequestContext | undefined;
    const gateway = context?.gateway ?? 'none';
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
  });

  return {
    app,
    registry,
    logger,
    inFlight: () => [...inFlight.values()].reduce((sum, value) => sum + value, 0),
    startDraining: () => {
      draining = true;
    },
    readiness,
    enabledGateways,
    paths,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The server

export type StartGatewayOptions = Omit<GatewayAppOptions, 'config' | 'callEndpoint'> & {
  callEndpoint?: CallEndpoint;
  /** Port; default gatewayServerPort of a local cloudProvider, else 3000. 0 picks a free port. */
  port?: number;
  host?: string;
  drainTimeoutMs?: number;
  /** Time allowed for a caller's request headers (Node answers 408 after it). */
  headersTimeoutMs?: number;
  /**
   * A port of their own for /healthz, /readyz and /metrics (0 = any free port), which the caller-facing port
   * then does not serve. Absent: they are served on the gateway port.
   */
  metricsPort?: number;
  metricsHost?: string;
};

export type GatewayServer = {
  port: number;
  /** The port of /healthz, /readyz and /metrics when they have their own (metricsPort). */
  metricsPort?: number;
  server: Server;
  gateway: GatewayApp;
  /** Stops accepting, drains in-flight requests (up to drainTimeoutMs), then closes every connection. */
  close(): Promise<void>;
};

export function configuredPort(config: Config): number {
  const cloudProvider = config.nodeSettings.cloudProvider as { type: string; gatewayServerPort?: number };
  return (cloudProvider.type === 'local' && cloudProvider.gatewayServerPort) || DEFAULT_GATEWAY_SERVER_PORT;
}

/** The real engine, loaded on first use so that an app with an injected engine does not pull it in. */
async function loadEngine(): Promise<CallEndpoint> {
  return (await import('../ois/index.js')).callEndpoint;
}

export async function startGatewayServer(config: Config, options: StartGatewayOptions = {}): Promise<GatewayServer> {
  const callEndpoint = options.callEndpoint ?? (await loadEngine());
  const separateObservability = options.metricsPort !== undefined;
  const gateway = createGatewayApp({ ...options, config, callEndpoint, serveObservability: !separateObservability });
  const { logger } = gateway;
  if (gateway.enabledGateways.length === 0) logger.info('no gateway enabled: serving only /healthz, /readyz, /metrics');

  const sockets = new Set<Socket>();
  const headersTimeout = options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS;
  const server = createServer(
    {
      headersTimeout,
      // The whole request (headers and body); the app's own body deadline answers first, with a clear message.
      requestTimeout: headersTimeout + (options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS) + 1_000,
      // How often Node checks those two timeouts (its default, 30 s, would let a stalled socket live that long).
      connectionsCheckingInterval: Math.min(1_000, headersTimeout),
    },
    gateway.app,
  );
  server.on('clientError', answerClientError);
  server.listen(options.port ?? configuredPort(config), options.host ?? '0.0.0.0');
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const port = (server.address() as AddressInfo).port;
  let observability: ObservabilityServer | undefined;
  if (separateObservability) {
    try {
      observability = await startObservabilityServer({
        registry: gateway.registry,
        ready: gateway.readiness,
        port: options.metricsPort,
        host: options.metricsHost ?? options.host ?? '0.0.0.0',
      });
    } catch (error) {
      server.close();
      server.closeAllConnections();
      throw error;
    }
  }
  logger.info(
    { port, gateways: gateway.enabledGateways, ...(observability ? { metricsPort: observability.port } : {}) },
    'gateway server running',
  );

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      gateway.startDraining();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const deadline = Date.now() + (options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS);
      while (gateway.inFlight() > 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        // Keep-alive connections that finished their request become idle: close them as they do.
        server.closeIdleConnections();
      }
      if (gateway.inFlight() > 0) logger.warn({ inFlight: gateway.inFlight() }, 'drain timeout: closing connections');
      server.closeAllConnections();
      for (const socket of sockets) socket.destroy();
      await closed;
      await observability?.close();
      logger.info('gateway server stopped');
    })();
    return closing;
  };
  return { port, server, gateway, close, ...(observability ? { metricsPort: observability.port } : {}) };
}

const CLIENT_ERROR_MESSAGES: Record<number, string> = {
  400: 'Invalid request',
  408: 'Request not received in time',
  413: 'Request too large',
  431: 'Request headers too large',
};

/** Node's own refusals (malformed request, headers too large or too slow) as JSON like every other error. */
function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const status =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? 431
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' || error.code === 'ERR_HTTP_HEADERS_TIMEOUT'
        ? 408
        : error.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW'
          ? 413
          : 400;
  const body = JSON.stringify({ message: CLIENT_ERROR_MESSAGES[status] });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
