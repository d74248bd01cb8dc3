// The built-in kinds this project reads and writes, defined once: the operator's KINDS adds its OracleNode to them,
// the pods' adapters (src/node/kubernetes) and the CLI use them as they are.
import type { ResourceKind } from './types.js';

const kind = (group: string, version: string, kind: string, plural: string, namespaced = true): ResourceKind => ({
  group,
  version,
  kind,
  plural,
  namespaced,
});

export const BUILTIN_KINDS = {
  secret: kind('', 'v1', 'Secret', 'secrets'),
  configMap: kind('', 'v1', 'ConfigMap', 'configmaps'),
  pod: kind('', 'v1', 'Pod', 'pods'),
  serviceAccount: kind('', 'v1', 'ServiceAccount', 'serviceaccounts'),
  service: kind('', 'v1', 'Service', 'services'),
  role: kind('rbac.authorization.k8s.io', 'v1', 'Role', 'roles'),
  roleBinding: kind('rbac.authorization.k8s.io', 'v1', 'RoleBinding', 'rolebindings'),
  cronJob: kind('batch', 'v1', 'CronJob', 'cronjobs'),
  job: kind('batch', 'v1', 'Job', 'jobs'),
  deployment: kind('apps', 'v1', 'Deployment', 'deployments'),
  podDisruptionBudget: kind('policy', 'v1', 'PodDisruptionBudget', 'poddisruptionbudgets'),
  horizontalPodAutoscaler: kind('autoscaling', 'v2', 'HorizontalPodAutoscaler', 'horizontalpodautoscalers'),
} as const satisfies Record<string, ResourceKind>;
