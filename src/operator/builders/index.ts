// All desired children of one OracleNode for its current stage, in apply order.

import type { ResourceKind } from '../../kube/index.js';
import { KINDS } from '../resource.js';
import type { BuildInput, Child } from './common.js';
import { buildConfigMap, buildStateConfigMaps } from './config-map.js';
import { buildCoordinatorCronJob, type CoordinatorOptions } from './coordinator.js';
import {
  buildGatewayDeployment,
  buildGatewayHpa,
  buildGatewayPdb,
  buildNodeGatewayService,
  buildSigningKeySecret,
  gatewayAutoscaling,
  gatewayEnabled,
  gatewayMaxReplicas,
} from './gateway.js';
import { buildRoleBindings, buildRoles, buildServiceAccounts } from './rbac.js';

export * from './api-limits.js';
export * from './chain-limits.js';
export * from './common.js';
export * from './config-map.js';
export * from './coordinator.js';
export * from './gateway.js';
export * from './names.js';
export * from './rbac.js';
export * from './resources.js';
export * from './scanner-skips.js';
export * from './worker.js';

export type DesiredChild = { kind: ResourceKind; object: Child };

export type ChildrenOptions = CoordinatorOptions & {
  /** The stage the node's gateway Service selects; the current stage unless a rollout still serves an old one. */
  gatewayServiceStage?: string;
};

export function buildChildren(input: BuildInput, options: ChildrenOptions = {}): DesiredChild[] {
  const children: DesiredChild[] = [];
  const add = (kind: ResourceKind, object: unknown) => children.push({ kind, object: object as Child });
  add(KINDS.configMap, buildConfigMap(input));
  for (const cm of buildStateConfigMaps(input)) add(KINDS.configMap, cm);
  for (const sa of buildServiceAccounts(input)) add(KINDS.serviceAccount, sa);
  for (const role of buildRoles(input)) add(KINDS.role, role);
  for (const binding of buildRoleBindings(input)) add(KINDS.roleBinding, binding);
  if (gatewayEnabled(input)) {
    // Before the Deployment that reads it.
    if (input.signingKey) add(KINDS.secret, buildSigningKeySecret(input));
    add(KINDS.deployment, buildGatewayDeployment(input));
    add(KINDS.service, buildNodeGatewayService(input, options.gatewayServiceStage ?? input.config.nodeSettings.stage));
    if (gatewayMaxReplicas(input) > 1) add(KINDS.podDisruptionBudget, buildGatewayPdb(input));
    if (gatewayAutoscaling(input)) add(KINDS.horizontalPodAutoscaler, buildGatewayHpa(input));
  }
  add(KINDS.cronJob, buildCoordinatorCronJob(input, options));
  return children;
}
