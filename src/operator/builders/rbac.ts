// Least privilege for the coordinator (it creates the cycle's worker Jobs and their input ConfigMaps, reads the
// workers' output from their logs, writes its cache and cycle report). The workers call no Kubernetes API (they read
// their shard from a mounted ConfigMap and print their results): their ServiceAccount has no Role and no token.
import type { V1Role, V1RoleBinding, V1ServiceAccount } from '@kubernetes/client-node';
import { type BuildInput, childNames, metadata } from './common.js';
import { gatewayEnabled } from './gateway.js';
import { serviceAccountMetadata } from './pod-overrides.js';

type Named<T> = T & { metadata: { name: string } };

/**
 * One ServiceAccount per workload, none of which mounts a token by default: a pod that calls the API asks for one
 * itself. The gateway's and the workers' have no Role: they only keep those pods off the namespace's default
 * ServiceAccount.
 */
export function buildServiceAccounts(input: BuildInput): Named<V1ServiceAccount>[] {
  const names = childNames(input.node.metadata.name, input.config.nodeSettings.stage);
  const account = (name: string, component: 'coordinator' | 'worker' | 'gateway'): Named<V1ServiceAccount> => {
    const own = metadata(input, name, component);
    // The platform's identity annotations (IRSA, Workload Identity) go on the ServiceAccount its pods run under.
    const { labels, annotations } = serviceAccountMetadata(input.node, component, own);
    return {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { ...own, labels: labels ?? own.labels, ...(annotations ? { annotations } : {}) },
      automountServiceAccountToken: false,
    };
  };
  return [
    account(names.coordinator, 'coordinator'),
    account(names.worker, 'worker'),
    ...(gatewayEnabled(input) ? [account(names.gateway, 'gateway')] : []),
  ];
}

type PolicyRule = { apiGroups: string[]; resources: string[]; resourceNames?: string[]; verbs: string[] };

/** What a coordinator may do; the operator must hold all of it to grant it (operator/permissions.ts). */
export function coordinatorRules(names: { cache: string; cycle: string; coordinatorLease: string }): PolicyRule[] {
  return [
    // Worker Jobs: created suspended, un-suspended once their input exists, watched, cleaned up.
    { apiGroups: ['batch'], resources: ['jobs'], verbs: ['create', 'get', 'list', 'watch', 'patch', 'delete'] },
    // Shard inputs, created per cycle and owned by the cycle's Job.
    { apiGroups: [''], resources: ['configmaps'], verbs: ['create', 'get'] },
    // Only its own cache and cycle report are writable.
    {
      apiGroups: [''],
      resources: ['configmaps'],
      resourceNames: [names.cache, names.cycle],
      verbs: ['update', 'patch'],
    },
    // Each worker prints its shard's output as the last line of its log.
    { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] },
    { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] },
    // The window hand-over (src/node/kubernetes/handover.ts): the node's coordinator Lease, created by the first run
    // (create cannot be limited by name), then read, taken and renewed only by name.
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
    {
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      resourceNames: [names.coordinatorLease],
      verbs: ['get', 'update'],
    },
  ];
}

export function buildRoles(input: BuildInput): Named<V1Role>[] {
  const names = childNames(input.node.metadata.name, input.config.nodeSettings.stage);
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: metadata(input, names.coordinator, 'coordinator'),
      rules: coordinatorRules(names),
    },
  ];
}

export function buildRoleBindings(input: BuildInput): Named<V1RoleBinding>[] {
  const names = childNames(input.node.metadata.name, input.config.nodeSettings.stage);
  const binding = (name: string, component: 'coordinator'): Named<V1RoleBinding> => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: metadata(input, name, component),
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ kind: 'ServiceAccount', name, namespace: input.node.metadata.namespace }],
  });
  return [binding(names.coordinator, 'coordinator')];
}
