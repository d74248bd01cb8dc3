import {
  AppsV1Api,
  AuthenticationV1Api,
  AuthorizationV1Api,
  CoreV1Api,
  type KubeConfig,
  RbacAuthorizationV1Api,
} from '@kubernetes/client-node';
import { expect } from 'chai';
import {
  api,
  createNamespace,
  deleteNamespace,
  expectStatus,
  restrictedKubeConfig,
  restrictedUser,
  useNamespace,
  waitFor,
} from '../support/cluster.js';

// A second identity without cluster-admin: it authenticates, gets exactly what a Role grants it in one
// namespace, and is refused (403 Forbidden) everything else.
describe('cluster: RBAC-restricted identity', function () {
  this.timeout(120_000);
  const ns = useNamespace('rbac');
  let other = '';
  let restricted: KubeConfig;

  before(async function () {
    this.timeout(90_000);
    other = await createNamespace('rbac-other');
    restricted = restrictedKubeConfig();
    const rbac = api(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: ns.name,
      body: {
        metadata: { name: 'configmap-reader' },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns.name,
      body: {
        metadata: { name: 'configmap-reader' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'configmap-reader' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: restrictedUser }],
      },
    });
    await api(CoreV1Api).createNamespacedConfigMap({
      namespace: ns.name,
      body: { metadata: { name: 'settings' }, data: { a: '1' } },
    });
  });

  after(async () => {
    if (other) await deleteNamespace(other);
  });

  it(`authenticates as ${restrictedUser}, not as an admin`, async () => {
    const review = await api(AuthenticationV1Api, restricted).createSelfSubjectReview({
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    expect(review.status?.userInfo?.username).to.equal(restrictedUser);
    expect(review.status?.userInfo?.groups ?? []).to.not.include('system:masters');
  });

  it('may read ConfigMaps in the namespace its Role covers', async () => {
    // RBAC changes reach the authorizer's cache within moments; wait for the grant rather than assume it.
    const list = await waitFor(
      () => api(CoreV1Api, restricted).listNamespacedConfigMap({ namespace: ns.name }),
      30_000,
      { description: 'the Role to take effect' },
    );
    expect(list.items.map((c) => c.metadata?.name)).to.include('settings');
    const cm = await api(CoreV1Api, restricted).readNamespacedConfigMap({ name: 'settings', namespace: ns.name });
    expect(cm.data).to.deep.equal({ a: '1' });
  });

  it('is refused writes the Role does not grant (create, update, delete ConfigMaps)', async () => {
    const core = api(CoreV1Api, restricted);
    await expectStatus(core.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name: 'x' } } }), 403);
    await expectStatus(
      core.replaceNamespacedConfigMap({
        name: 'settings',
        namespace: ns.name,
        body: { metadata: { name: 'settings' }, data: { a: '2' } },
      }),
      403,
    );
    await expectStatus(core.deleteNamespacedConfigMap({ name: 'settings', namespace: ns.name }), 403);
  });

  it('is refused other resources in the same namespace (Secrets, Pods, Deployments)', async () => {
    await expectStatus(api(CoreV1Api, restricted).listNamespacedSecret({ namespace: ns.name }), 403);
    await expectStatus(api(CoreV1Api, restricted).listNamespacedPod({ namespace: ns.name }), 403);
    await expectStatus(
      api(AppsV1Api, restricted).createNamespacedDeployment({
        namespace: ns.name,
        body: {
          metadata: { name: 'nope' },
          spec: {
            selector: { matchLabels: { app: 'nope' } },
            template: { metadata: { labels: { app: 'nope' } }, spec: { containers: [{ name: 'c', image: 'x' }] } },
          },
        },
      }),
      403,
    );
  });

  it('is refused the same ConfigMaps in another namespace and cluster-wide', async () => {
    await expectStatus(api(CoreV1Api, restricted).listNamespacedConfigMap({ namespace: other }), 403);
    await expectStatus(api(CoreV1Api, restricted).listConfigMapForAllNamespaces(), 403);
  });

  it('is refused cluster-scoped changes (namespaces, RBAC escalation)', async () => {
    await expectStatus(api(CoreV1Api, restricted).createNamespace({ body: { metadata: { name: `${other}-x` } } }), 403);
    await expectStatus(api(CoreV1Api, restricted).deleteNamespace({ name: ns.name }), 403);
    await expectStatus(
      api(RbacAuthorizationV1Api, restricted).createNamespacedRoleBinding({
        namespace: ns.name,
        body: {
          metadata: { name: 'escalate' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: restrictedUser }],
        },
      }),
      403,
    );
  });

  it('sees the same answers through SelfSubjectAccessReview', async () => {
    const authz = api(AuthorizationV1Api, restricted);
    const can = async (verb: string, resource: string, namespace: string) =>
      (
        await authz.createSelfSubjectAccessReview({
          body: { spec: { resourceAttributes: { verb, resource, namespace } } },
        })
      ).status?.allowed;
    expect(await can('list', 'configmaps', ns.name)).to.equal(true);
    expect(await can('create', 'configmaps', ns.name)).to.equal(false);
    expect(await can('get', 'secrets', ns.name)).to.equal(false);
    expect(await can('list', 'configmaps', other)).to.equal(false);
  });
});
