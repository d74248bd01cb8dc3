// The cycle's one door to the OIS engine. Until src/ois/index.ts exports `callEndpoint`, a minimal
// stand-in built from the engine's pieces (request building, reserved-parameter extraction) is used:
// no pre/post-processing, one HTTP attempt per timeout step. Switching is the import line below.
import { decodeParameters as decodeNodeAbi } from '../ois/abi.js';
import { buildRequest, type RequestMetadata } from '../ois/request.js';
import { extractAndEncodeResponse, getReservedParameters } from '../ois/reserved.js';
import type { ApiCredential, Ois } from '../ois/types.js';

export type CallEndpointInput = {
  ois: Ois;
  endpointName: string;
  parameters: Record<string, unknown>;
  apiCredentials: readonly ApiCredential[];
  metadata?: RequestMetadata;
  options?: { timeoutsMs?: number[] };
};

export type CallEndpointResult =
  | { success: true; rawValue: unknown; encodedValue: string; values: unknown[]; timestamp?: string }
  | { success: false; errorMessage: string; rawValue?: unknown };

export function decodeParameters(encoded: string): Record<string, unknown> {
  return decodeNodeAbi(encoded);
}

/** Reference timeouts: attempt 1 10 s, attempt 2 20 s (airnode-facts §3 step 7). */
const DEFAULT_TIMEOUTS_MS = [10_000, 20_000];

export async function callEndpoint(call: CallEndpointInput): Promise<CallEndpointResult> {
  const endpoint = call.ois.endpoints.find((e) => e.name === call.endpointName);
  if (!endpoint) return { success: false, errorMessage: `Endpoint: '${call.endpointName}' not found in the OIS.` };
  let request: ReturnType<typeof buildRequest>;
  try {
    const withDefaults: Record<string, unknown> = {};
    for (const parameter of endpoint.parameters) {
      if (parameter.default !== undefined) withDefaults[parameter.name] = parameter.default;
    }
    request = buildRequest({
      ois: call.ois,
      endpointName: call.endpointName,
      parameters: { ...withDefaults, ...call.parameters },
      apiCredentials: call.apiCredentials.filter((c) => c.oisTitle === call.ois.title),
      metadata: call.metadata,
    });
  } catch (error) {
    return { success: false, errorMessage: (error as Error).message };
  }
  let data: unknown;
  let lastError = 'API call failed with no response';
  let answered = false;
  for (const timeoutMs of call.options?.timeoutsMs ?? DEFAULT_TIMEOUTS_MS) {
    try {
      const response = await fetch(request.url, {
        method: request.method,
        headers: request.headers,
        ...(request.body === undefined ? {} : { body: request.body }),
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (response.status >= 400) {
        lastError = `API call failed with status code ${response.status}`;
        continue;
      }
      const text = await response.text();
      try {
        data = JSON.parse(text);
      } catch {
        data = text;
      }
      answered = true;
      break;
    } catch {
      lastError = 'API call failed with no response';
    }
  }
  if (!answered) return { success: false, errorMessage: lastError };
  try {
    const reserved = getReservedParameters(endpoint, call.parameters);
    const extracted = extractAndEncodeResponse(data, reserved);
    return { success: true, ...extracted };
  } catch (error) {
    return { success: false, errorMessage: (error as Error).message, rawValue: data };
  }
}
