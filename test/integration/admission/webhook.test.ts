// The admission webhook on the real control plane: the API server calls a host-run webhook (the operator's
// admission component) at a loopback URL. Invalid configs are refused with their paths, `--dry-run=server` gives
// the same answer, valid ones pass, warnings reach kubectl, update guards hold, the certificate rotates while the
// API server keeps calling, two replicas starting together agree on one Secret, and the controller reconciles
// with the webhook down.
import { X509Certificate } from 'node:crypto';
import { CoreV1Api, type KubernetesObject, PatchStrategy } from '@kubernetes/client-node';
import { expect } from 'chai';
import { dump } from 'js-yaml';
import { pino } from 'pino';
import { WEBHOOK_PATH } from '../../../src/operator/builders/admission.js';
import {
  ADMISSION_KINDS,
  type AdmissionComponent,
  oracleNodesInCache,
  secretExistsInCache,
} from '../../../src/operator/webhook/admission.js';
import { CertificateStore } from '../../../src/operator/webhook/certificate-store.js';
import { splitPemBundle } from '../../../src/operator/webhook/certificates.js';
import { spawnOracleNode } from '../../support/binary.js';
import { condition, installCrd, readNode, sampleDocs, startOperator } from '../operator/support.js';
import {
  api,
  apply,
  createNamespace,
  deleteNamespace,
  kubeconfigPath,
  objects,
  uniqueName,
  waitFor,
} from '../support/cluster.js';
import { freePort, kubectl, restClient, startAdmission } from './support.js';

type Node = ReturnType<typeof sampleDocs>['node'];
const settingsOf = (node: Node) => node.spec.config.nodeSettings as Record<string, unknown>;

function invalidNode(namespace: string): Node {
  const { node } = sampleDocs('minimal', namespace);
  node.metadata.name = 'invalid';
  // Rules the CRD's schema cannot express (it checks types and bounds first): an order and a cross-reference.
  const chain = (node.spec.config.chains as Record<string, unknown>[])[0]!;
  (chain.options as Record<string, unknown>).gasPriceOracle = [
    { gasPriceStrategy: 'constantGasPrice', gasPrice: { value: 10, unit: 'gwei' } },
    { gasPriceStrategy: 'providerRecommendedGasPrice', recommendedGasPriceMultiplier: 1.2 },
  ];
  (node.spec.config.triggers as { rrp: { oisTitle: string }[] }).rrp[0]!.oisTitle = 'Nope';
  return node;
}

async function deleteConfiguration(name: string): Promise<void> {
  await restClient().delete(ADMISSION_KINDS.webhookConfiguration, { namespace: '', name });
}

/** Until the API server calls the webhook (its configuration informer has seen it): an invalid dry run is refused. */
async function untilEnforced(namespace: string): Promise<void> {
  await waitFor(
    async () => {
      const result = await kubectl(dump(invalidNode(namespace)), 'apply', '--dry-run=server', '-f', '-');
      return result.code !== 0 && result.stderr.includes('triggers.rrp[0].oisTitle: No matching OIS');
    },
    60_000,
    { description: 'the API server to call the webhook' },
  );
}

