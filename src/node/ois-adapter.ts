// The node's one door to the OIS engine (src/ois): endpoint calls, reserved parameters and Node-ABI decoding.
// Kept as a seam so tests and benchmarks can inject a stand-in engine.
import {
  type ApiCredential,
  type BudgetWait,
  decodeParameters as decodeNodeAbi,
  type EndpointPhase,
  callEndpoint as engineCallEndpoint,
  getReservedParameterValue,
  type Ois,
  type RequestMetadata,
} from '../ois/index.js';

export type { EndpointPhase, Ois };

export type CallEndpointInput = {
  ois: Ois;
  endpointName: string;
  parameters: Record<string, unknown>;
  apiCredentials: readonly ApiCredential[];
  metadata?: RequestMetadata;
  /** How long the call may wait for its turn in the API's rate budget (src/ois/budget.ts); else the process's. */
  budget?: BudgetWait;
  onPhase?: (phase: EndpointPhase) => void;
};

export type CallEndpointResult =
  | { success: true; rawValue: unknown; encodedValue: string; values: unknown[]; timestamp?: number }
  | {
      success: false;
      errorMessage: string;
      rawValue?: unknown;
      /** The API answered 429 or 503 naming a wait (ms): no call goes to it sooner. */
      retryAfterMs?: number;
    };

export function decodeParameters(encoded: string): Record<string, unknown> {
  return decodeNodeAbi(encoded);
}

export async function callEndpoint(call: CallEndpointInput): Promise<CallEndpointResult> {
  return engineCallEndpoint({ ...call, apiCredentials: [...call.apiCredentials] });
}

/** The value of a reserved parameter (`_gasPrice`, `_minConfirmations`, ...) for a request to an endpoint. */
export const reservedParameterValue = getReservedParameterValue;
