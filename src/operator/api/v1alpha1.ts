// The OracleNode API, oracle-node.io/v1alpha1, written once: spec and status as zod schemas. The TypeScript types
// are inferred from them and the CRD's OpenAPI is generated from them (crd.ts, through structural.ts), as
// CloudNativePG generates its CRD from api/v1/cluster_types.go. The parts of the status that come from the
// coordinator's cycle report are the contract's schemas (src/contract/pods.ts), not restated here.
//
// Descriptions are what `kubectl explain` and docs/crd-reference.md show. How much the apiserver checks:
// everything in spec (except spec.config, whose strings may be `${NAME}` placeholders: only types and enums);
// only types in status, which the operator alone writes from what it has already parsed, except the conditions,
// which keep the Kubernetes conventions generic tools rely on.
import type {
  V1Affinity,
  V1EnvFromSource,
  V1LocalObjectReference,
  V1ResourceRequirements,
  V1Toleration,
  V1TopologySpreadConstraint,
  V1Volume,
  V1VolumeMount,
  V2MetricSpec,
} from '@kubernetes/client-node';
import { z } from 'zod';
import { DEFAULT_GATEWAY_SERVER_PORT } from '../../config/index.js';
import {
  CALLERS_DIR,
  CALLERS_VOLUME,
  CONFIG_DIR,
  cycleCountsSchema,
  cycleOutcomeSchema,
  failedRequestReportSchema,
  gasPriceReportSchema,
  heartbeatResultSchema,
  SECRETS_DIR,
  SECRETS_VOLUME,
  sponsorWalletReportSchema,
} from '../../contract/pods.js';
import { NODE_ROLES } from '../../contract/request-log.js';
import { SHARD_DIR, SHARD_VOLUME } from '../../contract/shard.js';
import {
  DEFAULT_COORDINATOR_POLL_INTERVAL_SECONDS,
  DEFAULT_IMAGE,
  DEFAULT_SCHEDULE,
  DEFAULT_TARGET_CPU_UTILIZATION,
  MAX_COORDINATOR_POLL_INTERVAL_SECONDS,
  MAX_CYCLE_HISTORY,
  MAX_RECENT_FAILED_REQUESTS,
  MIN_COORDINATOR_POLL_INTERVAL_SECONDS,
  SECRETS_AS,
} from './defaults.js';
import {
  CHECKS_KEYWORD,
  fillDescriptions,
  type JsonSchema,
  NAME_PLACEHOLDER,
  type StructuralSchema,
  toStructural,
} from './structural.js';

const described = (description: string) => ({ description });
/** A rate as the engine's flags take it (src/common/rate-limit.ts): N/s or N/m. */
const RATE_PATTERN = /^[1-9][0-9]{0,8}\/(s|m)$/;
/** A gateway caller's name (src/gateway/callers.ts). */
const CALLER_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/**
 * A field whose shape is a Kubernetes core type: the schema gives the CRD what the apiserver checks, and the
 * TypeScript type is client-node's, which the builders hand on to the pods unchanged.
 */
function kubernetesType<T>(schema: z.ZodType): z.ZodType<T, T> {
  return schema as z.ZodType<T, T>;
}

// ---------------------------------------------------------------------------------------------------------------
// Spec

const QUANTITY_PATTERN =
  '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$';
const quantity = z
  .union([z.string(), z.number()])
  .meta({ 'x-kubernetes-int-or-string': true, pattern: QUANTITY_PATTERN });
const quantityMap = (description: string) => z.record(z.string(), quantity).optional().meta(described(description));

const resources = (description: string) =>
  kubernetesType<V1ResourceRequirements>(
    z
      .object({
        limits: quantityMap('Maximum compute resources (cpu, memory, ephemeral-storage), as on a container.'),
        requests: quantityMap(
          'Minimum compute resources requested (cpu, memory, ephemeral-storage), as on a container.',
        ),
      })
      .meta(described(description)),
  ).optional();

const toleration = z
  .object({
    key: z.string().optional().meta(described('Taint key the toleration applies to; empty matches all keys.')),
    operator: z.enum(['Exists', 'Equal']).optional().meta(described('Exists or Equal (default Equal).')),
    value: z.string().optional().meta(described('Taint value the toleration matches (with operator Equal).')),
    effect: z
      .enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute', ''])
      .optional()
      .meta(described('Taint effect to match: NoSchedule, PreferNoSchedule or NoExecute; empty matches all.')),
    tolerationSeconds: z
      .int()
      .optional()
      .meta({ description: 'For NoExecute: how long the pod stays bound after the taint appears.', format: 'int64' }),
  })
  .meta(described('A toleration, as on a pod spec.'));

/** An http(s) base URL, as a user writes one into the spec (a gateway's public URL, an OTLP endpoint). */
const httpUrl = z
  .string()
  .max(2048)
  .regex(/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/);

const int32 = (description: string) => z.int().meta({ description, format: 'int32' });

// ---------------------------------------------------------------------------------------------------------------
// Pod overrides: what a platform adds to the node's pods (secret-store agents, CSI volumes, cloud identities,
// scheduling), for all workloads at spec level and per workload under spec.coordinator/gateway/worker, merged over
// what the operator builds (builders/pod-overrides.ts). The CRD refuses what would break the pod contract: the
// operator's own labels and annotations, volume names and mount paths.

/** Label and annotation keys the operator sets and selects on: never given by a user. */
const RESERVED_KEY_RULE = {
  rule:
    "self.all(k, !k.startsWith('oracle-node.io/') && !k.startsWith('app.kubernetes.io/') && " +
    "!k.startsWith('batch.kubernetes.io/'))",
  message: 'keys under oracle-node.io/, app.kubernetes.io/ and batch.kubernetes.io/ are set by the operator',
};
/** The volumes the engine's pods hold: config, scratch, the worker's shard input, the keys as files (secretRef.as). */
export const RESERVED_VOLUME_NAMES = ['config', 'tmp', SHARD_VOLUME, SECRETS_VOLUME, CALLERS_VOLUME] as const;
/** Paths the engine container mounts; an extra mount may be beside them, never on, under or over them. */
export const RESERVED_MOUNT_PATHS = [CONFIG_DIR, '/tmp', SHARD_DIR, SECRETS_DIR, CALLERS_DIR] as const;
/**
 * The volume types an override may add: those the restricted Pod Security Standard allows, without `secret` (a
 * Secret reaches the pods only through spec.secretRef, each pod its own keys). The coordinator fence compares each
 * one a worker Job carries with the node's (builders/admission.ts).
 */
