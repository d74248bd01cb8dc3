// config.json of an Airnode feed (@api3/airnode-feed 3.x, packages/airnode-feed/src/validation/schema.ts), as zod 4
// schemas: the one source of truth for `oracle-node feed`. Same keys, same rules and the same messages as the
// reference's own schema for the same bad configs; the OIS and apiCredentials entries are the node's own models
// (src/config), which are Airnode 0.15's. Deliberate differences are listed in docs/feeds.md ("Validation") and
// pinned by test/unit/feed/config.test.ts.
import { z } from 'zod';
import { apiCredentialsSchema } from '../config/api-credentials.js';
import { oisSchema } from '../config/ois.js';
import { type AbiParameter, type AbiParameterType, encodeParameters } from '../ois/abi.js';
import { preProcessEndpointParameters } from '../ois/processing.js';
import type { Endpoint as OisEndpoint } from '../ois/types.js';
import { BYTES32_PATTERN, deriveEndpointId, deriveTemplateIdV1FromCheckedHex } from '../protocol/direct-ids.js';
import { isValidMnemonic } from '../protocol/node-key.js';

/** The Airnode feed releases whose config.json this engine takes (the reference accepts only its own version). */
export const FEED_NODE_VERSION = /^3\.\d+\.\d+$/;

const evmIdSchema = z.string().regex(/^0x[a-fA-F0-9]{64}$/);

export const feedParameterSchema = z.strictObject({ name: z.string(), type: z.string(), value: z.string() });

export const feedTemplateSchema = z.strictObject({
  endpointId: evmIdSchema,
  parameters: z.array(feedParameterSchema),
});

/** The Airnode ABI encoding of a template's parameters (the bytes its template id covers). */
export function encodeTemplateParameters(parameters: readonly z.output<typeof feedParameterSchema>[]): string {
  return encodeParameters(
    parameters.map(({ name, type, value }): AbiParameter => ({ name, type: type as AbiParameterType, value })),
  );
}

export const feedTemplatesSchema = z.record(evmIdSchema, feedTemplateSchema).superRefine((templates, ctx) => {
  for (const [templateId, template] of Object.entries(templates)) {
    let encodedParameters: string;
    try {
      encodedParameters = encodeTemplateParameters(template.parameters);
    } catch (error) {
      // The reference's path here is templates.templates.<id>.parameters (its ctx path is already `templates`).
      ctx.addIssue({
        code: 'custom',
        message: `Unable to encode parameters: ${(error as Error).message}`,
        path: [templateId, 'parameters'],
      });
      continue;
    }
    // An endpointId that is not bytes32 is reported by its own schema.
    if (!BYTES32_PATTERN.test(template.endpointId)) continue;
    // Checked: the endpoint id just above, the parameters as this engine's encoder writes them.
    const derived = deriveTemplateIdV1FromCheckedHex(template.endpointId, encodedParameters);
    if (derived !== templateId) {
      ctx.addIssue({
        code: 'custom',
        message: `Template ID "${templateId}" is invalid, expected to be ${derived}`,
        path: [templateId],
      });
    }
  }
});

export const feedEndpointSchema = z.strictObject({ oisTitle: z.string(), endpointName: z.string() });

export const feedEndpointsSchema = z.record(z.string(), feedEndpointSchema).superRefine((endpoints, ctx) => {
  for (const [endpointId, endpoint] of Object.entries(endpoints)) {
    if (deriveEndpointId(endpoint.oisTitle, endpoint.endpointName) !== endpointId) {
      ctx.addIssue({ code: 'custom', message: `Endpoint ID "${endpointId}" is invalid`, path: [endpointId] });
    }
  }
});

export const signedApiUpdateSchema = z.strictObject({
  templateIds: z.array(evmIdSchema),
  // Seconds. The reference takes any number (0 or less makes it call the API in a busy loop).
  fetchInterval: z.number().positive('fetchInterval must be a positive number of seconds'),
});

export const feedTriggersSchema = z.strictObject({
  signedApiUpdates: z.array(signedApiUpdateSchema).min(1, 'Array must contain at least 1 element(s)'),
});

export const signedApiSchema = z.strictObject({
  name: z.string(),
  url: z.string().refine((value) => URL.canParse(value), 'Invalid url'),
  authToken: z.string().nullable(),
});

export const signedApisSchema = z
  .array(signedApiSchema)
  .min(1, 'Array must contain at least 1 element(s)')
  .superRefine((apis, ctx) => {
    // The reference's path is signedApis.signedApis.
    if (new Set(apis.map((api) => api.name)).size !== apis.length) {
      ctx.addIssue({ code: 'custom', message: 'Signed API names must be unique', path: [] });
    }
  });

export const feedNodeSettingsSchema = z.strictObject({
  nodeVersion: z.string().refine((version) => FEED_NODE_VERSION.test(version), 'Invalid node version'),
  airnodeWalletMnemonic: z.string().refine(isValidMnemonic, 'Invalid mnemonic'),
  stage: z
    .string()
    .regex(/^[\da-z-]{1,256}$/, 'Only lowercase letters, numbers and hyphens are allowed (max 256 characters)'),
});

type FeedShape = {
  apiCredentials: z.output<typeof apiCredentialsSchema>[];
  endpoints: z.output<typeof feedEndpointsSchema>;
  ois: z.output<typeof oisSchema>[];
  templates: z.output<typeof feedTemplatesSchema>;
  triggers: z.output<typeof feedTriggersSchema>;
};

