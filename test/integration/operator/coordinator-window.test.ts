// The coordinator CronJob of an applied OracleNode, read back from the real apiserver: each run is a window that
// lasts past the next tick and hands over through the node's Lease (issue 36), spec.coordinator.pollInterval sets its
// polls, and 0 turns windows off.
import type { V1CronJob } from '@kubernetes/client-node';
import { expect } from 'chai';
import { API_VERSION, KIND, type OracleNode } from '../../../src/operator/resource.js';
import { apply, useNamespace, waitFor } from '../support/cluster.js';
import { installCrd, type RunningOperator, read, readNode, sampleDocs, startOperator } from './support.js';

describe('OracleNode coordinator window (integration)', function () {
  this.timeout(180_000);
  const namespace = useNamespace('onode-window');
  let operator: RunningOperator;
  before(async () => {
    await installCrd();
    operator = startOperator(namespace.name);
  });
  after(async () => {
    await operator?.stop();
  });
  const ns = () => namespace.name;

  const coordinatorJob = async () =>
    (await read<V1CronJob>('batch/v1', 'CronJob', ns(), 'minimal-dev-coordinator'))?.spec?.jobTemplate.spec;
  const concurrencyPolicy = async () =>
    (await read<V1CronJob>('batch/v1', 'CronJob', ns(), 'minimal-dev-coordinator'))?.spec?.concurrencyPolicy;
  const lease = ['--handover-lease', 'minimal-coordinator'];
  const argsAre = (expected: string[], description: string) =>
    waitFor(
      async () => {
        const args = (await coordinatorJob())?.template.spec?.containers[0]?.args;
        return JSON.stringify(args) === JSON.stringify(expected) ? args : undefined;
      },
      60_000,
      { description, intervalMs: 300 },
    );
  const setCoordinator = async (coordinator: Record<string, unknown>) => {
    const live = (await readNode(ns(), 'minimal'))!;
    await apply({
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name: 'minimal', namespace: ns() },
      spec: { ...live.spec, coordinator: { ...live.spec.coordinator, ...coordinator } },
    } as OracleNode);
  };
  const oneShot = ['coordinator', '-c', '/etc/oracle-node/config.json'];

  it('the CronJob of an applied node runs a 70 s window polling every second that hands over, and editing pollInterval changes it', async () => {
    const { node, secret } = sampleDocs('minimal', ns());
    await apply(secret);
    await apply(node);
    await argsAre(
      [...oneShot, '--window', '70', '--poll-interval', '1', ...lease],
      'the default window on the CronJob',
    );
    expect((await coordinatorJob())?.activeDeadlineSeconds).to.equal(80);
    expect(await concurrencyPolicy()).to.equal('Allow');

    await setCoordinator({ pollInterval: 3 });
    await argsAre([...oneShot, '--window', '70', '--poll-interval', '3', ...lease], 'the 3 s poll interval');

    await setCoordinator({ pollInterval: 0 });
    await argsAre(oneShot, 'windows off: one cycle per tick');
    expect((await coordinatorJob())?.activeDeadlineSeconds).to.equal(55);
    expect(await concurrencyPolicy()).to.equal('Forbid');

    await setCoordinator({ schedule: '*/5 * * * *', pollInterval: 2 });
    await argsAre(
      [...oneShot, '--window', '310', '--poll-interval', '2', ...lease],
      'a window of the 5-minute schedule',
    );
    expect((await coordinatorJob())?.activeDeadlineSeconds).to.equal(320);
  });

  it('the apiserver refuses a poll interval above 30 s or below 0', async () => {
    for (const pollInterval of [31, -1]) {
      let refused: unknown;
      await setCoordinator({ pollInterval }).catch((error: unknown) => {
        refused = error;
      });
      expect(String(refused), `pollInterval ${pollInterval}`).to.match(
        /pollInterval.*should be (less|greater) than or equal to/,
      );
    }
  });
});