export const OVERRIDE_VOLUME_TYPES = [
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'persistentVolumeClaim',
  'projected',
] as const;
/**
 * The volume types the restricted Pod Security Standard refuses. Declared (as free-form objects) so that the CRD
 * refuses them by name: an undeclared one would be pruned, even from a stored OracleNode, and the volume left without
 * a source would reach the pods as an emptyDir.
 */
const PSS_REFUSED_VOLUME_TYPES = [
  'hostPath',
  'awsElasticBlockStore',
  'azureDisk',
  'azureFile',
  'cephfs',
  'cinder',
  'fc',
  'flexVolume',
  'flocker',
  'gcePersistentDisk',
  'gitRepo',
  'glusterfs',
  'iscsi',
  'nfs',
  'photonPersistentDisk',
  'portworxVolume',
  'quobyte',
  'rbd',
  'scaleIO',
  'storageos',
  'vsphereVolume',
] as const;
const celList = (values: readonly string[]) => `[${values.map((v) => `'${v}'`).join(', ')}]`;

/**
 * A mount path written one way only: absolute, no empty, `.` or `..` segment, no trailing slash. A path the kernel
 * resolves to the engine's own is then also equal to it as a string, so the reserved-path rule cannot be walked round.
 */
const NORMALISED_PATH_RULE = {
  rule: "self.mountPath.matches('^(/[^/]+)+$') && !self.mountPath.matches('/[.][.]?(/|$)')",
  message:
    'mountPath is an absolute path without empty, dot or dot-dot segments or a trailing slash (e.g. /mnt/secrets-store)',
};
const RESERVED_PATH_RULE = {
  rule: `!${celList(RESERVED_MOUNT_PATHS)}.exists(p, self.mountPath == p || self.mountPath.startsWith(p + '/') || p.startsWith(self.mountPath + '/'))`,
  message: `mount paths ${RESERVED_MOUNT_PATHS.join(', ')}, what is under them and their parents (/etc, /var/run, ...) are the engine's own`,
};

const freeForm = (description: string) =>
  z.object({}).meta({ description, 'x-kubernetes-preserve-unknown-fields': true }).optional();

const SECRET_REFUSED = "a Secret reaches the node's pods only through spec.secretRef (each pod its own keys)";

const PROJECTED_SOURCE_TYPES = ['configMap', 'downwardAPI', 'clusterTrustBundle', 'serviceAccountToken'] as const;
/** A source of a projected override volume: ConfigMaps, the pod's own metadata, tokens for other audiences. */
const projectedSource = z
  .object({
    configMap: freeForm('Keys of a ConfigMap, as in a projected volume.'),
    downwardAPI: freeForm("The pod's own metadata and resources, as in a projected volume."),
    clusterTrustBundle: freeForm('Certificates of ClusterTrustBundles, as in a projected volume.'),
    serviceAccountToken: z
      .object({
        audience: z.string().min(1).max(253).meta(described('Who the token is for: never the Kubernetes API.')),
        expirationSeconds: z.int().min(600).optional().meta({ description: 'Lifetime of the token.', format: 'int64' }),
        path: z.string().min(1).max(1024).meta(described('File of the token, in the volume.')),
      })
      .optional()
      .meta(
        described(
          "A token of the pod's ServiceAccount for another service (Vault, a cloud's token exchange): its audience " +
            'is required, so it is never a token for the Kubernetes API (only the coordinator holds one).',
        ),
      ),
    secret: freeForm(`Refused: ${SECRET_REFUSED}.`),
  })
  .meta({
    description: `One source of a projected volume: ${PROJECTED_SOURCE_TYPES.join(', ')}.`,
    'x-kubernetes-validations': [
      { rule: '!has(self.secret)', message: `projected secret sources are refused: ${SECRET_REFUSED}` },
      {
        rule: `has(self.secret) || [${PROJECTED_SOURCE_TYPES.map((t) => `has(self.${t})`).join(', ')}].exists_one(x, x)`,
        message: `a projected source has exactly one of ${PROJECTED_SOURCE_TYPES.join(', ')}`,
      },
    ],
  });

const PSS_OUTSIDE = PSS_REFUSED_VOLUME_TYPES.map((type) => `has(self.${type})`).join(' || ');

