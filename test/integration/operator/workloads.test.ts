// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are ${NAME} secret references, not templates
// What the children of an OracleNode hold, read back from the real apiserver as a platform review would: each pod
// (and pod template) gets exactly the keys of the Secret its part of the config references, never the whole Secret;
// the gateway and the workers run under their own ServiceAccounts without a token (and the workers without a Role),
// the gateway spread across nodes and zones.
import {
  CoreV1Api,
  type V1Container,
  type V1CronJob,
  type V1Deployment,
  type V1PodSpec,
  type V1ServiceAccount,
} from '@kubernetes/client-node';
import { expect } from 'chai';
import { ENV } from '../../../src/contract/pods.js';
import type { WorkerTemplate } from '../../../src/contract/shard.js';
import { API_VERSION, KIND, type OracleNode } from '../../../src/operator/resource.js';
import { api, apply, useNamespace, waitFor } from '../support/cluster.js';
import { condition, installCrd, type RunningOperator, read, readNode, sampleDocs, startOperator } from './support.js';

/** What each workload of the full sample uses (all gateways on, one OIS for rrp, http and signed data). */
const EXPECTED = {
  coordinator: [
    'HEARTBEAT_API_KEY',
    'HEARTBEAT_URL',
    'NODE_WALLET_MNEMONIC',
    'PROVIDER_URL',
    'SEPOLIA_PROVIDER_URL_A',
    'SEPOLIA_PROVIDER_URL_B',
  ],
  // The signed-data and OEV gateways sign with the node key alone (the operator's own Secret): no mnemonic, no
  // provider, no heartbeat.
  gateway: ['CURRENCY_API_KEY'],
  // The worker only calls its OIS's API: no mnemonic, no provider (the coordinator signs and sends), no heartbeat.
  worker: ['CURRENCY_API_KEY'],
};

/**
 * The Secret's keys a pod spec can read, by any route (env, envFrom, volumes); fails on a route that gives all. The
 * only other Secret a pod may read is the node key the operator derives for a signing gateway.
 */
function secretKeys(pod: V1PodSpec, secretName: string): string[] {
  const keys: string[] = [];
  const containers: V1Container[] = [...pod.containers, ...(pod.initContainers ?? [])];
  for (const container of containers) {
    expect(container.envFrom ?? [], `${container.name}: envFrom`).to.deep.equal([]);
    for (const variable of container.env ?? []) {
      const ref = variable.valueFrom?.secretKeyRef;
      if (!ref) continue;
      if (ref.name === 'full-signing-key') {
        expect([variable.name, ref.key]).to.deep.equal([ENV.signingKey, ENV.signingKey]);
        continue;
      }
      expect(ref.name).to.equal(secretName);
      keys.push(ref.key);
    }
  }
  for (const volume of pod.volumes ?? []) {
    expect(volume.secret, `volume ${volume.name}`).to.equal(undefined);
    expect(volume.projected, `volume ${volume.name}`).to.equal(undefined);
  }
  return keys.sort();
}

