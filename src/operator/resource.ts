// The OracleNode resource: its object type (spec and status are the API's, api/v1alpha1.ts; its coordinates and
// defaults api/groupversion.ts and api/defaults.ts, named here again for the operator), the kinds of its children,
// and the labels/annotations the operator puts on everything it manages.
import type { KubernetesObject } from '@kubernetes/client-node';
import { LABELS } from '../contract/pods.js';
import { BUILTIN_KINDS, type ResourceKind } from '../kube/api.js';
import { type API_VERSION, GROUP, KIND, PLURAL, VERSION } from './api/groupversion.js';
import type { OracleNodeSpec, OracleNodeStatus } from './api/v1alpha1.js';

export {
  DEFAULT_COORDINATOR_POLL_INTERVAL_SECONDS,
  DEFAULT_IMAGE,
  DEFAULT_SCHEDULE,
  DEFAULT_TARGET_CPU_UTILIZATION,
  MAX_COORDINATOR_POLL_INTERVAL_SECONDS,
  MAX_CYCLE_HISTORY,
  MAX_RECENT_FAILED_REQUESTS,
  MIN_COORDINATOR_POLL_INTERVAL_SECONDS,
  SECRETS_AS,
} from './api/defaults.js';
export { API_VERSION, GROUP, KIND, PLURAL, SHORT_NAME, SINGULAR, VERSION } from './api/groupversion.js';
export type {
  Condition,
  ConditionType,
  CycleRecord,
  CycleStatus,
  OracleNodeSpec,
  OracleNodeStatus,
  ProviderHealth,
} from './api/v1alpha1.js';

export const FIELD_MANAGER = 'oracle-node-operator';
export const CONTROLLER_NAME = 'oraclenode';

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