const overrideVolume = z
  .object({
    name: z.string().min(1).max(63).meta(described('Volume name, unique in the pod.')),
    configMap: freeForm('A ConfigMap of the namespace, as on a pod spec.'),
    csi: freeForm('A CSI volume, as on a pod spec (e.g. the Secrets Store CSI driver).'),
    downwardAPI: freeForm("The pod's own metadata and resources, as on a pod spec."),
    emptyDir: freeForm('Scratch space, as on a pod spec.'),
    ephemeral: freeForm('A generic ephemeral volume (a claim made for the pod), as on a pod spec.'),
    persistentVolumeClaim: freeForm('A PersistentVolumeClaim of the namespace, as on a pod spec.'),
    projected: z
      .object({
        sources: z.array(projectedSource).max(16).optional().meta(described('What the volume holds.')),
        defaultMode: z
          .int()
          .min(0)
          .max(511)
          .optional()
          .meta({ description: 'Mode of the files (0644 by default).', format: 'int32' }),
      })
      .optional()
      .meta(described('Several sources in one directory, as on a pod spec, without Secrets.')),
    secret: freeForm(`Refused: ${SECRET_REFUSED}.`),
    image: freeForm('Refused: not one of the types above.'),
    ...Object.fromEntries(
      PSS_REFUSED_VOLUME_TYPES.map((type) => [
        type,
        freeForm('Refused: every pod of the node passes the restricted Pod Security Standard.'),
      ]),
    ),
  })
  .meta({
    description: `A pod volume, as on a pod spec, of the types the restricted Pod Security Standard allows without Secrets: ${OVERRIDE_VOLUME_TYPES.join(', ')}.`,
    'x-kubernetes-validations': [
      {
        rule: `!(self.name in ${celList(RESERVED_VOLUME_NAMES)})`,
        message: `volume names ${RESERVED_VOLUME_NAMES.join(', ')} are the engine's own`,
      },
      {
        rule: `!(${PSS_OUTSIDE})`,
        message:
          'hostPath volumes (and nfs, iscsi, the other types outside the restricted Pod Security Standard) are refused: ' +
          'every pod of the node passes the restricted Pod Security Standard',
      },
      { rule: '!has(self.secret)', message: `secret volumes are refused: ${SECRET_REFUSED}` },
      {
        rule: `${PSS_OUTSIDE} || has(self.secret) || [${OVERRIDE_VOLUME_TYPES.map((t) => `has(self.${t})`).join(', ')}].exists_one(x, x)`,
        message: `a volume has exactly one of ${OVERRIDE_VOLUME_TYPES.join(', ')}`,
      },
    ],
  });

const keyValues = (description: string) =>
  z
    .record(z.string().min(1).max(317), z.string())
    .optional()
    .meta({ description, 'x-kubernetes-validations': [RESERVED_KEY_RULE] });

const metadataOverride = (description: string) =>
  z
    .object({
      labels: keyValues("Labels added to each object, beside the operator's own."),
      annotations: keyValues("Annotations added to each object, beside the operator's own."),
    })
    .optional()
    .meta(described(description));

const podOverrides = (scope: string, added = ' (added to those of spec)') => ({
  serviceAccountTemplate: z
    .object({
      metadata: metadataOverride(
        'Labels and annotations of the ServiceAccount (e.g. eks.amazonaws.com/role-arn for IRSA, ' +
          'iam.gke.io/gcp-service-account for Workload Identity).',
      ),
    })
    .optional()
    .meta(described(`The ServiceAccount of ${scope}.`)),
  priorityClassName: z
    .string()
    .min(1)
    .max(253)
    .optional()
    .meta(described(`PriorityClass of ${scope}.`)),
  imagePullSecrets: kubernetesType<V1LocalObjectReference[]>(
    z
      .array(z.object({ name: z.string().min(1).max(253).meta(described('Name of a Secret of the namespace.')) }))
      .max(16)
      .meta(described(`Secrets to pull the image with, for ${scope}${added}.`)),
  ).optional(),
  volumes: kubernetesType<V1Volume[]>(
    z
      .array(overrideVolume)
      .max(16)
      .meta(described(`Volumes of ${scope}${added}, e.g. a Secrets Store CSI volume.`)),
  ).optional(),
  volumeMounts: kubernetesType<V1VolumeMount[]>(
    z
      .array(
        z
          .object({
            name: z.string().min(1).max(63).meta(described('The volume to mount.')),
            mountPath: z.string().min(1).max(1024).meta(described('Where, in the engine container.')),
            readOnly: z.boolean().optional().meta(described('Mounted read-only. Default false.')),
            subPath: z.string().max(1024).optional().meta(described('A path inside the volume.')),
          })
          .meta({
            description: 'A volume mount of the engine container.',
            'x-kubernetes-validations': [NORMALISED_PATH_RULE, RESERVED_PATH_RULE],
          }),
      )
      .max(16)
      .meta(described(`Volume mounts of the engine container of ${scope}${added}.`)),
  ).optional(),
  envFrom: kubernetesType<V1EnvFromSource[]>(
    z
      .array(
        z.object({
          configMapRef: z
            .object({
              name: z.string().min(1).max(253).meta(described('Name of a ConfigMap of the namespace.')),
              optional: z.boolean().optional().meta(described('Start the pod without it. Default false.')),
            })
            .meta(described('The ConfigMap whose keys become variables.')),
          prefix: z.string().max(253).optional().meta(described('Prefix of each variable name.')),
        }),
      )
      .max(16)
      .meta(
        described(
          `Environment variables from ConfigMaps for ${scope}${added}. The engine's own ` +
            'variables and Secret keys win over a variable of the same name; Secrets are given only through secretRef.',
        ),
      ),
  ).optional(),
});

/** The scheduling fields of a pod, for one workload (spec has its own, for all). */
const podScheduling = (scope: string) => ({
  nodeSelector: z
    .record(z.string(), z.string())
    .optional()
    .meta(described(`Node labels ${scope} must match, merged over spec.nodeSelector.`)),
  tolerations: kubernetesType<V1Toleration[]>(
    z.array(toleration).meta(described(`Tolerations of ${scope}, added to spec.tolerations.`)),
  ).optional(),
  affinity: kubernetesType<V1Affinity>(
    z.object({}).meta({
      description: `Scheduling affinity of ${scope}, in place of spec.affinity.`,
      'x-kubernetes-preserve-unknown-fields': true,
    }),
  ).optional(),
});

/** The overrides of one workload's pods. */
const workloadPodOverrides = (scope: string) => ({
  podMetadata: metadataOverride(
    `Labels and annotations of ${scope} (over spec.inheritedMetadata), e.g. Vault Agent's.`,
  ),
  ...podScheduling(scope),
  ...podOverrides(scope),
});

/**
 * One API's rate budget for the whole node (an API provider's quota on the key the config uses): the operator divides
 * it among the pods that call the API (builders/api-limits.ts), each pod enforcing its share (`--api-rate-limit`).
 */
