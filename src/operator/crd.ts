// The OracleNode CustomResourceDefinition, built from the config model's JSON Schema plus the workload knobs.
// Kubernetes accepts only "structural" OpenAPI v3 schemas (no $ref, a type on every node, no types inside
// anyOf/oneOf, properties and additionalProperties never together), so the JSON Schema that zod emits is
// converted here; what cannot be expressed becomes x-kubernetes-preserve-unknown-fields and is left to the
// operator's full validation, which reports path-addressed errors in the ConfigValid condition.
import { DEFAULT_GATEWAY_SERVER_PORT } from '../config/index.js';
import {
  DEFAULT_IMAGE,
  DEFAULT_SCHEDULE,
  DEFAULT_TARGET_CPU_UTILIZATION,
  GROUP,
  KIND,
  MAX_CYCLE_HISTORY,
  MAX_RECENT_FAILED_REQUESTS,
  PLURAL,
  SHORT_NAME,
  SINGULAR,
  VERSION,
} from './resource.js';

export type JsonSchema = { [key: string]: unknown };
export type StructuralSchema = {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  description?: string;
  properties?: Record<string, StructuralSchema>;
  required?: string[];
  additionalProperties?: StructuralSchema;
  items?: StructuralSchema;
  enum?: unknown[];
  nullable?: boolean;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  minItems?: number;
  maxItems?: number;
  maxLength?: number;
  minLength?: number;
  pattern?: string;
  default?: unknown;
  format?: string;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-validations'?: { rule: string; message: string }[];
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-map-type'?: string;
};

/** Written this way so it is not mistaken for a template literal. */
export const NAME_PLACEHOLDER = '$' + '{NAME}';

const PRESERVE = { 'x-kubernetes-preserve-unknown-fields': true } as const;

type ConvertOptions = {
  /** Root document, for resolving `$ref: #/$defs/...`. */
  root: JsonSchema;
  /** Refs being expanded on the current path: a recursive ref becomes free-form instead of looping. */
  expanding: Set<string>;
  path: string;
};

function resolveRef(ref: string, root: JsonSchema): JsonSchema | undefined {
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = root;
  for (const part of ref.slice(2).split('/')) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Record<string, unknown>)[part.replaceAll('~1', '/').replaceAll('~0', '~')];
  }
  return typeof node === 'object' && node !== null ? (node as JsonSchema) : undefined;
}

const asSchemas = (value: unknown): JsonSchema[] =>
  Array.isArray(value) ? value.filter((v): v is JsonSchema => typeof v === 'object' && v !== null) : [];

function jsonTypes(schema: JsonSchema): string[] {
  if (Array.isArray(schema.type)) return schema.type.map(String);
  if (typeof schema.type === 'string') return [schema.type];
  if ('const' in schema) return [typeOfValue(schema.const)];
  if (Array.isArray(schema.enum)) return [...new Set(schema.enum.map(typeOfValue))];
  if (schema.properties || schema.additionalProperties !== undefined) return ['object'];
  if (schema.items || schema.prefixItems) return ['array'];
  return [];
}

function typeOfValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** Merges object branches of a union into one object: properties united, required intersected. */
function mergeObjectBranches(branches: StructuralSchema[], description: string | undefined): StructuralSchema {
  const properties: Record<string, StructuralSchema> = {};
  let required: string[] | undefined;
  let preserve = false;
  for (const branch of branches) {
    for (const [name, prop] of Object.entries(branch.properties ?? {})) {
      const existing = properties[name];
      properties[name] = existing ? mergeSchemas(existing, prop) : prop;
    }
    required = required ? required.filter((r) => branch.required?.includes(r)) : [...(branch.required ?? [])];
    if (branch['x-kubernetes-preserve-unknown-fields'] || branch.additionalProperties) preserve = true;
  }
  const merged: StructuralSchema = { type: 'object' };
  if (description) merged.description = description;
  if (Object.keys(properties).length > 0) merged.properties = properties;
  if (required && required.length > 0) merged.required = required;
  if (preserve) merged['x-kubernetes-preserve-unknown-fields'] = true;
  return merged;
}

