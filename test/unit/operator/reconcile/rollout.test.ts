import type { V1CronJob } from '@kubernetes/client-node';
import { expect } from 'chai';
import type { Child } from '../../../../src/operator/builders/common.js';
import {
  holdNewCoordinator,
  type OldStageObservation,
  planRollout,
  type RolloutObservation,
  type RolloutPhase,
} from '../../../../src/operator/reconcile/rollout.js';
import { jobActive } from '../../../../src/operator/reconcile/status.js';
import { KINDS } from '../../../../src/operator/resource.js';

const cronJob = (name: string, options: { suspend?: boolean; active?: number } = {}): V1CronJob & Child => ({
  apiVersion: 'batch/v1',
  kind: 'CronJob',
  metadata: { name, namespace: 'default', labels: {} },
  spec: { schedule: '* * * * *', suspend: options.suspend ?? false, jobTemplate: {} },
  status: options.active
    ? { active: Array.from({ length: options.active }, (_, i) => ({ name: `${name}-${i}` })) }
    : {},
});

const oldStage = (stage: string, overrides: Partial<OldStageObservation> = {}): OldStageObservation => ({
  stage,
  cronJobs: [cronJob(`n-${stage}-coordinator`, { suspend: true })],
  runningJobs: [],
  coordinatorLeases: ['n-coordinator'],
  children: [
    { kind: KINDS.configMap, name: `n-${stage}-config` },
    { kind: KINDS.cronJob, name: `n-${stage}-coordinator` },
  ],
  ...overrides,
});

const observed = (overrides: Partial<RolloutObservation> = {}): RolloutObservation => ({
  stage: 'b',
  oldStages: [oldStage('a')],
  gateway: { name: 'n-b-gateway', wanted: true, ready: true, serving: true, service: 'n-gateway' },
  ...overrides,
});

