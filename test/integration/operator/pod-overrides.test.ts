// Pod overrides as a platform team uses them, on the real apiserver: a namespace that enforces the restricted Pod
// Security Standard, a PriorityClass, a Secrets Store CSI volume, Vault Agent annotations, an IRSA role on the
// ServiceAccount, environment from a ConfigMap. Every field reaches the pods (the gateway's, run by kwok, and the
// coordinator's and worker's templates, admitted by a dry-run create), the pods are admitted, and the CRD refuses
// what would break the pod contract.
import {
  BatchV1Api,
  CoreV1Api,
  type KubeConfig,
  type V1CronJob,
  type V1Deployment,
  type V1Job,
  type V1Pod,
  type V1PodTemplateSpec,
  type V1ServiceAccount,
  type V1Volume,
} from '@kubernetes/client-node';
import { expect } from 'chai';
import { ENV } from '../../../src/contract/pods.js';
import {
  buildShardInputConfigMap,
  buildWindowWorkerJob,
  buildWorkerJob,
  type WorkerTemplate,
  workerJobName,
} from '../../../src/contract/shard.js';
import { kubeWorkerJobApi } from '../../../src/node/kubernetes/job-executor.js';
import type { OracleNode } from '../../../src/operator/resource.js';
import { installCoordinatorFence, removeCoordinatorFence } from '../admission/support.js';
import {
  api,
  apply,
  describeError,
  expectStatus,
  kubeClient,
  serviceAccountKubeConfig,
  uniqueName,
  useNamespace,
  waitFor,
} from '../support/cluster.js';
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

  // Every documented override that reaches the workers, as the coordinator's own identity creates their Jobs: the
  // fence (a cluster-wide ValidatingAdmissionPolicy) must admit exactly what the node's spec gives them, or every
  // shard of every cycle fails while the override is set.
  describe('worker Jobs with every worker override, created with the coordinator’s token through the fence', () => {
    const csi: V1Volume = {
      name: 'secrets-store',
      csi: { driver: 'secrets-store.csi.k8s.io', readOnly: true, volumeAttributes: { secretProviderClass: 'oracle' } },
    };
    const workerVolumes: V1Volume[] = [
      { name: 'ca-bundle', configMap: { name: 'ca-bundle', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
      { name: 'models', persistentVolumeClaim: { claimName: 'models', readOnly: true } },
      {
        // 1024Mi: the API server writes the Job's quantity back as 1Gi.
        name: 'scratch-claim',
        ephemeral: {
          volumeClaimTemplate: {
            spec: {
              accessModes: ['ReadWriteOnce'],
              storageClassName: 'fast',
              resources: { requests: { storage: '1024Mi' } },
            },
          },
        },
      },
      {
        name: 'identity',
        projected: {
          sources: [
            { serviceAccountToken: { audience: 'vault', path: 'token' } },
            { configMap: { name: 'vault-settings' } },
            { downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
          ],
        },
      },
      { name: 'pod-info', downwardAPI: { items: [{ path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] } },
      { name: 'cache', emptyDir: { medium: 'Memory', sizeLimit: '16Mi' } },
    ];
    let template: WorkerTemplate;
    let coordinator: KubeConfig;
    let counter = 0;
    const jobName = () => workerJobName(template.namePrefix, `o${counter++}`);
    const perPollJob = () =>
      buildWorkerJob(template, { name: jobName(), shardCount: 1, concurrency: 1, chainId: '31337' });
    const windowJob = () =>
      buildWindowWorkerJob(template, {
        name: jobName(),
        parallelism: 1,
        activeDeadlineSeconds: 40,
        coordinatorUrl: 'http://127.0.0.1:8090',
        credential: 'c'.repeat(43),
      });

    before(async () => {
      const { node, secret } = sampleDocs('minimal', ns());
      node.metadata.name = 'workers';
      node.spec.envFrom = [{ configMapRef: { name: 'proxy-settings', optional: true } }];
      node.spec.volumes = [csi];
      node.spec.volumeMounts = [{ name: 'secrets-store', mountPath: '/mnt/secrets-store', readOnly: true }];
      node.spec.telemetry = {
        otlpEndpoint: 'http://otel-collector.observability:4318',
        headersSecretRef: { name: 'otel-credentials', key: 'headers' },
      };
      node.spec.coordinator = { volumes: [{ name: 'coordinator-only', configMap: { name: 'coordinator-settings' } }] };
      node.spec.worker = {
        envFrom: [{ configMapRef: { name: 'worker-settings' }, prefix: 'WORKER_' }],
        volumes: workerVolumes,
        volumeMounts: workerVolumes.map((volume) => ({ name: volume.name, mountPath: `/mnt/${volume.name}` })),
      };
      await apply(secret);
      await apply(node);
      const cronJob = await waitFor(
        () => read<V1CronJob>('batch/v1', 'CronJob', ns(), 'workers-dev-coordinator'),
        90_000,
        { description: 'the coordinator CronJob of node workers' },
      );
      const env = cronJob.spec!.jobTemplate.spec!.template.spec!.containers[0]!.env!;
      template = JSON.parse(env.find((v) => v.name === ENV.workerTemplate)!.value!) as WorkerTemplate;
      coordinator = await serviceAccountKubeConfig(ns(), 'workers-dev-coordinator');
      await installCoordinatorFence(coordinator, ns(), template);
    });
    after(async () => {
      await removeCoordinatorFence();
    });

    it('carries them all, and the coordinator creates, fills and releases its per-poll Job and its window Job', async () => {
      const pod = template.template.spec!;
      expect(pod.volumes!.map((v) => v.name)).to.include.members([
        'secrets-store',
        ...workerVolumes.map((v) => v.name),
      ]);
      expect(pod.volumes!.map((v) => v.name)).to.not.include('coordinator-only');
      const engine = pod.containers[0]!;
      expect(engine.envFrom).to.deep.equal([
        { configMapRef: { name: 'proxy-settings', optional: true } },
        { configMapRef: { name: 'worker-settings' }, prefix: 'WORKER_' },
      ]);
      expect(engine.env!.find((v) => v.name === 'OTEL_EXPORTER_OTLP_HEADERS')?.valueFrom?.secretKeyRef).to.deep.equal({
        name: 'otel-credentials',
        key: 'headers',
      });

      const jobs = kubeWorkerJobApi(kubeClient(coordinator), ns());
      const perPoll = await jobs.createJob(perPollJob());
      await jobs.createConfigMap(
        buildShardInputConfigMap(perPoll, [{ chainId: '31337', sponsorWallet: '0x1', requests: [] }] as never[]),
      );
      await jobs.unsuspendJob(perPoll.metadata!.name!);
      const window = await jobs.createJob(windowJob());
      // Their pods pass the namespace's restricted Pod Security Standard (a refused pod is never created).
      for (const job of [perPoll, window])
        await waitFor(
          async () => ((await jobs.listJobPods(job.metadata!.name!)).length > 0 ? true : undefined),
          60_000,
          { description: `a pod of ${job.metadata!.name}, admitted in the restricted namespace` },
        );
    });

    // What the node gives its workers, changed in one place: the fence refuses each by the volume or envFrom rule.
    const volume = (job: V1Job, name: string) => job.spec!.template.spec!.volumes!.find((v) => v.name === name)!;
    const variants: [string, (job: V1Job) => void, string][] = [
      [
        'the CSI volume of another SecretProviderClass (another application’s secrets)',
        (job) => (volume(job, 'secrets-store').csi!.volumeAttributes = { secretProviderClass: 'other-app' }),
        "the node's worker volumes",
      ],
      [
        'a volume the node gives only its coordinator',
        (job) =>
          job.spec!.template.spec!.volumes!.push({
            name: 'coordinator-only',
            configMap: { name: 'coordinator-settings' },
          }),
        "the node's worker volumes",
      ],
      [
        'another ConfigMap under an override’s name',
        (job) => (volume(job, 'ca-bundle').configMap!.name = 'other'),
        "the node's worker volumes",
      ],
      [
        'another claim',
        (job) => (volume(job, 'models').persistentVolumeClaim!.claimName = 'other'),
        "the node's worker volumes",
      ],
      [
        'an ephemeral claim of another storage class',
        (job) => (volume(job, 'scratch-claim').ephemeral!.volumeClaimTemplate!.spec.storageClassName = 'other'),
        "the node's worker volumes",
      ],
      [
        'a token for the Kubernetes API (no audience)',
        (job) => delete volume(job, 'identity').projected!.sources![0]!.serviceAccountToken!.audience,
        "the node's worker volumes",
      ],
      [
        'environment from another ConfigMap',
        (job) => job.spec!.template.spec!.containers[0]!.envFrom!.push({ configMapRef: { name: 'other' } }),
        'take envFrom only from the ConfigMaps',
      ],
      [
        'another key of the telemetry Secret',
        (job) =>
          job.spec!.template.spec!.containers[0]!.env!.push({
            name: 'X',
            valueFrom: { secretKeyRef: { name: 'otel-credentials', key: 'other' } },
          }),
        "read only their node's Secret",
      ],
    ];
    for (const [what, edit, rule] of variants) {
      for (const [kind, build] of [
        ['per-poll', perPollJob],
        ['window', windowJob],
      ] as const) {
        it(`refuses a ${kind} Job with ${what}`, async () => {
          const job = build();
          edit(job);
          let message = '';
          try {
            await coordinator.makeApiClient(BatchV1Api).createNamespacedJob({ namespace: ns(), body: job });
          } catch (error) {
            message = describeError(error);
          }
          expect(message).to.contain("ValidatingAdmissionPolicy 'oracle-node-coordinator-jobs'");
          expect(message).to.contain(rule);
          expect(message).to.not.contain('evaluated to error');
        });
      }
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
    // The same paths written another way, and their parents: refused as written, never compared after the kernel.
    ...[
      '/etc//oracle-node',
      '//tmp',
      '/var/run/oracle-node//secrets',
      '/var/run/oracle-node/./shards',
      '/etc/../etc/oracle-node',
      '/tmp/',
      'tmp',
      '/etc/oracle-node/.',
    ].map((mountPath): [string, (node: OracleNode) => void, RegExp] => [
      `the mount path ${mountPath}`,
      (node) => {
        node.spec.worker = { volumeMounts: [{ name: 'extra', mountPath }] };
      },
      /mountPath is an absolute path without empty, dot or dot-dot segments/,
    ]),
    ...['/etc', '/var/run/oracle-node', '/var/run', '/var'].map(
      (mountPath): [string, (node: OracleNode) => void, RegExp] => [
        `a mount over ${mountPath}, a parent of the engine's paths`,
        (node) => {
          node.spec.volumeMounts = [{ name: 'extra', mountPath }];
        },
        /their parents .* are the engine's own/,
      ],
    ),
    [
      'a hostPath volume (restricted Pod Security)',
      (node) => {
        node.spec.worker = { volumes: [{ name: 'host', hostPath: { path: '/' } }] };
      },
      /hostPath volumes .* are refused: every pod of the node passes the restricted Pod Security Standard/,
    ],
    [
      'an nfs volume (restricted Pod Security; declared, so never pruned into an emptyDir)',
      (node) => {
        node.spec.volumes = [{ name: 'share', nfs: { server: 'nfs.example', path: '/' } }];
      },
      /are refused: every pod of the node passes the restricted Pod Security Standard/,
    ],
    [
      "a secret volume of the node's whole Secret",
      (node) => {
        node.spec.volumes = [{ name: 'all-keys', secret: { secretName: node.spec.secretRef!.name } }];
      },
      /secret volumes are refused: a Secret reaches the node's pods only through spec.secretRef/,
    ],
    [
      'a secret volume of any other Secret',
      (node) => {
        node.spec.gateway = { volumes: [{ name: 'tls', secret: { secretName: 'gateway-tls' } }] };
      },
      /secret volumes are refused/,
    ],
    [
      "a projected volume of the node's Secret",
      (node) => {
        node.spec.worker = {
          volumes: [{ name: 'keys', projected: { sources: [{ secret: { name: node.spec.secretRef!.name } }] } }],
        };
      },
      /projected secret sources are refused/,
    ],
    [
      'a projected token for the Kubernetes API (no audience)',
      (node) => {
        node.spec.worker = {
          volumes: [{ name: 'token', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } }],
        };
      },
      /audience/,
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
