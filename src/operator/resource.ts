// The OracleNode resource: its API coordinates, its object type (spec and status are the API's, api/v1alpha1.ts),
// the kinds of its children, and the labels/annotations the operator puts on everything it manages.
import type { KubernetesObject } from '@kubernetes/client-node';
import { LABELS } from '../contract/pods.js';
import { BUILTIN_KINDS, type ResourceKind } from '../kube/api.js';
import type { OracleNodeSpec, OracleNodeStatus } from './api/v1alpha1.js';

export type {
  Condition,
  ConditionType,
  CycleRecord,
  CycleStatus,
  OracleNodeSpec,
  OracleNodeStatus,
  ProviderHealth,
} from './api/v1alpha1.js';

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
/** Seconds between a coordinator window's polls of new blocks; 0 turns windows off (one cycle per tick). */
export const DEFAULT_COORDINATOR_POLL_INTERVAL_SECONDS = 1;
/** The engine's least poll interval (`oracle-node coordinator --poll-interval`); a smaller non-zero one is raised to it. */
export const MIN_COORDINATOR_POLL_INTERVAL_SECONDS = 0.1;
export const MAX_COORDINATOR_POLL_INTERVAL_SECONDS = 30;
/** The average CPU utilisation (% of the CPU request) the gateway's HPA aims at when no metrics are given. */
export const DEFAULT_TARGET_CPU_UTILIZATION = 80;

/** spec.secretRef.as: the keys as one secretKeyRef variable each, or as files of a read-only Secret volume. */
export const SECRETS_AS = ['EnvVars', 'Files'] as const;

export const MANAGED_BY = 'oracle-node-operator';
export const MANAGED_SELECTOR = `${LABELS.managedBy}=${MANAGED_BY}`;

export const ANNOTATIONS = {
  paused: 'oracle-node.io/paused',
  configHash: 'oracle-node.io/config-hash',
  secretHash: 'oracle-node.io/secret-hash',
  /** Hash of the desired object as last applied: tells a removed field apart from an unchanged one. */
  appliedHash: 'oracle-node.io/applied-hash',
  /** On a stage's config ConfigMap: the node address the stage was deployed with (reconcile/identity.ts). */
  nodeAddress: 'oracle-node.io/node-address',
} as const;

export type Component = 'config' | 'coordinator' | 'gateway' | 'worker' | 'cache' | 'cycle' | 'signing-key';

export const KINDS = {
  oracleNode: { group: GROUP, version: VERSION, kind: KIND, plural: PLURAL, namespaced: true },
  ...BUILTIN_KINDS,
} as const satisfies Record<string, ResourceKind>;

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
  'NameConflict',
  'NodeAddressChanged',
] as const;
export type ConditionReason = (typeof CONDITION_REASONS)[number];

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
