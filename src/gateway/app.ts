// The gateway application: one node:http request listener that runs the steps (middleware.ts) and the routes
// (routes.ts) in order, one route per enabled gateway, with the state a request needs (processing slots, draining,
// readiness). No framework: the path of each gateway is matched once with its own regular expression and a request
// goes through plain function calls, not a chain of middleware. No socket here: the server's lifecycle (listen,
// drain, close) is server.ts.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import { type Config, GATEWAY_BASE_PATHS } from '../config/index.js';
import {
  createLogger,
  createMetricsRegistry,
  type Logger,
  OBSERVABILITY_PATHS,
  observabilityHandler,
  registerSecret,
} from '../observability/index.js';
import type { Tracer } from '../observability/tracing.js';
import { registerApiBudgetMetrics } from '../ois/budget.js';
import { nodeWallet } from '../protocol/wallet.js';
import type { GatewayCallers } from './callers.js';
import { gatewayMetrics } from './metrics.js';
import {
  admission,
  answerError,
  type BodyError,
  GATEWAY_NAMES,
  type GatewayName,
  gatewayGuard,
  jsonBodyReader,
  notFound,
  ProcessingSlots,
  RequestContext,
  recordWhenAnswered,
  sendError,
} from './middleware.js';
import { type CallEndpoint, gatewayRoutes, handled } from './routes.js';
import { cachingSigner } from './signature-cache.js';
import type { NodeSigner } from './signing.js';
import { traceGatewayRequest } from './tracing.js';

export type { CallEndpoint, EndpointCall, EndpointResult } from './routes.js';
export { GATEWAY_NAMES, type GatewayName };

export const DEFAULT_PATH_KEY = '01234567-abcd-abcd-abcd-012345678abc';
export const HTTP_BASE_PATH = GATEWAY_BASE_PATHS.httpGateway;
export const HTTP_SIGNED_DATA_BASE_PATH = GATEWAY_BASE_PATHS.httpSignedDataGateway;
export const OEV_BASE_PATH = GATEWAY_BASE_PATHS.oevGateway;
export const DEFAULT_BODY_LIMIT_BYTES = 64 * 1024;
export const DEFAULT_RETRY_AFTER_SECONDS = 1;
export const DEFAULT_BODY_TIMEOUT_MS = 10_000;

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
  /** Tracing (off unless it exports): a server span per gateway request. */
  tracer?: Tracer;
  /** Callers with keys and rates (callers.ts): without a valid key, 401; over its rate, 429. Open to all when absent. */
  callers?: GatewayCallers;
};

