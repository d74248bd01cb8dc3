// The Kubernetes API calls the operator makes, as RBAC: the one source of the chart's rules (kubebuilder's RBAC markers
// play this part in Go operators). scripts/generate-chart-rbac.ts writes the chart's managed and leader-election rules
// from it; the chart tests compare the webhook's hand-templated rules (they carry release-specific resourceNames)
// against it. Every verb is here because a call site needs it, and the call site is named beside it: a verb that no
// call needs has no place here, and a new call that needs one fails against the chart's RBAC in the integration tests.

import type { ResourceKind } from '../kube/index.js';
import { coordinatorRules } from './builders/rbac.js';
import { FEED_RESOURCE } from './feed/api.js';
import { feedRules } from './feed/builders.js';
import { CHILD_KINDS, KINDS } from './resource.js';

export const VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] as const;
export type Verb = (typeof VERBS)[number];

/** One call (or family of calls) of the operator, on one resource. */
export type Permission = { group: string; resource: string; verbs: readonly Verb[]; why: string };

const on = (kind: ResourceKind, verbs: readonly Verb[], why: string, subresource?: string): Permission => ({
  group: kind.group,
  resource: subresource ? `${kind.plural}/${subresource}` : kind.plural,
  verbs,
  why,
});

/**
 * In every namespace the operator manages OracleNodes in: a ClusterRole when it watches all namespaces, else one
 * Role per watched namespace.
 */
export function managedPermissions(): Permission[] {
  return [
    on(
      KINDS.oracleNode,
      ['list', 'watch'],
      'informer of the primary kind (kube/informer.ts); reads come from its cache',
    ),
    on(
      KINDS.oracleNode,
      ['patch'],
      'server-side apply of the status (reconcile/status.ts, client.applyStatus)',
      'status',
    ),
    on(
      KINDS.oracleNode,
      ['update'],
      "children's ownerReferences block the owner's deletion (blockOwnerDeletion): the OwnerReferencesPermissionEnforcement admission plugin asks for update on the owner's finalizers",
      'finalizers',
    ),
    on(FEED_RESOURCE, ['list', 'watch'], 'informer of the AirnodeFeeds (feed/controller.ts)'),
    on(FEED_RESOURCE, ['patch'], "server-side apply of a feed's status (feed/controller.ts)", 'status'),
    on(FEED_RESOURCE, ['update'], "blockOwnerDeletion on a feed's children (as for OracleNodes)", 'finalizers'),
    on(KINDS.secret, ['list', 'watch'], 'metadata-only informer of the Secrets that OracleNodes reference'),
    on(KINDS.secret, ['get'], "the referenced Secret's values, read live on reconcile (reconcile/inputs.ts)"),
    on(
      KINDS.secret,
      ['create', 'patch', 'delete'],
      "the gateway's node key, derived from the mnemonic (builders/gateway.ts buildSigningKeySecret): server-side apply (patch, and create when new); delete once no signing gateway reads it (reconcile/apply.ts)",
    ),
    ...CHILD_KINDS.map((kind) =>
      on(
        kind,
        ['get', 'list', 'watch', 'create', 'patch', 'delete'],
        'children: informer by label; before creating a child the cache does not hold, a read of that name, so an object the node does not control is never applied over (ownership.ts); server-side apply (patch, and create when the child is new); delete of a child the spec no longer asks for (reconcile/apply.ts) and of an old stage (reconcile/rollout.ts)',
      ),
    ),
    on(KINDS.job, ['list', 'watch'], "informer of the coordinator's Jobs (cycle outcome, stage rollout waits)"),
    {
      group: '',
      resource: 'events',
      verbs: ['create', 'patch'],
      why: 'Events on OracleNodes (kube/events.ts: POST, then merge-patch of the count)',
    },
    ...grantedToWorkloads(),
  ];
}

/**
 * Kubernetes lets the operator create a Role only with rules it holds itself (RBAC escalation prevention): the
 * coordinator's Role (builders/rbac.ts) and a feed's (feed/builders.ts) are held in full, without their per-object
 * resourceNames. Workers have no Role.
 */
function grantedToWorkloads(): Permission[] {
  const names = { cache: 'x', cycle: 'x', coordinatorLease: 'x' };
  const granted = (rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[], why: string) =>
    rules.flatMap((rule) =>
      rule.apiGroups.flatMap((group) =>
        rule.resources.map((resource) => ({ group, resource, verbs: rule.verbs as Verb[], why })),
      ),
    );
  return [
    ...granted(coordinatorRules(names), "granted to a coordinator's Role (builders/rbac.ts)"),
    ...granted(feedRules({ report: 'x' }), "granted to a feed's Role, on its report ConfigMap (feed/builders.ts)"),
  ];
}

