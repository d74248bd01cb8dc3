// The gateway's metrics, in one place: requests and their latency by gateway, endpoint and status; answers by
// status class; 429s; requests in flight; refusals before processing; the upstream endpoint call's latency;
// requests that shared an identical call in flight (coalescing.ts).
// The server (server.ts) creates them once per registry and reports each finished answer with observeAnswer.
import type { Registry } from 'prom-client';
import { counter, gauge, histogram } from '../observability/index.js';

export function gatewayMetrics(registry: Registry) {
  const labels = ['gateway', 'endpoint', 'status'] as const;
  return {
    requests: counter(registry, {
      name: 'gateway_requests_total',
      help: 'Gateway requests by gateway, endpoint and HTTP status',
      labelNames: labels,
    }),
    duration: histogram(registry, {
      name: 'gateway_request_duration_seconds',
      help: 'Gateway request latency by gateway, endpoint and HTTP status',
      labelNames: labels,
    }),
    answers: counter(registry, {
      name: 'gateway_responses_total',
      help: 'Gateway answers by gateway and status class (2xx, 4xx, 5xx)',
      labelNames: ['gateway', 'status_class'] as const,
    }),
    tooManyRequests: counter(registry, {
      name: 'gateway_too_many_requests_total',
      help: 'Gateway answers with status 429 (over maxConcurrency), by gateway',
      labelNames: ['gateway'] as const,
    }),
    apiCall: histogram(registry, {
      name: 'gateway_api_call_duration_seconds',
      help: 'Latency of the endpoint call (processing, API call, encoding) by outcome',
      labelNames: ['gateway', 'endpoint', 'outcome'] as const,
    }),
    coalesced: counter(registry, {
      name: 'gateway_coalesced_requests_total',
      help: 'Requests answered from an identical endpoint call already in flight (no API call of their own)',
      labelNames: ['gateway', 'endpoint'] as const,
    }),
    failures: counter(registry, {
      name: 'gateway_processing_failures_total',
      help: 'Valid requests that failed in processing, by stage',
      labelNames: ['gateway', 'endpoint', 'stage'] as const,
    }),
    inFlight: gauge(registry, {
      name: 'gateway_in_flight_requests',
      help: 'Requests being processed per gateway',
      labelNames: ['gateway'] as const,
    }),
    callerRequests: counter(registry, {
      name: 'gateway_caller_requests_total',
      help: 'Gateway requests of known callers (spec.gateway.callers), by gateway, caller name and HTTP status',
      labelNames: ['gateway', 'caller', 'status'] as const,
    }),
    rejected: counter(registry, {
      name: 'gateway_rejected_requests_total',
      help: 'Requests refused before processing, by reason',
      labelNames: ['gateway', 'reason'] as const,
    }),
  };
}

export type GatewayMetrics = ReturnType<typeof gatewayMetrics>;

/** "2xx" for 200, "4xx" for 429: the class dashboards and alerts group answers by. */
export function statusClass(status: number | string): string {
  const code = Number(status);
  return Number.isInteger(code) && code >= 100 && code <= 599 ? `${Math.floor(code / 100)}xx` : 'other';
}

/** One finished answer of a gateway: its request, latency, status class and, for a 429, the throttle count. */
export function observeAnswer(
  metrics: GatewayMetrics,
  labels: { gateway: string; endpoint: string; status: string },
  seconds: number,
): void {
  metrics.requests.inc(labels);
  metrics.duration.observe(labels, seconds);
  metrics.answers.inc({ gateway: labels.gateway, status_class: statusClass(labels.status) });
  if (labels.status === '429') metrics.tooManyRequests.inc({ gateway: labels.gateway });
}