export type GatewayApp = {
  /** The request listener of the gateway port. */
  handle: RequestListener;
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

/** The path of each gateway: the HTTP and signed-data ones end in the endpoint id. */
function gatewayPath(gateway: GatewayName, pathKey: string): string {
  if (gateway === 'oevGateway') return `${OEV_BASE_PATH}/${pathKey}`;
  const base = gateway === 'httpGateway' ? HTTP_BASE_PATH : HTTP_SIGNED_DATA_BASE_PATH;
  return `${base}/${pathKey}/:endpointId`;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The matcher of a gateway path, with express' matching rules (which existing clients may rely on): the raw path
 * (before any decoding) without the query, letters in any case, an optional trailing slash, and :endpointId one
 * segment, percent-decoded.
 */
function pathPattern(path: string): RegExp {
  const [literal, parameter] = path.split('/:');
  return new RegExp(`^${escapeRegExp(literal!)}${parameter ? '/([^/]+?)' : ''}/?$`, 'i');
}

/** The path of a request target without its query; an absolute-form target ("http://host/path") gives its path. */
function pathOf(url: string): string | undefined {
  if (url.charCodeAt(0) === 0x2f) {
    const query = url.indexOf('?');
    return query === -1 ? url : url.slice(0, query);
  }
  try {
    return new URL(url).pathname;
  } catch {
    return undefined;
  }
}

/** A percent-decoded path segment; a malformed escape is the caller's fault (400). */
function decodeSegment(segment: string): string {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    throw Object.assign(new Error('Malformed path parameter'), { status: 400 });
  }
}

type Route = {
  gateway: GatewayName;
  pattern: RegExp;
  guard: (req: IncomingMessage, res: ServerResponse) => boolean;
  admit: (res: ServerResponse) => boolean;
  run: (context: RequestContext, res: ServerResponse) => Promise<void>;
};

export function createGatewayApp(options: GatewayAppOptions): GatewayApp {
  const { config, callEndpoint } = options;
  const settings = config.nodeSettings;
  const logger =
    options.logger ??
    createLogger({ format: settings.logFormat, level: settings.logLevel, bindings: { component: 'gateway' } });
  const registry = options.registry ?? createMetricsRegistry({ defaultMetrics: true });
  const metrics = gatewayMetrics(registry);
  registerApiBudgetMetrics(registry);
  let signer: NodeSigner | undefined;
  const nodeSigner = (): NodeSigner => {
    signer ??= cachingSigner(options.signer ?? nodeWallet(settings.nodeWalletMnemonic!));
    return signer;
  };
  const pathKey = options.pathKey ?? DEFAULT_PATH_KEY;
  // A private path key is a credential: keep it out of the logs (the public default is not).
  if (options.pathKey && options.pathKey !== DEFAULT_PATH_KEY) registerSecret(options.pathKey);
  const slots = new ProcessingSlots();
  let draining = false;
  const readiness = () => {
    if (draining) return { ready: false, reason: 'shutting down' };
    if (options.ready && !options.ready()) return { ready: false, reason: 'not ready' };
    return { ready: true };
  };

  const health =
    options.serveObservability !== false ? observabilityHandler({ registry, ready: readiness }) : undefined;
  const bodyLimitBytes = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  const readBody = jsonBodyReader(bodyLimitBytes, options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS, metrics);
  const retryAfterSeconds = options.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS;
  const tracer = options.tracer?.enabled ? options.tracer : undefined;
  const { callers } = options;
  const routes = gatewayRoutes({ config, callEndpoint, nodeSigner, metrics, logger });
  const enabledGateways: GatewayName[] = [];
  const paths: Partial<Record<GatewayName, string>> = {};
  const table: Route[] = [];
  for (const gateway of GATEWAY_NAMES) {
    const gatewayConfig = settings[gateway];
    if (!gatewayConfig.enabled) {
      logger.info({ gateway }, 'gateway not enabled');
      continue;
    }
    const path = gatewayPath(gateway, pathKey);
    enabledGateways.push(gateway);
    paths[gateway] = path;
    table.push({
      gateway,
      pattern: pathPattern(path),
      guard: gatewayGuard(gateway, gatewayConfig.corsOrigins, () => draining, metrics),
      admit: admission(gateway, gatewayConfig.maxConcurrency, slots, metrics, retryAfterSeconds),
      run: handled(gateway, routes[gateway], metrics, logger),
    });
    logger.info({ gateway, path }, 'gateway listening');
  }

  /** The caller's key and rate, before the body is read: a refused caller costs no body, no slot, no API call. */
  function admitCaller(
    gateway: GatewayName,
    req: IncomingMessage,
    res: ServerResponse,
    context: RequestContext,
    registered: GatewayCallers,
  ): boolean {
    const check = registered.check(req);
    if (check.ok) {
      context.caller = check.caller;
      return true;
    }
    if (check.status === 401) {
      metrics.rejected.inc({ gateway, reason: 'unauthorized' });
      res.setHeader('WWW-Authenticate', 'Bearer');
      sendError(res, 401, check.message);
      return false;
    }
    context.caller = check.caller;
    metrics.rejected.inc({ gateway, reason: 'caller_rate' });
    res.setHeader('Retry-After', String(check.retryAfterSeconds));
    sendError(res, 429, 'Too many requests: over the rate of this caller');
    return false;
  }

  /** A gateway request: guard, callers, body, admission, then its route; every failure on the way a JSON answer. */
  function serve(route: Route, endpointId: string | undefined, req: IncomingMessage, res: ServerResponse): void {
    const context = new RequestContext();
    context.gateway = route.gateway;
    recordWhenAnswered(req, res, context, metrics, logger);
    if (tracer) traceGatewayRequest(tracer, req, res, context);
    try {
      if (endpointId !== undefined) context.endpointId = decodeSegment(endpointId);
      if (!route.guard(req, res)) return;
      if (callers && !admitCaller(route.gateway, req, res, context, callers)) return;
      readBody(req, res, context, (error?: BodyError) => {
        if (res.headersSent) return;
        if (error) {
          answerError(error, res, context, metrics, logger);
          return;
        }
        // Called from the body's events, outside the try below: a throw here must become an answer, not a crash.
        try {
          if (route.admit(res)) void route.run(context, res);
        } catch (failure) {
          answerError(failure as BodyError, res, context, metrics, logger);
        }
      });
    } catch (error) {
      answerError(error as BodyError, res, context, metrics, logger);
    }
  }

  const handle: RequestListener = (req, res) => {
    try {
      const path = pathOf(req.url ?? '/');
      if (path !== undefined) {
        if (health && (OBSERVABILITY_PATHS as readonly string[]).includes(path)) {
          void health(req, res, () => notFound(res));
          return;
        }
        for (const route of table) {
          const match = route.pattern.exec(path);
          if (match) {
            serve(route, match[1], req, res);
            return;
          }
        }
      }
      notFound(res);
    } catch (error) {
      // Nothing a caller sends may crash the server: an unexpected throw is a JSON 500, logged.
      answerError(error as BodyError, res, new RequestContext(), metrics, logger);
    }
  };

  return {
    handle,
    registry,
    logger,
    inFlight: () => slots.total(),
    startDraining: () => {
      draining = true;
    },
    readiness,
    enabledGateways,
    paths,
  };
}