/** Two schemas for the same field from different union branches. */
function mergeSchemas(a: StructuralSchema, b: StructuralSchema): StructuralSchema {
  const numeric = new Set(['integer', 'number']);
  if (a.type && b.type && a.type !== b.type && numeric.has(a.type) && numeric.has(b.type)) {
    const description = a.description ?? b.description;
    return { ...(description ? { description } : {}), type: 'number' };
  }
  if (a.type && a.type === b.type) {
    if (a.type === 'object') return mergeObjectBranches([a, b], a.description ?? b.description);
    const merged: StructuralSchema = { type: a.type };
    const description = a.description ?? b.description;
    if (description) merged.description = description;
    if (a.enum && b.enum) merged.enum = [...new Set([...a.enum, ...b.enum])];
    if (a.type === 'array') merged.items = a.items && b.items ? mergeSchemas(a.items, b.items) : { ...PRESERVE };
    return merged;
  }
  return freeForm(a.description ?? b.description);
}

function freeForm(description: string | undefined): StructuralSchema {
  return description ? { description, ...PRESERVE } : { ...PRESERVE };
}

function isNullSchema(schema: JsonSchema): boolean {
  return schema.type === 'null' || ('const' in schema && schema.const === null);
}

function convert(schema: JsonSchema, options: ConvertOptions): StructuralSchema {
  const description = typeof schema.description === 'string' ? schema.description : undefined;

  if (typeof schema.$ref === 'string') {
    const ref = schema.$ref;
    const target = resolveRef(ref, options.root);
    if (!target || options.expanding.has(ref)) return freeForm(description);
    options.expanding.add(ref);
    const converted = convert({ ...target, ...(description ? { description } : {}) }, options);
    options.expanding.delete(ref);
    return converted;
  }

  const allOf = asSchemas(schema.allOf);
  if (allOf.length > 0) {
    const { allOf: _ignored, ...rest } = schema;
    const parts = [rest, ...allOf].map((part) => convert(part, options)).filter((p) => p.type || p.properties);
    if (parts.length === 1) return withDescription(parts[0]!, description);
    if (parts.every((p) => p.type === 'object')) return mergeObjectBranches(parts, description);
    return freeForm(description);
  }

  const union = [...asSchemas(schema.anyOf), ...asSchemas(schema.oneOf)];
  if (union.length > 0) {
    const nonNull = union.filter((branch) => !isNullSchema(branch));
    const nullable = nonNull.length < union.length;
    const branches = nonNull.map((branch) => convert(branch, options));
    let result: StructuralSchema;
    if (branches.length === 1) result = withDescription(branches[0]!, description);
    else if (branches.length > 0 && branches.every((b) => b.type === 'object'))
      result = mergeObjectBranches(branches, description);
    else if (branches.length > 0 && branches.every((b) => b.type && b.type === branches[0]!.type))
      result = withDescription(branches.reduce(mergeSchemas), description);
    else if (
      branches.length === 2 &&
      branches.some((b) => b.type === 'integer') &&
      branches.some((b) => b.type === 'string')
    )
      result = { ...(description ? { description } : {}), 'x-kubernetes-int-or-string': true };
    else result = freeForm(description);
    if (nullable && result.type) result.nullable = true;
    return result;
  }

  const types = jsonTypes(schema).filter((t) => t !== 'null');
  const nullable = jsonTypes(schema).includes('null');
  if (types.length !== 1) return freeForm(description);
  const type = types[0]!;
  const out: StructuralSchema = {};

  switch (type) {
    case 'object': {
      out.type = 'object';
      const properties = schema.properties as Record<string, JsonSchema> | undefined;
      if (properties && Object.keys(properties).length > 0) {
        out.properties = {};
        for (const [name, prop] of Object.entries(properties)) {
          out.properties[name] = convert(prop, { ...options, path: `${options.path}.${name}` });
        }
        const required = Array.isArray(schema.required) ? schema.required.map(String) : [];
        if (required.length > 0) out.required = required;
        // Known properties plus free-form extras: properties and additionalProperties cannot coexist.
        if (schema.additionalProperties !== undefined && schema.additionalProperties !== false)
          out['x-kubernetes-preserve-unknown-fields'] = true;
      } else if (typeof schema.additionalProperties === 'object' && schema.additionalProperties !== null) {
        const values = convert(schema.additionalProperties as JsonSchema, { ...options, path: `${options.path}.*` });
        out.additionalProperties = values;
      } else if (schema.additionalProperties !== false) {
        out['x-kubernetes-preserve-unknown-fields'] = true;
      }
      break;
    }
    case 'array': {
      out.type = 'array';
      if (typeof schema.items === 'object' && schema.items !== null && !Array.isArray(schema.items)) {
        out.items = convert(schema.items as JsonSchema, { ...options, path: `${options.path}[]` });
      } else if (Array.isArray(schema.prefixItems)) {
        // Tuples: one item schema must fit every position, so positions of different shapes stay free-form.
        const positions = asSchemas(schema.prefixItems).map((p) => convert(p, options));
        out.items = positions.length > 0 ? positions.reduce(mergeSchemas) : { ...PRESERVE };
      } else {
        out.items = { ...PRESERVE };
      }
      if (typeof schema.minItems === 'number') out.minItems = schema.minItems;
      if (typeof schema.maxItems === 'number') out.maxItems = schema.maxItems;
      break;
    }
    case 'string': {
      out.type = 'string';
      // Strings may be `${NAME}` placeholders resolved from the Secret, so patterns, formats and lengths are
      // checked after interpolation by the operator; only closed sets (enums) are checked by the apiserver.
      const values = 'const' in schema ? [schema.const] : schema.enum;
      if (Array.isArray(values)) out.enum = values.filter((v) => typeof v === 'string');
      break;
    }
    case 'integer':
    case 'number': {
      out.type = type;
      if (typeof schema.minimum === 'number') out.minimum = schema.minimum;
      if (typeof schema.maximum === 'number') out.maximum = schema.maximum;
      if (typeof schema.exclusiveMinimum === 'number') {
        out.minimum = schema.exclusiveMinimum;
        out.exclusiveMinimum = true;
      }
      if (typeof schema.exclusiveMaximum === 'number') {
        out.maximum = schema.exclusiveMaximum;
        out.exclusiveMaximum = true;
      }
      // Number.MAX_SAFE_INTEGER and friends add nothing and trip some clients.
      if (out.minimum !== undefined && Math.abs(out.minimum) >= Number.MAX_SAFE_INTEGER) delete out.minimum;
      if (out.maximum !== undefined && Math.abs(out.maximum) >= Number.MAX_SAFE_INTEGER) delete out.maximum;
      if (out.minimum === undefined) delete out.exclusiveMinimum;
      if (out.maximum === undefined) delete out.exclusiveMaximum;
      const values = 'const' in schema ? [schema.const] : schema.enum;
      if (Array.isArray(values)) out.enum = values.filter((v) => typeof v === 'number');
      break;
    }
    case 'boolean': {
      out.type = 'boolean';
      if ('const' in schema && typeof schema.const === 'boolean') out.enum = [schema.const];
      break;
    }
    default:
      return freeForm(description);
  }
  if (nullable) out.nullable = true;
  return withDescription(out, description);
}

