// A gateway request is a trace too (when tracing is on): one server span per request to a gateway, a child of the
// caller's W3C traceparent when it sends one. Attributes follow the HTTP semantic conventions; the route is the
// gateway's base path with placeholders, never the path key (a credential) nor the body.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { GATEWAY_BASE_PATHS } from '../config/index.js';
import { parseTraceparent, type Tracer } from '../observability/tracing.js';
import type { RequestContext } from './middleware.js';

const ROUTES: Record<string, string> = {
  httpGateway: `${GATEWAY_BASE_PATHS.httpGateway}/{pathKey}/{endpointId}`,
  httpSignedDataGateway: `${GATEWAY_BASE_PATHS.httpSignedDataGateway}/{pathKey}/{endpointId}`,
  oevGateway: `${GATEWAY_BASE_PATHS.oevGateway}/{pathKey}`,
};

/** A span for one gateway request, ended with the gateway and endpoint its context holds once the answer is sent. */
export function traceGatewayRequest(
  tracer: Tracer,
  req: IncomingMessage,
  res: ServerResponse,
  context: RequestContext,
): void {
  const span = tracer.startSpan('gateway request', {
    parent: parseTraceparent(req.headers.traceparent),
    kind: 'server',
  });
  res.once('finish', () => {
    if (context.gateway === 'none') return;
    span.setAttributes({
      'http.request.method': req.method,
      'http.route': ROUTES[context.gateway],
      'http.response.status_code': res.statusCode,
      'oracle_node.gateway': context.gateway,
      endpointId: context.endpoint === '-' ? undefined : context.endpoint,
    });
    if (res.statusCode >= 500) span.fail(`answered ${res.statusCode}`);
    span.end();
  });
}
