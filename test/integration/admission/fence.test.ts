// The coordinator fence on the real control plane: with the ValidatingAdmissionPolicies applied and an OracleNode
// reconciled by the operator (its ServiceAccounts, Roles and fence parameters), the coordinator's own identity (a
// token of its ServiceAccount) can create the worker Jobs and shard inputs the executor makes, and nothing else:
// other images, ServiceAccounts, host paths, privilege, wider parallelism, other Secrets, unlabelled ConfigMaps.
import {
  BatchV1Api,
  CoreV1Api,
  type KubeConfig,
  type V1ConfigMap,
  type V1CronJob,
  type V1Job,
  type V1Volume,
} from '@kubernetes/client-node';
import { expect } from 'chai';
import type { Config } from '../../../src/config/index.js';
import {
  buildShardInputConfigMap,
  buildWorkerJob,
  WINDOW_COORDINATOR_URL_ENV,
  WINDOW_CREDENTIAL_ENV,
  type WorkerTemplate,
  workerJobName,
} from '../../../src/contract/shard.js';
import { WorkDeadline } from '../../../src/node/deadline.js';
import { kubeWorkerJobApi } from '../../../src/node/kubernetes/job-executor.js';
import { KubernetesWindowWorkers, MAX_WINDOW_WORKERS } from '../../../src/node/kubernetes/window-job.js';
import { silentLogger } from '../../../src/node/logger.js';
import { installCrd, read, sampleDocs, startOperator } from '../operator/support.js';
import {
  api,
  apply,
  describeError,
  kubeClient,
  serviceAccountKubeConfig,
  statusOf,
  useNamespace,
  waitFor,
} from '../support/cluster.js';
import { installCoordinatorFence, removeCoordinatorFence } from './support.js';

const shards = [
  { chainId: '31337', sponsorWallet: '0x1', requests: [] },
  { chainId: '31337', sponsorWallet: '0x2', requests: [] },
] as never[];

async function refusal(promise: Promise<unknown>): Promise<{ status?: number; message: string }> {
  try {
    await promise;
  } catch (error) {
    return { status: statusOf(error), message: describeError(error) };
  }
  throw new Error('expected a refusal, the request was admitted');
}