function withDescription(schema: StructuralSchema, description: string | undefined): StructuralSchema {
  // Description first so the generated YAML reads naturally.
  return description ? { description, ...schema } : schema;
}

/** Fills a description on every property that has none, so `kubectl explain` always says something. */
function fillDescriptions(schema: StructuralSchema, path: string): void {
  for (const [name, prop] of Object.entries(schema.properties ?? {})) {
    const propPath = path ? `${path}.${name}` : name;
    if (!prop.description) prop.description = `${propPath} (see docs/crd-reference.md and the config reference).`;
    fillDescriptions(prop, propPath);
  }
  if (schema.items) fillDescriptions(schema.items, `${path}[]`);
  if (schema.additionalProperties) fillDescriptions(schema.additionalProperties, `${path}.*`);
}

/** The stage names the workloads, so it must be a literal (not a `${NAME}` placeholder) of the spec's form. */
const STAGE_RULE = {
  rule: "self.matches('^[a-z0-9-]{1,16}$')",
  message: `stage must be 1-16 characters of lowercase a-z, 0-9 and hyphen (and cannot be a ${NAME_PLACEHOLDER} placeholder)`,
};

/**
 * Children are named `<name>-<stage>-coordinator` and the CronJob controller appends 11 characters to a CronJob's
 * name for its Jobs, so CronJob names are limited to 52: name + stage must stay within 52 - 13.
 */
