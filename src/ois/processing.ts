// Pre- and post-processing specifications (airnode-facts §8) with the reference's inputs and outputs,
// executed in the QuickJS sandbox, on a worker thread of the pool, instead of Node's vm. V2 takes precedence over
// V1 as in the reference.
// Reserved parameters are hidden from snippets and re-added after pre-processing.
import type { SandboxMode } from './sandbox.js';
import type { Endpoint, ProcessingSpecification, ProcessingSpecificationV2 } from './types.js';
import { isReservedParameterName } from './types.js';
import { runSnippet } from './worker-pool.js';

/** Overall budget of one processing phase, as the reference's PROCESSING_TIMEOUT. */
export const DEFAULT_PROCESSING_TIMEOUT_MS = 10_000;

export type ProcessingOptions = {
  totalTimeoutMs?: number | undefined;
  memoryLimitBytes?: number | undefined;
  /** Receives the snippets' console output. */
  logs?: string[] | undefined;
};

export type PostProcessingResult = { response: unknown; timestamp?: number };

export class ProcessingError extends Error {}

type Parameters = Record<string, unknown>;

function isRecord(value: unknown): value is Parameters {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function removeReservedParameters(parameters: Parameters): Parameters {
  const result: Parameters = {};
  for (const [key, value] of Object.entries(parameters)) {
    if (!isReservedParameterName(key)) result[key] = value;
  }
  return result;
}

function addReservedParameters(initial: Parameters, modified: Parameters): Parameters {
  const result = { ...modified };
  for (const [key, value] of Object.entries(initial)) {
    if (isReservedParameterName(key)) result[key] = value;
  }
  return result;
}

class Budget {
  readonly deadline: number;
  constructor(totalTimeoutMs: number) {
    this.deadline = performance.now() + totalTimeoutMs;
  }

  /** The snippet's own timeout, or what is left of the phase budget when that is shorter. */
  slice(timeoutMs: number, ownMessage: string): { timeoutMs: number; timeoutMessage: string } {
    const remaining = Math.max(0, this.deadline - performance.now());
    if (remaining < timeoutMs) return { timeoutMs: remaining, timeoutMessage: 'Full timeout exceeded' };
    return { timeoutMs, timeoutMessage: ownMessage };
  }
}

async function runV1Chain(
  specifications: readonly ProcessingSpecification[],
  input: unknown,
  endpointParameters: Parameters,
  options: ProcessingOptions,
): Promise<unknown> {
  const budget = new Budget(options.totalTimeoutMs ?? DEFAULT_PROCESSING_TIMEOUT_MS);
  let current = input;
  for (const specification of specifications) {
    let mode: SandboxMode;
    let ownTimeoutMessage: string;
    if (specification.environment === 'Node') {
      mode = 'sync';
      ownTimeoutMessage = `Script execution timed out after ${specification.timeoutMs}ms`;
    } else if (specification.environment === 'Node async') {
      mode = 'callback';
      ownTimeoutMessage = 'Timeout exceeded';
    } else {
      throw new ProcessingError(`Unsupported processing environment: ${specification.environment}`);
    }
    current = await runSnippet({
      code: specification.value,
      mode,
      globals: { input: current, endpointParameters },
      ...budget.slice(specification.timeoutMs, ownTimeoutMessage),
      memoryLimitBytes: options.memoryLimitBytes,
      logs: options.logs,
    });
  }
  return current;
}

function runV2(
  specification: ProcessingSpecificationV2,
  payload: unknown,
  options: ProcessingOptions,
): Promise<unknown> {
  if (specification.environment !== 'Node') {
    throw new ProcessingError(`Unsupported processing environment: ${specification.environment}`);
  }
  const budget = new Budget(options.totalTimeoutMs ?? DEFAULT_PROCESSING_TIMEOUT_MS);
  return runSnippet({
    code: specification.value,
    mode: 'function',
    globals: { payload },
    ...budget.slice(specification.timeoutMs, 'Full timeout exceeded'),
    memoryLimitBytes: options.memoryLimitBytes,
    logs: options.logs,
  });
}

/**
 * Pre-processing: snippets see the request parameters without reserved ones and must produce an object
 * of parameters; the reserved parameters of the request are re-added afterwards.
 */
export async function preProcessEndpointParameters(
  endpoint: Endpoint,
  parameters: Parameters,
  options: ProcessingOptions = {},
): Promise<Parameters> {
  const nonReserved = removeReservedParameters(parameters);
  if (endpoint.preProcessingSpecificationV2) {
    const result = await runV2(endpoint.preProcessingSpecificationV2, { endpointParameters: nonReserved }, options);
    if (!isRecord(result) || !isRecord(result.endpointParameters)) {
      throw new ProcessingError('Pre-processing must return an object of the form { endpointParameters: { … } }');
    }
    return addReservedParameters(parameters, result.endpointParameters);
  }
  const specifications = endpoint.preProcessingSpecifications;
  if (!specifications || specifications.length === 0) return parameters;
  const result = await runV1Chain(specifications, nonReserved, nonReserved, options);
  if (!isRecord(result)) throw new ProcessingError('Pre-processing output must be an object of endpoint parameters');
  return addReservedParameters(parameters, result);
}

/**
 * Post-processing: V1 snippets transform `input` (the response) in a chain; V2 gets
 * { response, endpointParameters } and returns { response, timestamp? }.
 */
export async function postProcessResponse(
  response: unknown,
  endpoint: Endpoint,
  parameters: Parameters,
  options: ProcessingOptions = {},
): Promise<PostProcessingResult> {
  const nonReserved = removeReservedParameters(parameters);
  if (endpoint.postProcessingSpecificationV2) {
    const result = await runV2(
      endpoint.postProcessingSpecificationV2,
      { response, endpointParameters: nonReserved },
      options,
    );
    if (!isRecord(result)) {
      throw new ProcessingError('Post-processing must return an object of the form { response, timestamp? }');
    }
    const { timestamp } = result;
    if (timestamp !== undefined && !(typeof timestamp === 'number' && Number.isInteger(timestamp) && timestamp >= 0)) {
      throw new ProcessingError('Post-processing returned an invalid timestamp: expected a non-negative integer');
    }
    return timestamp === undefined ? { response: result.response } : { response: result.response, timestamp };
  }
  const specifications = endpoint.postProcessingSpecifications;
  if (!specifications || specifications.length === 0) return { response };
  return { response: await runV1Chain(specifications, response, nonReserved, options) };
}