describe('OracleNode children: least privilege and failure domains (integration)', function () {
  this.timeout(180_000);
  const namespace = useNamespace('onode-workloads');
  let operator: RunningOperator;
  before(async () => {
    await installCrd();
    operator = startOperator(namespace.name);
  });
  after(async () => {
    await operator?.stop();
  });
  const ns = () => namespace.name;

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

  const coordinatorPod = async () =>
    (await read<V1CronJob>('batch/v1', 'CronJob', ns(), 'full-prod-a-coordinator'))!.spec!.jobTemplate.spec!.template
      .spec!;
  const workerPod = async () => {
    const env = (await coordinatorPod()).containers[0]!.env!;
    const template = JSON.parse(env.find((variable) => variable.name === ENV.workerTemplate)!.value!) as WorkerTemplate;
    return template.template.spec!;
  };
  const gatewayPods = async () =>
    (
      await api(CoreV1Api).listNamespacedPod({
        namespace: ns(),
        labelSelector: 'oracle-node.io/name=full,app.kubernetes.io/component=gateway',
      })
    ).items;

  it('every workload holds exactly the keys its part of the config uses: templates and the running gateway pods', async () => {
    const { node, secret } = sampleDocs('full-multi-chain', ns());
    await apply(secret);
    await apply(node);
    await readyNode('full');
    expect(secretKeys(await coordinatorPod(), 'full-secrets'), 'coordinator').to.deep.equal(EXPECTED.coordinator);
    expect(secretKeys(await workerPod(), 'full-secrets'), 'worker').to.deep.equal(EXPECTED.worker);
    // The worker calls no Kubernetes API: its own ServiceAccount, no token, no Role or RoleBinding.
    const worker = await workerPod();
    expect(worker.serviceAccountName).to.equal('full-prod-a-worker');
    expect(worker.automountServiceAccountToken).to.equal(false);
    expect(
      (await read<V1ServiceAccount>('v1', 'ServiceAccount', ns(), 'full-prod-a-worker'))?.automountServiceAccountToken,
    ).to.equal(false);
    expect(await read('rbac.authorization.k8s.io/v1', 'Role', ns(), 'full-prod-a-worker')).to.equal(undefined);
    expect(await read('rbac.authorization.k8s.io/v1', 'RoleBinding', ns(), 'full-prod-a-worker')).to.equal(undefined);
    expect(await read('rbac.authorization.k8s.io/v1', 'Role', ns(), 'full-prod-a-coordinator')).not.to.equal(undefined);
    const deployment = (await read<V1Deployment>('apps/v1', 'Deployment', ns(), 'full-prod-a-gateway'))!;
    expect(secretKeys(deployment.spec!.template.spec!, 'full-secrets'), 'gateway').to.deep.equal(EXPECTED.gateway);
    // The pods the ReplicaSet made (kwok runs them), as the kubelet would start them.
    const pods = await waitFor(async () => {
      const found = await gatewayPods();
      return found.length === 2 ? found : undefined;
    }, 60_000);
    for (const pod of pods) {
      expect(secretKeys(pod.spec!, 'full-secrets'), pod.metadata!.name!).to.deep.equal(EXPECTED.gateway);
      // Its own identity, no token: no projected service-account volume was injected.
      expect(pod.spec!.serviceAccountName).to.equal('full-prod-a-gateway');
      expect(pod.spec!.automountServiceAccountToken).to.equal(false);
      expect((pod.spec!.volumes ?? []).map((volume) => volume.name)).to.deep.equal(['config', 'tmp']);
    }
    const spread = deployment.spec!.template.spec!.topologySpreadConstraints!;
    expect(spread.map((constraint) => [constraint.topologyKey, constraint.whenUnsatisfiable])).to.deep.equal([
      ['kubernetes.io/hostname', 'ScheduleAnyway'],
      ['topology.kubernetes.io/zone', 'ScheduleAnyway'],
    ]);
    const account = await read<V1ServiceAccount>('v1', 'ServiceAccount', ns(), 'full-prod-a-gateway');
    expect(account?.automountServiceAccountToken).to.equal(false);
    expect(await read('policy/v1', 'PodDisruptionBudget', ns(), 'full-prod-a-gateway')).not.to.equal(undefined);
  });

  it('a key added to the config reaches the workload that uses it on the next reconcile, and leaves when removed', async () => {
    const { secret } = sampleDocs('full-multi-chain', ns());
    (secret as { stringData: Record<string, string> }).stringData['CORS_ORIGIN'] = 'https://app.example';
    await apply(secret);
    const edit = async (corsOrigins: string[]) => {
      const live = (await readNode(ns(), 'full'))!;
      const spec = structuredClone(live.spec);
      const settings = spec.config['nodeSettings'] as Record<string, { corsOrigins?: string[] }>;
      settings['httpGateway']!.corsOrigins = corsOrigins;
      await apply({
        apiVersion: API_VERSION,
        kind: KIND,
        metadata: { name: 'full', namespace: ns() },
        spec,
      } as OracleNode);
    };
    const gatewayKeys = async () =>
      secretKeys(
        (await read<V1Deployment>('apps/v1', 'Deployment', ns(), 'full-prod-a-gateway'))!.spec!.template.spec!,
        'full-secrets',
      );
    await edit(['${CORS_ORIGIN}']);
    await waitFor(async () => (await gatewayKeys()).includes('CORS_ORIGIN'), 60_000, {
      description: 'the gateway to receive CORS_ORIGIN',
    });
    expect(await gatewayKeys()).to.deep.equal([...EXPECTED.gateway, 'CORS_ORIGIN'].sort());
    expect(secretKeys(await coordinatorPod(), 'full-secrets')).to.deep.equal(EXPECTED.coordinator);
    expect(secretKeys(await workerPod(), 'full-secrets')).to.deep.equal(EXPECTED.worker);
    await edit([]);
    await waitFor(async () => !(await gatewayKeys()).includes('CORS_ORIGIN'), 60_000, {
      description: 'CORS_ORIGIN to leave the gateway',
    });
    expect(await gatewayKeys()).to.deep.equal(EXPECTED.gateway);
  });
});