export const MAX_NAME_AND_STAGE = 39;
const NAME_LENGTH_RULE = {
  rule:
    '!has(self.spec.config) || !has(self.spec.config.nodeSettings) || !has(self.spec.config.nodeSettings.stage) || ' +
    `size(self.metadata.name) + size(self.spec.config.nodeSettings.stage) <= ${MAX_NAME_AND_STAGE}`,
  message: `metadata.name and nodeSettings.stage together must be at most ${MAX_NAME_AND_STAGE} characters (child names are <name>-<stage>-coordinator, a CronJob name of at most 52)`,
};

/** Converts the config model's JSON Schema (zod 4 `z.toJSONSchema`) into the structural schema of spec.config. */
export function configJsonSchemaToStructural(jsonSchema: JsonSchema | undefined): StructuralSchema {
  const description =
    'The whole config.json of the node, inline (chains, nodeSettings, triggers, templates, ois, apiCredentials). ' +
    `Any string may be a ${NAME_PLACEHOLDER} placeholder whose value is the key NAME of the Secret named by secretRef. ` +
    'The apiserver checks types and enums; the operator runs the full validation and reports errors in the ' +
    'ConfigValid condition.';
  if (!jsonSchema) return { description, type: 'object', ...PRESERVE };
  const converted = convert(jsonSchema, { root: jsonSchema, expanding: new Set(), path: 'config' });
  if (converted.type !== 'object') return { description, type: 'object', ...PRESERVE };
  converted.description = description;
  const stage = converted.properties?.nodeSettings?.properties?.stage;
  if (stage) {
    stage.maxLength = 16;
    stage['x-kubernetes-validations'] = [STAGE_RULE];
  }
  fillDescriptions(converted, 'config');
  return converted;
}

// ---------------------------------------------------------------------------------------------------------------
// Workload knobs

const quantityMap = (description: string): StructuralSchema => ({
  description,
  type: 'object',
  additionalProperties: { 'x-kubernetes-int-or-string': true, pattern: QUANTITY_PATTERN },
});
const QUANTITY_PATTERN =
  '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$';

const resources = (description: string): StructuralSchema => ({
  description,
  type: 'object',
  properties: {
    limits: quantityMap('Maximum compute resources (cpu, memory, ephemeral-storage), as on a container.'),
    requests: quantityMap('Minimum compute resources requested (cpu, memory, ephemeral-storage), as on a container.'),
  },
});

const tolerations: StructuralSchema = {
  description: 'Tolerations of every pod of the node (coordinator, workers, gateway), as on a pod spec.',
  type: 'array',
  items: {
    description: 'A toleration, as on a pod spec.',
    type: 'object',
    properties: {
      key: { description: 'Taint key the toleration applies to; empty matches all keys.', type: 'string' },
      operator: { description: 'Exists or Equal (default Equal).', type: 'string', enum: ['Exists', 'Equal'] },
      value: { description: 'Taint value the toleration matches (with operator Equal).', type: 'string' },
      effect: {
        description: 'Taint effect to match: NoSchedule, PreferNoSchedule or NoExecute; empty matches all.',
        type: 'string',
        enum: ['NoSchedule', 'PreferNoSchedule', 'NoExecute', ''],
      },
      tolerationSeconds: {
        description: 'For NoExecute: how long the pod stays bound after the taint appears.',
        type: 'integer',
        format: 'int64',
      },
    },
  },
};

