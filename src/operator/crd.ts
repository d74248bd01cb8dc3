// The OracleNode CustomResourceDefinition: its names, printer columns and the object-level rules, around the
// OpenAPI of spec and status that api/v1alpha1.ts generates from the API's zod schemas (and spec.config from the
// config model's JSON Schema).
import type { JsonSchema } from './api/structural.js';
import { specOpenApi, statusOpenApi } from './api/v1alpha1.js';
import { GROUP, KIND, PLURAL, SHORT_NAME, SINGULAR, VERSION } from './resource.js';

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

export type CustomResourceDefinition = {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string; annotations?: Record<string, string> };
  spec: Record<string, unknown>;
};

/** A printer column of a CRD version. */
type PrinterColumn = { name: string; type: string; jsonPath: string; description?: string; priority?: number };

/**
 * A namespaced CRD of the API group, one version with the status subresource, as the operator's kinds share it: its
 * names, printer columns (Age added last), and the object schema around the generated spec and status.
 */
export function namespacedCrd(kind: {
  kind: string;
  plural: string;
  singular: string;
  shortName: string;
  description: string;
  columns: PrinterColumn[];
  spec: JsonSchema;
  status: JsonSchema;
  validations?: { rule: string; message: string }[];
}): CustomResourceDefinition {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${kind.plural}.${GROUP}` },
    spec: {
      group: GROUP,
      names: {
        kind: kind.kind,
        listKind: `${kind.kind}List`,
        plural: kind.plural,
        singular: kind.singular,
        shortNames: [kind.shortName],
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
            ...kind.columns,
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: {
              description: kind.description,
              type: 'object',
              required: ['spec'],
              ...(kind.validations ? { 'x-kubernetes-validations': kind.validations } : {}),
              properties: {
                apiVersion: { description: 'APIVersion of this representation of the object.', type: 'string' },
                kind: { description: `Kind of the object: ${kind.kind}.`, type: 'string' },
                metadata: { type: 'object' },
                spec: kind.spec,
                status: kind.status,
              },
            },
          },
        },
      ],
    },
  };
}

/** The whole CRD. `configJsonSchema` is the config model's JSON Schema; without it spec.config is free-form. */
export function buildCrd(configJsonSchema?: JsonSchema): CustomResourceDefinition {
  return namespacedCrd({
    kind: KIND,
    plural: PLURAL,
    singular: SINGULAR,
    shortName: SHORT_NAME,
    description:
      'An oracle node (Airnode 0.15 compatible config): the operator runs its coordinator as a CronJob, ' +
      'its workers as Indexed Jobs and its gateways as a Deployment.',
    columns: [
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
    ],
    spec: specOpenApi(configJsonSchema),
    status: statusOpenApi(),
    validations: [NAME_LENGTH_RULE],
  });
}
