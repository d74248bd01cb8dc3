// OIS 2.3.x (the API integration mapping) as zod 4 schemas. Field rules follow the spec
// (oracle-node-config.md, "OIS object") and the reference OIS 2.3.2 package; cross-field rules run in
// superRefine with paths relative to the OIS object so the config schema can prefix `ois[n]`.
import { z } from 'zod';
import { fixedReservedProblem } from './response-types.js';

export const SUPPORTED_OIS_FORMAT = '2.3';

export const RESERVED_PARAMETER_NAMES = ['_type', '_path', '_times', '_gasPrice', '_minConfirmations'] as const;

export const RELAY_SCHEME_TYPES = [
  'relayChainId',
  'relayChainType',
  'relayRequesterAddress',
  'relaySponsorAddress',
  'relaySponsorWalletAddress',
  'relayRequestId',
] as const;

const semver = z
  .string()
  .regex(/^\d+\.\d+\.\d+$/, 'Expected semantic versioning "x.y.z"')
  .describe('Semantic version x.y.z');

const isAbsoluteUrl = (value: string) => URL.canParse(value);
const urlString = z.string().refine(isAbsoluteUrl, 'Invalid URL: expected an absolute URL');

export const methodSchema = z.enum(['get', 'post']).describe('HTTP method of the API operation: get or post');

export const parameterTargetSchema = z
  .enum(['path', 'query', 'header', 'cookie', 'processing'])
  .describe(
    'Where the value is placed in the API request: path, query, header or cookie (processing: only visible to processing code)',
  );

const isReservedName = (name: string) => (RESERVED_PARAMETER_NAMES as readonly string[]).includes(name);

export const operationParameterSchema = z
  .strictObject({
    in: parameterTargetSchema,
    name: z
      .string()
      .refine((name) => !isReservedName(name), {
        message: 'The name of a reserved parameter cannot be used as an operation parameter name',
      })
      .describe('Name under which the value is sent to the API'),
  })
  .describe('An API operation parameter: {name, in}');

export const fixedOperationParameterSchema = z
  .strictObject({
    operationParameter: operationParameterSchema,
    // Optional like the reference's z.any(); a missing value is sent as undefined.
    value: z
      .unknown()
      .optional()
      .describe('Value always sent for the operation parameter (any JSON type); requesters cannot override it'),
  })
  .describe('An operation parameter with a value fixed by the endpoint');

export const endpointOperationSchema = z
  .strictObject({
    method: methodSchema,
    path: z
      .string()
      .regex(/^\/\S*$/, 'Path must start with "/" and contain no whitespace')
      .describe('Path of an operation defined in apiSpecifications.paths'),
  })
  .describe('The API operation the endpoint calls; omitted when the value comes only from processing');

export const endpointParameterSchema = z
  .strictObject({
    name: z
      .string()
      .regex(/^\S+$/, 'Parameter name must not contain whitespace')
      .refine((name) => !name.startsWith('_'), {
        message: 'Endpoint parameter names must not start with "_" (reserved for reserved parameters)',
      })
      .describe('Name under which the requester supplies the value; must not start with an underscore'),
    operationParameter: operationParameterSchema
      .optional()
      .describe('Operation parameter the value is sent as; when omitted the value is not sent to the API'),
    description: z.string().optional().describe('Documentation only'),
    example: z.string().optional().describe('Documentation only'),
    default: z.string().optional().describe('Value used when the requester supplies none'),
    required: z.boolean().optional().describe('Whether the requester must supply the parameter (documentation only)'),
  })
  .describe('A parameter a requester may supply to the endpoint');

const nonNegativeIntegerString = /^\d+$/;

/** _minConfirmations and _gasPrice take a non-negative integer (or nothing, or '') in `key`. */
function numericWhereRequired(param: { name: string; fixed?: string; default?: string }, key: 'fixed' | 'default') {
  if (param.name !== '_minConfirmations' && param.name !== '_gasPrice') return true;
  const value = param[key];
  return value === undefined || value === '' || nonNegativeIntegerString.test(value);
}