function workloadProperties(): Record<string, StructuralSchema> {
  return {
    secretRef: {
      description:
        `The Secret (in the same namespace) whose keys are the ${NAME_PLACEHOLDER} values of the config. Its keys become ` +
        'environment variables of every pod; rotating it rolls the workloads.',
      type: 'object',
      required: ['name'],
      properties: { name: { description: 'Name of the Secret.', type: 'string', minLength: 1, maxLength: 253 } },
    },
    image: {
      description: `Engine image run by every pod (oracle-node coordinator|worker|gateway). Default ${DEFAULT_IMAGE}.`,
      type: 'string',
      minLength: 1,
    },
    imagePullPolicy: {
      description: 'Image pull policy of every container: Always, IfNotPresent or Never. Default IfNotPresent.',
      type: 'string',
      enum: ['Always', 'IfNotPresent', 'Never'],
    },
    resources: resources(
      "Compute resources of every container, merged key by key over the defaults (docs/scaling.md); each component's resources are merged over these.",
    ),
    nodeSelector: {
      description: 'Node labels every pod must match, as on a pod spec.',
      type: 'object',
      additionalProperties: { type: 'string' },
    },
    tolerations,
    affinity: {
      description: 'Scheduling affinity of every pod (nodeAffinity, podAffinity, podAntiAffinity), as on a pod spec.',
      type: 'object',
      ...PRESERVE,
    },
    coordinator: {
      description: 'The coordinator CronJob, which runs one cycle of the node per schedule tick.',
      type: 'object',
      properties: {
        schedule: {
          description: `Cron schedule of the cycles. Default "${DEFAULT_SCHEDULE}" (every minute).`,
          type: 'string',
          default: DEFAULT_SCHEDULE,
          minLength: 9,
          maxLength: 100,
        },
        suspend: {
          description: 'Suspends the cycles (no new coordinator Jobs); running ones finish. Default false.',
          type: 'boolean',
          default: false,
        },
        resources: resources(
          'Compute resources of the coordinator container, merged key by key over spec.resources and the defaults.',
        ),
      },
    },
    gateway: {
      description:
        'The gateway Deployment and Service, created when any gateway (httpGateway, httpSignedDataGateway, ' +
        'oevGateway) is enabled in the config.',
      type: 'object',
      properties: {
        replicas: {
          description:
            'Number of gateway pods; a PodDisruptionBudget is added above 1. Default 1. With autoscaling, the ' +
            "default of autoscaling.minReplicas, and the HPA sets the count. The config's maxConcurrency is per " +
            'replica: the node admits up to replicas x maxConcurrency gateway calls at once.',
          type: 'integer',
          format: 'int32',
          minimum: 0,
          maximum: 100,
          default: 1,
        },
        autoscaling: {
          description:
            'An autoscaling/v2 HorizontalPodAutoscaler on the gateway Deployment, owned by the OracleNode: on the ' +
            'average CPU utilisation of the gateway pods by default (set resources.requests.cpu so that it can be ' +
            'computed), or on the given metrics. Removing it deletes the HPA and spec.gateway.replicas applies again.',
          type: 'object',
          required: ['maxReplicas'],
          properties: {
            minReplicas: {
              description: 'Least gateway pods. Default spec.gateway.replicas (at least 1).',
              type: 'integer',
              format: 'int32',
              minimum: 1,
              maximum: 100,
            },
            maxReplicas: {
              description: 'Most gateway pods.',
              type: 'integer',
              format: 'int32',
              minimum: 1,
              maximum: 100,
            },
            targetCPUUtilizationPercentage: {
              description: `Average CPU utilisation to aim at, % of the CPU request. Default ${DEFAULT_TARGET_CPU_UTILIZATION}. Ignored when metrics are given.`,
              type: 'integer',
              format: 'int32',
              minimum: 1,
              maximum: 1000,
            },
            metrics: {
              description: 'autoscaling/v2 MetricSpec list used instead of the CPU target (as in an HPA spec.metrics).',
              type: 'array',
              maxItems: 10,
              items: { type: 'object', ...PRESERVE },
            },
          },
          'x-kubernetes-validations': [
            {
              rule: '!has(self.minReplicas) || self.minReplicas <= self.maxReplicas',
              message: 'autoscaling.minReplicas must not exceed autoscaling.maxReplicas',
            },
          ],
        },
        resources: resources(
          'Compute resources of the gateway container, merged key by key over spec.resources and the defaults.',
        ),
        topologySpreadConstraints: {
          description:
            'Topology spread constraints of the gateway pods, in place of the default: spread across nodes ' +
            '(kubernetes.io/hostname) and zones (topology.kubernetes.io/zone), maxSkew 1, ScheduleAnyway. ' +
            'An empty list turns spreading off.',
          type: 'array',
          maxItems: 8,
          items: { type: 'object', ...PRESERVE },
        },
        service: {
          description: 'The Service in front of the gateway pods.',
          type: 'object',
          properties: {
            type: {
              description: 'Service type: ClusterIP, NodePort or LoadBalancer. Default ClusterIP.',
              type: 'string',
              enum: ['ClusterIP', 'NodePort', 'LoadBalancer'],
              default: 'ClusterIP',
            },
            port: {
              description: `Service port. Default ${DEFAULT_GATEWAY_SERVER_PORT}.`,
              type: 'integer',
              format: 'int32',
              minimum: 1,
              maximum: 65535,
              default: DEFAULT_GATEWAY_SERVER_PORT,
            },
          },
        },
        publicUrl: {
          description:
            'The base URL callers reach the gateways at (an Ingress or DNS name, e.g. https://oracle.example.org), ' +
            "without the gateway path. Reported by the heartbeat; without it, the Service's load-balancer " +
            'address (spec.gateway.service.type LoadBalancer) is, else no gateway URL.',
          type: 'string',
          maxLength: 2048,
          pattern: '^https?://[^\\s/?#]+(/[^\\s?#]*)?$',
        },
      },
    },
    worker: {
      description: 'The worker Jobs the coordinator creates in each cycle (one Indexed Job per cycle).',
      type: 'object',
      properties: {
        resources: resources(
          'Compute resources of each worker container, merged key by key over spec.resources and the defaults.',
        ),
        activeDeadlineSeconds: {
          description: 'Deadline of a worker Job; inside the minute so cycles do not pile up. Default 50.',
          type: 'integer',
          format: 'int64',
          minimum: 1,
          maximum: 3600,
          default: 50,
        },
        ttlSecondsAfterFinished: {
          description: 'Seconds after which a finished worker Job and its pods are deleted. Default 300.',
          type: 'integer',
          format: 'int32',
          minimum: 0,
          default: 300,
        },
      },
    },
  };
}

