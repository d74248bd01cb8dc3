// The API half of a shard, as the chain half awaits it: each request's answer without an API call (a request that
// cannot be served, or a cached response), from an API call's result (signed with the node key, cached when its
// trigger asks), and every API call of a shard started at once in this process (InProcessExecutor); the answers from
// a worker's result are built from the same pieces (executor.ts).
import { type ApiResponse, signFulfillment } from '../chain/fulfillment.js';
import { mapLimit } from '../common/concurrency.js';
import type { Config } from '../config/index.js';
import { parseTraceparent, type SpanContext } from '../observability/tracing.js';
import { type ApiCallOutcome, type ApiRecord, callApi, NOT_CALLED } from './api-call.js';
import { findEndpoint } from './endpoints.js';
import { reservedParameterValue } from './ois-adapter.js';
import { type ChainContext, NO_TRACER, type ShardAnswers, type ShardContext } from './shard-run.js';
import type { ShardApiCall, ShardInput } from './shard-types.js';

/**
 * Promise.withResolvers, awaited where the value is needed; a rejection nobody reached (all providers down) is not
 * unhandled.
 */
function deferred<T>(): PromiseWithResolvers<T> {
  const resolvers = Promise.withResolvers<T>();
  resolvers.promise.catch(() => undefined);
  return resolvers;
}

/** Starts every API call of the shard at once (bounded), in this process; each answer is a promise of its own. */
export function callApisInProcess(shard: ShardInput, context: ShardContext): ShardAnswers {
  const apiStart = performance.now();
  const responses = shard.apiCalls.map(() => deferred<ApiResponse>());
  const answers: ShardAnswers = {
    responses: new Map(shard.apiCalls.map((call, i) => [call.id, responses[i]!.promise])),
    answered: Promise.resolve(),
    failure: undefined,
    cacheHits: 0,
    records: new Map(),
    apiMs: 0,
  };
  answers.answered = mapLimit(shard.apiCalls, context.apiConcurrency ?? 16, async (call, i) => {
    try {
      const trace = parseTraceparent(shard.traceparents?.[call.id]);
      const answer =
        (await answerWithoutCall(context, call)) ??
        (await answerFromResult(
          context,
          shard.chainId,
          call,
          await callApi(context, shard.chainId, call, trace),
          trace,
        ));
      if (answer.cached) answers.cacheHits++;
      answers.records.set(call.id, answer.api);
      responses[i]!.resolve(answer.response);
    } catch (error) {
      answers.failure ??= { error };
      responses[i]!.reject(error);
    }
  }).finally(() => {
    answers.apiMs = performance.now() - apiStart;
  });
  return answers;
}

export type Answer = { response: ApiResponse; cached: boolean; api: ApiRecord };

function gasPriceOf(config: Config, call: ShardApiCall): { gasPrice?: string } {
  const { endpoint } = findEndpoint(config, call);
  const value = endpoint ? reservedParameterValue('_gasPrice', endpoint, call.parameters) : undefined;
  return value !== undefined && /^\d+$/.test(value) ? { gasPrice: value } : {};
}

/**
 * A request's answer that needs no API call: a request that cannot be served or whose endpoint the config lacks
 * (failed, not called), or a response cached by an earlier cycle. Undefined: the API must be called.
 */
export async function answerWithoutCall(context: ChainContext, call: ShardApiCall): Promise<Answer | undefined> {
  if (call.errorMessage)
    return { response: { success: false, errorMessage: call.errorMessage }, cached: false, api: NOT_CALLED };
  const { ois, endpoint } = findEndpoint(context.config, call);
  if (!ois || !endpoint) {
    return {
      response: { success: false, errorMessage: `No endpoint ${call.endpointName} in OIS ${call.oisTitle}` },
      cached: false,
      api: NOT_CALLED,
    };
  }
  if (!call.cacheResponses || !context.cache) return undefined;
  const hit = await context.cache.get(call.id);
  if (!hit) return undefined;
  return {
    response: { success: true, ...hit, ...gasPriceOf(context.config, call) },
    cached: true,
    api: { outcome: 'cached', durationMs: 0 },
  };
}

/** A request's answer from its API call's result: signed with the node key, and cached when its trigger asks. */
export async function answerFromResult(
  context: ChainContext,
  chainId: string,
  call: ShardApiCall,
  { result, api }: ApiCallOutcome,
  trace: SpanContext | undefined,
): Promise<Answer> {
  if (!result.success) return { response: result, cached: false, api };
  const tracer = context.tracer ?? NO_TRACER;
  const signing = tracer.startSpan('sign response', {
    parent: trace,
    attributes: { requestId: call.id, chainId, endpointId: call.endpointId },
  });
  const signature = signFulfillment(context.wallets.node, call.id, result.encodedValue);
  signing.end();
  if (call.cacheResponses && context.cache) {
    await context.cache.set(call.id, {
      encodedValue: result.encodedValue,
      signature,
      servedBy: context.role ?? 'primary',
    });
  }
  return {
    response: { success: true, encodedValue: result.encodedValue, signature, ...gasPriceOf(context.config, call) },
    cached: false,
    api,
  };
}