const notNumeric = (key: 'fixed' | 'default') => ({
  error: (issue: { input?: unknown }) =>
    `Reserved parameter ${(issue.input as { name: string }).name} must be a non-negative integer if present`,
  path: [key],
});

export const reservedParameterSchema = z
  .strictObject({
    name: z
      .enum(RESERVED_PARAMETER_NAMES)
      .describe('Reserved parameter name: _type, _path, _times, _gasPrice or _minConfirmations'),
    default: z.string().optional().describe('Value used when the requester supplies none'),
    fixed: z.string().optional().describe('Value that the requester cannot override'),
  })
  // Predicates with a fixed path, so refine rather than superRefine: the generated parsers call a refine's predicate
  // directly (three reserved parameters per endpoint, thousands in a large config). The issues are the same.
  .refine((param) => param.fixed === undefined || param.default === undefined, {
    message: 'Reserved parameter must use at most one of "default" and "fixed" properties',
  })
  .refine((param) => numericWhereRequired(param, 'fixed'), notNumeric('fixed'))
  .refine((param) => numericWhereRequired(param, 'default'), notNumeric('default'))
  .describe('A reserved parameter (response encoding, gas price, confirmations); not sent to the API');

export const processingSpecificationSchema = z
  .strictObject({
    environment: z.enum(['Node', 'Node async']).describe('Runtime of the code: Node or Node async'),
    value: z.string().describe('The code; reads `input` and assigns `output`'),
    timeoutMs: z.int().nonnegative().describe('Maximum run time in milliseconds'),
  })
  .describe('A deprecated (V1) processing step');

export const processingSpecificationV2Schema = z
  .strictObject({
    environment: z.literal('Node').describe('Runtime of the code: Node'),
    value: z
      .string()
      .describe('The code: a function of ({endpointParameters}) or ({response}) returning the same shape'),
    timeoutMs: z.int().nonnegative().describe('Maximum run time in milliseconds'),
  })
  .describe('A V2 processing specification');

export const serverSchema = z
  .strictObject({ url: urlString.describe('Absolute base URL applied to all operations') })
  .describe('API server');

export const apiKeySecuritySchemeSchema = z.strictObject({
  type: z.literal('apiKey').describe('apiKey: the credential is sent under `name` in `in`'),
  name: z.string().describe('Name of the scheme variable'),
  in: z.enum(['query', 'header', 'cookie']).describe('Where the credential is sent: query, header or cookie'),
});

export const httpSecuritySchemeSchema = z.strictObject({
  type: z.literal('http').describe('http: the credential is sent in the Authorization header'),
  scheme: z.enum(['basic', 'bearer']).describe('HTTP Authorization scheme (RFC 7235): basic or bearer'),
});

const relaySchemeSchemas = RELAY_SCHEME_TYPES.map((type) =>
  z.strictObject({
    type: z.literal(type).describe(`${type}: relays request metadata to the API`),
    name: z.string().describe('Name of the scheme variable'),
    in: z.enum(['query', 'header', 'cookie']).describe('Where the value is sent: query, header or cookie'),
  }),
);

export const securitySchemeSchema = z
  .discriminatedUnion('type', [apiKeySecuritySchemeSchema, httpSecuritySchemeSchema, ...relaySchemeSchemas], {
    error: `Invalid security scheme: "type" must be one of apiKey, http, ${RELAY_SCHEME_TYPES.join(', ')}`,
  })
  .describe('A security scheme: apiKey, http or a relay* metadata scheme');

export const operationSchema = z
  .strictObject({
    parameters: z.array(operationParameterSchema).describe('Parameters requesters supply or endpoints fix'),
  })
  .describe('An API operation (path + method)');

export const pathItemSchema = z
  .partialRecord(methodSchema, operationSchema)
  .describe('Operations of one path, keyed by method (get, post)');