const condition: StructuralSchema = {
  description: 'One aspect of the current state (Ready, ConfigValid, Progressing, Degraded).',
  type: 'object',
  required: ['type', 'status', 'reason', 'message', 'lastTransitionTime'],
  properties: {
    type: { description: 'Ready, ConfigValid, Progressing or Degraded.', type: 'string' },
    status: { description: 'True, False or Unknown.', type: 'string', enum: ['True', 'False', 'Unknown'] },
    reason: { description: 'Machine-readable CamelCase reason of the last transition.', type: 'string' },
    message: { description: 'Human-readable detail, with config paths for validation errors.', type: 'string' },
    lastTransitionTime: {
      description: 'When the status last changed (not when it was last checked).',
      type: 'string',
      format: 'date-time',
    },
    observedGeneration: { description: 'The generation the condition was computed for.', type: 'integer' },
  },
};

function statusSchema(): StructuralSchema {
  return {
    description: 'Observed state, written by the operator.',
    type: 'object',
    properties: {
      observedGeneration: { description: 'The metadata.generation the status reflects.', type: 'integer' },
      conditions: {
        description: 'Ready, ConfigValid, Progressing and Degraded.',
        type: 'array',
        items: condition,
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['type'],
      } as StructuralSchema,
      nodeAddress: {
        description: "The node address derived from nodeWalletMnemonic (m/44'/60'/0'/0/0); public.",
        type: 'string',
      },
      stage: { description: 'The stage whose workloads serve the node now.', type: 'string' },
      previousStage: {
        description: 'During a stage rollout: the stage being replaced (its workloads are removed at the end).',
        type: 'string',
      },
      chains: { description: 'Number of chains served.', type: 'integer' },
      chainIds: {
        description: 'Ids of the chains served.',
        type: 'array',
        items: { description: 'Chain id.', type: 'string' },
      },
      gatewayUrls: {
        description:
          'In-cluster base URLs of the enabled gateways, by gateway (httpGateway, httpSignedDataGateway, oevGateway).',
        type: 'object',
        additionalProperties: { type: 'string' },
      },
      publicGatewayUrl: {
        description:
          "Where callers reach the gateways: spec.gateway.publicUrl, else the Service's load-balancer address.",
        type: 'string',
      },
      notReadyReason: {
        description: "The Ready condition's reason while the node is not Ready (absent when Ready).",
        type: 'string',
      },
      cycles: {
        description: `The last ${MAX_CYCLE_HISTORY} coordinator cycles, newest first, from the coordinator's reports.`,
        type: 'array',
        maxItems: MAX_CYCLE_HISTORY,
        items: {
          type: 'object',
          required: ['job', 'fulfilled', 'failed', 'dropped'],
          properties: {
            job: { description: 'Name of the coordinator Job.', type: 'string' },
            startTime: { description: 'When the cycle started.', type: 'string' },
            durationSeconds: { description: 'How long the cycle took, heartbeat included.', type: 'number' },
            outcome: { description: 'Completed or PartiallyFailed (a shard failed).', type: 'string' },
            fulfilled: { description: 'Requests fulfilled.', type: 'integer' },
            failed: { description: 'Requests whose fulfilment failed.', type: 'integer' },
            dropped: { description: "Requests left for a later cycle by the chain's maxConcurrency.", type: 'integer' },
            errors: {
              description: 'Errors by kind: providersDown, failedShards, transactionErrors, heartbeat.',
              type: 'object',
              additionalProperties: { type: 'integer' },
            },
            blocks: {
              description: 'The block number each provider was at.',
              type: 'array',
              items: {
                type: 'object',
                required: ['chainId', 'provider', 'block'],
                properties: {
                  chainId: { description: 'Chain id.', type: 'string' },
                  provider: { description: 'Provider name.', type: 'string' },
                  block: { description: 'Block number.', type: 'integer' },
                },
              },
            },
            heartbeat: { description: 'Sent, Failed or Disabled.', type: 'string' },
          },
        },
      },
      recentFailedRequests: {
        description: `The last ${MAX_RECENT_FAILED_REQUESTS} failed requests over the reported cycles, newest first.`,
        type: 'array',
        maxItems: MAX_RECENT_FAILED_REQUESTS,
        items: {
          type: 'object',
          required: ['chainId', 'requestId', 'reason', 'job'],
          properties: {
            chainId: { description: 'Chain id.', type: 'string' },
            requestId: { description: 'Request id.', type: 'string' },
            reason: { description: 'Why it failed.', type: 'string' },
            job: { description: 'The coordinator Job of the cycle it failed in.', type: 'string' },
          },
        },
      },
      lastCycle: {
        description: 'The last coordinator cycle (its Job) and the counts the coordinator reported.',
        type: 'object',
        properties: {
          job: { description: 'Name of the coordinator Job.', type: 'string' },
          outcome: { description: 'Running, Succeeded or Failed.', type: 'string' },
          startTime: { description: 'When the Job started.', type: 'string' },
          completionTime: { description: 'When the Job finished.', type: 'string' },
          counts: {
            description: 'Counts reported by the coordinator for the cycle (e.g. requests, fulfilled, failed, shards).',
            type: 'object',
            additionalProperties: { type: 'integer' },
          },
          providers: {
            description: 'Health of each chain provider in that cycle.',
            type: 'array',
            items: {
              type: 'object',
              required: ['chainId', 'provider', 'up'],
              properties: {
                chainId: { description: 'Chain id of the provider.', type: 'string' },
                provider: { description: 'Provider name (a key of chains[].providers).', type: 'string' },
                up: { description: 'Whether the provider answered the block number and logs.', type: 'boolean' },
                blockLag: {
                  description: 'Blocks behind the most advanced provider of the same chain.',
                  type: 'integer',
                },
              },
            },
          },
          heartbeat: {
            description: 'How the heartbeat after that cycle went: Sent, Failed or Disabled.',
            type: 'string',
          },
          gasPrices: {
            description: "The gas price (or max fee per gas) each chain's transactions were priced at, in wei.",
            type: 'array',
            items: {
              type: 'object',
              required: ['chainId', 'gasPriceWei'],
              properties: {
                chainId: { description: 'Chain id.', type: 'string' },
                gasPriceWei: { description: 'Gas price in wei (decimal string).', type: 'string' },
              },
            },
          },
          sponsorWallets: {
            description: 'Balances of the sponsor wallets that sent transactions in that cycle.',
            type: 'array',
            items: {
              type: 'object',
              required: ['chainId', 'sponsorWallet', 'balanceWei'],
              properties: {
                chainId: { description: 'Chain id.', type: 'string' },
                sponsorWallet: { description: 'Sponsor wallet address.', type: 'string' },
                balanceWei: { description: 'Balance after the cycle, in wei (decimal string).', type: 'string' },
              },
            },
          },
        },
      },
    },
  };
}

