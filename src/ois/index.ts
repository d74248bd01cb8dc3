// The OIS engine's public entry: one endpoint call from request parameters to an encoded value.
// Pipeline as the reference's callApi (airnode-facts §3 step 7, §5, §8): pre-processing -> defaults ->
// HTTP request -> post-processing -> reserved-parameter extraction and encoding. Never throws: every
// failure is { success: false, errorMessage }, with rawValue when the API answered but encoding failed.
import { errorMessage } from '../common/errors.js';
import { isRecord } from '../common/json.js';
import { callApi } from './api-client.js';
import { type ApiDeferral, apiBudgets, type BudgetWait } from './budget.js';
import { InvalidParameterError, parameterProblem } from './limits.js';
import { postProcessResponse, preProcessEndpointParameters } from './processing.js';
import { buildRequest, findEndpoint, type RequestMetadata } from './request.js';
import { extractAndEncodeResponse, getReservedParameters } from './reserved.js';
import type { ApiCredential, Endpoint, Ois } from './types.js';
import { isReservedParameterName } from './types.js';

export type { AbiParameter, AbiParameterType, DecodedParameters } from './abi.js';
export { decodeParameters, encodeParameters } from './abi.js';
export type { ApiBudgetsOptions, ApiDeferral, ApiLimit, BudgetAnswer, BudgetWait } from './budget.js';
export {
  ApiBudgets,
  apiBudgets,
  MAX_BUDGET_WAIT_MS,
  MAX_PAUSE_MS,
  rateLimitWaitMs,
  registerApiBudgetMetrics,
  setApiBudgets,
} from './budget.js';
export type { HttpRequest, RequestMetadata } from './request.js';
export { buildRequest } from './request.js';
export { extractAndEncodeResponse, getReservedParameters, getReservedParameterValue } from './reserved.js';
/** Optional: compiles the processing sandbox at startup so the first processed call does not pay for it. */
export { warmUpSandbox } from './sandbox.js';
export type { ApiCredential, Endpoint, Ois } from './types.js';

export type EndpointCall = {
  ois: Ois;
  endpointName: string;
  parameters: Record<string, unknown>;
  apiCredentials: ApiCredential[];
  metadata?: RequestMetadata;
  options?: { apiTimeoutsMs?: number[]; maxResponseBytes?: number; processingTimeoutMs?: number };
  /**
   * How long the call may wait for its turn in the API's rate budget (budget.ts), and what ends the wait sooner (a
   * run's deadline); without it, the process's default (none at a gateway or a feed).
   */
  budget?: BudgetWait;
  /** Told of each phase as it ends (for traces): nothing of the request's parameters or the API's answer. */
  onPhase?: (phase: EndpointPhase) => void;
};

/**
 * One phase of an endpoint call around the HTTP request. Processing phases are reported only for an endpoint that
 * declares them; times are epoch milliseconds with sub-millisecond precision.
 */
export type EndpointPhase = {
  name: 'pre-processing' | 'post-processing' | 'encoding';
  startMs: number;
  endMs: number;
  failed: boolean;
};

const epochMs = () => performance.timeOrigin + performance.now();

/** Runs one phase and reports it (also when it throws) to the caller's hook, if there is one. */
async function phase<T>(
  call: Pick<EndpointCall, 'onPhase'>,
  name: EndpointPhase['name'],
  run: () => T | Promise<T>,
): Promise<T> {
  if (!call.onPhase) return run();
  const startMs = epochMs();
  let failed = true;
  try {
    const result = await run();
    failed = false;
    return result;
  } finally {
    call.onPhase({ name, startMs, endMs: epochMs(), failed });
  }
}

export type EndpointResult =
  | { success: true; rawValue: unknown; encodedValue: string; values: unknown[]; timestamp?: number }
  | {
      success: false;
      errorMessage: string;
      rawValue?: unknown;
      /**
       * Whose fault, when it is known: 'parameters' the request's (a gateway answers 4xx), 'upstream' the API's
       * answer (502). Without it, the failure is answered as in the reference.
       */
      cause?: 'parameters' | 'upstream';
      /**
       * The API was not called: over its rate budget, or paused by its own 429. Not a failure of the request: a
       * cycle keeps it open for a later poll, a gateway answers 429 with Retry-After.
       */
      deferred?: ApiDeferral;
      /** The API answered 429 or 503 naming a wait (ms, capped): when it may be asked again. */
      retryAfterMs?: number;
    };

/** Whether an endpoint call was not made for the API's budget or pause (and so must not count as failed). */
export function isDeferred(result: EndpointResult): result is Extract<EndpointResult, { success: false }> & {
  deferred: ApiDeferral;
} {
  return !result.success && result.deferred !== undefined;
}

function defaultParameters(endpoint: Endpoint): Record<string, unknown> {
  const defaults: Record<string, unknown> = {};
  for (const parameter of endpoint.parameters) {
    if (parameter.default !== undefined) defaults[parameter.name] = parameter.default;
  }
  return defaults;
}

function hasPreProcessing(endpoint: Endpoint): boolean {
  return Boolean(endpoint.preProcessingSpecificationV2) || (endpoint.preProcessingSpecifications?.length ?? 0) > 0;
}

function hasPostProcessing(endpoint: Endpoint): boolean {
  return Boolean(endpoint.postProcessingSpecificationV2) || (endpoint.postProcessingSpecifications?.length ?? 0) > 0;
}

function withoutReserved(parameters: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(parameters).filter(([key]) => !isReservedParameterName(key)));
}