describe('coordinator fence (ValidatingAdmissionPolicy)', function () {
  this.timeout(180_000);
  const ns = useNamespace('fence');
  let operator: ReturnType<typeof startOperator>;
  let template: WorkerTemplate;
  let coordinator: KubeConfig;
  let counter = 0;
  const jobName = () => workerJobName(template.namePrefix, `t${counter++}`);

  before(async () => {
    await installCrd();
    operator = startOperator(ns.name);
    const { node, secret } = sampleDocs('minimal', ns.name);
    await apply(secret);
    await apply(node);
    const cronJob = await waitFor(
      () => read<V1CronJob>('batch/v1', 'CronJob', ns.name, 'minimal-dev-coordinator'),
      90_000,
      { description: 'the coordinator CronJob' },
    );
    const env = cronJob.spec!.jobTemplate.spec!.template.spec!.containers[0]!.env!;
    template = JSON.parse(env.find((e) => e.name === 'ORACLE_NODE_WORKER_TEMPLATE')!.value!) as WorkerTemplate;
    coordinator = await serviceAccountKubeConfig(ns.name, 'minimal-dev-coordinator');
    await installCoordinatorFence(coordinator, ns.name, template);
  });

  after(async () => {
    await operator?.stop();
    await removeCoordinatorFence();
  });

  it('the coordinator still creates its worker Jobs and their shard inputs, and releases them', async () => {
    const jobs = kubeWorkerJobApi(kubeClient(coordinator), ns.name);
    // As KubernetesJobExecutor makes it: with the instant its deadline ends, for the workers' budget waits.
    const job = buildWorkerJob(template, {
      name: jobName(),
      shardCount: 2,
      concurrency: 10,
      chainId: '31337',
      deadlineAtEpochMs: Date.now() + template.activeDeadlineSeconds * 1000,
    });
    const created = await jobs.createJob(job);
    await jobs.createConfigMap(buildShardInputConfigMap(created, shards));
    await jobs.unsuspendJob(created.metadata!.name!);
    const live = await jobs.readJob(created.metadata!.name!);
    expect(live?.spec?.suspend).to.equal(false);
  });

  /** A worker's keys as files (spec.secretRef.as Files), as builders/common.ts secretsVolume makes them. */
  const keysVolume = (secret: string): V1Volume => ({
    name: 'secrets',
    projected: {
      defaultMode: 0o400,
      sources: [{ secret: { name: secret, items: [{ key: 'PROVIDER_URL', path: 'PROVIDER_URL' }] } }],
    },
  });

  it("admits a worker Job with its keys as a projected volume of named keys of the node's Secret", async () => {
    const job = buildWorkerJob(template, { name: jobName(), shardCount: 1, concurrency: 1, chainId: '31337' });
    job.spec!.template.spec!.volumes!.push(keysVolume('minimal-secrets'));
    await coordinator.makeApiClient(BatchV1Api).createNamespacedJob({ namespace: ns.name, body: job });
  });

  it("the coordinator creates its window's worker Job once per window: its URL and credential, no token, the fence's bounds", async () => {
    const { node } = sampleDocs('minimal', ns.name);
    const config = { chains: (node.spec as { config: { chains: unknown[] } }).config.chains } as unknown as Config;
    let perPollRuns = 0;
    const workers = new KubernetesWindowWorkers({
      api: kubeWorkerJobApi(kubeClient(coordinator), ns.name),
      template,
      podIp: '127.0.0.1',
      port: 0,
      perPoll: {
        async run(given) {
          perPollRuns++;
          return given.map(() => ({ ok: false, error: 'per-poll' }));
        },
      },
    });
    const deadline = WorkDeadline.after(40_000);
    try {
      await workers.start({ config, deadline, logger: silentLogger });
      expect(workers.job, 'created under the coordinator identity, admitted by the fence').to.be.a('string');
      // Polls before its pods ask for work go to per-poll Jobs; none creates another window Job.
      for (let poll = 0; poll < 3; poll++) await workers.run(shards, { concurrency: 1 });
      expect(perPollRuns).to.equal(3);
      const jobs = await api(BatchV1Api).listNamespacedJob({ namespace: ns.name });
      const windowJobs = jobs.items.filter((job) =>
        job.spec?.template.spec?.containers.some((c) => c.args?.includes('--coordinator')),
      );
      expect(windowJobs.map((job) => job.metadata!.name)).to.deep.equal([workers.job]);
      const job = windowJobs[0]!;
      const maxConcurrency = Math.max(...(config.chains as { maxConcurrency: number }[]).map((c) => c.maxConcurrency));
      expect(job.spec!.parallelism).to.equal(Math.min(maxConcurrency, MAX_WINDOW_WORKERS));
      expect(job.spec!.activeDeadlineSeconds).to.be.within(1, 40);
      const pod = job.spec!.template.spec!;
      expect(pod.automountServiceAccountToken, 'no Kubernetes token').to.equal(false);
      expect(pod.serviceAccountName).to.equal('minimal-dev-worker');
      const container = pod.containers[0]!;
      expect(container.args).to.deep.equal(['worker', '--coordinator', '-c', '/etc/oracle-node/config.json']);
      const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value]));
      expect(env[WINDOW_COORDINATOR_URL_ENV]).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(env[WINDOW_CREDENTIAL_ENV]).to.match(/^[A-Za-z0-9_-]{43}$/);
      // Nothing of the node's key or providers: only the node's Secret keys of the worker's scope, if any.
      for (const variable of container.env ?? [])
        expect(variable.valueFrom?.secretKeyRef?.key ?? '', variable.name).to.not.match(/MNEMONIC|PROVIDER/);
    } finally {
      await workers.stop();
      deadline.stop('done');
    }
  });

  // Each shape breaks one rule, and is refused by that rule (its message), not by an evaluation error.
  const variants: [string, (job: V1Job) => void, string][] = [
    [
      'another image',
      (job) => (job.spec!.template.spec!.containers[0]!.image = 'attacker/miner:latest'),
      "only its node's worker image",
    ],
    [
      'another ServiceAccount',
      (job) => (job.spec!.template.spec!.serviceAccountName = 'default'),
      "its node's worker ServiceAccount",
    ],
    [
      'a host path',
      (job) => {
        job.spec!.template.spec!.volumes!.push({ name: 'host', hostPath: { path: '/' } });
      },
      "mount only the node's config",
    ],
    [
      'a volume of another Secret',
      (job) => {
        job.spec!.template.spec!.volumes!.push(keysVolume('other'));
      },
      "named keys of the node's Secret",
    ],
    [
      "a volume of the node's whole Secret (a source without items projects every key)",
      (job) => {
        const volume = keysVolume('minimal-secrets');
        delete volume.projected!.sources![0]!.secret!.items;
        job.spec!.template.spec!.volumes!.push(volume);
      },
      "named keys of the node's Secret",
    ],
    [
      'another Secret',
      (job) =>
        (job.spec!.template.spec!.containers[0]!.env = [
          { name: 'X', valueFrom: { secretKeyRef: { name: 'other', key: 'X' } } },
        ]),
      "read only their node's Secret",
    ],
    [
      "the node's whole Secret as environment",
      (job) => (job.spec!.template.spec!.containers[0]!.envFrom = [{ secretRef: { name: 'minimal-secrets' } }]),
      'take envFrom only from the ConfigMaps',
    ],
    [
      'privilege',
      (job) =>
        (job.spec!.template.spec!.containers[0]!.securityContext = {
          privileged: true,
          allowPrivilegeEscalation: true,
        }),
      'are unprivileged',
    ],
    ['more parallelism than maxConcurrency', (job) => (job.spec!.parallelism = 11), "the node's maxConcurrency"],
    [
      'resources beyond the template',
      (job) => (job.spec!.template.spec!.containers[0]!.resources = { limits: { cpu: '64' } }),
      "at most the worker template's resources",
    ],
    [
      'another node',
      (job) => (job.metadata!.labels!['oracle-node.io/name'] = 'someone-else'),
      "carry its node's worker labels",
    ],
  ];
  for (const [what, edit, rule] of variants) {
    it(`refuses a Job with ${what}`, async () => {
      const job = buildWorkerJob(template, { name: jobName(), shardCount: 2, concurrency: 10, chainId: '31337' });
      edit(job);
      const refused = await refusal(
        coordinator.makeApiClient(BatchV1Api).createNamespacedJob({ namespace: ns.name, body: job }),
      );
      expect(refused.message).to.contain("ValidatingAdmissionPolicy 'oracle-node-coordinator-jobs'");
      expect(refused.message).to.contain(rule);
      expect(refused.message).to.not.contain('evaluated to error');
    });
  }

  it('refuses ConfigMaps that are not its worker Job’s shard input (unlabelled, another node’s, not owned by the Job)', async () => {
    const core = coordinator.makeApiClient(CoreV1Api);
    const created = await kubeWorkerJobApi(kubeClient(coordinator), ns.name).createJob(
      buildWorkerJob(template, { name: jobName(), shardCount: 1, concurrency: 1, chainId: '31337' }),
    );
    const input = buildShardInputConfigMap(created, shards);
    const unlabelled: V1ConfigMap = { ...input, metadata: { ...input.metadata, labels: {} } };
    const foreign: V1ConfigMap = {
      ...input,
      metadata: { ...input.metadata, labels: { ...input.metadata!.labels, 'oracle-node.io/name': 'someone-else' } },
    };
    const unowned: V1ConfigMap = { ...input, metadata: { ...input.metadata, ownerReferences: [] } };
    for (const [body, rule] of [
      [unlabelled, "labelled as its worker Job's shard inputs"],
      [foreign, "labelled as its worker Job's shard inputs"],
      [unowned, 'owned by their worker Job'],
    ] as const) {
      const refused = await refusal(core.createNamespacedConfigMap({ namespace: ns.name, body }));
      expect(refused.message).to.contain("ValidatingAdmissionPolicy 'oracle-node-coordinator-configmaps'");
      expect(refused.message).to.contain(rule);
    }
  });

  it('RBAC refuses everything else (Pods, Secrets, CronJobs)', async () => {
    const core = coordinator.makeApiClient(CoreV1Api);
    const pod = { metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } };
    expect((await refusal(core.createNamespacedPod({ namespace: ns.name, body: pod }))).status).to.equal(403);
    const secret = { metadata: { name: 's' }, stringData: { a: 'b' } };
    expect((await refusal(core.createNamespacedSecret({ namespace: ns.name, body: secret }))).status).to.equal(403);
    const cronJob = {
      metadata: { name: 'c' },
      spec: { schedule: '* * * * *', jobTemplate: { spec: { template: pod } } },
    };
    expect(
      (
        await refusal(
          coordinator.makeApiClient(BatchV1Api).createNamespacedCronJob({ namespace: ns.name, body: cronJob as never }),
        )
      ).status,
    ).to.equal(403);
  });

  it('other identities are not fenced', async () => {
    const job = buildWorkerJob(template, { name: jobName(), shardCount: 1, concurrency: 1, chainId: '31337' });
    job.spec!.template.spec!.containers[0]!.image = 'busybox:latest';
    await api(BatchV1Api).createNamespacedJob({ namespace: ns.name, body: job });
  });
});