describe('admission webhook (API server -> host-run webhook at a loopback URL)', function () {
  this.timeout(180_000);
  let namespace: string;
  let operatorNamespace: string;
  let configurationName: string;
  let admission: AdmissionComponent;
  let operator: ReturnType<typeof startOperator>;

  before(async () => {
    await installCrd();
    namespace = await createNamespace('admission');
    operatorNamespace = await createNamespace('admission-operator');
    configurationName = uniqueName('oracle-node-webhook');
    // The operator's manager, for its metadata cache of Secrets (the missing-Secret warning); its controller
    // reconciles the nodes the tests admit, as in a cluster.
    operator = startOperator(namespace);
    admission = startAdmission({
      lookups: {
        secretExists: secretExistsInCache(operator.manager.cache),
        oracleNodes: oracleNodesInCache(operator.manager.cache),
      },
      port: await freePort(),
      configurationName,
      namespace: operatorNamespace,
      secretName: 'webhook-cert',
      watchNamespaces: [namespace],
    });
    await admission.ready();
    await untilEnforced(namespace);
  });

  after(async () => {
    await admission?.stop();
    await operator?.stop();
    if (configurationName) await deleteConfiguration(configurationName);
    if (namespace) await deleteNamespace(namespace);
    if (operatorNamespace) await deleteNamespace(operatorNamespace);
  });

  it('refuses an invalid config with every error and its path; --dry-run=server gives the same answer', async () => {
    const manifest = dump(invalidNode(namespace));
    const applied = await kubectl(manifest, 'apply', '-f', '-');
    const dryRun = await kubectl(manifest, 'apply', '--dry-run=server', '-f', '-');
    expect(applied.code).to.not.equal(0);
    // kubectl prints the webhook's Invalid status with one `path: message` per cause, as for any validation error.
    expect(applied.stderr).to.contain('The OracleNode "invalid" is invalid:');
    expect(applied.stderr).to.contain(
      'chains[0].options.gasPriceOracle: ConstantGasPrice strategy must be set as the last strategy in the array.',
    );
    expect(applied.stderr).to.contain('triggers.rrp[0].oisTitle: No matching OIS for trigger with OIS title "Nope"');
    expect(dryRun.code).to.not.equal(0);
    expect(dryRun.stderr).to.equal(applied.stderr);
    const created = await objects.read(invalidNode(namespace) as never).catch(() => undefined);
    expect(created, 'nothing was stored').to.equal(undefined);
  });

  it('accepts a valid config, and returns warnings (several servers, a Secret not there yet)', async () => {
    const { node } = sampleDocs('minimal', namespace);
    node.metadata.name = 'warned';
    node.spec.secretRef = { name: 'not-there-yet' };
    const ois = (node.spec.config.ois as { apiSpecifications: { servers: unknown[] } }[])[0]!;
    ois.apiSpecifications.servers.push({ url: 'http://backup.example:5000' });
    // The Secret warning comes from the operator's cache: once it has synced.
    await waitFor(() => operator.manager.readiness().ready, 60_000, { description: 'the operator caches' });
    const result = await kubectl(dump(node), 'apply', '-f', '-');
    expect(result.code, result.stderr).to.equal(0);
    expect(result.stderr).to.contain(
      'Warning: ois[0].apiSpecifications.servers: 2 servers are listed; only servers[0] is used',
    );
    expect(result.stderr).to.contain(
      `Warning: spec.secretRef.name: Secret ${namespace}/not-there-yet does not exist yet; the node waits for it`,
    );
    expect(await readNode(namespace, 'warned')).to.not.equal(undefined);
  });

  it('guards the node wallet on update: only together with the stage', async () => {
    const { node } = sampleDocs('minimal', namespace);
    node.metadata.name = 'guarded';
    expect((await kubectl(dump(node), 'apply', '-f', '-')).code).to.equal(0);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a config placeholder, not a template
    settingsOf(node).nodeWalletMnemonic = '${OTHER_MNEMONIC}';
    const refused = await kubectl(dump(node), 'apply', '-f', '-');
    expect(refused.code).to.not.equal(0);
    expect(refused.stderr).to.contain('nodeSettings.nodeWalletMnemonic: the node wallet can change only together');
    settingsOf(node).stage = 'prod';
    const accepted = await kubectl(dump(node), 'apply', '-f', '-');
    expect(accepted.code, accepted.stderr).to.equal(0);
  });

  it("refuses a spec.secretRef named like the node key's Secret: the user's Secret is never taken over", async () => {
    const { node } = sampleDocs('full-multi-chain', namespace);
    node.metadata.name = 'keyed';
    node.spec.secretRef = { name: 'keyed-signing-key' };
    const refused = await kubectl(dump(node), 'apply', '-f', '-');
    expect(refused.code).to.not.equal(0);
    expect(refused.stderr).to.contain(
      'spec.secretRef.name: keyed-signing-key is the name of the Secret the operator writes the node key into',
    );
    expect(await readNode(namespace, 'keyed')).to.equal(undefined);
  });

  it('refuses a node whose children another OracleNode names alike (a with stage b-c, a-b with stage c), with the reason', async () => {
    const { node: a } = sampleDocs('minimal', namespace);
    a.metadata.name = 'a';
    settingsOf(a).stage = 'b-c';
    expect((await kubectl(dump(a), 'apply', '-f', '-')).code).to.equal(0);
    const { node: ab } = sampleDocs('minimal', namespace);
    ab.metadata.name = 'a-b';
    settingsOf(ab).stage = 'c';
    // From the operator's cache: once it has seen a.
    const refused = await waitFor(
      async () => {
        const result = await kubectl(dump(ab), 'apply', '--dry-run=server', '-f', '-');
        return result.code !== 0 ? result : undefined;
      },
      30_000,
      { description: 'the refusal' },
    );
    expect(refused.stderr).to.contain('metadata.name: OracleNode a names ConfigMap/a-b-c-config');
    expect(refused.stderr).to.contain('rename this node or its nodeSettings.stage');
    settingsOf(ab).stage = 'c-d';
    const accepted = await kubectl(dump(ab), 'apply', '-f', '-');
    expect(accepted.code, accepted.stderr).to.equal(0);
  });

  it('never blocks the namespaces it does not watch', async () => {
    const other = await createNamespace('admission-unwatched');
    try {
      const result = await kubectl(dump(invalidNode(other)), 'apply', '--dry-run=server', '-f', '-');
      expect(result.code, result.stderr).to.equal(0);
    } finally {
      await deleteNamespace(other);
    }
  });

  it('the controller still reconciles while the webhook is down (failurePolicy Fail)', async () => {
    const downNamespace = await createNamespace('admission-down');
    const name = uniqueName('oracle-node-webhook-down');
    const replica = startAdmission({
      port: await freePort(),
      configurationName: name,
      namespace: operatorNamespace,
      secretName: 'webhook-cert-down',
      watchNamespaces: [downNamespace],
    });
    const operator = startOperator(downNamespace);
    try {
      await replica.ready();
      await untilEnforced(downNamespace);
      const { node, secret } = sampleDocs('minimal', downNamespace);
      await apply(secret);
      await apply(node);
      await replica.stop();
      // New writes to OracleNodes fail closed...
      const refused = await kubectl(dump(invalidNode(downNamespace)), 'apply', '--dry-run=server', '-f', '-');
      expect(refused.stderr).to.contain('failed calling webhook');
      // ...while the controller applies children and writes status (a subresource the webhook does not match).
      const ready = await waitFor(async () => {
        const live = await readNode(downNamespace, node.metadata.name);
        return condition(live, 'ConfigValid')?.status === 'True' ? live : undefined;
      }, 90_000);
      expect(ready.status?.nodeAddress).to.match(/^0x/);
    } finally {
      await operator.stop();
      await replica.stop();
      await deleteConfiguration(name);
      await deleteNamespace(downNamespace);
    }
  });
});