const PATH_PARAMETER = /\{([^}]+)\}/g;

export const pathsSchema = z
  .record(z.string().regex(/^\/\S*$/, 'Path must start with "/" and contain no whitespace'), pathItemSchema)
  // Runs for every path of every validated config (thousands in a large one): plain loops over the few
  // parameters of an operation, and an index only for a long list (see sameParameterCounts).
  .superRefine((paths, ctx) => {
    for (const rawPath of Object.keys(paths)) {
      const pathItem = paths[rawPath]!;
      const declared = rawPath.includes('{') ? [...rawPath.matchAll(PATH_PARAMETER)].map((m) => m[1]!) : [];
      const isDeclared = membership(declared);
      for (const method of Object.keys(pathItem) as (keyof typeof pathItem)[]) {
        const operation = pathItem[method];
        if (!operation) continue;
        const parameters = operation.parameters;
        const countOf = sameParameterCounts(parameters);
        for (const name of declared) {
          if (countOf({ in: 'path', name }) === 0) {
            ctx.addIssue({
              code: 'custom',
              message: `Path parameter "${name}" is not found in "parameters"`,
              path: [rawPath, method, 'parameters'],
            });
          }
        }
        for (let index = 0; index < parameters.length; index++) {
          const p = parameters[index]!;
          if (p.in === 'path' && !isDeclared(p.name)) {
            ctx.addIssue({
              code: 'custom',
              message: `Parameter "${p.name}" is not found in the URL path`,
              path: [rawPath, method, 'parameters', index],
            });
          }
        }
        for (let index = 0; index < parameters.length; index++) {
          const p = parameters[index]!;
          if (countOf(p) > 1) {
            ctx.addIssue({
              code: 'custom',
              message: `Parameter "${p.name}" in "${p.in}" is used multiple times`,
              path: [rawPath, method, 'parameters', index],
            });
          }
        }
      }
    }
  })
  .describe('API operations keyed by path (starting with "/"), then by method');

export const apiSpecificationsSchema = z
  .strictObject({
    servers: z.array(serverSchema).describe('Exactly one server is used (servers[0]); more than one raises a warning'),
    paths: pathsSchema,
    components: z
      .strictObject({
        securitySchemes: z.record(z.string(), securitySchemeSchema).describe('Security schemes keyed by name'),
      })
      .describe('Holds securitySchemes'),
    security: z
      .record(z.string(), z.tuple([]).describe('Reserved for per-operation use: always []'))
      .describe('Enabled security schemes keyed by name, each an empty array'),
  })
  .superRefine((spec, ctx) => {
    for (const name of Object.keys(spec.security)) {
      if (!Object.hasOwn(spec.components.securitySchemes, name)) {
        ctx.addIssue({
          code: 'custom',
          message: `Security scheme "${name}" is not defined in "components.securitySchemes"`,
          path: ['security', name],
        });
      }
    }
  })
  .describe('The API: base URL, operations and security schemes (a simplified OpenAPI subset)');