export type CustomResourceDefinition = {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string; annotations?: Record<string, string> };
  spec: Record<string, unknown>;
};

/** The whole CRD. `configJsonSchema` is the config model's JSON Schema; without it spec.config is free-form. */
export function buildCrd(configJsonSchema?: JsonSchema): CustomResourceDefinition {
  const spec: StructuralSchema = {
    description: 'Desired state of one oracle node deployment.',
    type: 'object',
    required: ['config'],
    properties: {
      config: configJsonSchemaToStructural(configJsonSchema),
      ...workloadProperties(),
    },
  };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${PLURAL}.${GROUP}` },
    spec: {
      group: GROUP,
      names: {
        kind: KIND,
        listKind: `${KIND}List`,
        plural: PLURAL,
        singular: SINGULAR,
        shortNames: [SHORT_NAME],
        categories: ['oracle-node'],
      },
      scope: 'Namespaced',
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            {
              name: 'Ready',
              type: 'string',
              jsonPath: '.status.conditions[?(@.type=="Ready")].status',
              description: 'Whether the node serves its current spec.',
            },
            {
              name: 'Reason',
              type: 'string',
              jsonPath: '.status.notReadyReason',
              description: 'Why the node is not Ready (empty when Ready).',
            },
            { name: 'Stage', type: 'string', jsonPath: '.status.stage', description: 'The stage serving now.' },
            {
              name: 'Last cycle',
              type: 'date',
              jsonPath: '.status.cycles[0].startTime',
              description: 'When the last reported coordinator cycle started.',
            },
            {
              name: 'Fulfilled',
              type: 'integer',
              jsonPath: '.status.cycles[0].fulfilled',
              description: 'Requests fulfilled in the last cycle.',
            },
            {
              name: 'Failed',
              type: 'integer',
              jsonPath: '.status.cycles[0].failed',
              description: 'Requests that failed in the last cycle.',
            },
            { name: 'Address', type: 'string', jsonPath: '.status.nodeAddress', description: 'The node address.' },
            {
              name: 'Chains',
              type: 'integer',
              jsonPath: '.status.chains',
              description: 'Number of chains served.',
              priority: 1,
            },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: {
              description:
                'An oracle node (Airnode 0.15 compatible config): the operator runs its coordinator as a CronJob, ' +
                'its workers as Indexed Jobs and its gateways as a Deployment.',
              type: 'object',
              required: ['spec'],
              'x-kubernetes-validations': [NAME_LENGTH_RULE],
              properties: {
                apiVersion: { description: 'APIVersion of this representation of the object.', type: 'string' },
                kind: { description: 'Kind of the object: OracleNode.', type: 'string' },
                metadata: { type: 'object' },
                spec,
                status: statusSchema(),
              },
            },
          },
        },
      ],
    },
  };
}