/** Runs one endpoint call. Never throws. */
export async function callEndpoint(call: EndpointCall): Promise<EndpointResult> {
  try {
    return await runEndpointCall(call);
  } catch (error) {
    if (error instanceof InvalidParameterError) {
      return { success: false, errorMessage: errorMessage(error), cause: 'parameters' };
    }
    if (error instanceof RangeError || error instanceof URIError) {
      // A stack overflow or an encoding failure on some value of the request: never an internal message.
      return { success: false, errorMessage: 'Invalid parameters: they cannot be encoded', cause: 'parameters' };
    }
    return { success: false, errorMessage: errorMessage(error) };
  }
}

async function runEndpointCall(call: EndpointCall): Promise<EndpointResult> {
  const fetched = await fetchEndpointResponse(call);
  if (!fetched.success) return fetched;
  return processEndpointResponse(call, fetched.endpoint, fetched.apiResponse);
}

/** What an endpoint's API answered (or the pre-processed parameters, for an endpoint without an API call). */
export type EndpointResponse = { success: true; endpoint: Endpoint; apiResponse: unknown };

/**
 * The first half of an endpoint call: checks, pre-processing, defaults and the HTTP request. An Airnode feed calls
 * it once for the templates that share an operation and runs the second half per template.
 */
export async function fetchEndpointResponse(
  call: EndpointCall,
): Promise<EndpointResponse | Extract<EndpointResult, { success: false }>> {
  if (!isRecord(call) || !isRecord(call.ois) || !Array.isArray(call.ois.endpoints)) {
    return { success: false, errorMessage: 'Invalid endpoint call: an OIS is required' };
  }
  if (!isRecord(call.parameters)) return { success: false, errorMessage: 'Parameters must be an object' };
  const problem = parameterProblem(call.parameters);
  if (problem) return { success: false, errorMessage: problem, cause: 'parameters' };
  const endpoint = findEndpoint(call.ois, call.endpointName);
  const processingOptions = { totalTimeoutMs: call.options?.processingTimeoutMs };

  const preProcess = () => preProcessEndpointParameters(endpoint, call.parameters, processingOptions);
  let processed: Record<string, unknown>;
  try {
    processed = hasPreProcessing(endpoint) ? await phase(call, 'pre-processing', preProcess) : await preProcess();
  } catch (error) {
    return { success: false, errorMessage: errorMessage(error) };
  }

  if (!endpoint.operation && endpoint.fixedOperationParameters.length === 0) {
    // No API to call: the pre-processed parameters (reserved ones included) act as the response.
    return { success: true, endpoint, apiResponse: processed };
  }
  // Defaults are merged after pre-processing, as in the reference; reserved parameters never reach the API.
  const parameters = withoutReserved({ ...defaultParameters(endpoint), ...processed });
  const apiCredentials = (call.apiCredentials ?? []).filter((credential) => credential.oisTitle === call.ois.title);
  const request = buildRequest({
    ois: call.ois,
    endpointName: call.endpointName,
    parameters,
    apiCredentials,
    metadata: call.metadata,
  });
  // The process's budgets, shared by every caller in it; an OIS's 429 pauses its title for every endpoint.
  const budgets = apiBudgets();
  const title = call.ois.title;
  const result = await callApi(
    request,
    {
      timeoutsMs: call.options?.apiTimeoutsMs,
      maxResponseBytes: call.options?.maxResponseBytes,
      admit: () => budgets.acquire(title, call.endpointName, call.budget),
      onRateLimited: (waitMs, status) => budgets.pause(title, waitMs, status),
    },
    title,
  );
  if (!result.success) {
    return {
      success: false,
      errorMessage: result.errorMessage,
      ...(result.unusableResponse ? { cause: 'upstream' as const } : {}),
      ...(result.deferred ? { deferred: result.deferred } : {}),
      ...(result.retryAfterMs === undefined ? {} : { retryAfterMs: result.retryAfterMs }),
    };
  }
  return { success: true, endpoint, apiResponse: result.data };
}

/**
 * The second half of an endpoint call: post-processing with the call's parameters, then extraction and encoding of
 * its reserved parameters. Throws only on reserved parameters that are not valid (as runEndpointCall, whose caller
 * answers that as a failure).
 */
export async function processEndpointResponse(
  call: Pick<EndpointCall, 'parameters' | 'options' | 'onPhase'>,
  endpoint: Endpoint,
  apiResponse: unknown,
): Promise<EndpointResult> {
  const processingOptions = { totalTimeoutMs: call.options?.processingTimeoutMs };
  const postProcess = () => postProcessResponse(apiResponse, endpoint, call.parameters, processingOptions);
  let postProcessed: { response: unknown; timestamp?: number };
  try {
    postProcessed = hasPostProcessing(endpoint)
      ? await phase(call, 'post-processing', postProcess)
      : await postProcess();
  } catch (error) {
    return { success: false, errorMessage: errorMessage(error) };
  }

  // Reserved values come from the request as sent (pre-processing cannot change them).
  const reserved = getReservedParameters(endpoint, call.parameters);
  try {
    const encoded = await phase(call, 'encoding', () => extractAndEncodeResponse(postProcessed.response, reserved));
    return {
      success: true,
      rawValue: encoded.rawValue,
      encodedValue: encoded.encodedValue,
      values: encoded.values,
      ...(postProcessed.timestamp === undefined ? {} : { timestamp: postProcessed.timestamp }),
    };
  } catch (error) {
    return { success: false, errorMessage: errorMessage(error), rawValue: apiResponse };
  }
}