export const endpointSchema = z
  .strictObject({
    name: z.string().describe('Endpoint name, unique within the OIS'),
    operation: endpointOperationSchema.optional(),
    fixedOperationParameters: z
      .array(fixedOperationParameterSchema)
      .describe('Operation parameters with fixed values (may be empty)'),
    reservedParameters: z
      .array(reservedParameterSchema)
      .describe('Reserved parameters; must include { "name": "_type" }'),
    parameters: z.array(endpointParameterSchema).describe('Parameters requesters may supply'),
    summary: z.string().optional().describe('Documentation only'),
    description: z.string().optional().describe('Documentation only'),
    externalDocs: z.string().optional().describe('Documentation only (URL)'),
    preProcessingSpecifications: z
      .array(processingSpecificationSchema)
      .optional()
      .describe('Deprecated: pre-processing steps run in order; use preProcessingSpecificationV2'),
    postProcessingSpecifications: z
      .array(processingSpecificationSchema)
      .optional()
      .describe('Deprecated: post-processing steps run in order; use postProcessingSpecificationV2'),
    preProcessingSpecificationV2: processingSpecificationV2Schema
      .optional()
      .describe('Code that modifies endpoint parameters before the API request'),
    postProcessingSpecificationV2: processingSpecificationV2Schema
      .optional()
      .describe('Code that modifies the API response'),
  })
  .superRefine((endpoint, ctx) => {
    if (!endpoint.reservedParameters.some((p) => p.name === '_type')) {
      ctx.addIssue({
        code: 'custom',
        message: 'Reserved parameters must contain object with { "name": "_type" }',
        path: ['reservedParameters'],
      });
    }
    const never = fixedReservedProblem(endpoint.reservedParameters);
    if (never) {
      const index = endpoint.reservedParameters.findIndex((p) => p.name === never.name);
      const reserved = endpoint.reservedParameters[index]!;
      ctx.addIssue({
        code: 'custom',
        message: never.message,
        path: ['reservedParameters', index, reserved.fixed ? 'fixed' : 'default'],
      });
    }
    const counts = new Map<string, number>();
    for (const p of endpoint.parameters) counts.set(p.name, (counts.get(p.name) ?? 0) + 1);
    endpoint.parameters.forEach((p, index) => {
      if ((counts.get(p.name) ?? 0) > 1) {
        ctx.addIssue({
          code: 'custom',
          message: `Parameter names must be unique, but parameter "${p.name}" is used multiple times`,
          path: ['parameters', index, 'name'],
        });
      }
    });
    if (endpoint.preProcessingSpecificationV2 && endpoint.preProcessingSpecifications) {
      ctx.addIssue({
        code: 'custom',
        message: 'Only one of "preProcessingSpecificationV2" and "preProcessingSpecifications" can be defined',
        path: ['preProcessingSpecificationV2'],
      });
    }
    if (endpoint.postProcessingSpecificationV2 && endpoint.postProcessingSpecifications) {
      ctx.addIssue({
        code: 'custom',
        message: 'Only one of "postProcessingSpecificationV2" and "postProcessingSpecifications" can be defined',
        path: ['postProcessingSpecificationV2'],
      });
    }
    if (!endpoint.operation) {
      if (endpoint.fixedOperationParameters.length > 0) {
        ctx.addIssue({
          code: 'custom',
          message: '"fixedOperationParameters" must be empty array when "operation" is not specified.',
          path: ['fixedOperationParameters'],
        });
      } else if (
        !endpoint.preProcessingSpecifications?.length &&
        !endpoint.postProcessingSpecifications?.length &&
        !endpoint.preProcessingSpecificationV2 &&
        !endpoint.postProcessingSpecificationV2
      ) {
        ctx.addIssue({
          code: 'custom',
          message:
            'At least one processing schema must be defined when "operation" is not specified and "fixedOperationParameters" is empty array.',
          path: [],
        });
      }
    }
  })
  .describe('A node endpoint: maps requester parameters to an API operation');

export type OperationParameter = z.infer<typeof operationParameterSchema>;
const sameParameter = (a: OperationParameter, b: OperationParameter) => a.in === b.in && a.name === b.name;

type OisShape = {
  title: string;
  apiSpecifications: z.infer<typeof apiSpecificationsSchema>;
  endpoints: z.infer<typeof endpointSchema>[];
};

/**
 * Lists up to this long are compared pair by pair (no allocation, fastest for the few parameters of a real
 * operation); longer ones through an index, so that a hostile config with 100,000 parameters in one operation is
 * checked in linear time, not in minutes.
 */
const PAIRWISE_LIMIT = 16;

