// The AirnodeFeed API, oracle-node.io/v1alpha1: an Airnode feed (@api3/airnode-feed 3.x config.json) that the
// operator runs as a Deployment of the engine's image (`oracle-node feed`). Written once, as zod schemas: the types
// are inferred from them and the CRD's OpenAPI is generated from them (feed/crd.ts), as OracleNode's (api/v1alpha1.ts).
// A kind of its own rather than a mode of OracleNode: a feed's config has another shape (no chains, no coordinator,
// workers or gateways), another set of children and another status (docs/feeds.md, "Why a kind of its own").
import type {
  KubernetesObject,
  V1Affinity,
  V1LocalObjectReference,
  V1ResourceRequirements,
  V1Toleration,
} from '@kubernetes/client-node';
import { z } from 'zod';
import { signedApiReportSchema } from '../../contract/feed-report.js';
import type { ResourceKind } from '../../kube/index.js';
import { type JsonSchema, NAME_PLACEHOLDER, type StructuralSchema, toStructural } from '../api/structural.js';
import { apiLimitsSchema } from '../api/v1alpha1.js';
import { DEFAULT_IMAGE, GROUP, VERSION } from '../resource.js';

export const FEED_KIND = 'AirnodeFeed';
export const FEED_PLURAL = 'airnodefeeds';
export const FEED_SINGULAR = 'airnodefeed';
export const FEED_SHORT_NAME = 'afeed';
export const FEED_API_VERSION = `${GROUP}/${VERSION}`;
export const FEED_CONTROLLER_NAME = 'airnodefeed';
export const FEED_RESOURCE: ResourceKind = {
  group: GROUP,
  version: VERSION,
  kind: FEED_KIND,
  plural: FEED_PLURAL,
  namespaced: true,
};

const described = (description: string) => ({ description });

const QUANTITY_PATTERN =
  '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$';
const quantity = z
  .union([z.string(), z.number()])
  .meta({ 'x-kubernetes-int-or-string': true, pattern: QUANTITY_PATTERN });

/** Label and annotation keys the operator sets and selects on: never given by a user. */
const RESERVED_KEY_RULE = {
  rule: "self.all(k, !k.startsWith('oracle-node.io/') && !k.startsWith('app.kubernetes.io/'))",
  message: 'keys under oracle-node.io/ and app.kubernetes.io/ are set by the operator',
};

const keyValues = (description: string) =>
  z
    .record(z.string().min(1).max(317), z.string())
    .optional()
    .meta({ description, 'x-kubernetes-validations': [RESERVED_KEY_RULE] });

export const airnodeFeedSpecSchema = z
  .object({
    config: z.record(z.string(), z.unknown()),
    secretRef: z
      .object({ name: z.string().min(1).max(253).meta(described('Name of the Secret.')) })
      .optional()
      .meta(
        described(
          `The Secret (in the same namespace) whose keys are the ${NAME_PLACEHOLDER} values of the config. The pod ` +
            'receives only the keys the config references (the mnemonic, the Signed API tokens, the API ' +
            'credentials), one secretKeyRef variable each; rotating one rolls the pod.',
        ),
      ),
    image: z
      .string()
      .min(1)
      .optional()
      .meta(described(`Engine image, run as \`oracle-node feed\`. Default the operator's (${DEFAULT_IMAGE}).`)),
    imagePullPolicy: z
      .enum(['Always', 'IfNotPresent', 'Never'])
      .optional()
      .meta(described('Image pull policy: Always, IfNotPresent or Never. Default IfNotPresent.')),
    resources: z
      .object({
        limits: z.record(z.string(), quantity).optional().meta(described('Maximum compute resources.')),
        requests: z.record(z.string(), quantity).optional().meta(described('Minimum compute resources requested.')),
      })
      .optional()
      .meta(described('Compute resources of the feed container, key by key over the defaults (docs/feeds.md).')),
    podMetadata: z
      .object({
        labels: keyValues("Labels of the feed's pod, beside the operator's own."),
        annotations: keyValues("Annotations of the feed's pod, beside the operator's own."),
      })
      .optional()
      .meta(described("Labels and annotations of the feed's pod.")),
    nodeSelector: z.record(z.string(), z.string()).optional().meta(described('Node labels the pod must match.')),
    tolerations: z
      .array(z.object({}).meta({ 'x-kubernetes-preserve-unknown-fields': true }))
      .optional()
      .meta(described('Tolerations of the pod, as on a pod spec.')),
    affinity: z
      .object({})
      .optional()
      .meta({ description: 'Scheduling affinity of the pod.', 'x-kubernetes-preserve-unknown-fields': true }),
    priorityClassName: z.string().min(1).max(253).optional().meta(described('PriorityClass of the pod.')),
    imagePullSecrets: z
      .array(z.object({ name: z.string().min(1).max(253).meta(described('Name of a Secret of the namespace.')) }))
      .max(16)
      .optional()
      .meta(described('Secrets to pull the image with.')),
    apiLimits: apiLimitsSchema(
      "The feed's one pod enforces each budget whole (`--api-rate-limit`): a fetch over it is skipped to the next " +
        'interval. A feed and an OracleNode on the same API key each need their own part of the quota, in their own ' +
        'spec, the two parts summing to no more than the quota (docs/feeds.md).',
    ),
  })
  .meta(described('The desired feed.'));

