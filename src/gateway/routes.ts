// The handlers of the three gateways, behind the middleware (middleware.ts): a validated request becomes one
// endpoint call (shared with identical calls in flight), then an answer in the reference's shapes and messages.
import type { ServerResponse } from 'node:http';
import type { Config } from '../config/index.js';
import { type Logger, secondsSince } from '../observability/index.js';
import type { ApiDeferral, EndpointCall, EndpointResult } from '../ois/index.js';
import { recoverSignersInPool } from '../ois/worker-pool.js';
import { coalescingKey, InFlightCalls } from './coalescing.js';
import type { GatewayMetrics } from './metrics.js';
import { errorText, type GatewayName, type RequestContext, sendError, sendJson } from './middleware.js';
import {
  type NodeSigner,
  signHttpSignedData,
  signOevData,
  signOevDataBodySchema,
  verifySignOevDataRequestAsync,
} from './signing.js';
import { validateHttpRequest, validateHttpSignedDataRequest } from './validation.js';

// The engine (src/ois) is injected, so that tests and benchmarks can pass the real one or a stand-in.
export type { EndpointCall, EndpointResult };
export type CallEndpoint = (call: EndpointCall) => Promise<EndpointResult>;

/** A gateway's handler: the request's context (its body and endpoint id) in, an answer on res. */
export type RouteHandler = (context: RequestContext, res: ServerResponse) => Promise<void>;

export type GatewayRoutes = Record<GatewayName, RouteHandler>;

export type RouteDependencies = {
  config: Config;
  callEndpoint: CallEndpoint;
  /** The node key, made on first use (only signing routes need it). */
  nodeSigner: () => NodeSigner;
  metrics: GatewayMetrics;
  logger: Logger;
};

/**
 * The status of a failed endpoint call: a caller's parameters that cannot be used 400, an API answer the node
 * refuses 502, and everything else 500 with the engine's message, as the reference answers.
 */
function failureStatus(result: { cause?: 'parameters' | 'upstream' }): number {
  if (result.cause === 'parameters') return 400;
  if (result.cause === 'upstream') return 502;
  return 500;
}

/** Whole seconds of a Retry-After (at least 1: "0" would invite the caller straight back). */
const retryAfterSeconds = (ms: number) => String(Math.max(1, Math.ceil(ms / 1000)));