/** How many entries of `list` name the same operation parameter as `op` (entries without one are skipped). */
function countSame(list: readonly (OperationParameter | undefined)[], op: OperationParameter): number {
  let count = 0;
  for (const other of list) if (other && sameParameter(other, op)) count++;
  return count;
}

/** `in` and name as one key; `in` never holds the separator, so distinct pairs give distinct keys. */
const parameterKey = (op: OperationParameter) => `${op.in}\u0000${op.name}`;
const hasStringFields = (op: OperationParameter) => typeof op.in === 'string' && typeof op.name === 'string';

/**
 * countSame over one list for many operation parameters: pairwise for a short list, else from counts indexed once
 * by parameterKey (when every entry and each asked parameter has string fields, as a parsed one has; otherwise
 * pairwise, which compares with === as sameParameter does).
 */
function sameParameterCounts(list: readonly (OperationParameter | undefined)[]): (op: OperationParameter) => number {
  if (list.length <= PAIRWISE_LIMIT || !list.every((op) => op === undefined || hasStringFields(op))) {
    return (op) => countSame(list, op);
  }
  const counts = new Map<string, number>();
  for (const op of list) {
    if (!op) continue;
    const key = parameterKey(op);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return (op) => (hasStringFields(op) ? (counts.get(parameterKey(op)) ?? 0) : countSame(list, op));
}

/**
 * The index of the first entry of `list` that names each asked operation parameter, or -1: as
 * `list.findIndex((other) => sameParameter(other, op))`, indexed once for a long list.
 */
function firstSameIndex(list: readonly OperationParameter[]): (op: OperationParameter) => number {
  if (list.length <= PAIRWISE_LIMIT || !list.every(hasStringFields)) {
    return (op) => list.findIndex((other) => sameParameter(other, op));
  }
  const first = new Map<string, number>();
  list.forEach((op, index) => {
    const key = parameterKey(op);
    if (!first.has(key)) first.set(key, index);
  });
  return (op) =>
    hasStringFields(op) ? (first.get(parameterKey(op)) ?? -1) : list.findIndex((other) => sameParameter(other, op));
}

/** `names.includes(name)`, through a set for a long list. */
function membership(names: readonly string[]): (name: string) => boolean {
  if (names.length <= PAIRWISE_LIMIT) return (name) => names.includes(name);
  const set = new Set(names);
  return (name) => set.has(name);
}

/**
 * Endpoint <-> apiSpecifications consistency (OIS 2.3 rules plus the spec's unique endpoint names). It runs for
 * every endpoint of every validated config (thousands in a large one), so it loops over the few parameters of an
 * endpoint without building lists per parameter.
 */
function checkOisReferences(ois: OisShape, ctx: z.RefinementCtx): void {
  const { apiSpecifications, endpoints } = ois;
  const names = new Map<string, number>();
  for (const e of endpoints) names.set(e.name, (names.get(e.name) ?? 0) + 1);
  for (let ei = 0; ei < endpoints.length; ei++) {
    const endpoint = endpoints[ei]!;
    if ((names.get(endpoint.name) ?? 0) > 1) {
      ctx.addIssue({
        code: 'custom',
        message: `Endpoint names must be unique within an OIS, but "${endpoint.name}" is used multiple times`,
        path: ['endpoints', ei, 'name'],
      });
    }
    const params = endpoint.parameters.map((p) => p.operationParameter);
    const fixed = endpoint.fixedOperationParameters.map((p) => p.operationParameter);
    const countInParams = sameParameterCounts(params);
    const countInFixed = sameParameterCounts(fixed);
    const sections = [
      ['parameters', params, countInParams],
      ['fixedOperationParameters', fixed, countInFixed],
    ] as const;
    for (const [section, list, countOf] of sections) {
      for (let index = 0; index < list.length; index++) {
        const op = list[index];
        if (op && countOf(op) > 1) {
          ctx.addIssue({
            code: 'custom',
            message: `Parameter "${op.name}" in "${op.in}" is used multiple times`,
            path: ['endpoints', ei, section, index, 'operationParameter'],
          });
        }
      }
    }
    const firstInFixed = firstSameIndex(fixed);
    for (let pi = 0; pi < params.length; pi++) {
      const op = params[pi];
      if (!op) continue;
      const fi = firstInFixed(op);
      if (fi >= 0) {
        const message = `Parameter "${op.name}" in "${op.in}" is used in both "parameters" and "fixedOperationParameters"`;
        ctx.addIssue({ code: 'custom', message, path: ['endpoints', ei, 'parameters', pi, 'operationParameter'] });
        ctx.addIssue({
          code: 'custom',
          message,
          path: ['endpoints', ei, 'fixedOperationParameters', fi, 'operationParameter'],
        });
      }
    }
    if (!endpoint.operation) continue;
    const { path, method } = endpoint.operation;
    const operation = Object.hasOwn(apiSpecifications.paths, path)
      ? apiSpecifications.paths[path]?.[method]
      : undefined;
    if (!operation) {
      ctx.addIssue({
        code: 'custom',
        message: `No matching API specification found in "apiSpecifications" section for ${method.toUpperCase()} ${path}`,
        path: ['endpoints', ei, 'operation'],
      });
      continue;
    }
    const apiParameters = operation.parameters;
    const countInApi = sameParameterCounts(apiParameters);
    for (const [section, list] of sections) {
      for (let index = 0; index < list.length; index++) {
        const op = list[index];
        if (op && countInApi(op) === 0) {
          ctx.addIssue({
            code: 'custom',
            message: `No matching API specification parameter found in "apiSpecifications" section for "${op.name}" in "${op.in}"`,
            path: ['endpoints', ei, section, index, 'operationParameter'],
          });
        }
      }
    }
    for (const apiParam of apiParameters) {
      if (countInParams(apiParam) === 0 && countInFixed(apiParam) === 0) {
        ctx.addIssue({
          code: 'custom',
          message: `Parameter "${apiParam.name}" not found in "fixedOperationParameters" or "parameters"`,
          path: ['endpoints', ei],
        });
      }
    }
  }
}

export const oisSchema = z
  .strictObject({
    oisFormat: semver
      .refine((v) => v.split('.').slice(0, 2).join('.') === SUPPORTED_OIS_FORMAT, {
        message: `oisFormat major.minor version must be ${SUPPORTED_OIS_FORMAT} (OIS 2.3.x)`,
      })
      .describe('OIS format version; 2.3.x is supported'),
    title: z
      .string()
      .regex(
        /^[a-zA-Z0-9-_\s]{1,64}$/,
        'Title must be 1-64 characters: alphanumerics, hyphens, underscores and whitespace only',
      )
      .describe(
        'Unique identifier of the OIS within the node; at most 64 alphanumerics, hyphens, underscores, whitespace',
      ),
    version: semver.describe('User-defined version of this OIS (semver x.y.z)'),
    apiSpecifications: apiSpecificationsSchema,
    endpoints: z.array(endpointSchema).describe('Node endpoints'),
  })
  .superRefine(checkOisReferences)
  .describe('An OIS object: maps API operations to node endpoints');

export type Ois = z.output<typeof oisSchema>;
export type OisInput = z.input<typeof oisSchema>;
export type Endpoint = z.output<typeof endpointSchema>;
export type EndpointParameter = z.output<typeof endpointParameterSchema>;
export type ReservedParameter = z.output<typeof reservedParameterSchema>;
export type FixedOperationParameter = z.output<typeof fixedOperationParameterSchema>;
export type ApiSpecifications = z.output<typeof apiSpecificationsSchema>;
export type SecurityScheme = z.output<typeof securitySchemeSchema>;
export type ProcessingSpecification = z.output<typeof processingSpecificationSchema>;
export type ProcessingSpecificationV2 = z.output<typeof processingSpecificationV2Schema>;
export type Method = z.output<typeof methodSchema>;