/** spec as the apiserver may hand it over. The Kubernetes-typed fields are client-node's, handed on unchanged. */
export type AirnodeFeedSpec = Omit<
  z.input<typeof airnodeFeedSpecSchema>,
  'resources' | 'tolerations' | 'affinity' | 'imagePullSecrets'
> & {
  resources?: V1ResourceRequirements;
  tolerations?: V1Toleration[];
  affinity?: V1Affinity;
  imagePullSecrets?: V1LocalObjectReference[];
};

export const FEED_CONDITION_TYPES = ['Ready', 'ConfigValid', 'Reconciling', 'Stalled'] as const;
export type FeedConditionType = (typeof FEED_CONDITION_TYPES)[number];

/** Every reason the operator sets on a feed's condition; docs/runbook.md has a section under each Feed* name. */
export const FEED_CONDITION_REASONS = [
  'Ready',
  'Valid',
  'FeedNotReady',
  'FeedRollingOut',
  'ValidationFailed',
  'SecretNotFound',
  'SecretKeyMissing',
  'ApplyFailed',
  'NameConflict',
] as const;
export type FeedConditionReason = (typeof FEED_CONDITION_REASONS)[number];

const conditionSchema = z.object({
  type: z.enum(FEED_CONDITION_TYPES).meta(described('Ready, ConfigValid, Reconciling or Stalled.')),
  status: z.enum(['True', 'False', 'Unknown']).meta(described('True, False or Unknown.')),
  reason: z.string().meta(described('Machine-readable CamelCase reason of the last transition.')),
  message: z.string().meta(described('Human-readable detail, with config paths for validation errors.')),
  lastTransitionTime: z.string().meta({ description: 'When the status last changed.', format: 'date-time' }),
  observedGeneration: z.int().optional().meta(described('The generation the condition was computed for.')),
});

export const airnodeFeedStatusSchema = z
  .object({
    observedGeneration: z.int().optional().meta(described('The metadata.generation the status reflects.')),
    conditions: z
      .array(conditionSchema)
      .optional()
      .meta({
        description: 'Ready and ConfigValid; Reconciling and Stalled (kstatus) only while they are True.',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['type'],
      }),
    airnode: z
      .string()
      .optional()
      .meta(described("The node address (m/44'/60'/0'/0/0 of airnodeWalletMnemonic) the feed signs as; public.")),
    stage: z.string().optional().meta(described('nodeSettings.stage of the config the pods run.')),
    templates: z.int().optional().meta(described('Number of templates fed.')),
    signedApis: z
      .array(signedApiReportSchema)
      .optional()
      .meta({
        description:
          'The Signed APIs pushed to, by name (their URLs and tokens stay in the config), each with its last push as the feed pod reports it (docs/feeds.md, "Status").',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
      }),
    readyReplicas: z.int().optional().meta(described('Ready pods of the feed Deployment.')),
    notReadyReason: z.string().optional().meta(described("The Ready condition's reason while not Ready.")),
  })
  .meta(described('Observed state, written by the operator.'));

export type AirnodeFeedStatus = z.infer<typeof airnodeFeedStatusSchema>;
export type FeedCondition = z.infer<typeof conditionSchema>;

export type AirnodeFeed = KubernetesObject & {
  apiVersion: typeof FEED_API_VERSION;
  kind: typeof FEED_KIND;
  metadata: NonNullable<KubernetesObject['metadata']> & { name: string; namespace: string };
  spec: AirnodeFeedSpec;
  status?: AirnodeFeedStatus;
};

const openApi = (schema: z.ZodType): JsonSchema => z.toJSONSchema(schema, { io: 'input' }) as JsonSchema;

/** The OpenAPI of spec; spec.config is free-form for the apiserver, validated in full by the operator and webhook. */
export function feedSpecOpenApi(): StructuralSchema {
  const spec = toStructural(openApi(airnodeFeedSpecSchema), 'all');
  spec.properties = {
    ...spec.properties,
    config: {
      description:
        'The whole config.json of @api3/airnode-feed 3.x, inline (templates, endpoints, triggers, signedApis, ois, ' +
        `apiCredentials, nodeSettings). Any string may be a ${NAME_PLACEHOLDER} placeholder whose value is the key ` +
        "NAME of the Secret named by secretRef. The operator and the admission webhook run the feed's own validator " +
        'and report each error with its path.',
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
    },
  };
  return spec;
}

export function feedStatusOpenApi(): StructuralSchema {
  const { description, type, ...rest } = toStructural(openApi(airnodeFeedStatusSchema), 'types');
  // observedGeneration 0 until the first status write: kstatus and Argo CD see a new feed in progress.
  return { description, type, default: { observedGeneration: 0 }, ...rest } as StructuralSchema;
}