function parameterRecord(parameters: readonly { name: string; value: string }[]): Record<string, string> {
  const record: Record<string, string> = {};
  for (const { name, value } of parameters) record[name] = value;
  return record;
}

/** The OIS endpoint a config endpoint id names (undefined when a reference is broken). */
export function oisEndpointOf(config: FeedShape, endpointId: string) {
  const endpoint = config.endpoints[endpointId];
  const ois = endpoint && config.ois.find(({ title }) => title === endpoint.oisTitle);
  const oisEndpoint = ois?.endpoints.find(({ name }) => name === endpoint?.endpointName);
  return ois && oisEndpoint ? { ois, endpoint: oisEndpoint } : undefined;
}

function checkTemplateReferences(config: FeedShape, ctx: z.RefinementCtx): void {
  for (const [templateId, template] of Object.entries(config.templates)) {
    if (!config.endpoints[template.endpointId]) {
      ctx.addIssue({
        code: 'custom',
        message: `Endpoint "${template.endpointId}" is not defined in the config.endpoints object`,
        path: ['templates', templateId, 'endpointId'],
      });
    }
  }
}

function checkOisReferences(config: FeedShape, ctx: z.RefinementCtx): void {
  for (const [endpointId, { oisTitle, endpointName }] of Object.entries(config.endpoints)) {
    const ois = config.ois.find(({ title }) => title === oisTitle);
    if (!ois) {
      ctx.addIssue({
        code: 'custom',
        message: `OIS "${oisTitle}" is not defined in the config.ois object`,
        path: ['endpoints', endpointId, 'oisTitle'],
      });
      continue;
    }
    if (!ois.endpoints.some(({ name }) => name === endpointName)) {
      ctx.addIssue({
        code: 'custom',
        message: `OIS titled "${oisTitle}" doesn't have referenced endpoint ${endpointName}`,
        path: ['endpoints', endpointId, 'endpointName'],
      });
    }
  }
}

/** Key-order-independent equality of two JSON-like values (pre-processed parameters). */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  if (keysA.length !== keysB.length) return false;
  return keysA.every(
    (key) =>
      Object.hasOwn(b, key) && sameJson((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]),
  );
}

/**
 * The templates of one signedApiUpdate share one API call (the reference calls the API with the first template's
 * parameters and post-processes the answer per template), so they must name existing templates of one endpoint whose
 * parameters pre-process to the same request.
 */
async function checkTriggerReferences(config: FeedShape, ctx: z.RefinementCtx): Promise<void> {
  for (const [updateIndex, update] of config.triggers.signedApiUpdates.entries()) {
    let missing = false;
    update.templateIds.forEach((templateId, templateIdIndex) => {
      if (config.templates[templateId]) return;
      missing = true;
      ctx.addIssue({
        code: 'custom',
        message: `Template "${templateId}" is not defined in the config.templates object`,
        path: ['triggers', 'signedApiUpdates', updateIndex, 'templateIds', templateIdIndex],
      });
    });
    if (missing || update.templateIds.length < 2) continue;
    const path = ['triggers', 'signedApiUpdates', updateIndex, 'templateIds'];
    const endpointIds = new Set(update.templateIds.map((templateId) => config.templates[templateId]!.endpointId));
    if (endpointIds.size > 1) {
      ctx.addIssue({ code: 'custom', message: 'The endpoint utilized by each template must be same', path });
      continue;
    }
    const target = oisEndpointOf(config, [...endpointIds][0]!);
    if (!target) continue; // reported by checkTemplateReferences / checkOisReferences
    const oisEndpoint = target.endpoint as OisEndpoint;
    if (!oisEndpoint.operation && oisEndpoint.fixedOperationParameters.length === 0) continue;
    const payloads: unknown[] = [];
    for (const templateId of update.templateIds) {
      try {
        payloads.push(
          await preProcessEndpointParameters(oisEndpoint, parameterRecord(config.templates[templateId]!.parameters)),
        );
      } catch (error) {
        ctx.addIssue({
          code: 'custom',
          message: `Unable to pre-process endpoint parameters: ${(error as Error).message}`,
          path: ['templates', templateId, 'parameters'],
        });
        payloads.push(undefined);
      }
    }
    if (payloads.some((payload) => !sameJson(payload, payloads[0]))) {
      ctx.addIssue({
        code: 'custom',
        message: 'The endpoint utilized by each template must have the same operation effect',
        path,
      });
    }
  }
}

export const feedConfigSchema = z
  .strictObject({
    apiCredentials: z.array(apiCredentialsSchema),
    endpoints: feedEndpointsSchema,
    nodeSettings: feedNodeSettingsSchema,
    ois: z.array(oisSchema),
    signedApis: signedApisSchema,
    templates: feedTemplatesSchema,
    triggers: feedTriggersSchema,
  })
  .superRefine(checkTemplateReferences)
  .superRefine(checkOisReferences)
  .superRefine(checkTriggerReferences);

export type FeedConfig = z.output<typeof feedConfigSchema>;
export type FeedTemplate = z.output<typeof feedTemplateSchema>;
export type SignedApi = z.output<typeof signedApiSchema>;
export type SignedApiUpdate = z.output<typeof signedApiUpdateSchema>;

export { parameterRecord };
