// The request traces of a cycle: each request's root span with its discovery and authorization spans, the servable
// requests' trace contexts handed to their shards (so a worker's spans join the trace), and each root ended with its
// shard's outcome.
import { formatTraceparent, type Span, type Tracer } from '../observability/tracing.js';
import type { PlannedChain } from './cycle-plan.js';
import type { ShardResult } from './executor.js';

/**
 * The root span of each request the chain's cycle saw, with its discovery and authorization spans; servable requests'
 * trace contexts go into their shards, so the worker's spans join the same trace.
 */
export function traceRequests(
  tracer: Tracer,
  planned: PlannedChain,
  window: { startMs: number; discoveredMs: number },
): Map<string, Span> {
  const roots = new Map<string, Span>();
  if (!tracer.enabled) return roots;
  for (const request of planned.seen) {
    const attributes = { requestId: request.id, chainId: request.chainId, endpointId: request.endpointId };
    const root = tracer.startSpan('oracle-node request', {
      startMs: window.startMs,
      attributes: {
        ...attributes,
        'oracle_node.state': request.state,
        'oracle_node.reason': request.reason,
        'oracle_node.block': request.blockNumber,
      },
    });
    roots.set(request.id, root);
    tracer
      .startSpan('discovery', {
        parent: root.context,
        startMs: window.startMs,
        attributes: { ...attributes, 'rpc.system': 'jsonrpc', 'rpc.method': 'eth_getLogs' },
      })
      .end(window.discoveredMs);
    const unauthorized = request.reason === 'requester is not authorized';
    if (request.state === 'dropped' && !unauthorized) continue;
    const authorization = tracer.startSpan('authorization', {
      parent: root.context,
      startMs: planned.authorization?.startMs ?? window.discoveredMs,
      attributes: { ...attributes, 'oracle_node.authorized': !unauthorized },
    });
    if (unauthorized) authorization.fail('requester is not authorized');
    authorization.end(planned.authorization?.endMs ?? window.discoveredMs);
  }
  for (const shard of planned.shards) {
    const traceparents: Record<string, string> = {};
    for (const call of shard.apiCalls) {
      const root = roots.get(call.id);
      if (root) traceparents[call.id] = formatTraceparent(root.context);
    }
    shard.traceparents = traceparents;
  }
  return roots;
}

/** Each request's root span ends with its shard, carrying the outcome. */
export function endRequestTraces(roots: Map<string, Span>, results: ShardResult[]): void {
  if (roots.size === 0) return;
  for (const result of results) {
    if (!result.ok) continue;
    for (const outcome of result.output.outcomes) {
      const root = roots.get(outcome.id);
      root?.setAttributes({ 'oracle_node.outcome': outcome.outcome, 'oracle_node.transaction_hash': outcome.txHash });
      if (outcome.outcome === 'error') root?.fail(outcome.reason ?? 'transaction not accepted');
    }
  }
  for (const root of roots.values()) root.end();
}
