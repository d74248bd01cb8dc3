// Request validation of the HTTP and signed-data gateways and the CORS origin check, as the reference's
// (workers/local-gateways/{server,validation}.ts): pure functions of the config and the request, same messages.
import { z } from 'zod';
import type { Config } from '../config/index.js';
import { decodeParameters } from '../ois/abi.js';

// Extra fields are allowed (no .strict()), as in the reference.
const httpRequestBodySchema = z.object({ parameters: z.record(z.string(), z.any()) });
const httpSignedDataBodySchema = z.object({ encodedParameters: z.string() });

export type ErrorBody = { message: string };
export type Validation<T> = ({ success: true } & T) | { success: false; statusCode: number; error: ErrorBody };

export type HttpTrigger = Config['triggers']['http'][number];
export type HttpSignedDataTrigger = Config['triggers']['httpSignedData'][number];

function findTrigger(config: Config, list: 'http' | 'httpSignedData', endpointId: string) {
  return config.triggers[list].find((trigger) => trigger.endpointId === endpointId);
}

export function validateHttpRequest(
  config: Config,
  body: unknown,
  endpointId: string,
): Validation<{ parameters: Record<string, unknown>; trigger: HttpTrigger }> {
  const parsed = httpRequestBodySchema.safeParse(body);
  if (!parsed.success) return { success: false, statusCode: 400, error: { message: 'Invalid request body' } };
  const trigger = findTrigger(config, 'http', endpointId);
  if (!trigger) {
    return { success: false, statusCode: 400, error: { message: `Unable to find endpoint with ID:'${endpointId}'` } };
  }
  return { success: true, parameters: parsed.data.parameters, trigger };
}

export function validateHttpSignedDataRequest(
  config: Config,
  body: unknown,
  endpointId: string,
): Validation<{ encodedParameters: string; parameters: Record<string, unknown>; trigger: HttpSignedDataTrigger }> {
  const parsed = httpSignedDataBodySchema.safeParse(body);
  if (!parsed.success) return { success: false, statusCode: 400, error: { message: 'Invalid request body' } };
  const { encodedParameters } = parsed.data;
  // The reference decodes before it looks the endpoint up, so a bad encoding wins over an unknown endpoint.
  let parameters: Record<string, unknown>;
  try {
    parameters = decodeParameters(encodedParameters);
  } catch {
    return {
      success: false,
      statusCode: 400,
      error: { message: `Request contains invalid encodedParameters: ${encodedParameters}` },
    };
  }
  const trigger = findTrigger(config, 'httpSignedData', endpointId);
  if (!trigger) {
    return { success: false, statusCode: 400, error: { message: `Unable to find endpoint with ID:'${endpointId}'` } };
  }
  return { success: true, encodedParameters, parameters, trigger };
}

/** The reference's verifyRequestOrigin: "*" or the exact Origin; the matched entry is echoed. */
export function verifyRequestOrigin(
  allowedOrigins: readonly string[],
  origin: string | undefined,
): { success: true; headers: Record<string, string> } | { success: false; error: ErrorBody } {
  const allowed =
    allowedOrigins.find((entry) => entry === '*') || (origin && allowedOrigins.find((entry) => entry === origin));
  if (allowed) {
    return {
      success: true,
      headers: {
        'Access-Control-Allow-Origin': allowed,
        'Access-Control-Allow-Methods': 'OPTIONS,POST',
        'Access-Control-Allow-Headers': 'Content-Type',
      },
    };
  }
  return { success: false, error: { message: 'CORS origin verification failed.' } };
}
