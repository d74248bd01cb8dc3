import {
  ApiextensionsV1Api,
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type V1ConfigMap,
  type V1OwnerReference,
} from '@kubernetes/client-node';
import { expect } from 'chai';
import { api, statusOf, uniqueName, useNamespace, waitFor } from '../support/cluster.js';

const ownerRef = (owner: { apiVersion: string; kind: string; name: string; uid: string }): V1OwnerReference => ({
  ...owner,
  controller: true,
  blockOwnerDeletion: true,
});

// The garbage collector of kube-controller-manager deletes dependents whose owner is gone, for built-in
// and custom owner kinds alike, and leaves them alone when the owner is deleted with `orphan`.
describe('cluster: garbage collection through ownerReferences', function () {
  this.timeout(150_000);
  const ns = useNamespace('gc');
  const core = api(CoreV1Api);
  const apps = api(AppsV1Api);

  const exists = async (read: () => Promise<unknown>) => {
    try {
      await read();
      return true;
    } catch (err) {
      if (statusOf(err) === 404) return false;
      throw err;
    }
  };
  const configMapGone = (name: string) => async () =>
    !(await exists(() => core.readNamespacedConfigMap({ name, namespace: ns.name })));

  const createOwnedConfigMap = (name: string, owner: V1OwnerReference): Promise<V1ConfigMap> =>
    core.createNamespacedConfigMap({
      namespace: ns.name,
      body: { metadata: { name, ownerReferences: [owner] }, data: { owned: 'yes' } },
    });

  it('deletes the children of a deleted ConfigMap (background propagation)', async () => {
    const owner = await core.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name: 'owner' } } });
    const ref = ownerRef({ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata?.uid ?? '' });
    await createOwnedConfigMap('child-a', ref);
    await createOwnedConfigMap('child-b', ref);
    // An owner that never existed (unknown uid): the GC treats it as gone and collects this one as well.
    await createOwnedConfigMap('unowned', { ...ref, uid: '00000000-0000-0000-0000-000000000000', name: 'nobody' });
    // No owner at all: must survive.
    await core.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name: 'bystander' } } });

    await core.deleteNamespacedConfigMap({ name: 'owner', namespace: ns.name, propagationPolicy: 'Background' });
    await waitFor(configMapGone('child-a'), 90_000, { description: 'child-a collected' });
    await waitFor(configMapGone('child-b'), 90_000, { description: 'child-b collected' });
    await waitFor(configMapGone('unowned'), 90_000, { description: 'configmap with a dangling owner collected' });
    expect(await exists(() => core.readNamespacedConfigMap({ name: 'bystander', namespace: ns.name }))).to.equal(true);
  });

  it('orphans the children instead when asked to', async () => {
    const owner = await core.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name: 'parent' } } });
    const ref = ownerRef({ apiVersion: 'v1', kind: 'ConfigMap', name: 'parent', uid: owner.metadata?.uid ?? '' });
    await createOwnedConfigMap('orphan', ref);
    await core.deleteNamespacedConfigMap({ name: 'parent', namespace: ns.name, propagationPolicy: 'Orphan' });
    await waitFor(
      async () => !(await exists(() => core.readNamespacedConfigMap({ name: 'parent', namespace: ns.name }))),
      60_000,
      {
        description: 'parent deleted',
      },
    );
    const orphan = await waitFor(
      async () => {
        const cm = await core.readNamespacedConfigMap({ name: 'orphan', namespace: ns.name });
        return (cm.metadata?.ownerReferences ?? []).length === 0 ? cm : undefined;
      },
      60_000,
      { description: 'the orphan to lose its ownerReference' },
    );
    expect(orphan.data).to.deep.equal({ owned: 'yes' });
  });

  it('cascades Deployment -> ReplicaSet -> Pods (foreground propagation)', async () => {
    await apps.createNamespacedDeployment({
      namespace: ns.name,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: { containers: [{ name: 'web', image: 'registry.invalid/web:1' }] },
          },
        },
      },
    });
    await waitFor(
      async () => (await core.listNamespacedPod({ namespace: ns.name, labelSelector: 'app=web' })).items.length === 2,
      90_000,
      { description: 'two web pods' },
    );
    const replicaSets = (await apps.listNamespacedReplicaSet({ namespace: ns.name, labelSelector: 'app=web' })).items;
    expect(replicaSets).to.have.length(1);
    expect(replicaSets[0]?.metadata?.ownerReferences?.[0]?.kind).to.equal('Deployment');

    await apps.deleteNamespacedDeployment({ name: 'web', namespace: ns.name, propagationPolicy: 'Foreground' });
    await waitFor(
      async () =>
        (await apps.listNamespacedReplicaSet({ namespace: ns.name, labelSelector: 'app=web' })).items.length === 0 &&
        (await core.listNamespacedPod({ namespace: ns.name, labelSelector: 'app=web' })).items.length === 0 &&
        !(await exists(() => apps.readNamespacedDeployment({ name: 'web', namespace: ns.name }))),
      90_000,
      { description: 'deployment, replicaset and pods deleted' },
    );
  });

  describe('with a custom resource as the owner', () => {
    const group = `${uniqueName('g')}.integration.oracle-node.test`;
    const crdName = `owners.${group}`;
    const extensions = api(ApiextensionsV1Api);
    const custom = api(CustomObjectsApi);

    before(async () => {
      await extensions.createCustomResourceDefinition({
        body: {
          metadata: { name: crdName },
          spec: {
            group,
            scope: 'Namespaced',
            names: { plural: 'owners', singular: 'owner', kind: 'Owner' },
            versions: [
              {
                name: 'v1',
                served: true,
                storage: true,
                schema: { openAPIV3Schema: { type: 'object', x_kubernetes_preserve_unknown_fields: true } },
              },
            ],
          },
        },
      });
      await waitFor(
        async () => {
          await custom.listNamespacedCustomObject({ group, version: 'v1', namespace: ns.name, plural: 'owners' });
          return true;
        },
        60_000,
        { description: `${crdName} served` },
      );
    });

    after(async () => {
      try {
        await extensions.deleteCustomResourceDefinition({ name: crdName });
      } catch (err) {
        if (statusOf(err) !== 404) throw err;
      }
    });

    it('deletes the ConfigMap owned by a deleted custom object', async () => {
      const owner = (await custom.createNamespacedCustomObject({
        group,
        version: 'v1',
        namespace: ns.name,
        plural: 'owners',
        body: { apiVersion: `${group}/v1`, kind: 'Owner', metadata: { name: 'node-1' } },
      })) as { metadata: { uid: string } };
      await createOwnedConfigMap(
        'node-1-config',
        ownerRef({ apiVersion: `${group}/v1`, kind: 'Owner', name: 'node-1', uid: owner.metadata.uid }),
      );
      await custom.deleteNamespacedCustomObject({
        group,
        version: 'v1',
        namespace: ns.name,
        plural: 'owners',
        name: 'node-1',
        propagationPolicy: 'Background',
      });
      // The GC rediscovers resource types every 30 s, so a brand-new CRD's dependents can take that long.
      await waitFor(configMapGone('node-1-config'), 120_000, {
        intervalMs: 500,
        description: 'ConfigMap owned by a custom object collected',
      });
    });
  });
});