describe('admission webhook certificates', function () {
  this.timeout(240_000);
  let namespace: string;
  let operatorNamespace: string;
  const configurations: string[] = [];

  before(async () => {
    await installCrd();
    namespace = await createNamespace('admission-certs');
    operatorNamespace = await createNamespace('admission-certs-operator');
  });

  after(async () => {
    for (const name of configurations) await deleteConfiguration(name);
    if (namespace) await deleteNamespace(namespace);
    if (operatorNamespace) await deleteNamespace(operatorNamespace);
  });

  it('rotates the serving certificate and the CA while the API server keeps calling', async () => {
    const configurationName = uniqueName('oracle-node-webhook-rotation');
    configurations.push(configurationName);
    // Lifetimes of seconds instead of days: the serving certificate renews every few seconds, the CA twice a minute.
    const replica = startAdmission({
      port: await freePort(),
      configurationName,
      namespace: operatorNamespace,
      secretName: 'webhook-cert-rotation',
      watchNamespaces: [namespace],
      checkIntervalMs: 500,
      certificatePolicy: {
        caValidityMs: 30_000,
        caRenewBeforeMs: 15_000,
        caOverlapMs: 3_000,
        servingValidityMs: 8_000,
        servingRenewBeforeMs: 4_000,
      },
    });
    try {
      await replica.ready();
      await untilEnforced(namespace);
      const servingSeen = new Set<string>();
      const casSeen = new Set<string>();
      const { node } = sampleDocs('minimal', namespace);
      let calls = 0;
      // Every call must reach the webhook and be admitted, across every renewal.
      while (servingSeen.size < 4 || casSeen.size < 2) {
        const served = replica.servingCertificate!;
        servingSeen.add(new X509Certificate(served).fingerprint256);
        const secret = await api(CoreV1Api).readNamespacedSecret({
          namespace: operatorNamespace,
          name: 'webhook-cert-rotation',
        });
        const bundle = Buffer.from(secret.data!['ca.crt']!, 'base64').toString('utf8');
        casSeen.add(new X509Certificate(splitPemBundle(bundle)[0]!).fingerprint256);
        await objects.create(node as KubernetesObject, undefined, 'All');
        calls++;
        if (calls > 2000) throw new Error('no rotation observed');
      }
      expect(servingSeen.size).to.be.at.least(4);
      expect(casSeen.size).to.be.at.least(2);
    } finally {
      await replica.stop();
      await deleteConfiguration(configurationName); // a Fail webhook nobody serves would block the next test
    }
  });

  it('with a Service target, registers only once the Service has a ready endpoint', async () => {
    const configurationName = uniqueName('oracle-node-webhook-endpoint');
    configurations.push(configurationName);
    // A selectorless Service whose EndpointSlice the test writes: not ready, then ready (as a replica's probe would).
    const service = 'webhook-endpoint';
    await objects.create({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: service, namespace: operatorNamespace },
      spec: { ports: [{ name: 'webhook', port: 443, targetPort: 9443 }] },
    } as KubernetesObject);
    const slice = (ready: boolean) =>
      ({
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: {
          name: `${service}-test`,
          namespace: operatorNamespace,
          labels: { 'kubernetes.io/service-name': service, 'endpointslice.kubernetes.io/managed-by': 'admission-test' },
        },
        addressType: 'IPv4',
        ports: [{ name: 'webhook', port: 9443, protocol: 'TCP' }],
        endpoints: [{ addresses: ['10.0.0.10'], conditions: { ready } }],
      }) as KubernetesObject;
    await objects.create(slice(false));
    const replica = startAdmission({
      port: await freePort(),
      configurationName,
      namespace: operatorNamespace,
      secretName: 'webhook-cert-endpoint',
      watchNamespaces: [namespace],
      target: { service: { namespace: operatorNamespace, name: service, port: 443 } },
      failurePolicy: 'Ignore', // the API server cannot reach a Service here; never block other tests
      endpointPollMs: 100,
    });
    try {
      await waitFor(async () => replica.readiness().ready, 30_000, 'the webhook serving');
      // Serving, but no ready endpoint: many polls later there is still no configuration.
      await new Promise((resolve) => setTimeout(resolve, 2000));
      const early = await restClient().get(ADMISSION_KINDS.webhookConfiguration, {
        namespace: '',
        name: configurationName,
      });
      expect(early, 'registered before the Service had a ready endpoint').to.equal(undefined);
      await objects.patch(slice(true), undefined, undefined, 'admission-test', true, PatchStrategy.ServerSideApply);
      await replica.ready();
      const registered = await restClient().get<KubernetesObject & { webhooks: { clientConfig: unknown }[] }>(
        ADMISSION_KINDS.webhookConfiguration,
        { namespace: '', name: configurationName },
      );
      expect(registered?.webhooks[0]?.clientConfig).to.deep.include({
        service: { namespace: operatorNamespace, name: service, port: 443, path: WEBHOOK_PATH },
      });
    } finally {
      await replica.stop();
      await deleteConfiguration(configurationName);
    }
  });

  it('two replicas renewing at the same moment: one write wins (resourceVersion), both serve the winner', async () => {
    const rest = restClient().rest;
    const store = (now: Date) =>
      new CertificateStore({
        rest,
        namespace: operatorNamespace,
        secretName: 'webhook-cert-race',
        names: { dnsNames: [], ipAddresses: ['127.0.0.1'] },
        source: 'self',
        logger: pino({ level: 'silent' }),
        now: () => now,
      });
    const first = await store(new Date()).sync();
    // 61 days on, the serving certificate (90 days, renewed 30 days before) is due and a fresh one is not.
    const later = new Date(Date.now() + 61 * 86_400_000);
    const [a, b] = await Promise.all([store(later).sync(), store(later).sync()]);
    expect(a.certPem).to.not.equal(first.certPem);
    expect(b.certPem, 'the slower replica took the winner').to.equal(a.certPem);
    const secret = await api(CoreV1Api).readNamespacedSecret({
      namespace: operatorNamespace,
      name: 'webhook-cert-race',
    });
    expect(Buffer.from(secret.data!['tls.crt']!, 'base64').toString('utf8')).to.equal(a.certPem);
    expect(a.caBundle).to.equal(first.caBundle);
  });

  it('two replicas starting together agree on one Secret and serve the same certificate', async () => {
    const configurationName = uniqueName('oracle-node-webhook-replicas');
    configurations.push(configurationName);
    const port = await freePort();
    const common = {
      configurationName,
      namespace: operatorNamespace,
      secretName: 'webhook-cert-replicas',
      watchNamespaces: [namespace],
      urlPort: port, // the URL is one address, as a Service in front of the replicas would be
    };
    const replicas = [startAdmission({ ...common, port }), startAdmission({ ...common, port: await freePort() })];
    try {
      await Promise.all(replicas.map((replica) => replica.ready()));
      await untilEnforced(namespace);
      const readSecret = () =>
        api(CoreV1Api).readNamespacedSecret({ namespace: operatorNamespace, name: 'webhook-cert-replicas' });
      const secret = await readSecret();
      const certificate = Buffer.from(secret.data!['tls.crt']!, 'base64').toString('utf8');
      await waitFor(() => replicas.every((replica) => replica.servingCertificate === certificate), 30_000, {
        description: 'both replicas to serve the Secret certificate',
      });
      // Settled: several checks later nobody has rewritten it.
      const { node } = sampleDocs('minimal', namespace);
      for (let i = 0; i < 10; i++) await objects.create(node as KubernetesObject, undefined, 'All');
      await new Promise((resolve) => setTimeout(resolve, 3000));
      expect((await readSecret()).metadata?.resourceVersion).to.equal(secret.metadata?.resourceVersion);
      const live = await restClient().get<KubernetesObject & { webhooks: { clientConfig: { caBundle: string } }[] }>(
        ADMISSION_KINDS.webhookConfiguration,
        { namespace: '', name: configurationName },
      );
      expect(live?.webhooks[0]?.clientConfig.caBundle).to.equal(secret.data!['ca.crt']);
    } finally {
      await Promise.all(replicas.map((replica) => replica.stop()));
    }
  });
});

