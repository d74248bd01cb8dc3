// The OracleNode resource: its API coordinates, the TypeScript shape of spec and status, the kinds of its
// children, and the labels/annotations the operator puts on everything it manages.
import type {
  KubernetesObject,
  V1Affinity,
  V1ResourceRequirements,
  V1Toleration,
  V1TopologySpreadConstraint,
  V2MetricSpec,
} from '@kubernetes/client-node';
import {
  type FailedRequestReport,
  type GasPriceReport,
  type HeartbeatReport,
  LABELS,
  type SponsorWalletReport,
} from '../contract/pods.js';
import type { ResourceKind } from './runtime/types.js';

export const GROUP = 'oracle-node.io';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = 'OracleNode';
export const PLURAL = 'oraclenodes';
export const SINGULAR = 'oraclenode';
export const SHORT_NAME = 'onode';
export const FIELD_MANAGER = 'oracle-node-operator';
export const CONTROLLER_NAME = 'oraclenode';

export const DEFAULT_IMAGE = 'oracle-node:0.1.0';
export const DEFAULT_SCHEDULE = '* * * * *';
/** The average CPU utilisation (% of the CPU request) the gateway's HPA aims at when no metrics are given. */
export const DEFAULT_TARGET_CPU_UTILIZATION = 80;

export const MANAGED_BY = 'oracle-node-operator';
export const MANAGED_SELECTOR = `${LABELS.managedBy}=${MANAGED_BY}`;

export const ANNOTATIONS = {
  paused: 'oracle-node.io/paused',
  configHash: 'oracle-node.io/config-hash',
  secretHash: 'oracle-node.io/secret-hash',
  /** Hash of the desired object as last applied: tells a removed field apart from an unchanged one. */
  appliedHash: 'oracle-node.io/applied-hash',
} as const;

export type Component = 'config' | 'coordinator' | 'gateway' | 'worker' | 'cache' | 'cycle';

const kind = (group: string, version: string, kind: string, plural: string, namespaced = true): ResourceKind => ({
  group,
  version,
  kind,
  plural,
  namespaced,
});

export const KINDS = {
  oracleNode: kind(GROUP, VERSION, KIND, PLURAL),
  secret: kind('', 'v1', 'Secret', 'secrets'),
  configMap: kind('', 'v1', 'ConfigMap', 'configmaps'),
  serviceAccount: kind('', 'v1', 'ServiceAccount', 'serviceaccounts'),
  service: kind('', 'v1', 'Service', 'services'),
  role: kind('rbac.authorization.k8s.io', 'v1', 'Role', 'roles'),
  roleBinding: kind('rbac.authorization.k8s.io', 'v1', 'RoleBinding', 'rolebindings'),
  cronJob: kind('batch', 'v1', 'CronJob', 'cronjobs'),
  job: kind('batch', 'v1', 'Job', 'jobs'),
  deployment: kind('apps', 'v1', 'Deployment', 'deployments'),
  podDisruptionBudget: kind('policy', 'v1', 'PodDisruptionBudget', 'poddisruptionbudgets'),
  horizontalPodAutoscaler: kind('autoscaling', 'v2', 'HorizontalPodAutoscaler', 'horizontalpodautoscalers'),
} as const;

/** The kinds the operator creates (and so watches by label), in the order they are applied. */
export const CHILD_KINDS: ResourceKind[] = [
  KINDS.configMap,
  KINDS.serviceAccount,
  KINDS.role,
  KINDS.roleBinding,
  KINDS.service,
  KINDS.deployment,
  KINDS.podDisruptionBudget,
  KINDS.horizontalPodAutoscaler,
  KINDS.cronJob,
];

export type OracleNodeSpec = {
  /** The whole config.json; strings may hold `${NAME}` placeholders resolved from the Secret. */
  config: Record<string, unknown>;
  secretRef?: { name: string };
  image?: string;
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  resources?: V1ResourceRequirements;
  nodeSelector?: Record<string, string>;
  tolerations?: V1Toleration[];
  affinity?: V1Affinity;
  coordinator?: { schedule?: string; suspend?: boolean; resources?: V1ResourceRequirements };
  gateway?: {
    replicas?: number;
    /** An autoscaling/v2 HPA on the gateway Deployment; it then owns the replica count. */
    autoscaling?: {
      minReplicas?: number;
      maxReplicas: number;
      /** Average CPU utilisation target, % of the CPU request (default 80); ignored when metrics are given. */
      targetCPUUtilizationPercentage?: number;
      /** autoscaling/v2 metric specs, in place of the CPU default. */
      metrics?: V2MetricSpec[];
    };
    resources?: V1ResourceRequirements;
    /** In place of the default spread across nodes and zones; [] turns spreading off. */
    topologySpreadConstraints?: V1TopologySpreadConstraint[];
    service?: { type?: 'ClusterIP' | 'NodePort' | 'LoadBalancer'; port?: number };
    /** The base URL callers reach the gateways at (an Ingress, a DNS name): reported by the heartbeat. */
    publicUrl?: string;
  };
  worker?: { resources?: V1ResourceRequirements; activeDeadlineSeconds?: number; ttlSecondsAfterFinished?: number };
};

