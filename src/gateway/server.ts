// The gateway server's lifecycle (as controller-runtime's webhook server.go beside admission/http.go): listen on
// the gateway port (and the observability port, when it has its own), Node's own refusals answered as JSON, and a
// graceful shutdown that drains in-flight requests. What a request meets is the app (app.ts): middleware,
// validation and the three gateways' routes.
import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createBoundedServer } from '../common/http-server.js';
import { nodeHttp } from '../common/node-http.js';
import { type Config, DEFAULT_GATEWAY_SERVER_PORT } from '../config/index.js';
import { type ObservabilityServer, startObservabilityServer } from '../observability/index.js';
import { workerPool } from '../ois/worker-pool.js';
import {
  type CallEndpoint,
  createGatewayApp,
  DEFAULT_BODY_TIMEOUT_MS,
  type GatewayApp,
  type GatewayAppOptions,
} from './app.js';

export {
  type CallEndpoint,
  createGatewayApp,
  DEFAULT_BODY_LIMIT_BYTES,
  DEFAULT_BODY_TIMEOUT_MS,
  DEFAULT_PATH_KEY,
  DEFAULT_RETRY_AFTER_SECONDS,
  type EndpointCall,
  type EndpointResult,
  GATEWAY_NAMES,
  type GatewayApp,
  type GatewayAppOptions,
  type GatewayName,
  HTTP_BASE_PATH,
  HTTP_SIGNED_DATA_BASE_PATH,
  OEV_BASE_PATH,
} from './app.js';

export const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;
/** A caller has this long to send its request headers (Node answers 408 after it). */
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;

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
  /**
   * With processing snippets in the config: keep the worker pool's threads alive and warm (the sandbox compiled and
   * hot) from the start, and report ready only once they are, so that no request pays a worker's start.
   */
  keepProcessingWarm?: boolean;
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
  const { cloudProvider } = config.nodeSettings;
  return (cloudProvider.type === 'local' && cloudProvider.gatewayServerPort) || DEFAULT_GATEWAY_SERVER_PORT;
}

/** Whether an endpoint of the config runs a pre- or post-processing snippet. */
export function hasProcessing(config: Config): boolean {
  return config.ois.some((ois) =>
    ois.endpoints.some(
      (endpoint) =>
        endpoint.preProcessingSpecificationV2 !== undefined ||
        endpoint.postProcessingSpecificationV2 !== undefined ||
        (endpoint.preProcessingSpecifications?.length ?? 0) > 0 ||
        (endpoint.postProcessingSpecifications?.length ?? 0) > 0,
    ),
  );
}

/** The real engine, loaded on first use so that an app with an injected engine does not pull it in. */
async function loadEngine(): Promise<CallEndpoint> {
  return (await import('../ois/index.js')).callEndpoint;
}

export async function startGatewayServer(config: Config, options: StartGatewayOptions = {}): Promise<GatewayServer> {
  const callEndpoint = options.callEndpoint ?? (await loadEngine());
  const separateObservability = options.metricsPort !== undefined;
  let warm = true;
  if (options.keepProcessingWarm && hasProcessing(config)) {
    warm = false;
    void workerPool()
      .keepWarm()
      .then(() => {
        warm = true;
      });
  }
  const ready = options.ready;
  const gateway = createGatewayApp({
    ...options,
    config,
    callEndpoint,
    serveObservability: !separateObservability,
    ready: () => warm && (ready?.() ?? true),
  });
  const { logger } = gateway;
  if (gateway.enabledGateways.length === 0) logger.info('no gateway enabled: serving only /healthz, /readyz, /metrics');

  const sockets = new Set<Socket>();
  const headersTimeout = options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS;
  const server = createBoundedServer(
    {
      headersTimeoutMs: headersTimeout,
      // The whole request (headers and body); the app's own body deadline answers first, with a clear message.
      requestTimeoutMs: headersTimeout + (options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS) + 1_000,
    },
    gateway.handle,
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
    `HTTP/1.1 ${status} ${nodeHttp.STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