export const apiLimitSchema = z
  .object({
    ois: z
      .string()
      .min(1)
      .max(256)
      .meta(described("The OIS title (the config's ois[].title) whose API the budget is for.")),
    endpoint: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .meta(described("One endpoint of that OIS (ois[].endpoints[].name): a budget of its own, beside the OIS's.")),
    callsPerSecond: int32('At most this many calls start within any one second (a sliding window).')
      .min(1)
      .max(100_000)
      .optional(),
    callsPerMinute: int32('At most this many calls start within any 60 s (a sliding window).')
      .min(1)
      .max(1_000_000)
      .optional(),
    burst: int32('With callsPerMinute: at most this many of them within any one second as well.')
      .min(1)
      .max(100_000)
      .optional(),
  })
  .refine((limit) => (limit.callsPerSecond === undefined) !== (limit.callsPerMinute === undefined), {
    message: 'give exactly one of callsPerSecond and callsPerMinute',
  })
  .refine((limit) => limit.burst === undefined || limit.callsPerMinute !== undefined, {
    message: 'burst (calls within one second) goes with callsPerMinute',
  })
  .meta({
    description: "An API's rate budget: exactly one of callsPerSecond and callsPerMinute, and burst with the latter.",
    'x-kubernetes-validations': [
      {
        rule: 'has(self.callsPerSecond) != has(self.callsPerMinute)',
        message: 'give exactly one of callsPerSecond and callsPerMinute',
      },
      {
        rule: '!has(self.burst) || has(self.callsPerMinute)',
        message: 'burst (calls within one second) goes with callsPerMinute',
      },
    ],
  });

/** spec.apiLimits of an OracleNode or an AirnodeFeed. */
export const apiLimitsSchema = (divided: string) =>
  z
    .array(apiLimitSchema)
    .max(64)
    .optional()
    .meta({
      description:
        'Rate budgets of the APIs the config calls (a provider counts calls per key in sliding windows). ' + divided,
      'x-kubernetes-list-type': 'atomic',
    });

const autoscaling = z
  .object({
    minReplicas: int32('Least gateway pods. Default spec.gateway.replicas (at least 1).').min(1).max(100).optional(),
    maxReplicas: int32('Most gateway pods.').min(1).max(100),
    targetCPUUtilizationPercentage: int32(
      `Average CPU utilisation to aim at, % of the CPU request. Default ${DEFAULT_TARGET_CPU_UTILIZATION}. Ignored when metrics are given.`,
    )
      .min(1)
      .max(1000)
      .optional(),
    metrics: kubernetesType<V2MetricSpec[]>(
      z
        .array(z.object({}).meta({ 'x-kubernetes-preserve-unknown-fields': true }))
        .max(10)
        .meta(described('autoscaling/v2 MetricSpec list used instead of the CPU target (as in an HPA spec.metrics).')),
    ).optional(),
  })
  .meta({
    description:
      'An autoscaling/v2 HorizontalPodAutoscaler on the gateway Deployment, owned by the OracleNode: on the ' +
      'average CPU utilisation of the gateway pods by default (set resources.requests.cpu so that it can be ' +
      'computed), or on the given metrics. Removing it deletes the HPA and spec.gateway.replicas applies again.',
    'x-kubernetes-validations': [
      {
        rule: '!has(self.minReplicas) || self.minReplicas <= self.maxReplicas',
        message: 'autoscaling.minReplicas must not exceed autoscaling.maxReplicas',
      },
    ],
  });

