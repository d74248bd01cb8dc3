// Where the keys of an OracleNode land, read back from the real apiserver: the gateway (the pods that face the
// internet) holds the node key the operator derives into its own Secret, never the mnemonic, and follows a rotated
// mnemonic; with spec.secretRef.as Files every pod gets its keys as a read-only volume of exactly its keys, and a
// namespace that enforces the restricted Pod Security Standard admits them.
import { CoreV1Api, type V1CronJob, type V1Deployment, type V1PodSpec, type V1Secret } from '@kubernetes/client-node';
import { expect } from 'chai';
import { secretScopes } from '../../../src/config/index.js';
import { ENV, SECRETS_DIR } from '../../../src/contract/pods.js';
import { ANNOTATIONS, API_VERSION, KIND, type OracleNode } from '../../../src/operator/resource.js';
import { deriveNodeAddress, walletFromPrivateKey } from '../../../src/protocol/wallet.js';
import { api, apply, expectStatus, objects, useNamespace, waitFor } from '../support/cluster.js';
import { condition, installCrd, type RunningOperator, read, readNode, sampleDocs, startOperator } from './support.js';

const MNEMONIC = 'test test test test test test test test test test test junk';
const ROTATED_MNEMONIC = 'legal winner thank year wave sausage worth useful legal winner thank yellow';
const MNEMONIC_KEY = 'NODE_WALLET_MNEMONIC';
const SIGNING_SECRET = 'full-signing-key';

/** Every Secret key a pod spec reads, as `secret/key`, by any route (variables, envFrom, volumes, projections). */
function secretReferences(pod: V1PodSpec): string[] {
  const refs: string[] = [];
  for (const container of pod.containers) {
    for (const from of container.envFrom ?? []) if (from.secretRef) refs.push(`${from.secretRef.name}/*`);
    for (const variable of container.env ?? []) {
      const ref = variable.valueFrom?.secretKeyRef;
      if (ref) refs.push(`${ref.name}/${ref.key}`);
    }
  }
  for (const volume of pod.volumes ?? []) {
    if (volume.secret)
      refs.push(...(volume.secret.items ?? [{ key: '*' }]).map((item) => `${volume.secret!.secretName}/${item.key}`));
    for (const source of volume.projected?.sources ?? [])
      if (source.secret)
        refs.push(...(source.secret.items ?? [{ key: '*' }]).map((item) => `${source.secret!.name}/${item.key}`));
  }
  return refs.sort();
}