export function gatewayRoutes({ config, callEndpoint, nodeSigner, metrics, logger }: RouteDependencies): GatewayRoutes {
  const endpointCalls = new InFlightCalls<EndpointResult>();

  /**
   * An endpoint call the API's budget did not let through (src/ois/budget.ts): 429 with Retry-After, as a caller over
   * its own rate gets; 503 while the API is paused by its own 503 (unavailable, not a rate). The API never saw it.
   */
  function answerDeferred(gateway: GatewayName, res: ServerResponse, deferred: ApiDeferral, message: string): void {
    metrics.rejected.inc({ gateway, reason: deferred.reason === 'paused' ? 'api_paused' : 'api_budget' });
    res.setHeader('Retry-After', retryAfterSeconds(deferred.retryAfterMs));
    sendError(res, deferred.status === 503 ? 503 : 429, errorText(message));
  }

  async function runEndpoint(
    gateway: GatewayName,
    context: RequestContext,
    trigger: { oisTitle: string; endpointName: string },
    parameters: Record<string, unknown>,
  ): Promise<EndpointResult> {
    const ois = config.ois.find((candidate) => candidate.title === trigger.oisTitle);
    if (!ois) return { success: false, errorMessage: `Unknown OIS title: ${trigger.oisTitle}` };
    const apiCredentials = config.apiCredentials.filter((credential) => credential.oisTitle === trigger.oisTitle);
    const start = process.hrtime.bigint();
    let outcome = 'error';
    try {
      const call = endpointCalls.run(coalescingKey(ois, trigger.endpointName, parameters), () =>
        callEndpoint({ ois, endpointName: trigger.endpointName, parameters, apiCredentials }),
      );
      if (call.shared) metrics.coalesced.inc({ gateway, endpoint: context.endpoint });
      const result = await call.result;
      outcome = result.success
        ? 'success'
        : result.rawValue !== undefined
          ? 'extraction_failed'
          : result.deferred
            ? 'deferred'
            : 'failed';
      return result;
    } finally {
      metrics.apiCall.observe({ gateway, endpoint: context.endpoint, outcome }, secondsSince(start));
    }
  }

  const httpGateway: RouteHandler = async (context, res) => {
    const { endpointId } = context;
    const validation = validateHttpRequest(config, context.body, endpointId);
    if (!validation.success) {
      sendJson(res, validation.statusCode, validation.error);
      return;
    }
    context.endpoint = endpointId;
    const result = await runEndpoint('httpGateway', context, validation.trigger, validation.parameters);
    if (result.success) {
      sendJson(res, 200, { rawValue: result.rawValue, encodedValue: result.encodedValue, values: result.values });
      return;
    }
    if (result.rawValue !== undefined) {
      // The reference's special case: a successful API call whose extraction failed still answers 200.
      logger.warn({ requestId: context.requestId, reason: result.errorMessage }, 'extraction failed after API call');
      sendJson(res, 200, { rawValue: result.rawValue });
      return;
    }
    if (result.deferred) {
      answerDeferred('httpGateway', res, result.deferred, result.errorMessage);
      return;
    }
    metrics.failures.inc({ gateway: 'httpGateway', endpoint: endpointId, stage: 'endpoint' });
    logger.warn({ requestId: context.requestId, reason: result.errorMessage }, 'endpoint call failed');
    sendError(res, failureStatus(result), errorText(result.errorMessage));
  };

  const httpSignedDataGateway: RouteHandler = async (context, res) => {
    const { endpointId } = context;
    const validation = validateHttpSignedDataRequest(config, context.body, endpointId);
    if (!validation.success) {
      sendJson(res, validation.statusCode, validation.error);
      return;
    }
    context.endpoint = endpointId;
    const result = await runEndpoint('httpSignedDataGateway', context, validation.trigger, validation.parameters);
    if (!result.success && result.deferred) {
      answerDeferred('httpSignedDataGateway', res, result.deferred, result.errorMessage);
      return;
    }
    if (!result.success) {
      metrics.failures.inc({ gateway: 'httpSignedDataGateway', endpoint: endpointId, stage: 'endpoint' });
      logger.warn({ requestId: context.requestId, reason: result.errorMessage }, 'endpoint call failed');
      sendError(res, failureStatus(result), errorText(result.errorMessage));
      return;
    }
    let signed: ReturnType<typeof signHttpSignedData>;
    try {
      signed = signHttpSignedData({
        signer: nodeSigner(),
        endpointId,
        encodedParameters: validation.encodedParameters,
        encodedValue: result.encodedValue,
        timestamp: result.timestamp,
      });
    } catch (error) {
      metrics.failures.inc({ gateway: 'httpSignedDataGateway', endpoint: endpointId, stage: 'signing' });
      sendError(res, 500, errorText(error));
      return;
    }
    sendJson(res, 200, { timestamp: signed.timestamp, encodedValue: signed.encodedValue, signature: signed.signature });
  };

  const oevGateway: RouteHandler = async (context, res) => {
    const parsed = signOevDataBodySchema.safeParse(context.body);
    if (!parsed.success) {
      sendError(res, 400, 'Invalid request body');
      return;
    }
    const signerNow = nodeSigner();
    // Signature recovery costs milliseconds per beacon: it runs on the worker pool, never on this thread.
    const verification = await verifySignOevDataRequestAsync(parsed.data, signerNow.address, recoverSignersInPool);
    if (!verification.success) {
      logger.debug({ requestId: context.requestId, reason: verification.reason }, 'OEV request rejected');
      sendJson(res, verification.statusCode, verification.error);
      return;
    }
    try {
      sendJson(res, 200, signOevData(signerNow, verification.beacons, verification.oevUpdateHash));
    } catch (error) {
      metrics.failures.inc({ gateway: 'oevGateway', endpoint: '-', stage: 'signing' });
      sendError(res, 500, `Error: Can't sign the data: ${errorText(error)}`);
    }
  };

  return { httpGateway, httpSignedDataGateway, oevGateway };
}

/** A route handler as the last step of a request: a throw becomes a 500 with the request id, logged once. */
export function handled(
  gateway: GatewayName,
  handle: RouteHandler,
  metrics: GatewayMetrics,
  logger: Logger,
): RouteHandler {
  return async (context, res) => {
    try {
      await handle(context, res);
    } catch (error) {
      // A bug of ours or an engine crash on a valid request: 500 in the reference's error shape, with the
      // request id to find the log line rather than an internal message.
      metrics.failures.inc({ gateway, endpoint: context.endpoint, stage: 'internal' });
      logger.error({ requestId: context.requestId, err: error }, 'gateway handler error');
      sendError(res, 500, `Error: Internal error (request ${context.requestId})`);
    }
  };
}