export const oracleNodeSpecSchema = z
  .object({
    /** The whole config.json; strings may hold `${NAME}` placeholders resolved from the Secret. */
    config: z.record(z.string(), z.unknown()),
    secretRef: z
      .object({
        name: z.string().min(1).max(253).meta(described('Name of the Secret.')),
        as: z
          .enum(SECRETS_AS)
          .optional()
          .meta(
            described(
              'How each pod receives its keys: EnvVars (default), one secretKeyRef variable per key; or Files, a ' +
                `read-only Secret volume at ${SECRETS_DIR} (mode 0400) holding only the keys the pod uses, one file ` +
                'per key, for platforms that forbid secrets in environment variables.',
            ),
          ),
      })
      .optional()
      .meta(
        described(
          `The Secret (in the same namespace) whose keys are the ${NAME_PLACEHOLDER} values of the config. Each pod ` +
            'receives only the keys its part of the config uses (a signing gateway the derived node key, never the ' +
            'mnemonic); rotating a key rolls the workloads that hold it.',
        ),
      ),
    image: z
      .string()
      .min(1)
      .optional()
      .meta(
        described(`Engine image run by every pod (oracle-node coordinator|worker|gateway). Default ${DEFAULT_IMAGE}.`),
      ),
    imagePullPolicy: z
      .enum(['Always', 'IfNotPresent', 'Never'])
      .optional()
      .meta(described('Image pull policy of every container: Always, IfNotPresent or Never. Default IfNotPresent.')),
    resources: resources(
      'Compute resources of every container, merged key by key over the defaults (docs/scaling.md); ' +
        "each component's resources are merged over these.",
    ),
    nodeSelector: z
      .record(z.string(), z.string())
      .optional()
      .meta(described('Node labels every pod must match, as on a pod spec.')),
    tolerations: kubernetesType<V1Toleration[]>(
      z
        .array(toleration)
        .meta(described('Tolerations of every pod of the node (coordinator, workers, gateway), as on a pod spec.')),
    ).optional(),
    affinity: kubernetesType<V1Affinity>(
      z.object({}).meta({
        description: 'Scheduling affinity of every pod (nodeAffinity, podAffinity, podAntiAffinity), as on a pod spec.',
        'x-kubernetes-preserve-unknown-fields': true,
      }),
    ).optional(),
    inheritedMetadata: metadataOverride(
      'Labels and annotations of every object the operator makes for the node (pods, Jobs, ServiceAccounts, ' +
        'Services, ConfigMaps), e.g. cost labels.',
    ),
    ...podOverrides('every pod of the node', ''),
    coordinator: z
      .object({
        schedule: z
          .string()
          .min(9)
          .max(100)
          .default(DEFAULT_SCHEDULE)
          .meta(described(`Cron schedule of the cycles. Default "${DEFAULT_SCHEDULE}" (every minute).`)),
        suspend: z
          .boolean()
          .default(false)
          .meta(described('Suspends the cycles (no new coordinator Jobs); running ones finish. Default false.')),
        pollInterval: z
          .number()
          .min(0)
          .max(MAX_COORDINATOR_POLL_INTERVAL_SECONDS)
          .default(DEFAULT_COORDINATOR_POLL_INTERVAL_SECONDS)
          .meta(
            described(
              'Seconds between polls of new blocks in each coordinator run: each run is a window that lasts past ' +
                'the next schedule tick, and the next run takes over through the node coordinator Lease when it ends, ' +
                'so polls never stop and a request is served in seconds. ' +
                `0 turns windows off: one cycle per tick, as the reference node. Default ${DEFAULT_COORDINATOR_POLL_INTERVAL_SECONDS}; ` +
                `a value between 0 and ${MIN_COORDINATOR_POLL_INTERVAL_SECONDS} is taken as ${MIN_COORDINATOR_POLL_INTERVAL_SECONDS}.`,
            ),
          ),
        resources: resources(
          'Compute resources of the coordinator container, merged key by key over spec.resources and the defaults.',
        ),
        ...workloadPodOverrides('the coordinator pods'),
      })
      .optional()
      .meta(
        described(
          'The coordinator CronJob: each schedule tick runs one cycle of the node, then polls new blocks until the window ends.',
        ),
      ),
    gateway: z
      .object({
        replicas: int32(
          'Number of gateway pods; a PodDisruptionBudget is added above 1. Default 1. With autoscaling, the ' +
            "default of autoscaling.minReplicas, and the HPA sets the count. The config's maxConcurrency is per " +
            'replica: the node admits up to replicas x maxConcurrency gateway calls at once.',
        )
          .min(0)
          .max(100)
          .default(1),
        /** An autoscaling/v2 HPA on the gateway Deployment; it then owns the replica count. */
        autoscaling: autoscaling.optional(),
        resources: resources(
          'Compute resources of the gateway container, merged key by key over spec.resources and the defaults.',
        ),
        ...workloadPodOverrides('the gateway pods'),
        /** In place of the default spread across nodes and zones; [] turns spreading off. */
        topologySpreadConstraints: kubernetesType<V1TopologySpreadConstraint[]>(
          z
            .array(z.object({}).meta({ 'x-kubernetes-preserve-unknown-fields': true }))
            .max(8)
            .meta(
              described(
                'Topology spread constraints of the gateway pods, in place of the default: spread across nodes ' +
                  '(kubernetes.io/hostname) and zones (topology.kubernetes.io/zone), maxSkew 1, ScheduleAnyway. ' +
                  'An empty list turns spreading off.',
              ),
            ),
        ).optional(),
        service: z
          .object({
            type: z
              .enum(['ClusterIP', 'NodePort', 'LoadBalancer'])
              .default('ClusterIP')
              .meta(described('Service type: ClusterIP, NodePort or LoadBalancer. Default ClusterIP.')),
            port: int32(`Service port. Default ${DEFAULT_GATEWAY_SERVER_PORT}.`)
              .min(1)
              .max(65535)
              .default(DEFAULT_GATEWAY_SERVER_PORT),
          })
          .optional()
          .meta(
            described(
              "The node's gateway Service, <name>-gateway: one per node, kept through stage rollouts, which switch it " +
                "to the new stage's gateway pods once they are Ready.",
            ),
          ),
        /** Callers with keys and rates (src/gateway/callers.ts): a gateway with callers refuses everyone else. */
        callers: z
          .object({
            secretRef: z
              .object({ name: z.string().min(1).max(253).meta(described('Name of the Secret.')) })
              .meta(
                described(
                  `A Secret in the namespace with one key per caller: the key's name is the caller's name (at most 63 of ` +
                    "A-Z a-z 0-9 . _ -, in metrics and logs), its value the caller's API key (16 to 512 characters, " +
                    `never logged). Mounted read-only at ${CALLERS_DIR} in the gateway pods only, read again every 5 s: ` +
                    'a key rotated in the Secret takes effect without a restart.',
                ),
              ),
            defaultRate: z
              .string()
              .regex(RATE_PATTERN)
              .optional()
              .meta(
                described(
                  'The rate of every caller without its own, N/s or N/m: at most N calls within any second or ' +
                    'minute, per gateway pod; above it 429 with Retry-After. Unlimited when absent.',
                ),
              ),
            rates: z
              .record(z.string().regex(CALLER_NAME_PATTERN).max(63), z.string().regex(RATE_PATTERN))
              .optional()
              .meta({
                description: 'Rates of named callers (caller name: N/s or N/m), per gateway pod.',
                maxProperties: 1000,
                // A structural schema cannot hold a pattern for map keys: CEL checks them.
                'x-kubernetes-validations': [
                  {
                    rule: `self.all(k, k.matches('${CALLER_NAME_PATTERN.source}'))`,
                    message: 'a caller name is 1 to 63 of A-Z a-z 0-9 . _ - (starting with a letter or digit)',
                  },
                ],
              }),
          })
          .optional()
          .meta(
            described(
              'Gateway callers with keys: callers name their key in x-api-key or Authorization: Bearer, and get 401 ' +
                'without a valid one; each caller has its rate. Open to everyone who knows the path when absent.',
            ),
          ),
        /** The base URL callers reach the gateways at (an Ingress, a DNS name): reported by the heartbeat. */
        publicUrl: httpUrl
          .optional()
          .meta(
            described(
              'The base URL callers reach the gateways at (an Ingress or DNS name, e.g. https://oracle.example.org), ' +
                "without the gateway path. Reported by the heartbeat; without it, the Service's load-balancer " +
                'address (spec.gateway.service.type LoadBalancer) is, else no gateway URL.',
            ),
          ),
      })
      .optional()
      .meta(
        described(
          'The gateway Deployment and Service, created when any gateway (httpGateway, httpSignedDataGateway, ' +
            'oevGateway) is enabled in the config.',
        ),
      ),
    apiLimits: apiLimitsSchema(
      'The operator divides each budget among the pods that may call that API (gateway replicas, or the HPA ' +
        "maxReplicas; the cycle's worker pods, bounded by the chains' maxConcurrency) so that their sum never " +
        'exceeds it, each pod getting an equal whole share (`--api-rate-limit`); a change of replicas redivides it. ' +
        'A share below one call leaves those pods none: they call that API no more (docs/ois-engine.md, "Rate ' +
        'budgets"). An AirnodeFeed on the same API key needs its own part of the quota in its own spec.',
    ),
    apiRetryWindowSeconds: z
      .number()
      .int()
      .min(0)
      .max(86_400)
      .optional()
      .meta(
        described(
          'How long a request whose API fails for now (429, 408, 5xx, no answer) stays open and is retried, with ' +
            "back-off and never sooner than the API's Retry-After, before it is failed on chain with the API's last " +
            'error (`--api-retry-window`). Absent: 300. 0: failed at once, as Airnode does (docs/chain-cycle.md, ' +
            '"When the API fails for a while").',
        ),
      ),
    chainLimits: z
      .array(
        z.object({
          chainId: z
            .string()
            .regex(/^[0-9]{1,78}$/)
            .meta(described('The chain id, as in the config (chains[].id).')),
          lowSponsorBalance: z
            .string()
            .regex(/^[0-9]{1,30}(\.[0-9]{1,18})?$/)
            .optional()
            .meta(
              described(
                'A sponsor wallet below this balance, in the chain\'s native token (e.g. "0.05"), is reported ' +
                  'belowThreshold in status.lastCycle.sponsorWallets, by the metric ' +
                  'oracle_node_sponsor_wallet_below_threshold and the OracleNodeSponsorBalanceLow alert. Without it, ' +
                  "the chart's alerts.lowSponsorBalanceWei applies.",
              ),
            ),
          maxGasPriceGwei: z
            .number()
            .gt(0)
            .max(1_000_000)
            .optional()
            .meta(
              described(
                'The most per gas (gas price, or max fee per gas) the node pays on this chain, in gwei: a transaction ' +
                  'priced above it is not sent, and its request waits with the reason in oracle-node request.',
              ),
            ),
        }),
      )
      .max(100)
      .optional()
      .meta({
        description: "Per chain: the sponsor wallets' low-balance threshold and the gas price ceiling.",
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['chainId'],
      }),
    redundancy: z
      .object({
        standbyDelayBlocks: z
          .number()
          .int()
          .min(0)
          .max(10_000)
          .optional()
          .meta(
            described(
              'Makes this OracleNode a standby of the same node (same mnemonic, same config) deployed in another ' +
                'cluster: it serves a request only if it is still open this many blocks after its confirmations ' +
                'were reached, so while the primary works it makes no API call and sends nothing. 0 or absent: the ' +
                'primary. Switchover and failback are one edit of this field on each side (docs/chain-cycle.md, ' +
                '"Standby").',
            ),
          ),
      })
      .optional()
      .meta(described('A redundant deployment of the node in another cluster: which side this one is.')),
    telemetry: z
      .object({
        otlpEndpoint: httpUrl
          .optional()
          .meta(
            described(
              'OTLP/HTTP endpoint of an OpenTelemetry collector (e.g. http://otel-collector.observability:4318): ' +
                'set as OTEL_EXPORTER_OTLP_ENDPOINT on every pod of the node, which then exports a trace per ' +
                'request and per gateway request to <endpoint>/v1/traces. Without it, no traces.',
            ),
          ),
        headersSecretRef: z
          .object({
            name: z.string().min(1).max(253).meta(described("Name of the Secret, in the OracleNode's namespace.")),
            key: z
              .string()
              .min(1)
              .max(253)
              .regex(/^[-._a-zA-Z0-9]+$/)
              .meta(described('The key whose value is the header list.')),
          })
          .optional()
          .meta(
            described(
              'A Secret key holding the export headers of an authenticated collector, in the standard ' +
                'OTEL_EXPORTER_OTLP_HEADERS form (name=value,... with values percent-encoded, e.g. ' +
                'authorization=Bearer%20<token>): set as that variable on every pod of the node from the Secret, ' +
                'never in the pod spec; the engine never logs it.',
            ),
          ),
        serviceName: z
          .string()
          .min(1)
          .max(253)
          .optional()
          .meta(described('service.name of the traces (OTEL_SERVICE_NAME). Default oracle-node.')),
        resourceAttributes: z
          .record(
            z
              .string()
              .min(1)
              .max(253)
              .regex(/^[^\s,=]+$/),
            z.string().max(1024),
          )
          .optional()
          .meta(
            described(
              'Resource attributes of every span (OTEL_RESOURCE_ATTRIBUTES), e.g. deployment.environment: prod; ' +
                'k8s.namespace.name, oracle_node.name and oracle_node.stage are always set.',
            ),
          ),
        sampler: z
          .enum([
            'parentbased_always_on',
            'parentbased_always_off',
            'parentbased_traceidratio',
            'always_on',
            'always_off',
            'traceidratio',
          ])
          .optional()
          .meta(described('Which traces are recorded (OTEL_TRACES_SAMPLER). Default parentbased_always_on.')),
        samplerRatio: z
          .number()
          .min(0)
          .max(1)
          .optional()
          .meta(described('The share of traces a ratio sampler records (OTEL_TRACES_SAMPLER_ARG), 0 to 1.')),
      })
      .optional()
      .meta(described('OpenTelemetry traces of the node (off by default).')),
    worker: z
      .object({
        resources: resources(
          'Compute resources of each worker container, merged key by key over spec.resources and the defaults.',
        ),
        ...workloadPodOverrides('the worker pods'),
        activeDeadlineSeconds: z.int().min(1).max(3600).default(50).meta({
          description: 'Deadline of a worker Job; inside the minute so cycles do not pile up. Default 50.',
          format: 'int64',
        }),
        ttlSecondsAfterFinished: int32(
          'Seconds after which a finished worker Job and its pods are deleted. Default 300.',
        )
          .min(0)
          .default(300),
      })
      .optional()
      .meta(described('The worker Jobs the coordinator creates in each cycle (one Indexed Job per cycle).')),
  })
  .meta(described('Desired state of one oracle node deployment.'));

