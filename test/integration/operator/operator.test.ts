// The OracleNode operator against the real test control plane (apiserver, controller-manager with the garbage
// collector and the Job/CronJob/Deployment controllers, scheduler, kwok playing the pods), driven through the real
// runtime manager in this process.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  BatchV1Api,
  type KubernetesObject,
  PatchStrategy,
  setHeaderOptions,
  type V1ConfigMap,
  type V1CronJob,
  type V1Job,
  type V1PodDisruptionBudget,
  type V1Service,
  type V2HorizontalPodAutoscaler,
} from '@kubernetes/client-node';
import { expect } from 'chai';
import { kubeConfigMapStore } from '../../../src/node/kubernetes/config-map-store.js';
import { writeCycleReport } from '../../../src/node/kubernetes/cycle-report.js';
import { ANNOTATIONS, API_VERSION, KIND, type OracleNode } from '../../../src/operator/resource.js';
import {
  api,
  apply,
  expectStatus,
  jobComplete,
  kc,
  kubeClient,
  kubeconfigPath,
  objects,
  sleep,
  waitFor,
} from '../support/cluster.js';
import { condition, freshCompletedCoordinatorJob, read, readNode, sampleDocs, useOperator } from './support.js';

const run = promisify(execFile);
const DEV_ADDRESS = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';