describe('admission webhook served by the `oracle-node operator` process', function () {
  this.timeout(180_000);

  it('--webhook-port and --webhook-url: refuses, warns from its cache, counts reviews, is ready, stops on SIGTERM', async () => {
    const namespace = await createNamespace('admission-cli');
    const operatorNamespace = await createNamespace('admission-cli-operator');
    const configurationName = uniqueName('oracle-node-webhook-cli');
    const [port, metricsPort, healthPort] = [await freePort(), await freePort(), await freePort()];
    const stderr: string[] = [];
    const child = spawnOracleNode(
      [
        'operator',
        '--kubeconfig',
        kubeconfigPath,
        `--namespaces=${namespace}`,
        '--leader-elect=false',
        `--metrics-port=${metricsPort}`,
        `--health-port=${healthPort}`,
        `--webhook-port=${port}`,
        `--webhook-url=https://127.0.0.1:${port}`,
        `--webhook-configuration=${configurationName}`,
        '--coordinator-fence=false',
      ],
      { env: { ...process.env, POD_NAMESPACE: operatorNamespace }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    child.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await untilEnforced(namespace);
      // Ready (caches synced and the webhook serving).
      await waitFor(
        async () => (await fetch(`http://127.0.0.1:${healthPort}/readyz`).catch(() => undefined))?.status === 200,
        60_000,
        { description: '/readyz' },
      );
      const { node } = sampleDocs('minimal', namespace);
      const warned = await waitFor(
        async () => {
          const result = await kubectl(dump(node), 'apply', '--dry-run=server', '-f', '-');
          return result.stderr.includes('does not exist yet') ? result : undefined;
        },
        60_000,
        { description: 'the missing-Secret warning (once the operator cache has synced)' },
      );
      expect(warned.code).to.equal(0);
      expect(warned.stderr).to.contain(
        `Warning: spec.secretRef.name: Secret ${namespace}/minimal-secrets does not exist yet`,
      );
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      expect(metrics).to.match(
        /oracle_node_webhook_admission_duration_seconds_count\{operation="CREATE",allowed="false"\} [1-9]/,
      );
      child.kill('SIGTERM');
      expect(await exited, stderr.join('').slice(-1000)).to.equal(0);
    } finally {
      child.kill('SIGKILL');
      await deleteConfiguration(configurationName);
      await deleteNamespace(namespace);
      await deleteNamespace(operatorNamespace);
    }
  });
});