/** spec as the apiserver may hand it over: every defaulted field optional (a parent left out gets no defaults). */
export type OracleNodeSpec = z.input<typeof oracleNodeSpecSchema>;

// ---------------------------------------------------------------------------------------------------------------
// Status

/** Reconciling and Stalled are kstatus's (abnormal-true: present only while True), derived from the others. */
export const CONDITION_TYPES = ['Ready', 'ConfigValid', 'Progressing', 'Degraded', 'Reconciling', 'Stalled'] as const;
export type ConditionType = (typeof CONDITION_TYPES)[number];

const conditionSchema = z
  .object({
    type: z.enum(CONDITION_TYPES).meta({
      description: 'Ready, ConfigValid, Progressing, Degraded, Reconciling or Stalled.',
      [CHECKS_KEYWORD]: 'types',
    }),
    status: z.enum(['True', 'False', 'Unknown']).meta(described('True, False or Unknown.')),
    reason: z.string().meta(described('Machine-readable CamelCase reason of the last transition.')),
    message: z.string().meta(described('Human-readable detail, with config paths for validation errors.')),
    lastTransitionTime: z
      .string()
      .meta({ description: 'When the status last changed (not when it was last checked).', format: 'date-time' }),
    observedGeneration: z.int().optional().meta(described('The generation the condition was computed for.')),
  })
  .meta(
    described('One aspect of the current state (Ready, ConfigValid, Progressing, Degraded, Reconciling, Stalled).'),
  );

