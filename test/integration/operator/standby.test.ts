// A standby in another cluster on the test control plane: the same node (same sample, same Secret) applied in two
// namespaces, each reconciled by its own operator (two clusters, no link between them); one has
// spec.redundancy.standbyDelayBlocks. kwok runs no processes, so the test asserts on what the operators build (the
// coordinator's arguments) and on what they make of a coordinator's cycle report (status.lastCycle, the metrics);
// the engine's side is test/component/node/standby.test.ts.
import type { V1CronJob, V1Job } from '@kubernetes/client-node';
import { expect } from 'chai';
import { kubeConfigMapStore } from '../../../src/node/kubernetes/config-map-store.js';
import { writeCycleReport } from '../../../src/node/kubernetes/cycle-report.js';
import { API_VERSION, KIND, type OracleNode } from '../../../src/operator/resource.js';
import { apply, kubeClient, useNamespace, waitFor } from '../support/cluster.js';
import {
  freshCompletedCoordinatorJob,
  installCrd,
  type RunningOperator,
  read,
  readNode,
  sampleDocs,
  startOperator,
} from './support.js';

const DELAY = 6;
const ONE_SHOT_AND_WINDOW = [
  'coordinator',
  '-c',
  '/etc/oracle-node/config.json',
  '--window',
  '70',
  '--poll-interval',
  '1',
  '--handover-lease',
  'minimal-coordinator',
];

describe('a primary and a standby OracleNode in two namespaces (integration)', function () {
  this.timeout(300_000);
  const primaryNamespace = useNamespace('onode-primary');
  const standbyNamespace = useNamespace('onode-standby');
  const operators: RunningOperator[] = [];
  const sides = () => ({ primary: primaryNamespace.name, standby: standbyNamespace.name });

  before(async () => {
    await installCrd();
    operators.push(startOperator(primaryNamespace.name), startOperator(standbyNamespace.name));
  });
  after(async () => {
    await Promise.all(operators.map((operator) => operator.stop()));
  });

  const args = async (namespace: string) =>
    (await read<V1CronJob>('batch/v1', 'CronJob', namespace, 'minimal-dev-coordinator'))?.spec?.jobTemplate.spec
      ?.template.spec?.containers[0]?.args;
  const argsAre = (namespace: string, expected: string[], description: string) =>
    waitFor(
      async () => {
        const live = await args(namespace);
        return JSON.stringify(live) === JSON.stringify(expected) ? live : undefined;
      },
      60_000,
      { description, intervalMs: 300 },
    );
  const setDelay = async (namespace: string, standbyDelayBlocks: number) => {
    const live = (await readNode(namespace, 'minimal'))!;
    await apply({
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name: 'minimal', namespace },
      spec: { ...live.spec, redundancy: { standbyDelayBlocks } },
    } as OracleNode);
  };
  const gauge = async (operator: RunningOperator, name: string, namespace: string) =>
    ((await operator.manager.registry.getSingleMetric(name)?.get())?.values ?? []).find(
      (v) => v.labels['namespace'] === namespace && v.labels['name'] === 'minimal',
    )?.value;

  it("the standby's coordinator carries --standby-delay-blocks, the primary's not; switchover and failback are one edit on each side", async () => {
    const { primary, standby } = sides();
    for (const namespace of [primary, standby]) {
      const { node, secret } = sampleDocs('minimal', namespace);
      if (namespace === standby) node.spec.redundancy = { standbyDelayBlocks: DELAY };
      await apply(secret);
      await apply(node);
    }
    await argsAre(primary, ONE_SHOT_AND_WINDOW, "the primary's coordinator");
    await argsAre(standby, [...ONE_SHOT_AND_WINDOW, '--standby-delay-blocks', String(DELAY)], "the standby's");

    // Switchover: the old primary becomes the standby first, then the standby the primary.
    await setDelay(primary, DELAY);
    await setDelay(standby, 0);
    await argsAre(
      primary,
      [...ONE_SHOT_AND_WINDOW, '--standby-delay-blocks', String(DELAY)],
      'the old primary a standby',
    );
    await argsAre(standby, ONE_SHOT_AND_WINDOW, 'the old standby the primary');
    // Failback.
    await setDelay(standby, DELAY);
    await setDelay(primary, 0);
    await argsAre(primary, ONE_SHOT_AND_WINDOW, 'the primary back');
    await argsAre(standby, [...ONE_SHOT_AND_WINDOW, '--standby-delay-blocks', String(DELAY)], 'the standby back');
  });

  it('a standby that served shows in status.lastCycle (role, standbyServed) and in oracle_node_standby_serving; the primary does not', async () => {
    const { primary, standby } = sides();
    const [primaryJob, standbyJob] = await Promise.all([
      freshCompletedCoordinatorJob(primary, 'minimal'),
      freshCompletedCoordinatorJob(standby, 'minimal'),
    ]);
    // What each side's coordinator writes at the end of its window: the primary is down, the standby served two.
    await writeCycleReport(kubeConfigMapStore(kubeClient(), primary, 'minimal-cycle'), {
      job: primaryJob.metadata!.name!,
      role: 'primary',
      counts: { discovered: 0, fulfilled: 0, failed: 0 },
    });
    await writeCycleReport(kubeConfigMapStore(kubeClient(), standby, 'minimal-cycle'), {
      job: standbyJob.metadata!.name!,
      role: 'standby',
      counts: { discovered: 2, fulfilled: 1, failed: 1, standbyServed: 2 },
    });
    const lastCycleOf = (namespace: string, job: V1Job) =>
      waitFor(
        async () => {
          const cycle = (await readNode(namespace, 'minimal'))?.status?.lastCycle;
          return cycle?.job === job.metadata!.name && cycle?.counts ? cycle : undefined;
        },
        120_000,
        { description: `status.lastCycle of ${namespace} with the report`, intervalMs: 500 },
      );
    const standbyCycle = await lastCycleOf(standby, standbyJob);
    expect(standbyCycle.role).to.equal('standby');
    expect(standbyCycle.counts?.['standbyServed']).to.equal(2);
    const primaryCycle = await lastCycleOf(primary, primaryJob);
    expect(primaryCycle.role).to.equal('primary');
    const [primaryOperator, standbyOperator] = operators as [RunningOperator, RunningOperator];
    // Each operator publishes what its own side's report says.
    const gaugeIs = (operator: RunningOperator, namespace: string, value: number) =>
      waitFor(
        async () => ((await gauge(operator, 'oracle_node_standby_serving', namespace)) === value ? true : undefined),
        30_000,
        { description: `oracle_node_standby_serving ${value} for ${namespace}` },
      );
    await gaugeIs(standbyOperator, standby, 1);
    expect(await gauge(standbyOperator, 'oracle_node_standby_served_requests_total', standby)).to.equal(2);
    await gaugeIs(primaryOperator, primary, 0);
  });
});
