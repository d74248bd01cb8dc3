// Pod overrides as a platform team uses them, on the real apiserver: a namespace that enforces the restricted Pod
// Security Standard, a PriorityClass, a Secrets Store CSI volume, Vault Agent annotations, an IRSA role on the
// ServiceAccount, environment from a ConfigMap. Every field reaches the pods (the gateway's, run by kwok, and the
// coordinator's and worker's templates, admitted by a dry-run create), the pods are admitted, and the CRD refuses
// what would break the pod contract.
import {
  CoreV1Api,
  type V1CronJob,
  type V1Deployment,
  type V1Pod,
  type V1PodTemplateSpec,
  type V1ServiceAccount,
} from '@kubernetes/client-node';
import { expect } from 'chai';
import { ENV } from '../../../src/contract/pods.js';
import { buildWorkerJob, type WorkerTemplate } from '../../../src/contract/shard.js';
import type { OracleNode } from '../../../src/operator/resource.js';
import { api, apply, expectStatus, uniqueName, useNamespace, waitFor } from '../support/cluster.js';
import { condition, installCrd, type RunningOperator, read, readNode, sampleDocs, startOperator } from './support.js';

describe('OracleNode pod overrides on a restricted namespace (integration)', function () {
  this.timeout(180_000);
  const namespace = useNamespace('onode-overrides');
  const priorityClass = uniqueName('oracle-priority');
  let operator: RunningOperator;
  const ns = () => namespace.name;

  before(async () => {
    await installCrd();
    await apply({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: ns(),
        labels: { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/warn': 'restricted' },
      },
    });
    await apply({
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      metadata: { name: priorityClass },
      value: 1000,
    });
    operator = startOperator(ns());
  });
  after(async () => {
    await operator?.stop();
    await api(CoreV1Api)
      .deleteCollectionNamespacedPod({ namespace: ns() })
      .catch(() => undefined);
  });

  const withOverrides = (name: string, edit: (node: OracleNode) => void) => {
    const { node, secret } = sampleDocs('full-multi-chain', ns());
    edit(node);
    node.metadata.name = name;
    return { node, secret };
  };

  it('reaches the gateway pods, which the restricted namespace admits, and the coordinator and worker templates', async () => {
    const { node, secret } = withOverrides('full', (node) => {
      node.spec.inheritedMetadata = { labels: { 'cost-center': 'oracle' } };
      node.spec.serviceAccountTemplate = {
        metadata: { annotations: { 'eks.amazonaws.com/role-arn': 'arn:aws:iam::111122223333:role/oracle' } },
      };
      node.spec.priorityClassName = priorityClass;
      node.spec.imagePullSecrets = [{ name: 'registry-credentials' }];
      node.spec.envFrom = [{ configMapRef: { name: 'proxy-settings', optional: true } }];
      node.spec.gateway = {
        ...node.spec.gateway,
        podMetadata: { annotations: { 'vault.hashicorp.com/agent-inject': 'true' } },
        volumes: [
          {
            name: 'secrets-store',
            csi: {
              driver: 'secrets-store.csi.k8s.io',
              readOnly: true,
              volumeAttributes: { secretProviderClass: 'oracle' },
            },
          },
        ],
        volumeMounts: [{ name: 'secrets-store', mountPath: '/mnt/secrets-store', readOnly: true }],
      };
    });
    await apply(secret);
    await apply(node);
    await waitFor(
      async () => {
        const current = await readNode(ns(), 'full');
        return condition(current, 'Ready')?.status === 'True' ? current : undefined;
      },
      120_000,
      { description: 'OracleNode full to be Ready', intervalMs: 500 },
    );
    // The ReplicaSet's pods were admitted by Pod Security (a refused pod never exists) and carry every override.
    const pods = await waitFor(
      async () => {
        const found = (
          await api(CoreV1Api).listNamespacedPod({
            namespace: ns(),
            labelSelector: 'oracle-node.io/name=full,app.kubernetes.io/component=gateway',
          })
        ).items;
        return found.length > 0 ? found : undefined;
      },
      60_000,
      { description: 'gateway pods admitted in the restricted namespace' },
    );
    for (const pod of pods) {
      expect(pod.metadata!.labels!['cost-center']).to.equal('oracle');
      expect(pod.metadata!.annotations!['vault.hashicorp.com/agent-inject']).to.equal('true');
      expect(pod.spec!.priorityClassName).to.equal(priorityClass);
      expect(pod.spec!.priority).to.equal(1000);
      expect(pod.spec!.imagePullSecrets).to.deep.equal([{ name: 'registry-credentials' }]);
      expect(pod.spec!.volumes!.map((v) => v.name)).to.deep.equal(['config', 'tmp', 'secrets-store']);
      const engine = pod.spec!.containers[0]!;
      expect(engine.volumeMounts!.map((m) => m.mountPath)).to.include('/mnt/secrets-store');
      expect(engine.envFrom).to.deep.equal([{ configMapRef: { name: 'proxy-settings', optional: true } }]);
    }
    const account = await read<V1ServiceAccount>('v1', 'ServiceAccount', ns(), 'full-prod-a-gateway');
    expect(account!.metadata!.annotations!['eks.amazonaws.com/role-arn']).to.equal(
      'arn:aws:iam::111122223333:role/oracle',
    );
    expect(account!.metadata!.labels!['cost-center']).to.equal('oracle');
    const deployment = await read<V1Deployment>('apps/v1', 'Deployment', ns(), 'full-prod-a-gateway');
    expect(deployment!.metadata!.labels!['cost-center']).to.equal('oracle');

    // The coordinator's and the worker's pod templates, created as pods with dry run: Pod Security and the
    // Priority admission plugin judge them exactly as they would the Job controller's pods.
    const cronJob = (await read<V1CronJob>('batch/v1', 'CronJob', ns(), 'full-prod-a-coordinator'))!;
    const coordinator = cronJob.spec!.jobTemplate.spec!.template;
    // The worker's as the coordinator completes it into a Job (its shard input volume added).
    const workerTemplate = JSON.parse(
      coordinator.spec!.containers[0]!.env!.find((v) => v.name === ENV.workerTemplate)!.value!,
    ) as WorkerTemplate;
    const worker = buildWorkerJob(workerTemplate, { name: 'full-1', shardCount: 1, concurrency: 1, chainId: '1' }).spec!
      .template;
    for (const [workload, template] of [
      ['coordinator', coordinator],
      ['worker', worker],
    ] as [string, V1PodTemplateSpec][]) {
      expect(template.metadata!.labels!['cost-center'], workload).to.equal('oracle');
      expect(template.spec!.priorityClassName, workload).to.equal(priorityClass);
      expect(
        template.spec!.volumes!.map((v) => v.name),
        workload,
      ).to.not.include('secrets-store');
      const pod: V1Pod = {
        metadata: { name: uniqueName(workload), labels: template.metadata!.labels! },
        spec: structuredClone(template.spec!),
      };
      const created = await api(CoreV1Api).createNamespacedPod({ namespace: ns(), body: pod, dryRun: 'All' });
      expect(created.spec!.priority, workload).to.equal(1000);
    }
  });

  const refused: [string, (node: OracleNode) => void, RegExp][] = [
    [
      'a label under the operator’s prefix',
      (node) => {
        node.spec.inheritedMetadata = { labels: { 'oracle-node.io/stage': 'other' } };
      },
      /set by the operator/,
    ],
    [
      'an annotation that would replace the config hash',
      (node) => {
        node.spec.gateway = { podMetadata: { annotations: { 'oracle-node.io/config-hash': 'x' } } };
      },
      /set by the operator/,
    ],
    [
      'a volume named like the engine’s config volume',
      (node) => {
        node.spec.volumes = [{ name: 'config', emptyDir: {} }];
      },
      /engine's own/,
    ],
    [
      'a mount over the config directory',
      (node) => {
        node.spec.worker = { volumeMounts: [{ name: 'extra', mountPath: '/etc/oracle-node' }] };
      },
      /engine's own/,
    ],
    [
      'a mount under the shard input',
      (node) => {
        node.spec.volumeMounts = [{ name: 'extra', mountPath: '/var/run/oracle-node/shards/x' }];
      },
      /engine's own/,
    ],
  ];
  for (const [what, edit, message] of refused) {
    it(`the CRD refuses ${what} (422 with the rule's message)`, async () => {
      const { node } = withOverrides(uniqueName('bad'), edit);
      const error = await expectStatus(apply(node), 422);
      expect(JSON.stringify(error.body)).to.match(message);
    });
  }
});
