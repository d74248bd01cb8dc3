// /metrics, /healthz and /readyz for any component. `observabilityHandler` works as a plain node:http
// handler and as a step of a larger handler (it calls next() for other paths); `startObservabilityServer` runs it
// alone on its own port for components without an HTTP server of their own (operator, chain node).
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { errorMessage } from '../common/errors.js';
import { nodeHttp } from '../common/node-http.js';

export type Readiness = { ready: boolean; reason?: string };

export type ObservabilityOptions = {
  registry: Registry;
  /** Liveness: the process can serve at all. Defaults to always healthy. */
  healthy?: () => boolean | Promise<boolean>;
  /** Readiness: the component can take traffic (config loaded, not draining). Defaults to ready. */
  ready?: () => Readiness | boolean | Promise<Readiness | boolean>;
};

export const OBSERVABILITY_PATHS = ['/metrics', '/healthz', '/readyz'] as const;

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(payload),
  });
  res.end(payload);
}

export function observabilityHandler(options: ObservabilityOptions) {
  return async (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0];
    const method = req.method ?? 'GET';
    if (
      !OBSERVABILITY_PATHS.includes(path as (typeof OBSERVABILITY_PATHS)[number]) ||
      !['GET', 'HEAD'].includes(method)
    ) {
      if (next) next();
      else sendJson(res, 404, { message: 'Not found' });
      return;
    }
    try {
      if (path === '/metrics') {
        const text = await options.registry.metrics();
        res.writeHead(200, { 'content-type': options.registry.contentType });
        res.end(method === 'HEAD' ? undefined : text);
        return;
      }
      if (path === '/healthz') {
        const healthy = options.healthy ? await options.healthy() : true;
        sendJson(res, healthy ? 200 : 503, { status: healthy ? 'ok' : 'unhealthy' });
        return;
      }
      const answer = options.ready ? await options.ready() : true;
      const readiness: Readiness = typeof answer === 'boolean' ? { ready: answer } : answer;
      sendJson(
        res,
        readiness.ready ? 200 : 503,
        readiness.ready ? { status: 'ready' } : { status: 'not ready', reason: readiness.reason ?? 'not ready' },
      );
    } catch (error) {
      sendJson(res, 500, { message: `Error: ${errorMessage(error)}` });
    }
  };
}

export type ObservabilityServer = { port: number; server: Server; close(): Promise<void> };

export async function startObservabilityServer(
  options: ObservabilityOptions & { port?: number; host?: string },
): Promise<ObservabilityServer> {
  const handle = observabilityHandler(options);
  const server = nodeHttp.createServer((req, res) => {
    void handle(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '0.0.0.0', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
