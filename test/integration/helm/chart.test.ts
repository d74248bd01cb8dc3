// The Helm chart against the real test control plane: lint, server-side dry-run of the rendered manifests,
// install (kwok makes the operator pods Ready), least-privilege RBAC, upgrade, and an uninstall that leaves no
// orphans and no stuck finalizers.
import { AppsV1Api, CoreV1Api, KubeConfig, PolicyV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { expect } from 'chai';
import { dump, loadAll } from 'js-yaml';
import { pino } from 'pino';
import { WINDOW_WORKER_PORT } from '../../../src/contract/shard.js';
import { RuntimeClient } from '../../../src/kube/client.js';
import { RestClient } from '../../../src/kube/rest.js';
import { buildChildren, DEFAULT_SETTINGS } from '../../../src/operator/builders/index.js';
import { validateNodeConfig } from '../../../src/operator/config.js';
import { AdmissionComponent } from '../../../src/operator/webhook/admission.js';
import { loadSample } from '../../unit/operator/fake-kube.js';
import { api, kc, statusOf, uniqueName, useNamespace, waitFor } from '../support/cluster.js';
import { adoptCrd, chartDir as chart, helm, kubectl, requireBinaries } from './support.js';

/** `kubectl auth can-i` as the chart's ServiceAccount; exits non-zero on "no", so read the answer text. */
async function serviceAccountCan(namespace: string, sa: string, verb: string, resource: string, inNamespace: string) {
  const answer = await kubectl(
    undefined,
    'auth',
    'can-i',
    verb,
    resource,
    '-n',
    inNamespace,
    `--as=system:serviceaccount:${namespace}:${sa}`,
  ).catch((err: Error) => err.message);
  return answer.trim().endsWith('yes');
}

async function notFound(read: () => Promise<unknown>): Promise<boolean> {
  try {
    await read();
    return false;
  } catch (err) {
    if (statusOf(err) === 404) return true;
    throw err;
  }
}

describe('Helm chart charts/oracle-node-operator', function () {
  this.timeout(240_000);
  const ns = useNamespace('helm-chart');
  const release = uniqueName('ono');
  const fullname = `${release}-oracle-node-operator`;

  before(() => requireBinaries());

  it('lints strictly with default and alternative values', async () => {
    await helm('lint', '--strict', chart);
    await helm(
      'lint',
      '--strict',
      chart,
      '--set',
      'watchNamespaces={a,b}',
      '--set',
      'metrics.serviceMonitor.enabled=true',
      '--set',
      'metrics.prometheusRule.enabled=true',
      '--set',
      'metrics.gatewayPodMonitor.enabled=true',
    );
  });

  it('rejects values that break values.schema.json', async () => {
    const failure = await helm('template', 'x', chart, '--set', 'operator.workers=0').then(
      () => undefined,
      (err: Error) => err.message,
    );
    expect(failure, 'workers=0 must be refused')
      .to.be.a('string')
      .and.match(/workers/);
  });

  it('renders manifests that the apiserver accepts in a server-side dry-run', async () => {
    const rendered = await helm('template', release, chart, '--namespace', ns.name);
    const out = await kubectl(rendered, 'apply', '--server-side', '--force-conflicts', '--dry-run=server', '-f', '-');
    for (const kind of ['deployment.apps', 'serviceaccount', 'clusterrole', 'clusterrolebinding', 'service']) {
      expect(out).to.include(kind);
    }
  });

  it('renders NetworkPolicies for the operator and the workloads that the apiserver accepts', async () => {
    const rendered = await helm(
      'template',
      release,
      chart,
      '--namespace',
      ns.name,
      '--set',
      'networkPolicy.operator.enabled=true',
      '--set',
      'networkPolicy.workloads.enabled=true',
      '--set',
      `networkPolicy.workloads.namespaces={${ns.name}}`,
      '--set',
      'networkPolicy.workloads.gatewayFrom[0].namespaceSelector.matchLabels.team=callers',
      '--set',
      'networkPolicy.apiServer.cidrs={10.0.0.1/32}',
      '--show-only',
      'templates/networkpolicy-operator.yaml',
      '--show-only',
      'templates/networkpolicy-workloads.yaml',
    );
    const out = await kubectl(rendered, 'apply', '--server-side', '--dry-run=server', '-f', '-');
    expect(out).to.include(`networkpolicy.networking.k8s.io/${fullname} serverside-applied`);
    expect(out).to.include(`networkpolicy.networking.k8s.io/${fullname}-workloads serverside-applied`);
    // The window's workers reach their coordinator's port, and nothing else is opened to them.
    type Peer = { podSelector?: { matchLabels?: Record<string, string> } };
    type Rule = { ports?: { port: number | string }[]; from?: Peer[]; to?: Peer[] };
    const workloads = (
      loadAll(rendered) as { metadata: { name: string }; spec: { ingress: Rule[]; egress: Rule[] } }[]
    ).find((doc) => doc?.metadata.name === `${fullname}-workloads`)!;
    const component = (peers: Peer[] | undefined) =>
      peers?.map((p) => p.podSelector?.matchLabels?.['app.kubernetes.io/component']);
    const onPort = (rules: Rule[]) => rules.filter((rule) => rule.ports?.some((p) => p.port === WINDOW_WORKER_PORT));
    expect(onPort(workloads.spec.ingress).map((rule) => component(rule.from))).to.deep.equal([['worker']]);
    expect(onPort(workloads.spec.egress).map((rule) => component(rule.to))).to.deep.equal([['coordinator']]);
    // Without a namespace to put the workloads' policy in, rendering fails with a message that says so.
    const failure = await helm('template', 'x', chart, '--set', 'networkPolicy.workloads.enabled=true').then(
      () => '',
      (err: Error) => err.message,
    );
    expect(failure).to.include('networkPolicy.workloads.namespaces');
  });

  it('installs: the operator Deployment becomes Available with two replicas and the RBAC is least privilege', async () => {
    // The CRD may be there already (other suites apply it, an earlier release kept it): this release takes it over.
    await adoptCrd(release, ns.name);
    await helm('install', release, chart, '--namespace', ns.name, '--wait', '--timeout', '180s');
    const apps = api(AppsV1Api);
    const deployment = await waitFor(
      async () => {
        const d = await apps.readNamespacedDeployment({ name: fullname, namespace: ns.name });
        return (d.status?.availableReplicas ?? 0) >= 2 ? d : undefined;
      },
      120_000,
      { description: 'operator Deployment available' },
    );
    const pod = deployment.spec?.template.spec;
    expect(pod?.securityContext?.runAsNonRoot).to.equal(true);
    expect(pod?.containers[0]?.securityContext?.readOnlyRootFilesystem).to.equal(true);
    expect(pod?.containers[0]?.args).to.include('--leader-elect=true');
    expect(await api(PolicyV1Api).readNamespacedPodDisruptionBudget({ name: fullname, namespace: ns.name })).to.be.an(
      'object',
    );
    await api(CoreV1Api).readNamespacedService({ name: `${fullname}-metrics`, namespace: ns.name });

    expect(await serviceAccountCan(ns.name, fullname, 'watch', 'oraclenodes.oracle-node.io', 'default')).to.equal(true);
    expect(await serviceAccountCan(ns.name, fullname, 'create', 'cronjobs.batch', 'default')).to.equal(true);
    expect(await serviceAccountCan(ns.name, fullname, 'get', 'leases.coordination.k8s.io', ns.name)).to.equal(true);
    // Least privilege: secrets are read, and written only as the gateway's derived node key (server-side apply:
    // create and patch, never update); nothing outside what it manages.
    expect(await serviceAccountCan(ns.name, fullname, 'update', 'secrets', 'default')).to.equal(false);
    expect(await serviceAccountCan(ns.name, fullname, 'delete', 'nodes', 'default')).to.equal(false);
    expect(await serviceAccountCan(ns.name, fullname, 'create', 'clusterroles', 'default')).to.equal(false);
    // Leases in a node's namespace: only what it grants the coordinator for the window hand-over (get, create, update;
    // Kubernetes lets no one grant what it does not hold), never delete.
    expect(await serviceAccountCan(ns.name, fullname, 'update', 'leases.coordination.k8s.io', 'default')).to.equal(
      true,
    );
    expect(await serviceAccountCan(ns.name, fullname, 'delete', 'leases.coordination.k8s.io', 'default')).to.equal(
      false,
    );
  });

  it("gives the operator identity every permission it needs to create a node's children (no RBAC escalation)", async () => {
    // Kubernetes refuses a Role that grants more than its creator holds: apply the controller's real children of the
    // richest sample as the chart's ServiceAccount, so a missing chart rule fails here and not in production.
    const { node, secret } = loadSample('full-multi-chain');
    const values = Object.fromEntries(
      Object.entries((secret as { data?: Record<string, string> }).data ?? {}).map(([k, v]) => [
        k,
        Buffer.from(v, 'base64').toString(),
      ]),
    );
    const result = validateNodeConfig(node.spec.config, values);
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    node.metadata = { ...node.metadata, namespace: ns.name, uid: '00000000-0000-4000-8000-000000000001' };
    const children = buildChildren({
      node,
      config: result.config,
      rawConfig: node.spec.config,
      secretName: secret.metadata!.name!,
      secretHash: 'h',
      settings: DEFAULT_SETTINGS,
    }).map((c) => {
      // The owner does not exist in this namespace; the permission check is what matters here.
      const { ownerReferences: _owners, ...metadata } = c.object.metadata as unknown as Record<string, unknown>;
      return { ...c.object, metadata: { ...metadata, namespace: ns.name } };
    });
    const kinds = new Set(children.map((c) => c.kind));
    for (const kind of ['Role', 'RoleBinding', 'CronJob', 'Deployment', 'Service', 'ConfigMap', 'ServiceAccount'])
      expect(kinds, kind).to.include(kind);
    const manifest = children.map((c) => dump(c)).join('---\n');
    const out = await kubectl(
      manifest,
      'apply',
      '--server-side',
      '--field-manager=oracle-node-operator',
      `--as=system:serviceaccount:${ns.name}:${fullname}`,
      '-f',
      '-',
    );
    expect(out).to.match(/role\.rbac\.authorization\.k8s\.io\/\S+ serverside-applied/);
  });

  it('the operator identity keeps its webhook Secret, configuration and fence with RBAC by name, and no more', async () => {
    // kwok runs no operator process: run the admission component here, as the chart's ServiceAccount (a token of it),
    // with the chart's names; the uninstall below then shows the objects it made are garbage-collected.
    const token = await api(CoreV1Api).createNamespacedServiceAccountToken({
      namespace: ns.name,
      name: fullname,
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    const cluster = kc.getCurrentCluster()!;
    const asOperator = new KubeConfig();
    asOperator.loadFromOptions({
      clusters: [cluster],
      users: [{ name: 'operator', token: token.status!.token }],
      contexts: [{ name: 'operator', cluster: cluster.name, user: 'operator' }],
      currentContext: 'operator',
    });
    const component = new AdmissionComponent({
      client: new RuntimeClient(
        new RestClient(asOperator, { qps: 50, burst: 100, maxRetries: 0 }),
        'oracle-node-operator',
      ),
      logger: pino({ level: 'silent' }),
      port: 0,
      host: '127.0.0.1',
      target: { service: { namespace: ns.name, name: `${fullname}-webhook`, port: 443 } },
      configurationName: fullname,
      namespace: ns.name,
      secretName: `${fullname}-webhook-cert`,
      certificateSource: 'self',
      failurePolicy: 'Fail',
      timeoutSeconds: 5,
      // Only this suite's namespace: the Service has no real endpoint behind it here.
      watchNamespaces: [ns.name],
      ownerClusterRole: `${fullname}-webhook`,
      coordinatorFence: true,
      workloadImage: 'oracle-node:0.1.0',
    });
    component.start();
    try {
      await component.ready();
    } finally {
      await component.stop();
    }
    const configuration = JSON.parse(
      await kubectl(undefined, 'get', 'validatingwebhookconfiguration', fullname, '-o', 'json'),
    ) as { metadata: { ownerReferences: { kind: string; name: string }[] } };
    expect(configuration.metadata.ownerReferences.map((owner) => `${owner.kind}/${owner.name}`)).to.deep.equal([
      `ClusterRole/${fullname}-webhook`,
    ]);
    const deployment = await api(AppsV1Api).readNamespacedDeployment({ name: fullname, namespace: ns.name });
    expect(deployment.spec?.template.spec?.containers[0]?.args).to.include(
      `--webhook-service=${ns.name}/${fullname}-webhook:443`,
    );
    await api(CoreV1Api).readNamespacedService({ name: `${fullname}-webhook`, namespace: ns.name });
    // By name only: not another webhook configuration, not another Secret.
    expect(
      await serviceAccountCan(ns.name, fullname, 'patch', 'validatingwebhookconfigurations/other', 'default'),
    ).to.equal(false);
    expect(await serviceAccountCan(ns.name, fullname, 'get', 'secrets/other', ns.name)).to.equal(true); // managed rules read Secrets
    expect(await serviceAccountCan(ns.name, fullname, 'update', 'secrets/other', ns.name)).to.equal(false);
    // The registration waits for a ready endpoint of its Service: it must be able to list the EndpointSlices.
    expect(await serviceAccountCan(ns.name, fullname, 'list', 'endpointslices.discovery.k8s.io', ns.name)).to.equal(
      true,
    );
    expect(await serviceAccountCan(ns.name, fullname, 'update', `secrets/${fullname}-webhook-cert`, ns.name)).to.equal(
      true,
    );
    expect(
      await serviceAccountCan(ns.name, fullname, 'delete', 'validatingadmissionpolicies/other', 'default'),
    ).to.equal(false);
  });

  it('upgrades to namespaced RBAC: the ClusterRole goes, a Role appears in the watched namespace', async () => {
    await helm(
      'upgrade',
      release,
      chart,
      '--namespace',
      ns.name,
      '--set',
      `watchNamespaces={${ns.name}}`,
      '--set',
      'replicaCount=3',
      '--wait',
      '--timeout',
      '180s',
    );
    const rbac = api(RbacAuthorizationV1Api);
    expect(await notFound(() => rbac.readClusterRole({ name: fullname }))).to.equal(true);
    await rbac.readNamespacedRole({ name: fullname, namespace: ns.name });
    const d = await api(AppsV1Api).readNamespacedDeployment({ name: fullname, namespace: ns.name });
    expect(d.spec?.replicas).to.equal(3);
    expect(d.spec?.template.spec?.containers[0]?.args).to.include(`--namespaces=${ns.name}`);
    expect(await serviceAccountCan(ns.name, fullname, 'watch', 'oraclenodes.oracle-node.io', 'default')).to.equal(
      false,
    );
    expect(await serviceAccountCan(ns.name, fullname, 'watch', 'oraclenodes.oracle-node.io', ns.name)).to.equal(true);
  });

  it('uninstalls without orphans or stuck finalizers (the CRD stays: crds.keep)', async () => {
    await helm('uninstall', release, '--namespace', ns.name, '--wait', '--timeout', '120s');
    const selector = `app.kubernetes.io/instance=${release}`;
    await waitFor(
      async () => {
        const leftovers = await kubectl(
          undefined,
          'get',
          'deployments,services,serviceaccounts,roles,rolebindings,poddisruptionbudgets,pods,configmaps',
          '-n',
          ns.name,
          '-l',
          selector,
          '-o',
          'name',
        );
        const clusterLeftovers = await kubectl(
          undefined,
          'get',
          'clusterroles,clusterrolebindings',
          '-l',
          selector,
          '-o',
          'name',
        );
        return leftovers.trim() === '' && clusterLeftovers.trim() === '';
      },
      120_000,
      { description: 'no objects of the release left' },
    );
    const withFinalizers = await kubectl(
      undefined,
      'get',
      'all',
      '-n',
      ns.name,
      '-o',
      'jsonpath={range .items[?(@.metadata.finalizers)]}{.kind}/{.metadata.name} {end}',
    );
    expect(withFinalizers.trim()).to.equal('');
    // What the operator made (its webhook configuration and fence) goes with the chart's webhook ClusterRole.
    await waitFor(
      async () =>
        (
          await kubectl(
            undefined,
            'get',
            'validatingwebhookconfigurations,validatingadmissionpolicies,validatingadmissionpolicybindings',
            '-l',
            'app.kubernetes.io/managed-by=oracle-node-operator',
            '-o',
            'name',
          )
        ).trim() === '',
      120_000,
      { description: 'the webhook configuration and fence to be garbage-collected' },
    );
    const crd = await kubectl(undefined, 'get', 'crd', 'oraclenodes.oracle-node.io', '-o', 'name');
    expect(crd.trim()).to.equal('customresourcedefinition.apiextensions.k8s.io/oraclenodes.oracle-node.io');
  });
});