describe('OracleNode keys: the gateway holds the node key, never the mnemonic; keys as files (integration)', function () {
  this.timeout(240_000);
  const namespace = useNamespace('onode-gateway-keys');
  let operator: RunningOperator;
  const ns = () => namespace.name;

  before(async () => {
    await installCrd();
    // Pods that break the restricted Pod Security Standard are refused here (by the ReplicaSet's and Job's creates).
    await apply({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: ns(),
        labels: {
          'pod-security.kubernetes.io/enforce': 'restricted',
          'pod-security.kubernetes.io/enforce-version': 'latest',
        },
      },
    });
    operator = startOperator(ns());
  });
  after(async () => {
    await operator?.stop();
  });

  const readyNode = (name: string) =>
    waitFor(
      async () => {
        const node = await readNode(ns(), name);
        return condition(node, 'Ready')?.status === 'True' &&
          node?.status?.observedGeneration === node?.metadata.generation
          ? node
          : undefined;
      },
      120_000,
      { description: `OracleNode ${name} to be Ready`, intervalMs: 500 },
    );
  /** The gateway Deployment of the stage the node serves now. */
  const gatewayDeployment = async () => {
    const stage = (await readNode(ns(), 'full'))?.status?.stage ?? 'prod-a';
    return (await read<V1Deployment>('apps/v1', 'Deployment', ns(), `full-${stage}-gateway`))!;
  };
  const coordinatorPod = async () =>
    (await read<V1CronJob>('batch/v1', 'CronJob', ns(), 'full-prod-a-coordinator'))!.spec!.jobTemplate.spec!.template
      .spec!;
  const gatewayPods = async () =>
    (
      await api(CoreV1Api).listNamespacedPod({
        namespace: ns(),
        labelSelector: 'oracle-node.io/name=full,app.kubernetes.io/component=gateway',
      })
    ).items.filter((pod) => !pod.metadata?.deletionTimestamp);
  /** The address of the node key in the operator's Secret, or undefined while it is absent. */
  const derivedAddress = async () => {
    const secret = await read<V1Secret>('v1', 'Secret', ns(), SIGNING_SECRET);
    const data = secret?.data?.[ENV.signingKey];
    return data ? walletFromPrivateKey(Buffer.from(data, 'base64').toString('utf8'))?.address : undefined;
  };
  const secretHash = (deployment: V1Deployment) =>
    deployment.spec!.template.metadata!.annotations![ANNOTATIONS.secretHash];

  it('the gateway reads the derived node key and no mnemonic; a mnemonic rotated with a new stage rewrites the key and rolls the gateway', async () => {
    const { node, secret } = sampleDocs('full-multi-chain', ns());
    await apply(secret);
    await apply(node);
    await readyNode('full');

    const deployment = await gatewayDeployment();
    const refs = secretReferences(deployment.spec!.template.spec!);
    expect(refs).to.deep.equal(['full-secrets/CURRENCY_API_KEY', `${SIGNING_SECRET}/${ENV.signingKey}`]);
    expect(JSON.stringify(deployment.spec!.template)).not.to.include(MNEMONIC_KEY);
    expect(secretReferences(await coordinatorPod())).to.include(`full-secrets/${MNEMONIC_KEY}`);

    // The derived Secret: the node address of the mnemonic, labelled and owned like every child.
    const derived = (await read<V1Secret>('v1', 'Secret', ns(), SIGNING_SECRET))!;
    expect(await derivedAddress()).to.equal(deriveNodeAddress(MNEMONIC));
    expect((await readNode(ns(), 'full'))!.status!.nodeAddress).to.equal(deriveNodeAddress(MNEMONIC));
    expect(derived.metadata!.labels).to.include({
      'app.kubernetes.io/managed-by': 'oracle-node-operator',
      'app.kubernetes.io/component': 'signing-key',
      'oracle-node.io/name': 'full',
    });
    const live = (await readNode(ns(), 'full'))!;
    expect(derived.metadata!.ownerReferences).to.deep.equal([
      {
        apiVersion: API_VERSION,
        kind: KIND,
        name: 'full',
        uid: live.metadata.uid!,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    // The pods the ReplicaSet made read the same.
    const pods = await waitFor(async () => {
      const found = await gatewayPods();
      return found.length === 2 ? found : undefined;
    }, 60_000);
    for (const pod of pods) expect(secretReferences(pod.spec!), pod.metadata!.name!).to.deep.equal(refs);

    // Rotation: the user's Secret gets another mnemonic, which is another node, so the node a new stage (in place
    // the operator holds it: names.test.ts).
    const before = secretHash(deployment);
    const rotated = structuredClone(secret) as typeof secret & { stringData: Record<string, string> };
    rotated.stringData[MNEMONIC_KEY] = ROTATED_MNEMONIC;
    await apply(rotated);
    const restaged = structuredClone(node);
    (restaged.spec.config.nodeSettings as { stage: string }).stage = 'prod-b';
    await apply(restaged);
    await waitFor(async () => (await derivedAddress()) === deriveNodeAddress(ROTATED_MNEMONIC), 60_000, {
      description: 'the derived Secret to hold the rotated node key',
    });
    const rolled = await waitFor(
      async () => {
        const current = await gatewayDeployment();
        return secretHash(current) !== before ? current : undefined;
      },
      60_000,
      { description: 'the gateway pod template to change' },
    );
    expect(secretReferences(rolled.spec!.template.spec!)).to.deep.equal(refs);
    // The new revision's pods come up (kwok runs them) with the new template.
    await waitFor(
      async () => {
        const found = await gatewayPods();
        return found.some((pod) => pod.metadata!.annotations?.[ANNOTATIONS.secretHash] === secretHash(rolled));
      },
      60_000,
      { description: 'a gateway pod of the rolled template' },
    );
  });

  it('no signing gateway, no derived key: the Secret is deleted, and with the OracleNode', async () => {
    const live = (await readNode(ns(), 'full'))!;
    const spec = structuredClone(live.spec);
    const settings = spec.config['nodeSettings'] as Record<string, unknown>;
    settings['httpSignedDataGateway'] = { enabled: false };
    settings['oevGateway'] = { enabled: false };
    await apply({
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name: 'full', namespace: ns() },
      spec,
    } as OracleNode);
    await waitFor(async () => (await read('v1', 'Secret', ns(), SIGNING_SECRET)) === undefined, 60_000, {
      description: 'the derived Secret to be deleted once no gateway signs',
    });
    expect(secretReferences((await gatewayDeployment()).spec!.template.spec!)).to.deep.equal([
      'full-secrets/CURRENCY_API_KEY',
    ]);
    // Signing again brings it back; deleting the node takes it away (owner reference, garbage collector).
    await apply({
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name: 'full', namespace: ns() },
      spec: live.spec,
    } as OracleNode);
    await waitFor(async () => (await derivedAddress()) === deriveNodeAddress(ROTATED_MNEMONIC), 60_000, {
      description: 'the derived Secret to come back',
    });
    await objects.delete({ apiVersion: API_VERSION, kind: KIND, metadata: { name: 'full', namespace: ns() } });
    await waitFor(async () => (await read('v1', 'Secret', ns(), SIGNING_SECRET)) === undefined, 90_000, {
      description: 'the derived Secret to go with its OracleNode',
    });
  });

  it('spec.secretRef.as Files: each pod a 0400 volume of exactly its keys, no secret variable, admitted as restricted', async () => {
    const { node, secret } = sampleDocs('full-multi-chain', ns());
    node.spec.secretRef = { name: 'full-secrets', as: 'Files' };
    await apply(secret);
    await apply(node);
    await readyNode('full');
    const scopes = secretScopes(node.spec.config);
    const deployment = await gatewayDeployment();
    const cronPod = await coordinatorPod();
    const workerPod = (
      JSON.parse(cronPod.containers[0]!.env!.find((v) => v.name === ENV.workerTemplate)!.value!) as {
        template: { spec: V1PodSpec };
      }
    ).template.spec;
    const pods = { gateway: deployment.spec!.template.spec!, coordinator: cronPod, worker: workerPod };
    for (const [workload, pod] of Object.entries(pods) as [keyof typeof pods, V1PodSpec][]) {
      const container = pod.containers[0]!;
      expect(
        container.env!.filter((v) => v.valueFrom?.secretKeyRef),
        workload,
      ).to.deep.equal([]);
      const volume = pod.volumes!.find((v) => v.name === 'secrets')!;
      expect(volume.projected!.defaultMode, workload).to.equal(0o400);
      expect(secretReferences(pod), workload).to.deep.equal(
        [
          ...scopes[workload].map((key) => `full-secrets/${key}`),
          ...(workload === 'gateway' ? [`${SIGNING_SECRET}/${ENV.signingKey}`] : []),
        ].sort(),
      );
      expect(container.volumeMounts).to.deep.include({ name: 'secrets', mountPath: SECRETS_DIR, readOnly: true });
    }
    // The namespace does enforce: a pod without the restricted settings is refused.
    await expectStatus(
      api(CoreV1Api).createNamespacedPod({
        namespace: ns(),
        body: { metadata: { name: 'unrestricted' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } },
      }),
      403,
    );
    // And it admitted the gateway's pods, with the volume.
    const running = await waitFor(async () => {
      const found = (await gatewayPods()).filter((pod) => pod.spec!.volumes?.some((v) => v.name === 'secrets'));
      return found.length === 2 ? found : undefined;
    }, 60_000);
    for (const pod of running)
      expect(secretReferences(pod.spec!)).to.deep.equal(secretReferences(deployment.spec!.template.spec!));
  });
});