export type Condition = {
  type: ConditionType;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
};
export type ConditionType = 'Ready' | 'ConfigValid' | 'Progressing' | 'Degraded';

/** Every reason the operator sets on a condition; docs/runbook.md has a section under each name. */
export const CONDITION_REASONS = [
  'Ready',
  'GatewayNotReady',
  'StageRollout',
  'ConfigInvalid',
  'Valid',
  'ValidationFailed',
  'SecretNotFound',
  'SecretKeyMissing',
  'GatewayRollingOut',
  'Reconciled',
  'Paused',
  'AsExpected',
  'CycleFailed',
  'ApplyFailed',
] as const;
export type ConditionReason = (typeof CONDITION_REASONS)[number];

export type CycleStatus = {
  job: string;
  outcome: 'Running' | 'Succeeded' | 'Failed';
  startTime?: string;
  completionTime?: string;
  /** Counts written by the coordinator at the end of its cycle (requests seen/fulfilled/failed, ...). */
  counts?: Record<string, number>;
  /** Health of each chain provider in that cycle. */
  providers?: ProviderHealth[];
  /** Balances of the sponsor wallets that sent transactions in that cycle. */
  sponsorWallets?: SponsorWalletBalance[];
  /** How the heartbeat after that cycle went. */
  heartbeat?: HeartbeatReport;
  /** The gas price each chain's transactions were priced at in that cycle. */
  gasPrices?: GasPriceReport[];
};

/** One past cycle in status.cycles, from the coordinator's report. */
export type CycleRecord = {
  job: string;
  startTime?: string;
  durationSeconds?: number;
  outcome?: 'Completed' | 'PartiallyFailed';
  fulfilled: number;
  failed: number;
  /** Requests left for a later cycle by the chain's maxConcurrency. */
  dropped: number;
  /** Errors by kind (providersDown, failedShards, transactionErrors, heartbeat), only those that happened. */
  errors?: Record<string, number>;
  /** The block number each provider was at. */
  blocks?: { chainId: string; provider: string; block: number }[];
  heartbeat?: HeartbeatReport;
};

export type SponsorWalletBalance = SponsorWalletReport;

export type ProviderHealth = { chainId: string; provider: string; up: boolean; blockLag?: number };

export type OracleNodeStatus = {
  observedGeneration?: number;
  conditions?: Condition[];
  nodeAddress?: string;
  stage?: string;
  previousStage?: string;
  chains?: number;
  chainIds?: string[];
  gatewayUrls?: Record<string, string>;
  /** Where callers reach the gateways (spec.gateway.publicUrl, else the Service's load-balancer address). */
  publicGatewayUrl?: string;
  /** The Ready condition's reason while it is not True (empty when Ready): a printer column. */
  notReadyReason?: string;
  lastCycle?: CycleStatus;
  /** The last MAX_CYCLE_HISTORY cycles, newest first. */
  cycles?: CycleRecord[];
  /** The last MAX_RECENT_FAILED_REQUESTS failed requests over the reported cycles, newest first. */
  recentFailedRequests?: (FailedRequestReport & { job: string })[];
};

export const MAX_RECENT_FAILED_REQUESTS = 20;

export const MAX_CYCLE_HISTORY = 10;

export type OracleNode = KubernetesObject & {
  apiVersion: typeof API_VERSION;
  kind: typeof KIND;
  metadata: NonNullable<KubernetesObject['metadata']> & { name: string; namespace: string };
  spec: OracleNodeSpec;
  status?: OracleNodeStatus;
};

export function isPaused(node: KubernetesObject): boolean {
  return node.metadata?.annotations?.[ANNOTATIONS.paused] === 'true';
}