describe('OracleNode operator (integration)', function () {
  this.timeout(180_000);
  const suite = useOperator('onode');
  const ns = () => suite.namespace;
  const { cronJob, deployment, applySample, editNode, readyNode } = suite;
  const configMap = (name: string) => read<V1ConfigMap>('v1', 'ConfigMap', ns(), name);

  it('the apiserver rejects wrong types, enums and stage formats (the CRD schema comes from the config model)', async () => {
    const invalid: [string, (node: OracleNode) => void][] = [
      ['stage format', (node) => ((node.spec.config.nodeSettings as { stage: string }).stage = 'Not_A_Stage')],
      ['enum', (node) => ((node.spec.config.nodeSettings as { logLevel: string }).logLevel = 'LOUD')],
      ['type', (node) => ((node.spec.config.chains as { maxConcurrency: unknown }[])[0]!.maxConcurrency = 'ten')],
    ];
    for (const [what, edit] of invalid) {
      const { node } = sampleDocs('minimal', ns());
      node.metadata.name = 'rejected';
      edit(node);
      const error = await expectStatus(objects.create(node, undefined, 'All'), 422);
      expect(String(error.body), what).to.contain('spec.config');
    }
    const { node } = sampleDocs('minimal', ns());
    node.metadata.name = 'a-name-long-enough-to-overflow-the-cronjob-limit';
    const error = await expectStatus(objects.create(node, undefined, 'All'), 422);
    expect(String(error.body)).to.contain('at most 39 characters');
  });

  it('minimal sample: ConfigMap, RBAC and coordinator CronJob with the expected specs; status Ready', async () => {
    await applySample('minimal');
    const node = await readyNode('minimal');
    expect(node.status).to.include({ nodeAddress: DEV_ADDRESS, stage: 'dev', chains: 1 });
    expect(condition(node, 'ConfigValid')).to.include({ status: 'True' });
    const coordinator = (await cronJob('minimal-dev-coordinator'))!;
    // Windows overlap: the next run waits for the node's coordinator Lease (docs/chain-cycle.md, "The hand-over").
    expect(coordinator.spec).to.include({ schedule: '* * * * *', concurrencyPolicy: 'Allow', suspend: false });
    expect(coordinator.metadata!.ownerReferences![0]).to.include({
      kind: 'OracleNode',
      name: 'minimal',
      controller: true,
    });
    const config = (await configMap('minimal-dev-config'))!;
    expect(JSON.parse(config.data!['config.json']!).nodeSettings.stage).to.equal('dev');
    for (const [apiVersion, kind] of [
      ['v1', 'ServiceAccount'],
      ['rbac.authorization.k8s.io/v1', 'Role'],
      ['rbac.authorization.k8s.io/v1', 'RoleBinding'],
    ] as const)
      expect(await read(apiVersion, kind, ns(), 'minimal-dev-coordinator'), kind).to.not.equal(undefined);
    expect(await deployment('minimal-dev-gateway')).to.equal(undefined);
  });

  it('full sample: gateway Deployment (Ready through kwok), Service, PodDisruptionBudget; multi-chain status', async () => {
    await applySample('full-multi-chain');
    const node = await readyNode('full');
    expect(node.status).to.include({ stage: 'prod-a', chains: 2 });
    expect(node.status!.chainIds).to.deep.equal(['31337', '11155111']);
    expect(Object.keys(node.status!.gatewayUrls!)).to.have.members([
      'httpGateway',
      'httpSignedDataGateway',
      'oevGateway',
    ]);
    const gateway = (await deployment('full-prod-a-gateway'))!;
    expect(gateway.spec!.replicas).to.equal(2);
    expect(gateway.status!.availableReplicas).to.equal(2);
    const service = (await read<V1Service>('v1', 'Service', ns(), 'full-gateway'))!;
    expect(service.spec!.ports![0]).to.include({ port: 8080 });
    const pdb = await read<V1PodDisruptionBudget>('policy/v1', 'PodDisruptionBudget', ns(), 'full-prod-a-gateway');
    expect(pdb!.spec!.maxUnavailable).to.equal(1);
  });

  it('gateways-only sample: a gateway and a coordinator, no chain', async () => {
    await applySample('gateways-only');
    const node = await readyNode('gateways');
    expect(node.status).to.include({ chains: 0 });
    expect(await deployment('gateways-dev-gateway')).to.not.equal(undefined);
    expect(await cronJob('gateways-dev-coordinator')).to.not.equal(undefined);
  });

  it('gateway autoscaling: an owned autoscaling/v2 HPA scales the Deployment, the operator leaves replicas to it, and removing it prunes the HPA', async () => {
    type Hpa = V2HorizontalPodAutoscaler & { metadata: { name: string } };
    const hpa = () => read<Hpa>('autoscaling/v2', 'HorizontalPodAutoscaler', ns(), 'gateways-dev-gateway');
    await editNode('gateways', (node) => {
      node.spec.gateway = { ...node.spec.gateway, autoscaling: { minReplicas: 2, maxReplicas: 4 } };
    });
    const created = await waitFor(hpa, 60_000, { description: 'the gateway HPA' });
    expect(created.metadata!.ownerReferences![0]).to.include({
      kind: 'OracleNode',
      name: 'gateways',
      controller: true,
    });
    expect(created.spec).to.deep.include({
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'gateways-dev-gateway' },
      minReplicas: 2,
      maxReplicas: 4,
    });
    expect(created.spec!.metrics![0]!.resource).to.deep.equal({
      name: 'cpu',
      target: { type: 'Utilization', averageUtilization: 80 },
    });
    // The controller-manager's HPA controller raises the Deployment to minReplicas; the operator must not undo it.
    await waitFor(async () => (await deployment('gateways-dev-gateway'))?.spec?.replicas === 2, 90_000, {
      description: 'the HPA scaling the gateway to 2',
    });
    await readyNode('gateways');
    await sleep(3000);
    expect((await deployment('gateways-dev-gateway'))!.spec!.replicas).to.equal(2);
    expect(await read('policy/v1', 'PodDisruptionBudget', ns(), 'gateways-dev-gateway')).to.not.equal(undefined);

    await editNode('gateways', (node) => {
      const { autoscaling: _removed, ...gateway } = node.spec.gateway ?? {};
      node.spec.gateway = { ...gateway, replicas: 1 };
    });
    await waitFor(async () => (await hpa()) === undefined, 60_000, { description: 'the HPA pruned' });
    await waitFor(async () => (await deployment('gateways-dev-gateway'))?.spec?.replicas === 1, 60_000, {
      description: 'spec.gateway.replicas applied again',
    });
  });

  it('a no-op resync makes zero API writes', async () => {
    await Promise.all(['minimal', 'full', 'gateways'].map(readyNode));
    // The coordinators fire every minute, and kwok and the controllers move pods, ReplicaSets and Deployment status
    // (a scale-down of the test before may still be ending): a window in which any of them moved saw a real change
    // (status lastCycle, the gateway's readiness), so it is measured again rather than counted. Only a write in a
    // window where nothing outside the operator moved fails the test.
    const kinds = [
      ['batch/v1', 'Job'],
      ['v1', 'Pod'],
      ['apps/v1', 'ReplicaSet'],
      ['apps/v1', 'Deployment'],
    ] as const;
    const othersVersion = async () =>
      (
        await Promise.all(
          kinds.map(async ([apiVersion, kind]) =>
            ((await objects.list(apiVersion, kind, ns())) as { items: KubernetesObject[] }).items.map(
              (item) => `${kind}/${item.metadata!.name}@${item.metadata!.resourceVersion}`,
            ),
          ),
        )
      )
        .flat()
        .sort()
        .join(',');
    let writes = -1;
    for (let attempt = 0; attempt < 6 && writes !== 0; attempt++) {
      // Let in-flight events settle, then resync every node by hand.
      await sleep(3000);
      const othersBefore = await othersVersion();
      const writesBefore = await suite.operator.writes();
      const reconcilesBefore = await suite.operator.reconciles();
      for (const name of ['minimal', 'full', 'gateways']) suite.operator.manager.enqueue({ namespace: ns(), name });
      await waitFor(async () => (await suite.operator.reconciles()) >= reconcilesBefore + 3, 30_000, {
        description: 'three resync reconciles',
      });
      writes = (await suite.operator.writes()) - writesBefore;
      if (writes !== 0 && (await othersVersion()) === othersBefore) break;
    }
    expect(writes).to.equal(0);
  });

  it('a config edit rolls the workloads (the pod template hash changes)', async () => {
    const before = (await cronJob('minimal-dev-coordinator'))!;
    const hashOf = (c: V1CronJob) =>
      c.spec!.jobTemplate.spec!.template.metadata!.annotations!['oracle-node.io/config-hash'];
    await editNode('minimal', (node) => {
      (node.spec.config.nodeSettings as { logLevel: string }).logLevel = 'DEBUG';
    });
    const after = await waitFor(
      async () => {
        const live = await cronJob('minimal-dev-coordinator');
        return live && hashOf(live) !== hashOf(before) ? live : undefined;
      },
      60_000,
      { description: 'a new config hash on the CronJob' },
    );
    expect(hashOf(after)).to.not.equal(hashOf(before));
    const config = (await configMap('minimal-dev-config'))!;
    expect(JSON.parse(config.data!['config.json']!).nodeSettings.logLevel).to.equal('DEBUG');
  });

  it('an invalid config: ConfigValid=False with the path, a Warning Event, workloads untouched', async () => {
    const before = (await cronJob('minimal-dev-coordinator'))!;
    const configBefore = (await configMap('minimal-dev-config'))!;
    await editNode('minimal', (node) => {
      (node.spec.config.triggers as { rrp: { endpointName: string }[] }).rrp[0]!.endpointName = 'noSuchEndpoint';
    });
    const node = await waitFor(
      async () => {
        const live = await readNode(ns(), 'minimal');
        return condition(live, 'ConfigValid')?.status === 'False' ? live : undefined;
      },
      60_000,
      { description: 'ConfigValid=False' },
    );
    expect(condition(node, 'ConfigValid')!.message).to.contain('triggers.rrp[0]');
    expect(condition(node, 'Degraded')).to.include({ status: 'True', reason: 'ConfigInvalid' });
    await sleep(2000);
    // The spec is untouched (the generation moves with every spec write; the CronJob controller's own status
    // writes each minute change the resourceVersion, so that cannot be compared).
    const afterEdit = (await cronJob('minimal-dev-coordinator'))!;
    expect(afterEdit.metadata!.generation).to.equal(before.metadata!.generation);
    expect(afterEdit.spec).to.deep.equal(before.spec);
    expect((await configMap('minimal-dev-config'))!.metadata!.resourceVersion).to.equal(
      configBefore.metadata!.resourceVersion,
    );
    const events = await waitFor(
      async () => {
        const list = (await objects.list('v1', 'Event', ns())) as { items: { reason?: string; type?: string }[] };
        return list.items.find((e) => e.reason === 'ValidationFailed' && e.type === 'Warning');
      },
      30_000,
      { description: 'a Warning Event' },
    );
    expect(events).to.not.equal(undefined);
    await editNode('minimal', (node) => {
      (node.spec.config.triggers as { rrp: { endpointName: string }[] }).rrp[0]!.endpointName = 'convertToUSD';
    });
    await readyNode('minimal');
  });

  it('a missing Secret: SecretNotFound, and recovery once the Secret appears', async () => {
    const { node, secret } = sampleDocs('minimal', ns());
    node.metadata.name = 'late';
    node.spec.secretRef = { name: 'late-secrets' };
    await apply(node);
    const waiting = await waitFor(
      async () => {
        const live = await readNode(ns(), 'late');
        return condition(live, 'ConfigValid')?.reason === 'SecretNotFound' ? live : undefined;
      },
      60_000,
      { description: 'SecretNotFound' },
    );
    expect(condition(waiting, 'ConfigValid')!.message).to.contain('late-secrets');
    expect(await cronJob('late-dev-coordinator')).to.equal(undefined);
    secret.metadata!.name = 'late-secrets';
    await apply(secret);
    await readyNode('late');
    expect(await cronJob('late-dev-coordinator')).to.not.equal(undefined);
  });

  it('a rotated Secret rolls the workloads at once: Secrets are watched (metadata only), not polled', async () => {
    const { node, secret } = sampleDocs('minimal', ns());
    node.metadata.name = 'rotating';
    node.spec.secretRef = { name: 'rotating-secrets' };
    // Suspended, so no coordinator Job (an owned child) wakes the node each minute: only the Secret watch can.
    node.spec.coordinator = { ...node.spec.coordinator, suspend: true };
    secret.metadata!.name = 'rotating-secrets';
    await apply(secret);
    await apply(node);
    await readyNode('rotating');
    const hashOf = async () =>
      (await cronJob('rotating-dev-coordinator'))?.spec?.jobTemplate.spec?.template.metadata?.annotations?.[
        ANNOTATIONS.secretHash
      ];
    const before = await hashOf();
    expect(before).to.be.a('string');
    (secret as { stringData: Record<string, string> }).stringData.PROVIDER_URL = 'http://rotated.default.svc:8545';
    await apply(secret);
    // A settled node is otherwise reconciled every 10 minutes: only the Secret watch explains a quick roll.
    await waitFor(async () => (await hashOf()) !== before, 45_000, { description: 'the new secret hash' });
  });

  it('drift is repaired: an edited CronJob is set back, a deleted Service is re-created', async () => {
    const drifted = (await cronJob('full-prod-a-coordinator'))!;
    await apply(
      {
        apiVersion: 'batch/v1',
        kind: 'CronJob',
        metadata: { name: drifted.metadata!.name!, namespace: ns() },
        spec: { schedule: '*/7 * * * *' },
      } as V1CronJob & { metadata: { name: string } },
      'someone-else',
    );
    await objects.delete({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'full-gateway', namespace: ns() },
    });
    await waitFor(async () => (await cronJob('full-prod-a-coordinator'))?.spec?.schedule === '* * * * *', 60_000, {
      description: 'the schedule set back',
    });
    await waitFor(async () => read('v1', 'Service', ns(), 'full-gateway'), 60_000, {
      description: 'the Service re-created',
    });
  });

  it('a stage rollout is blue/green: the new gateway is Ready before the old stage goes; coordinators never overlap', async () => {
    await readyNode('full');
    const overlaps: string[] = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        // One read after the other, the later step of the operator's first: the new CronJob is released after the old
        // is suspended and its Jobs end, the old gateway goes after the new one is available. Read together, the
        // second step could be seen without the first and a correct rollout counted as an overlap.
        const b = await cronJob('full-prod-b-coordinator');
        const a = await cronJob('full-prod-a-coordinator');
        const gatewayA = await deployment('full-prod-a-gateway');
        const gatewayB = await deployment('full-prod-b-gateway');
        if (a && b && a.spec!.suspend !== true && b.spec!.suspend !== true) overlaps.push('both CronJobs unsuspended');
        if (a && b && (a.status?.active?.length ?? 0) > 0 && b.spec!.suspend !== true)
          overlaps.push('new coordinator released while the old had an active Job');
        if (!gatewayA && gatewayB && (gatewayB.status?.availableReplicas ?? 0) < 2)
          overlaps.push('old gateway removed before the new one was available');
        await sleep(100);
      }
    })();
    // A coordinator cycle of the old stage still in flight (suspended, so it stays active until released).
    const blocker = await api(BatchV1Api).createNamespacedJob({
      namespace: ns(),
      body: {
        metadata: {
          name: 'full-prod-a-coordinator-inflight',
          labels: {
            'app.kubernetes.io/managed-by': 'oracle-node-operator',
            'oracle-node.io/name': 'full',
            'oracle-node.io/stage': 'prod-a',
            'app.kubernetes.io/component': 'coordinator',
          },
        },
        spec: {
          suspend: true,
          template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'oracle-node:0.1.0' }] } },
        },
      },
    });
    await editNode('full', (node) => {
      (node.spec.config.nodeSettings as { stage: string }).stage = 'prod-b';
    });
    const held = await waitFor(
      async () => {
        const live = await readNode(ns(), 'full');
        return condition(live, 'Progressing')?.message.includes('full-prod-a-coordinator-inflight') ? live : undefined;
      },
      60_000,
      { description: 'the rollout waiting for the in-flight Job', intervalMs: 200 },
    );
    expect(held.status).to.include({ stage: 'prod-b', previousStage: 'prod-a' });
    expect(condition(held, 'Progressing')).to.include({ status: 'True', reason: 'StageRollout' });
    expect((await cronJob('full-prod-b-coordinator'))!.spec!.suspend).to.equal(true);
    expect((await cronJob('full-prod-a-coordinator'))!.spec!.suspend).to.equal(true);
    expect(await deployment('full-prod-a-gateway')).to.not.equal(undefined);
    // The cycle ends (kwok runs its pod to completion): the rollout goes on.
    await api(BatchV1Api).patchNamespacedJob(
      { name: blocker.metadata!.name!, namespace: ns(), body: { spec: { suspend: false } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const node = await readyNode('full');
    watching = false;
    await watcher;
    expect(overlaps).to.deep.equal([]);
    expect(node.status).to.include({ stage: 'prod-b' });
    expect(node.status!.previousStage).to.equal(undefined);
    expect(await cronJob('full-prod-a-coordinator')).to.equal(undefined);
    expect(await deployment('full-prod-a-gateway')).to.equal(undefined);
    expect((await cronJob('full-prod-b-coordinator'))!.spec!.suspend).to.equal(false);
    expect(await configMap('full-cache')).to.not.equal(undefined);
  });

  it('the coordinator executor, run as a process, creates an Indexed worker Job within maxConcurrency that kwok completes', async () => {
    // minimal: chain 31337 has maxConcurrency 10; 12 shards must run at most 10 at a time.
    const { stdout } = await run(
      process.execPath,
      [
        '--import',
        'tsx',
        fileURLToPath(new URL('./run-executor.ts', import.meta.url)),
        ns(),
        'minimal-dev-coordinator',
        '12',
        '10',
      ],
      { env: { ...process.env, KUBECONFIG: kubeconfigPath }, timeout: 150_000 },
    );
    const { jobs, results } = JSON.parse(stdout.trim().split('\n').pop()!) as { jobs: string[]; results: unknown[] };
    expect(jobs).to.have.length(1);
    expect(results).to.have.length(12);
    const job: V1Job = await api(BatchV1Api).readNamespacedJob({ name: jobs[0]!, namespace: ns() });
    expect(job.spec).to.include({ completionMode: 'Indexed', completions: 12, parallelism: 10 });
    expect(jobComplete(job)).to.equal(true);
    expect(job.metadata!.ownerReferences![0]).to.include({ kind: 'OracleNode', name: 'minimal' });
    const input = (await configMap(jobs[0]!))!;
    expect(Object.keys(input.data!)).to.have.length(12);
  });

  it("status.lastCycle shows the last coordinator Job (run by the CronJob, completed by kwok) and its reported counts; the leader publishes the window's latencies and polls", async function () {
    this.timeout(300_000);
    const job = await freshCompletedCoordinatorJob(ns(), 'minimal');
    // What the coordinator writes at the end of its cycle.
    await writeCycleReport(kubeConfigMapStore(kubeClient(), ns(), 'minimal-cycle'), {
      job: job.metadata!.name!,
      counts: { requests: 3, fulfilled: 2, failed: 1, polls: 44, idlePolls: 40 },
      latencySeconds: { submission: [0.9, 1.4], inclusion: [3, 6] },
      apiCalls: [
        { ois: 'Currency Converter API', endpoint: 'convertToUSD', outcome: '2xx', count: 2 },
        { ois: 'Made Up', endpoint: 'convertToUSD', outcome: '2xx', count: 5 },
      ],
      sponsorFulfilments: [{ chainId: '31337', sponsor: `0x${'5'.repeat(40)}`, outcome: 'fulfilled', count: 2 }],
    });
    const node = await waitFor(
      async () => {
        const live = await readNode(ns(), 'minimal');
        const cycle = live?.status?.lastCycle;
        return cycle?.job === job.metadata!.name && cycle?.counts ? live : undefined;
      },
      120_000,
      { description: 'status.lastCycle with the counts', intervalMs: 500 },
    );
    expect(node.status!.lastCycle).to.include({ outcome: 'Succeeded' });
    expect(node.status!.lastCycle!.counts).to.deep.equal({
      requests: 3,
      fulfilled: 2,
      failed: 1,
      polls: 44,
      idlePolls: 40,
    });
    const series = async (name: string) =>
      ((await suite.operator.manager.registry.getSingleMetric(name)?.get())?.values ?? []).filter(
        (v) => v.labels['namespace'] === ns() && v.labels['name'] === 'minimal',
      );
    const inclusionCount = async () =>
      (await series('oracle_node_request_latency_seconds')).find(
        (v) => (v as { metricName?: string }).metricName?.endsWith('_count') && v.labels['stage'] === 'inclusion',
      )?.value;
    expect(await waitFor(inclusionCount, 30_000, { description: 'the latency histogram' })).to.equal(2);
    expect((await series('oracle_node_window_polls_total'))[0]?.value).to.equal(44);
    expect((await series('oracle_node_window_idle_polls_total'))[0]?.value).to.equal(40);
    // The usage the run reported: calls only under the node's own OIS and endpoint, the sponsor by address.
    expect((await series('oracle_node_api_calls_total')).map((v) => [v.labels, v.value])).to.deep.equal([
      [
        {
          namespace: ns(),
          name: 'minimal',
          ois: 'Currency Converter API',
          endpoint: 'convertToUSD',
          outcome: '2xx',
        },
        2,
      ],
    ]);
    expect((await series('oracle_node_sponsor_fulfilments_total'))[0]).to.deep.include({
      labels: {
        namespace: ns(),
        name: 'minimal',
        chain: '31337',
        sponsor: `0x${'5'.repeat(40)}`,
        outcome: 'fulfilled',
      },
      value: 2,
    });
  });

  it('deleting an OracleNode garbage-collects its children', async () => {
    await objects.delete({ apiVersion: API_VERSION, kind: KIND, metadata: { name: 'gateways', namespace: ns() } });
    await waitFor(
      async () =>
        !(await deployment('gateways-dev-gateway')) &&
        !(await cronJob('gateways-dev-coordinator')) &&
        !(await configMap('gateways-dev-config')),
      120_000,
      { description: 'the children to be garbage-collected' },
    );
    void kc;
  });
});
