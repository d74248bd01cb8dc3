import { BatchV1Api, type V1Job, type V1Pod, type V1PodTemplateSpec, Watch } from '@kubernetes/client-node';
import { expect } from 'chai';
import { api, describeError, jobComplete, kc, useNamespace, waitFor } from '../support/cluster.js';

const podTemplate = (app: string): V1PodTemplateSpec => ({
  metadata: { labels: { app } },
  spec: { restartPolicy: 'Never', containers: [{ name: 'work', image: 'registry.invalid/work:1' }] },
});

// kwok marks pods owned by a Job as Succeeded once they run, so the job and cronjob controllers of the
// real kube-controller-manager drive Jobs to completion.
describe('cluster: CronJob and Job controllers', function () {
  this.timeout(150_000);
  const ns = useNamespace('jobs');
  const batch = api(BatchV1Api);

  it('a CronJob on `* * * * *` creates a Job that completes', async function () {
    // The schedule has minute granularity: the first Job appears at the next full minute.
    this.timeout(150_000);
    await batch.createNamespacedCronJob({
      namespace: ns.name,
      body: {
        metadata: { name: 'cycle' },
        spec: {
          schedule: '* * * * *',
          concurrencyPolicy: 'Forbid',
          jobTemplate: { spec: { backoffLimit: 0, template: podTemplate('cycle') } },
        },
      },
    });
    const job = await waitFor(
      async () => {
        const jobs = (await batch.listNamespacedJob({ namespace: ns.name })).items;
        return jobs.find((j) => j.metadata?.ownerReferences?.some((o) => o.kind === 'CronJob' && o.name === 'cycle'));
      },
      130_000,
      { intervalMs: 1000, description: 'a Job created by CronJob cycle' },
    );
    expect(job.metadata?.name).to.match(/^cycle-\d+$/);
    const owner = job.metadata?.ownerReferences?.[0];
    expect(owner?.controller).to.equal(true);

    const done = await waitFor(
      async () => {
        const j = await batch.readNamespacedJob({ name: job.metadata?.name ?? '', namespace: ns.name });
        return jobComplete(j) ? j : undefined;
      },
      60_000,
      { description: `Job ${job.metadata?.name} Complete` },
    );
    expect(done.status?.succeeded).to.equal(1);
    const cron = await waitFor(
      async () => {
        const c = await batch.readNamespacedCronJob({ name: 'cycle', namespace: ns.name });
        return c.status?.lastSuccessfulTime ? c : undefined;
      },
      60_000,
      { description: 'CronJob cycle lastSuccessfulTime' },
    );
    expect(cron.status?.lastScheduleTime).to.not.equal(undefined);
    // Stop scheduling further Jobs while the namespace is torn down.
    await batch.deleteNamespacedCronJob({ name: 'cycle', namespace: ns.name, propagationPolicy: 'Background' });
  });

  it('an Indexed Job completes every index while never running more pods than `parallelism`', async () => {
    const completions = 6;
    const parallelism = 2;
    // Watch the Job's pods from before it exists: every state change of every pod is seen in order, so
    // counting non-terminal pods after each event reconstructs how many were active at any moment.
    const phases = new Map<string, string>();
    let maxActivePods = 0;
    let maxStatusActive = 0;
    // A watch that ends before the Job is done would leave gaps, so that fails the test too.
    const watchErrors: string[] = [];
    let stopping = false;
    const ended = (what: string) => (err: unknown) => {
      if (!stopping) watchErrors.push(`${what} watch ended early: ${err ? describeError(err) : 'closed'}`);
    };
    const watch = new Watch(kc);
    const podWatch = await watch.watch(
      `/api/v1/namespaces/${ns.name}/pods`,
      { labelSelector: 'batch.kubernetes.io/job-name=indexed' },
      (type: string, pod: V1Pod) => {
        if (type === 'ERROR' || type === 'BOOKMARK') {
          if (type === 'ERROR') watchErrors.push(`pod watch error event: ${JSON.stringify(pod)}`);
          return;
        }
        const name = pod.metadata?.name ?? '?';
        if (type === 'DELETED') phases.delete(name);
        else phases.set(name, pod.metadata?.deletionTimestamp ? 'Terminating' : (pod.status?.phase ?? 'Pending'));
        const active = [...phases.values()].filter((p) => p === 'Pending' || p === 'Running').length;
        maxActivePods = Math.max(maxActivePods, active);
      },
      ended('pod'),
    );
    const jobWatch = await watch.watch(
      `/apis/batch/v1/namespaces/${ns.name}/jobs`,
      { fieldSelector: 'metadata.name=indexed' },
      (type: string, job: V1Job) => {
        if (type === 'ERROR') watchErrors.push(`job watch error event: ${JSON.stringify(job)}`);
        else maxStatusActive = Math.max(maxStatusActive, job.status?.active ?? 0);
      },
      ended('job'),
    );
    try {
      await batch.createNamespacedJob({
        namespace: ns.name,
        body: {
          metadata: { name: 'indexed' },
          spec: {
            completionMode: 'Indexed',
            completions,
            parallelism,
            backoffLimit: 0,
            template: podTemplate('indexed'),
          },
        },
      });
      const job = await waitFor(
        async () => {
          const j = await batch.readNamespacedJob({ name: 'indexed', namespace: ns.name });
          return jobComplete(j) ? j : undefined;
        },
        90_000,
        { description: 'Indexed Job Complete' },
      );
      expect(job.status?.succeeded).to.equal(completions);
      expect(job.status?.failed ?? 0).to.equal(0);
      expect(job.status?.completedIndexes).to.equal(`0-${completions - 1}`);
      // Let the watch deliver the last events before judging what it saw.
      await waitFor(() => [...phases.values()].filter((p) => p === 'Succeeded').length >= completions, 30_000, {
        description: 'the pod watch to see every pod succeed',
      });
    } finally {
      stopping = true;
      podWatch.abort();
      jobWatch.abort();
    }
    expect(watchErrors, 'watch errors').to.deep.equal([]);
    expect(maxActivePods, 'most pods active at once').to.be.within(1, parallelism);
    expect(maxStatusActive, 'most active reported in Job status').to.be.at.most(parallelism);
    expect([...phases.values()].filter((p) => p === 'Succeeded')).to.have.length(completions);
  });
});
