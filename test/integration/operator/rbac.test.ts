// The operator under exactly the RBAC of src/operator/permissions.ts (the rules the chart is generated from), not as
// cluster-admin: it takes the richest sample to Ready with every child, and the API server refuses none of its
// calls. A call whose verb the table lacks fails here with a 403 before it fails in a cluster.
import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { expect } from 'chai';
import { managedPermissions, toRules } from '../../../src/operator/permissions.js';
import { api, apply, serviceAccountKubeConfig, useNamespace, waitFor } from '../support/cluster.js';
import { condition, installCrd, type RunningOperator, readNode, sampleDocs, startOperator } from './support.js';

async function requests(operator: RunningOperator, code: string): Promise<number> {
  const { values } = await operator.manager.registry.getSingleMetric('rest_client_requests_total')!.get();
  return values.filter((v) => String(v.labels['code']) === code).reduce((sum, v) => sum + v.value, 0);
}

describe('operator RBAC: exactly src/operator/permissions.ts', function () {
  this.timeout(240_000);
  const ns = useNamespace('onode-rbac');
  let operator: RunningOperator | undefined;

  after(async () => {
    await operator?.stop();
  });

  it('reconciles the full sample to Ready with its children, and no call is refused', async () => {
    await installCrd();
    const rbac = api(RbacAuthorizationV1Api);
    await api(CoreV1Api).createNamespacedServiceAccount({
      namespace: ns.name,
      body: { metadata: { name: 'operator' } },
    });
    await rbac.createNamespacedRole({
      namespace: ns.name,
      body: { metadata: { name: 'operator' }, rules: toRules(managedPermissions()) },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns.name,
      body: {
        metadata: { name: 'operator' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'operator' },
        subjects: [{ kind: 'ServiceAccount', name: 'operator', namespace: ns.name }],
      },
    });
    const { node, secret } = sampleDocs('full-multi-chain', ns.name);
    await apply(secret);
    await apply(node);
    operator = startOperator(ns.name, { kubeConfig: await serviceAccountKubeConfig(ns.name, 'operator') });
    await waitFor(
      async () => condition(await readNode(ns.name, node.metadata.name), 'Ready')?.status === 'True',
      180_000,
      { description: 'the operator, under the table RBAC, to reconcile the node' },
    );
    const reconciled = await readNode(ns.name, node.metadata.name);
    expect(reconciled?.status?.stage, 'status written').to.be.a('string');
    const coordinatorRole = await rbac.readNamespacedRole({
      namespace: ns.name,
      name: `${node.metadata.name}-${reconciled!.status!.stage}-coordinator`,
    });
    expect(coordinatorRole.rules?.length, "the coordinator's Role (no RBAC escalation)").to.be.greaterThan(0);
    expect(await requests(operator, '403'), 'requests refused with 403').to.equal(0);
  });
});
