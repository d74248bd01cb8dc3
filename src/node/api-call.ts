// The API half of a shard: one request's API call through the OIS engine (HTTP request, processing, encoding),
// with its spans, and a worker's shard of them (callShardApis). It needs the OIS and the API credentials only: no
// key, no provider. It is all a worker pod does (`oracle-node worker`); the coordinator signs what it answers and
// sends the transactions (src/node/shard.ts).
import { mapLimit } from '../common/concurrency.js';
import type { Config } from '../config/index.js';
import type { ApiOutcome } from '../contract/request-log.js';
import { type ApiShardInput, type ApiShardOutput, SHARD_FORMAT } from '../contract/shard.js';
import { parseTraceparent, type SpanContext, Tracer } from '../observability/tracing.js';
import { type WorkDeadline, whenStopped } from './deadline.js';
import { findEndpoint } from './endpoints.js';
import {
  type CallEndpointInput,
  type CallEndpointResult,
  callEndpoint as defaultCallEndpoint,
  type EndpointPhase,
} from './ois-adapter.js';

export type ApiCallContext = {
  config: Config;
  callEndpoint?: (call: CallEndpointInput) => Promise<CallEndpointResult>;
  /** Spans of the call, children of the request's trace. */
  tracer?: Tracer;
  /** In a coordinator run: no call starts after it, and a call still unanswered at it counts as no answer. */
  deadline?: WorkDeadline;
};

/** What an API call needs of a request: its endpoint, parameters and the public metadata the OIS may read. */
export type ApiRequest = {
  id: string;
  endpointId: string;
  oisTitle: string;
  endpointName: string;
  parameters: Record<string, unknown>;
  requester: string;
  sponsor: string;
  sponsorWallet: string;
};

/** The encoded answer, unsigned, or why there is none. */
export type ApiResult =
  | { success: true; encodedValue: string }
  | {
      success: false;
      errorMessage: string;
      /** The wait a 429 or 503 named (ms): the request is not retried sooner (src/node/api-retries.ts). */
      retryAfterMs?: number;
    };
/** The API call's status class (never the answer) and how long it took. */
export type ApiRecord = { outcome: ApiOutcome; durationMs: number };
export type ApiCallOutcome = { result: ApiResult; api: ApiRecord };

const NO_TRACER = new Tracer();

export const NOT_CALLED: ApiRecord = { outcome: 'not called', durationMs: 0 };

/** The class of an API call's outcome from the engine's error message, which names the status code. */
export function apiOutcomeOf(result: CallEndpointResult): ApiOutcome {
  if (result.success) return '2xx';
  const status = /^API call failed with status code ([1-5])\d\d$/.exec(result.errorMessage);
  if (status) return `${status[1]}xx` as ApiOutcome;
  return result.errorMessage === 'API call failed with no response' ? 'no response' : 'failed';
}

/** The request's API call through the OIS engine; a request whose endpoint the config lacks is not called. */
export async function callApi(
  context: ApiCallContext,
  chainId: string,
  request: ApiRequest,
  trace: SpanContext | undefined,
): Promise<ApiCallOutcome> {
  const { ois, endpoint } = findEndpoint(context.config, request);
  if (!ois || !endpoint) {
    return {
      result: { success: false, errorMessage: `No endpoint ${request.endpointName} in OIS ${request.oisTitle}` },
      api: NOT_CALLED,
    };
  }
  const stopped = context.deadline?.reason;
  if (stopped) return { result: { success: false, errorMessage: `API call not made: ${stopped}` }, api: NOT_CALLED };
  const tracer = context.tracer ?? NO_TRACER;
  const requestAttributes = { requestId: request.id, chainId, endpointId: request.endpointId };
  // The OIS engine's whole call: the HTTP request, pre/post-processing and encoding. No URL, parameter or answer.
  const span = tracer.startSpan('api call', {
    parent: trace,
    kind: 'client',
    attributes: {
      ...requestAttributes,
      'http.request.method': (endpoint as { operation?: { method?: string } }).operation?.method?.toUpperCase(),
    },
  });
  const started = performance.now();
  const call = (context.callEndpoint ?? defaultCallEndpoint)({
    ois,
    endpointName: request.endpointName,
    parameters: request.parameters,
    apiCredentials: context.config.apiCredentials,
    metadata: {
      chainId,
      chainType: 'evm',
      requesterAddress: request.requester,
      sponsorAddress: request.sponsor,
      sponsorWalletAddress: request.sponsorWallet,
      requestId: request.id,
    },
    // Processing and encoding as children of the call, timed by the engine.
    ...(tracer.enabled
      ? {
          onPhase: (phase: EndpointPhase) => {
            const child = tracer.startSpan(phase.name, {
              parent: span.context,
              attributes: requestAttributes,
              startMs: phase.startMs,
            });
            if (phase.failed) child.fail(`${phase.name} failed`);
            child.end(phase.endMs);
          },
        }
      : {}),
  });
  // The API's own timeouts (10 s, then 20 s) may outlast the run: at its deadline the call counts as unanswered, and
  // the shard sends nothing for it (src/node/shard.ts), so the request stays open for the next window.
  const result = context.deadline
    ? await Promise.race([
        call,
        whenStopped(context.deadline).then(
          (): CallEndpointResult => ({ success: false, errorMessage: 'API call failed with no response' }),
        ),
      ])
    : await call;
  const api = { outcome: apiOutcomeOf(result), durationMs: Math.round(performance.now() - started) };
  const status = result.success ? undefined : /status code (\d{3})$/.exec(result.errorMessage)?.[1];
  span.setAttributes({ 'oracle_node.api.outcome': api.outcome, 'http.response.status_code': status && Number(status) });
  if (!result.success) span.fail(api.outcome === 'failed' ? 'processing or encoding failed' : `API ${api.outcome}`);
  span.end();
  return {
    result: result.success
      ? { success: true, encodedValue: result.encodedValue }
      : {
          success: false,
          errorMessage: result.errorMessage,
          ...(result.retryAfterMs === undefined ? {} : { retryAfterMs: result.retryAfterMs }),
        },
    api,
  };
}

/**
 * A worker's whole job: the API calls of one shard, at most `concurrency` at once, each result by request id. A call
 * that throws (not an API failure: those are results) fails the shard, as a crash would.
 */
export async function callShardApis(
  shard: ApiShardInput,
  context: ApiCallContext & { concurrency?: number },
): Promise<ApiShardOutput> {
  const started = performance.now();
  const results = await mapLimit(shard.requests, context.concurrency ?? 16, async (request) => {
    const { result, api } = await callApi(
      context,
      shard.chainId,
      request,
      parseTraceparent(shard.traceparents?.[request.id]),
    );
    return { id: request.id, result, api };
  });
  return { format: SHARD_FORMAT, results, apiMs: Math.round(performance.now() - started) };
}