describe('stage rollout planner', () => {
  it('is Settled with nothing to do when the node has no other stage', () => {
    const plan = planRollout(observed({ oldStages: [] }));
    expect(plan).to.deep.equal({ phase: 'Settled', waits: [], actions: [] });
  });

  it('suspends an old coordinator that still schedules cycles, and waits', () => {
    const running = cronJob('n-a-coordinator');
    const plan = planRollout(observed({ oldStages: [oldStage('a', { cronJobs: [running] })] }));
    expect(plan.phase).to.equal('SuspendingOldCoordinators');
    expect(plan.actions).to.deep.equal([{ type: 'SuspendCronJob', cronJob: running }]);
    expect(plan.waits).to.deep.equal(['suspending coordinator n-a-coordinator']);
    expect(plan.message).to.equal('Stage a -> b: suspending coordinator n-a-coordinator');
    expect(plan.previousStage).to.equal('a');
    expect(plan.event).to.deep.equal({
      type: 'Normal',
      reason: 'StageRollout',
      message: 'Rolling out stage b: suspending coordinator n-a-coordinator',
    });
  });

  it('waits for a suspended coordinator whose Jobs are still active, doing nothing', () => {
    const plan = planRollout(
      observed({
        oldStages: [oldStage('a', { cronJobs: [cronJob('n-a-coordinator', { suspend: true, active: 1 })] })],
      }),
    );
    expect(plan.phase).to.equal('DrainingOldJobs');
    expect(plan.actions).to.deep.equal([]);
    expect(plan.waits).to.deep.equal(['waiting for the active Jobs of n-a-coordinator']);
  });

  it('waits for the old stage Jobs still running (coordinator and workers), naming them', () => {
    const plan = planRollout(
      observed({ oldStages: [oldStage('a', { runningJobs: ['n-a-coordinator-1', 'n-a-w-1'] })] }),
    );
    expect(plan.phase).to.equal('DrainingOldJobs');
    expect(plan.actions).to.deep.equal([]);
    expect(plan.waits).to.deep.equal(['waiting for 2 Job(s) of stage a to finish (n-a-coordinator-1, n-a-w-1)']);
  });

  it('waits for the new gateway to be Ready once the old stage is drained', () => {
    const plan = planRollout(
      observed({ gateway: { name: 'n-b-gateway', wanted: true, ready: false, serving: true, service: 'n-gateway' } }),
    );
    expect(plan.phase).to.equal('WaitingForGateway');
    expect(plan.actions).to.deep.equal([]);
    expect(plan.message).to.equal('Stage a -> b: waiting for gateway n-b-gateway to be Ready');
  });

  it("waits for the node's gateway Service to select the new stage before removing the old one", () => {
    const gateway = { name: 'n-b-gateway', wanted: true, ready: true, serving: false, service: 'n-gateway' };
    const plan = planRollout(observed({ gateway }));
    expect(plan.phase).to.equal('WaitingForGateway');
    expect(plan.actions).to.deep.equal([]);
    expect(plan.message).to.equal('Stage a -> b: switching Service n-gateway to gateway n-b-gateway');
  });

  it('does not wait for a gateway the spec does not ask for', () => {
    const plan = planRollout(
      observed({ gateway: { name: 'n-b-gateway', wanted: false, ready: false, serving: true, service: 'n-gateway' } }),
    );
    expect(plan.phase).to.equal('RemovingOldStage');
  });

  it('removes every old stage child the node controls once nothing is left to wait for', () => {
    const plan = planRollout(observed());
    expect(plan.phase).to.equal('RemovingOldStage');
    expect(plan.waits).to.deep.equal([]);
    expect(plan.actions).to.deep.equal([
      { type: 'Delete', kind: KINDS.configMap, name: 'n-a-config' },
      { type: 'Delete', kind: KINDS.cronJob, name: 'n-a-coordinator' },
    ]);
    expect(plan.message).to.equal('Stage a -> b: removing the old stage');
    expect(plan.previousStage).to.equal('a');
    expect(plan.event).to.deep.equal({ type: 'Normal', reason: 'StageRolledOut', message: 'Stage b replaced a' });
  });

  it('names the earliest step not done as the phase, and every wait in the message, over several old stages', () => {
    const cases: { oldStages: OldStageObservation[]; gatewayReady: boolean; phase: RolloutPhase }[] = [
      {
        oldStages: [oldStage('a', { runningJobs: ['j'] }), oldStage('c', { cronJobs: [cronJob('n-c-coordinator')] })],
        gatewayReady: false,
        phase: 'SuspendingOldCoordinators',
      },
      {
        oldStages: [oldStage('a'), oldStage('c', { runningJobs: ['j'] })],
        gatewayReady: false,
        phase: 'DrainingOldJobs',
      },
      { oldStages: [oldStage('a'), oldStage('c')], gatewayReady: false, phase: 'WaitingForGateway' },
      { oldStages: [oldStage('a'), oldStage('c')], gatewayReady: true, phase: 'RemovingOldStage' },
    ];
    for (const { oldStages, gatewayReady, phase } of cases) {
      const plan = planRollout(
        observed({
          oldStages,
          gateway: { name: 'n-b-gateway', wanted: true, ready: gatewayReady, serving: true, service: 'n-gateway' },
        }),
      );
      expect(plan.phase).to.equal(phase);
      expect(plan.previousStage).to.equal('a,c');
      for (const wait of plan.waits) expect(plan.message).to.contain(wait);
    }
    const first = planRollout(
      observed({
        oldStages: cases[0]!.oldStages,
        gateway: { name: 'g', wanted: true, ready: false, serving: true, service: 'n-gateway' },
      }),
    );
    expect(first.waits).to.deep.equal([
      'waiting for 1 Job(s) of stage a to finish (j)',
      'suspending coordinator n-c-coordinator',
      'waiting for gateway g to be Ready',
    ]);
  });

  it('never deletes the old stage while it waits, so two coordinators never run together', () => {
    const waiting = [
      oldStage('a', { cronJobs: [cronJob('n-a-coordinator')] }),
      oldStage('a', { cronJobs: [cronJob('n-a-coordinator', { suspend: true, active: 2 })] }),
      oldStage('a', { runningJobs: ['j'] }),
    ];
    for (const stage of waiting) {
      const plan = planRollout(observed({ oldStages: [stage] }));
      expect(plan.actions.filter((a) => a.type === 'Delete')).to.deep.equal([]);
    }
    const gatewayPending = planRollout(
      observed({ gateway: { name: 'g', wanted: true, ready: false, serving: true, service: 'n-gateway' } }),
    );
    expect(gatewayPending.actions).to.deep.equal([]);
  });

  it('an old Job runs until its terminal condition and its pods are gone: FailureTarget alone is not finished', () => {
    const job = (conditions: string[], pods: { active?: number; terminating?: number } = {}) =>
      jobActive({ status: { ...pods, conditions: conditions.map((type) => ({ type, status: 'True' })) } });
    expect(job([])).to.equal(true);
    // The deadline passed; the Job controller is still ending the pod, which may still be sending.
    expect(job(['FailureTarget'], { terminating: 1 })).to.equal(true);
    expect(job(['FailureTarget'])).to.equal(true);
    expect(job(['SuccessCriteriaMet'])).to.equal(true);
    expect(job(['FailureTarget', 'Failed'], { terminating: 1 })).to.equal(true);
    expect(job(['FailureTarget', 'Failed'])).to.equal(false);
    expect(job(['SuccessCriteriaMet', 'Complete'])).to.equal(false);
  });

  it('holds the new coordinator unless every old one is suspended and sends under the same Lease', () => {
    expect(holdNewCoordinator([], undefined), 'no rollout').to.equal(false);
    expect(holdNewCoordinator([oldStage('a')], 'n-coordinator'), 'the same Lease, suspended').to.equal(false);
    expect(holdNewCoordinator([oldStage('a')], undefined), 'the new stage has no Lease').to.equal(true);
    const scheduling = oldStage('a', { cronJobs: [cronJob('n-a-coordinator')] });
    expect(holdNewCoordinator([scheduling], 'n-coordinator'), 'an old CronJob not yet suspended').to.equal(true);
    const withoutLease = oldStage('a', { coordinatorLeases: ['n-coordinator', undefined] });
    expect(holdNewCoordinator([withoutLease], 'n-coordinator'), 'an old run without the Lease').to.equal(true);
    const otherLease = oldStage('a', { coordinatorLeases: ['other-coordinator'] });
    expect(holdNewCoordinator([otherLease], 'n-coordinator'), 'another Lease').to.equal(true);
    expect(holdNewCoordinator([oldStage('a'), withoutLease], 'n-coordinator'), 'one old stage of two').to.equal(true);
  });
});