const providerHealthSchema = z.object({
  chainId: z.string().meta(described('Chain id of the provider.')),
  provider: z.string().meta(described('Provider name (a key of chains[].providers).')),
  up: z.boolean().meta(described('Whether the provider answered the block number and logs and was fit to serve.')),
  /** Why the coordinator left the provider out of the cycle (unavailable, lagging, wrong-chain, …). */
  fault: z
    .string()
    .optional()
    .meta(
      described(
        'Why the provider was left out of that cycle: unavailable, oversized (answer over the size cap), wrong-chain, syncing, lagging, ahead (a head the other providers do not confirm and it cannot show) or stalled.',
      ),
    ),
  blockLag: z.int().optional().meta(described('Blocks behind the most advanced provider of the same chain.')),
});

const cycleStatusSchema = z
  .object({
    job: z.string().meta(described('Name of the coordinator Job.')),
    outcome: z.enum(['Running', 'Succeeded', 'Failed']).meta(described('Running, Succeeded or Failed.')),
    startTime: z.string().optional().meta(described('When the Job started.')),
    completionTime: z.string().optional().meta(described('When the Job finished.')),
    /** Counts written by the coordinator at the end of its cycle (requests seen/fulfilled/failed, ...). */
    counts: cycleCountsSchema
      .optional()
      .meta(described('Counts reported by the coordinator for the cycle (e.g. requests, fulfilled, failed, shards).')),
    /** Health of each chain provider in that cycle. */
    providers: z.array(providerHealthSchema).optional().meta(described('Health of each chain provider in that cycle.')),
    /** How the heartbeat after that cycle went. */
    heartbeat: heartbeatResultSchema
      .optional()
      .meta(described('How the heartbeat after that cycle went: Sent, Failed or Disabled.')),
    /** The side of a redundant deployment that ran the cycle (spec.redundancy). */
    role: z
      .enum(NODE_ROLES)
      .optional()
      .meta(
        described(
          'primary or standby (spec.redundancy.standbyDelayBlocks); a standby whose counts.standbyServed is above ' +
            'zero served requests the primary left open: the primary is down.',
        ),
      ),
    /** The gas price each chain's transactions were priced at in that cycle. */
    gasPrices: z
      .array(gasPriceReportSchema)
      .optional()
      .meta(described("The gas price (or max fee per gas) each chain's transactions were priced at, in wei.")),
    /** Balances of the sponsor wallets with an open request or a transaction in that cycle. */
    sponsorWallets: z
      .array(sponsorWalletReportSchema)
      .optional()
      .meta(
        described(
          'Balances of the sponsor wallets that had an open request or sent a transaction in that cycle, funded or not.',
        ),
      ),
  })
  .meta(described('The last coordinator cycle (its Job) and the counts the coordinator reported.'));

const cycleRecordSchema = z.object({
  job: z.string().meta(described('Name of the coordinator Job.')),
  startTime: z.string().optional().meta(described('When the cycle started.')),
  durationSeconds: z.number().optional().meta(described('How long the cycle took, heartbeat included.')),
  outcome: cycleOutcomeSchema.optional().meta(described('Completed or PartiallyFailed (a shard failed).')),
  fulfilled: z.int().meta(described('Requests fulfilled.')),
  failed: z.int().meta(described('Requests whose fulfilment failed.')),
  /** Requests left for a later cycle by the chain's maxConcurrency. */
  dropped: z.int().meta(described("Requests left for a later cycle by the chain's maxConcurrency.")),
  /** Errors by kind (providersDown, failedShards, transactionErrors, heartbeat), only those that happened. */
  errors: z
    .record(z.string(), z.int())
    .optional()
    .meta(described('Errors by kind: providersDown, failedShards, transactionErrors, heartbeat.')),
  /** The block number each provider was at. */
  blocks: z
    .array(
      z.object({
        chainId: z.string().meta(described('Chain id.')),
        provider: z.string().meta(described('Provider name.')),
        block: z.int().meta(described('Block number.')),
      }),
    )
    .optional()
    .meta(described('The block number each provider was at.')),
  heartbeat: heartbeatResultSchema.optional().meta(described('Sent, Failed or Disabled.')),
});