/** In the release namespace, with leader election on: the Lease (kube/leader.ts RestLeaseStore: GET, POST, PUT). */
export function leaderElectionPermissions(): Permission[] {
  return [
    {
      group: 'coordination.k8s.io',
      resource: 'leases',
      verbs: ['get', 'create', 'update'],
      why: 'leader election: read, create and renew (PUT with resourceVersion) the Lease',
    },
  ];
}

/**
 * The admission webhook and the coordinator fence (webhook/admission.ts, webhook/certificate-store.ts). The chart
 * limits most of them by name; the names are the release's, so the chart templates these rules by hand and its tests
 * compare their verbs with these.
 */
export function admissionPermissions(options: { selfSignedCertificates: boolean; coordinatorFence: boolean }): {
  namespaced: Permission[];
  cluster: Permission[];
} {
  const namespaced: Permission[] = [
    {
      group: '',
      resource: 'secrets',
      verbs: options.selfSignedCertificates ? ['get', 'create', 'update'] : ['get'],
      why: 'the serving certificate Secret, by name (certificate-store.ts: GET; self-signed: POST, PUT)',
    },
    {
      group: 'discovery.k8s.io',
      resource: 'endpointslices',
      verbs: ['list'],
      why: "the webhook Service's endpoints, before the first registration",
    },
  ];
  const cluster: Permission[] = [
    {
      group: 'admissionregistration.k8s.io',
      resource: 'validatingwebhookconfigurations',
      verbs: ['get', 'create', 'patch'],
      why: 'its ValidatingWebhookConfiguration: read, server-side apply',
    },
    {
      group: 'rbac.authorization.k8s.io',
      resource: 'clusterroles',
      verbs: ['get'],
      why: 'the owner of the objects it creates (uid for the ownerReference)',
    },
  ];
  if (options.coordinatorFence) {
    for (const resource of ['validatingadmissionpolicies', 'validatingadmissionpolicybindings'])
      cluster.push({
        group: 'admissionregistration.k8s.io',
        resource,
        verbs: ['get', 'create', 'patch'],
        why: 'the coordinator fence: read, server-side apply',
      });
    cluster.push({
      group: 'oracle-node.io',
      resource: 'oraclenodes',
      verbs: ['get'],
      why: "no call of its own: the API server lets only who may get every object of a policy's paramKind (the fence's parameters are the OracleNodes) write the policy and its binding",
    });
  }
  return { namespaced, cluster };
}

export type PolicyRule = { apiGroups: string[]; resources: string[]; verbs: Verb[] };

/**
 * Permissions as RBAC rules: the verbs of one resource merged, then resources with the same group and verbs in one
 * rule, in a stable order (groups, then resources as first listed; verbs in VERBS order).
 */
export function toRules(permissions: Permission[]): PolicyRule[] {
  const byResource = new Map<string, { group: string; resource: string; verbs: Set<Verb> }>();
  for (const { group, resource, verbs } of permissions) {
    const key = `${group}/${resource}`;
    const entry = byResource.get(key) ?? { group, resource, verbs: new Set<Verb>() };
    for (const verb of verbs) entry.verbs.add(verb);
    byResource.set(key, entry);
  }
  const rules = new Map<string, PolicyRule>();
  for (const { group, resource, verbs } of byResource.values()) {
    const ordered = VERBS.filter((verb) => verbs.has(verb));
    const key = `${group}|${ordered.join(',')}`;
    const rule = rules.get(key);
    if (rule) rule.resources.push(resource);
    else rules.set(key, { apiGroups: [group], resources: [resource], verbs: ordered });
  }
  return [...rules.values()];
}

/** The verbs the rules grant per "group/resource" (resourceNames ignored), for comparisons. */
export function grantedVerbs(
  rules: { apiGroups?: string[]; resources?: string[]; verbs: string[] }[],
): Map<string, Set<string>> {
  const granted = new Map<string, Set<string>>();
  for (const rule of rules)
    for (const group of rule.apiGroups ?? [''])
      for (const resource of rule.resources ?? []) {
        const key = `${group}/${resource}`;
        const verbs = granted.get(key) ?? new Set<string>();
        for (const verb of rule.verbs) verbs.add(verb);
        granted.set(key, verbs);
      }
  return granted;
}
