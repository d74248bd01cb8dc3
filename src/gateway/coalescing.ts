// Request coalescing: identical endpoint calls in flight at the same moment share one call (one API request).
//
// Two gateway requests get the same answer from one call when they run the same operation with the same
// credentials on the same parameters and nothing in the call differs per request. Concretely, a call may be
// shared when
//   - it names the same OIS title and endpoint name (hence the same operation, fixed parameters and API
//     credentials: a gateway serves one config, and credentials are per OIS title),
//   - the caller's parameters are the same JSON text (key order included: no canonicalisation to get wrong),
//   - the operation is a GET (a safe, idempotent method: the API sees one request where callers sent several,
//     which is wrong for a POST that has an effect per call),
//   - the endpoint has no pre-processing snippet (a snippet can put a nonce, a timestamp or a random value into
//     the request; post-processing runs on the shared answer as it would on each),
// and only while the first call is in flight: nothing is kept once it settles, so a shared answer is never older
// than the call the first caller started, and a failure (timeout, 5xx) is shared by the callers that waited on it.
import type { Ois } from '../ois/index.js';

/** The key under which a call may be shared, or undefined when it must run on its own. */
export function coalescingKey(ois: Ois, endpointName: string, parameters: Record<string, unknown>): string | undefined {
  const endpoint = ois.endpoints.find((candidate) => candidate.name === endpointName);
  if (endpoint?.operation?.method.toLowerCase() !== 'get') return undefined;
  if (endpoint.preProcessingSpecifications?.length || endpoint.preProcessingSpecificationV2) return undefined;
  try {
    return JSON.stringify([ois.title, endpointName, parameters]);
  } catch {
    // Parameters that do not serialise (too deeply nested for the stack): no sharing, the engine decides.
    return undefined;
  }
}

/** Calls in flight by key: a caller with the key of a running call waits for that call instead of starting one. */
export class InFlightCalls<T> {
  readonly #calls = new Map<string, Promise<T>>();

  /** Runs `call` unless one with the same key is in flight; `shared` tells which happened. */
  run(key: string | undefined, call: () => Promise<T>): { result: Promise<T>; shared: boolean } {
    if (key === undefined) return { result: call(), shared: false };
    const running = this.#calls.get(key);
    if (running) return { result: running, shared: true };
    const result = call().finally(() => this.#calls.delete(key));
    this.#calls.set(key, result);
    return { result, shared: false };
  }

  /** Calls in flight now. */
  get size(): number {
    return this.#calls.size;
  }
}
