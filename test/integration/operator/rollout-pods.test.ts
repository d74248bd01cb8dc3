// A stage rollout and an old coordinator Job past its deadline whose pod is still there (issue 34, item 5): the Job
// controller marks the Job FailureTarget at once and adds Failed only when the pod is gone; until then the pod may
// still be sending, so the new stage's coordinator stays suspended. The pod is held terminating by a finalizer of the
// test (kwok never runs it: it has no Node to go to), as a pod stuck Pending at its deadline would be. And an old
// window that sends under the node's coordinator Lease (issue 36): the new coordinator is released while it runs.
import {
  BatchV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1Job,
  type V1Pod,
} from '@kubernetes/client-node';
import { expect } from 'chai';
import { api, apply, waitFor } from '../support/cluster.js';
import { condition, read, readNode, useOperator } from './support.js';

const HOLD = 'oracle-node-operator.test/hold';

describe('stage rollout and an old coordinator pod past its deadline (integration)', function () {
  this.timeout(180_000);
  const suite = useOperator('onode-rollout');
  const ns = () => suite.namespace;
  const { cronJob } = suite;
  const podsOf = async (job: string): Promise<V1Pod[]> =>
    (await api(CoreV1Api).listNamespacedPod({ namespace: ns(), labelSelector: `job-name=${job}` })).items;
  /** Edits the live node's stage, as a user would, by applying its spec with the new stage. */
  const rollTo = (stage: string) =>
    suite.editNode('minimal', (desired) => {
      (desired.spec.config.nodeSettings as { stage: string }).stage = stage;
    });

  it('does not release the new coordinator while a FailureTarget Job of the old stage still has its pod', async () => {
    await suite.applySample('minimal');
    await suite.readyNode('minimal');
    // An old-stage coordinator Job whose deadline passes while its pod is still there.
    const name = 'minimal-dev-coordinator-late';
    await apply<V1Job>({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name,
        namespace: ns(),
        labels: {
          'app.kubernetes.io/managed-by': 'oracle-node-operator',
          'oracle-node.io/name': 'minimal',
          'oracle-node.io/stage': 'dev',
          'app.kubernetes.io/component': 'coordinator',
        },
      },
      spec: {
        activeDeadlineSeconds: 1,
        backoffLimit: 0,
        template: {
          metadata: { finalizers: [HOLD] },
          spec: {
            restartPolicy: 'Never',
            nodeSelector: { 'oracle-node-operator.test/nowhere': 'true' },
            containers: [{ name: 'coordinator', image: 'oracle-node:0.1.0' }],
          },
        },
      },
    });
    await waitFor(
      async () => {
        const job = await read<V1Job>('batch/v1', 'Job', ns(), name);
        const target = job?.status?.conditions?.some((c) => c.type === 'FailureTarget' && c.status === 'True');
        return target && (job?.status?.terminating ?? 0) > 0 ? job : undefined;
      },
      60_000,
      { description: 'the Job marked FailureTarget with its pod terminating', intervalMs: 200 },
    );

    await rollTo('next');
    const held = await waitFor(
      async () => {
        const current = await readNode(ns(), 'minimal');
        return condition(current, 'Progressing')?.message.includes(name) ? current : undefined;
      },
      60_000,
      { description: 'the rollout waiting for the old Job', intervalMs: 200 },
    );
    expect(held.status).to.include({ stage: 'next', previousStage: 'dev' });
    expect((await cronJob('minimal-next-coordinator'))!.spec!.suspend).to.equal(true);
    expect(await podsOf(name)).to.have.length(1);

    // The pod goes: the Job controller adds Failed, and the rollout goes on.
    const [pod] = await podsOf(name);
    await api(CoreV1Api).patchNamespacedPod(
      {
        name: pod!.metadata!.name!,
        namespace: ns(),
        body: { metadata: { finalizers: (pod!.metadata!.finalizers ?? []).filter((f) => f !== HOLD) } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await waitFor(
      async () => ((await cronJob('minimal-next-coordinator'))?.spec?.suspend === false ? true : undefined),
      90_000,
      { description: 'the new coordinator released', intervalMs: 300 },
    );
    expect(await podsOf(name)).to.have.length(0);
    // The release and the old stage's removal come from one pass, in that order: a read between them still sees the
    // old CronJob (suspended), so its deletion is waited for.
    expect((await cronJob('minimal-dev-coordinator'))?.spec?.suspend ?? true).to.equal(true);
    await waitFor(async () => ((await cronJob('minimal-dev-coordinator')) === undefined ? true : undefined), 60_000, {
      description: 'the old stage removed',
      intervalMs: 200,
    });
  });

  it("releases the new coordinator while an old window that sends under the node's Lease still runs, and removes the old stage after it", async () => {
    // Continues from the test above: the node is at stage `next`. An old-stage window (the arguments of the operator's
    // CronJob: `--handover-lease minimal-coordinator`) still running, held active by being suspended.
    const windowJob = 'minimal-next-coordinator-window';
    const args = (await cronJob('minimal-next-coordinator'))!.spec!.jobTemplate.spec!.template.spec!.containers[0]!
      .args!;
    expect(args.slice(-2)).to.deep.equal(['--handover-lease', 'minimal-coordinator']);
    await apply<V1Job>({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name: windowJob,
        namespace: ns(),
        labels: {
          'app.kubernetes.io/managed-by': 'oracle-node-operator',
          'oracle-node.io/name': 'minimal',
          'oracle-node.io/stage': 'next',
          'app.kubernetes.io/component': 'coordinator',
        },
      },
      spec: {
        suspend: true,
        template: {
          spec: { restartPolicy: 'Never', containers: [{ name: 'coordinator', image: 'oracle-node:0.1.0', args }] },
        },
      },
    });
    await rollTo('third');
    // Released while the old window runs: its next run waits for the Lease, so polls go on through the rollout.
    await waitFor(
      async () => ((await cronJob('minimal-third-coordinator'))?.spec?.suspend === false ? true : undefined),
      60_000,
      { description: 'the new coordinator released', intervalMs: 200 },
    );
    expect((await cronJob('minimal-next-coordinator'))!.spec!.suspend).to.equal(true);
    const during = await readNode(ns(), 'minimal');
    expect(condition(during, 'Progressing')?.message).to.include(windowJob);
    expect(await read<V1Job>('batch/v1', 'Job', ns(), windowJob)).to.not.equal(undefined);

    // The old window ends (kwok runs its pod to completion): the old stage goes.
    await api(BatchV1Api).patchNamespacedJob(
      { name: windowJob, namespace: ns(), body: { spec: { suspend: false } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await waitFor(async () => ((await cronJob('minimal-next-coordinator')) === undefined ? true : undefined), 90_000, {
      description: 'the old stage removed',
      intervalMs: 300,
    });
    expect((await cronJob('minimal-third-coordinator'))!.spec!.suspend).to.equal(false);
  });
});
