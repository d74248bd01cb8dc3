// The gateway application: the middleware (middleware.ts) and the routes (routes.ts) in order, one route per
// enabled gateway, with the state a request needs (processing slots, draining, readiness). No socket here: the
// server's lifecycle (listen, drain, close) is server.ts.
import express, { type Response } from 'express';
import type { Registry } from 'prom-client';
import { type Config, GATEWAY_BASE_PATHS } from '../config/index.js';
import {
  createLogger,
  createMetricsRegistry,
  type Logger,
  observabilityHandler,
  redact,
  registerSecret,
} from '../observability/index.js';
import type { Tracer } from '../observability/tracing.js';
import { nodeWallet } from '../protocol/wallet.js';
import { gatewayMetrics } from './metrics.js';
import {
  admission,
  bodyDeadline,
  errorHandler,
  GATEWAY_NAMES,
  type GatewayName,
  gatewayGuard,
  jsonBody,
  notFound,
  ProcessingSlots,
  requestBookkeeping,
} from './middleware.js';
import { type CallEndpoint, gatewayRoutes, handled } from './routes.js';
import { cachingSigner } from './signature-cache.js';
import type { NodeSigner } from './signing.js';
import { traceGatewayRequests } from './tracing.js';

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

/** The path of each gateway: the HTTP and signed-data ones end in the endpoint id. */
function gatewayPath(gateway: GatewayName, pathKey: string): string {
  if (gateway === 'oevGateway') return `${OEV_BASE_PATH}/${pathKey}`;
  const base = gateway === 'httpGateway' ? HTTP_BASE_PATH : HTTP_SIGNED_DATA_BASE_PATH;
  return `${base}/${pathKey}/:endpointId`;
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

  app.use(requestBookkeeping(metrics, logger));
  if (options.tracer?.enabled) app.use(traceGatewayRequests(options.tracer));
  if (options.serveObservability !== false) {
    const health = observabilityHandler({ registry, ready: readiness });
    app.use((req, res, next) => {
      void health(req, res, next);
    });
  }

  const bodyLimitBytes = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  const parseBody = jsonBody(bodyLimitBytes);
  const awaitBody = bodyDeadline(options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS, metrics);
  const retryAfterSeconds = options.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS;
  const routes = gatewayRoutes({ config, callEndpoint, nodeSigner, metrics, logger });
  const enabledGateways: GatewayName[] = [];
  const paths: Partial<Record<GatewayName, string>> = {};
  for (const gateway of GATEWAY_NAMES) {
    const gatewayConfig = settings[gateway];
    if (!gatewayConfig.enabled) {
      logger.info({ gateway }, 'gateway not enabled');
      continue;
    }
    const path = gatewayPath(gateway, pathKey);
    enabledGateways.push(gateway);
    paths[gateway] = path;
    // One route per gateway: the router matches the path and decodes :endpointId once per request.
    app
      .route(path)
      .all(gatewayGuard(gateway, gatewayConfig.corsOrigins, () => draining, metrics))
      .post(
        awaitBody,
        parseBody,
        admission(gateway, gatewayConfig.maxConcurrency, slots, metrics, retryAfterSeconds),
        handled(gateway, routes[gateway], metrics, logger),
      );
    logger.info({ gateway, path }, 'gateway listening');
  }

  app.use(notFound);
  app.use(errorHandler(metrics, logger));

  return {
    app,
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