export const oracleNodeStatusSchema = z
  .object({
    observedGeneration: z
      .int()
      .optional()
      .meta(described('The metadata.generation the status reflects (0 until the operator has seen the OracleNode).')),
    conditions: z
      .array(conditionSchema)
      .optional()
      .meta({
        description:
          'Ready, ConfigValid, Progressing and Degraded; Reconciling and Stalled (kstatus) only while they are True.',
        [CHECKS_KEYWORD]: 'all',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['type'],
      }),
    nodeAddress: z
      .string()
      .optional()
      .meta(described("The node address derived from nodeWalletMnemonic (m/44'/60'/0'/0/0); public.")),
    stage: z.string().optional().meta(described('The stage whose workloads serve the node now.')),
    previousStage: z
      .string()
      .optional()
      .meta(described('During a stage rollout: the stage being replaced (its workloads are removed at the end).')),
    chains: z.int().optional().meta(described('Number of chains served.')),
    chainIds: z
      .array(z.string().meta(described('Chain id.')))
      .optional()
      .meta(described('Ids of the chains served.')),
    gatewayUrls: z
      .record(z.string(), z.string())
      .optional()
      .meta(
        described(
          'In-cluster base URLs of the enabled gateways, by gateway (httpGateway, httpSignedDataGateway, oevGateway).',
        ),
      ),
    /** Where callers reach the gateways (spec.gateway.publicUrl, else the Service's load-balancer address). */
    publicGatewayUrl: z
      .string()
      .optional()
      .meta(
        described(
          "Where callers reach the gateways: spec.gateway.publicUrl, else the Service's load-balancer address.",
        ),
      ),
    /** The Ready condition's reason while it is not True (empty when Ready): a printer column. */
    notReadyReason: z
      .string()
      .optional()
      .meta(described("The Ready condition's reason while the node is not Ready (absent when Ready).")),
    cycles: z
      .array(cycleRecordSchema)
      .max(MAX_CYCLE_HISTORY)
      .optional()
      .meta(
        described(`The last ${MAX_CYCLE_HISTORY} coordinator cycles, newest first, from the coordinator's reports.`),
      ),
    recentFailedRequests: z
      .array(
        failedRequestReportSchema.extend({
          job: z.string().meta(described('The coordinator Job of the cycle it failed in.')),
        }),
      )
      .max(MAX_RECENT_FAILED_REQUESTS)
      .optional()
      .meta(
        described(`The last ${MAX_RECENT_FAILED_REQUESTS} failed requests over the reported cycles, newest first.`),
      ),
    lastCycle: cycleStatusSchema.optional(),
  })
  .meta({ description: 'Observed state, written by the operator.', [CHECKS_KEYWORD]: 'types' });

export type OracleNodeStatus = z.infer<typeof oracleNodeStatusSchema>;
export type Condition = z.infer<typeof conditionSchema>;
export type CycleStatus = z.infer<typeof cycleStatusSchema>;
export type CycleRecord = z.infer<typeof cycleRecordSchema>;
export type ProviderHealth = z.infer<typeof providerHealthSchema>;

// ---------------------------------------------------------------------------------------------------------------
// OpenAPI

/** The stage names the workloads, so it must be a literal (not a `${NAME}` placeholder) of the spec's form. */
const STAGE_RULE = {
  rule: "self.matches('^[a-z0-9-]{1,16}$')",
  message: `stage must be 1-16 characters of lowercase a-z, 0-9 and hyphen (and cannot be a ${NAME_PLACEHOLDER} placeholder)`,
};

/** Converts the config model's JSON Schema (zod 4 `z.toJSONSchema`) into the structural schema of spec.config. */
export function configJsonSchemaToStructural(jsonSchema: JsonSchema | undefined): StructuralSchema {
  const description =
    'The whole config.json of the node, inline (chains, nodeSettings, triggers, templates, ois, apiCredentials). ' +
    `Any string may be a ${NAME_PLACEHOLDER} placeholder whose value is the key NAME of the Secret named by secretRef. ` +
    'The apiserver checks types and enums; the operator runs the full validation and reports errors in the ' +
    'ConfigValid condition.';
  const freeForm: StructuralSchema = { description, type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
  if (!jsonSchema) return freeForm;
  const converted = toStructural(jsonSchema, 'enums');
  if (converted.type !== 'object') return freeForm;
  converted.description = description;
  const stage = converted.properties?.nodeSettings?.properties?.stage;
  if (stage) {
    stage.maxLength = 16;
    stage['x-kubernetes-validations'] = [STAGE_RULE];
  }
  fillDescriptions(converted, 'config');
  return converted;
}

const openApi = (schema: z.ZodType): JsonSchema => z.toJSONSchema(schema, { io: 'input' }) as JsonSchema;

/** The OpenAPI of spec: the API's fields, with spec.config from the config model's JSON Schema (free-form without). */
export function specOpenApi(configJsonSchema: JsonSchema | undefined): StructuralSchema {
  const spec = toStructural(openApi(oracleNodeSpecSchema), 'all');
  spec.properties = { ...spec.properties, config: configJsonSchemaToStructural(configJsonSchema) };
  return spec;
}

/** The OpenAPI of status. */
export function statusOpenApi(): StructuralSchema {
  const { description, type, ...rest } = toStructural(openApi(oracleNodeStatusSchema), 'types');
  // A new OracleNode reads "generation 1, observed 0" until the operator's first status write, so kstatus (Flux)
  // and Argo CD see it in progress instead of current before anything was reconciled (docs/gitops.md).
  return { description, type, default: { observedGeneration: 0 }, ...rest } as StructuralSchema;
}
