// An HTTP server that callers we do not trust can reach (the gateway, the coordinator's window port): how long a
// caller may take to send its request is bounded and checked every second, and the open connections can be capped,
// so that slow or idle connections can neither outlive their bound nor pile up in the process's memory.
import type { RequestListener, Server } from 'node:http';
import { nodeHttp } from './node-http.js';

/** How often Node checks the request timeouts; its default, 30 s, would let a stalled socket live that long. */
export const TIMEOUT_CHECK_INTERVAL_MS = 1_000;

export type CallerLimits = {
  /** Time for a caller's request headers, from its first byte (Node answers 408 after it). */
  headersTimeoutMs: number;
  /** Time for the whole request, headers and body (at least headersTimeoutMs). */
  requestTimeoutMs: number;
  /** Connections beyond this many open at once are closed as they arrive; absent: no cap. */
  maxConnections?: number;
};

export function createBoundedServer(limits: CallerLimits, handler: RequestListener): Server {
  const server = nodeHttp.createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_INTERVAL_MS, limits.headersTimeoutMs),
    },
    handler,
  );
  if (limits.maxConnections !== undefined) server.maxConnections = limits.maxConnections;
  return server;
}
