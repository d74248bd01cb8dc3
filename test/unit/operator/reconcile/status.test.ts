import type { V1Job } from '@kubernetes/client-node';
import { expect } from 'chai';
import { parseCycleReport } from '../../../../src/contract/pods.js';
import type { Child } from '../../../../src/operator/builders/common.js';
import { isSubset, needsApply, withAppliedHash } from '../../../../src/operator/diff.js';
import {
  deploymentAvailable,
  deploymentReady,
  invalidConfigConditions,
  kstatusConditions,
  lastCycle,
  mergeConditions,
  nodeConditions,
  PAUSED_CONDITION,
  setCondition,
  statusEqual,
  type WorkloadObservation,
} from '../../../../src/operator/reconcile/status.js';

describe('operator status', () => {
  it('keeps lastTransitionTime while the status holds, moves it on a flip', () => {
    const first = setCondition(
      undefined,
      { type: 'Ready', status: 'False', reason: 'GatewayNotReady', message: 'a' },
      'T1',
    );
    const same = setCondition([first], { type: 'Ready', status: 'False', reason: 'StageRollout', message: 'b' }, 'T2');
    expect(same.lastTransitionTime).to.equal('T1');
    expect(same.reason).to.equal('StageRollout');
    const flipped = setCondition([same], { type: 'Ready', status: 'True', reason: 'Ready', message: 'c' }, 'T3');
    expect(flipped.lastTransitionTime).to.equal('T3');
  });

  it('orders conditions and compares statuses regardless of key order', () => {
    const conditions = mergeConditions(
      undefined,
      [
        { type: 'Degraded', status: 'False', reason: 'AsExpected', message: '' },
        { type: 'Ready', status: 'True', reason: 'Ready', message: '' },
      ],
      'T',
    );
    expect(conditions.map((c) => c.type)).to.deep.equal(['Ready', 'Degraded']);
    expect(statusEqual({ stage: 'a', chains: 1 }, { chains: 1, stage: 'a' })).to.equal(true);
    expect(statusEqual({ stage: 'a' }, { stage: 'b' })).to.equal(false);
  });

  it('a Deployment is Ready when its generation is rolled out with every replica available', () => {
    const deployment = (status: object, replicas = 2) => ({ metadata: { generation: 2 }, spec: { replicas }, status });
    expect(deploymentReady(undefined)).to.equal(false);
    expect(
      deploymentReady(deployment({ observedGeneration: 1, updatedReplicas: 2, availableReplicas: 2 }) as never),
    ).to.equal(false);
    expect(
      deploymentReady(deployment({ observedGeneration: 2, updatedReplicas: 2, availableReplicas: 1 }) as never),
    ).to.equal(false);
    expect(
      deploymentReady(deployment({ observedGeneration: 2, updatedReplicas: 2, availableReplicas: 2 }) as never),
    ).to.equal(true);
    expect(deploymentReady(deployment({ observedGeneration: 2 }, 0) as never)).to.equal(true);
    // Rolling out a new revision with every replica still available: serving, not yet rolled out.
    const rolling = deployment({ observedGeneration: 2, updatedReplicas: 1, availableReplicas: 2 }) as never;
    expect(deploymentReady(rolling)).to.equal(false);
    expect(deploymentAvailable(rolling)).to.equal(true);
    expect(deploymentAvailable(deployment({ observedGeneration: 2, availableReplicas: 1 }) as never)).to.equal(false);
  });

  it('the last cycle is the newest coordinator Job, with the counts the coordinator reported for it', () => {
    const job = (name: string, start: string, condition?: string): V1Job => ({
      metadata: { name },
      status: {
        startTime: new Date(start),
        ...(condition ? { conditions: [{ type: condition, status: 'True' }] } : {}),
      },
    });
    const report = parseCycleReport({
      'cycle.json': JSON.stringify({ job: 'c-2', counts: { fulfilled: 3, bad: 1.5 } }),
    });
    const cycle = lastCycle(
      [job('c-1', '2026-01-01T00:00:00Z', 'Complete'), job('c-2', '2026-01-01T00:01:00.250Z', 'Failed')],
      report,
    );
    expect(cycle).to.deep.equal({
      job: 'c-2',
      outcome: 'Failed',
      startTime: '2026-01-01T00:01:00Z',
      counts: { fulfilled: 3 },
    });
    // With window hand-overs the next run starts before the previous ends: the newest finished one is the last cycle.
    expect(
      lastCycle([job('c-2', '2026-01-01T00:01:00Z', 'Complete'), job('c-3', '2026-01-01T00:02:00Z')], report),
    ).to.deep.include({ job: 'c-2', outcome: 'Succeeded', counts: { fulfilled: 3 } });
    expect(lastCycle([job('c-3', '2026-01-01T00:02:00Z')], report)).to.deep.equal({
      job: 'c-3',
      outcome: 'Running',
      startTime: '2026-01-01T00:02:00Z',
    });
    expect(parseCycleReport({ 'cycle.json': '{not json' })).to.equal(undefined);
  });

  it("marks each sponsor wallet below its chain's threshold, and leaves wallets of chains without one unmarked", () => {
    const wallet = (chainId: string, balanceWei: string) => ({
      chainId,
      sponsorWallet: `0x${chainId.padStart(40, '0')}`,
      balanceWei,
      openRequests: 2,
    });
    const report = parseCycleReport({
      'cycle.json': JSON.stringify({
        job: 'c-1',
        counts: { fulfilled: 1 },
        sponsorWallets: [wallet('1', '49999999999999999'), wallet('137', '5000000000000000000'), wallet('10', '0')],
      }),
    });
    const thresholds = new Map([
      ['1', 50_000_000_000_000_000n],
      ['137', 5_000_000_000_000_000_000n],
    ]);
    const finished: V1Job = { metadata: { name: 'c-1' }, status: { startTime: new Date('2026-01-01T00:00:00Z') } };
    const cycle = lastCycle([finished], report, thresholds);
    expect(cycle!.sponsorWallets).to.deep.equal([
      { ...wallet('1', '49999999999999999'), belowThreshold: true },
      { ...wallet('137', '5000000000000000000'), belowThreshold: false },
      wallet('10', '0'),
    ]);
  });
});

describe('node conditions', () => {
  const observed = (
    gateway: Partial<WorkloadObservation['gateway']> = {},
    cycle?: WorkloadObservation['cycle'],
  ): WorkloadObservation => ({
    stage: 'dev',
    gateway: { name: 'n-dev-gateway', wanted: true, ready: true, available: true, ...gateway },
    cycle,
  });
  const summary = (conditions: { type: string; status: string; reason: string }[]) =>
    Object.fromEntries(conditions.map((c) => [c.type, `${c.status}/${c.reason}`]));

  const table: {
    case: string;
    observed: WorkloadObservation;
    rolloutMessage?: string;
    expected: Record<string, string>;
  }[] = [
    {
      case: 'everything serving',
      observed: observed(),
      expected: {
        ConfigValid: 'True/Valid',
        Progressing: 'False/Reconciled',
        Ready: 'True/Ready',
        Degraded: 'False/AsExpected',
      },
    },
    {
      case: 'no gateway wanted',
      observed: observed({ wanted: false, ready: true, available: false }),
      expected: {
        ConfigValid: 'True/Valid',
        Progressing: 'False/Reconciled',
        Ready: 'True/Ready',
        Degraded: 'False/AsExpected',
      },
    },
    {
      case: 'stage rollout',
      observed: observed(),
      rolloutMessage: 'Stage dev -> prod: waiting',
      expected: {
        ConfigValid: 'True/Valid',
        Progressing: 'True/StageRollout',
        Ready: 'False/StageRollout',
        Degraded: 'False/AsExpected',
      },
    },
    {
      case: 'gateway rolling out with every replica available',
      observed: observed({ ready: false, available: true }),
      expected: {
        ConfigValid: 'True/Valid',
        Progressing: 'True/GatewayRollingOut',
        Ready: 'True/Ready',
        Degraded: 'False/AsExpected',
      },
    },
    {
      case: 'gateway not available',
      observed: observed({ ready: false, available: false }),
      expected: {
        ConfigValid: 'True/Valid',
        Progressing: 'True/GatewayRollingOut',
        Ready: 'False/GatewayNotReady',
        Degraded: 'False/AsExpected',
      },
    },
    {
      case: 'last cycle failed',
      observed: observed({}, { job: 'c-1', outcome: 'Failed' }),
      expected: {
        ConfigValid: 'True/Valid',
        Progressing: 'False/Reconciled',
        Ready: 'True/Ready',
        Degraded: 'True/CycleFailed',
      },
    },
    {
      case: 'last cycle still running',
      observed: observed({}, { job: 'c-1', outcome: 'Running' }),
      expected: {
        ConfigValid: 'True/Valid',
        Progressing: 'False/Reconciled',
        Ready: 'True/Ready',
        Degraded: 'False/AsExpected',
      },
    },
  ];
  for (const row of table)
    it(row.case, () => {
      const conditions = nodeConditions({
        observed: row.observed,
        configWarnings: undefined,
        rolloutMessage: row.rolloutMessage,
      });
      expect(summary(conditions)).to.deep.equal(row.expected);
    });

  it('carries the validator warnings in ConfigValid, and an invalid config is never Ready', () => {
    const valid = nodeConditions({
      observed: observed(),
      configWarnings: 'servers: more than one',
      rolloutMessage: undefined,
    });
    expect(valid.find((c) => c.type === 'ConfigValid')!.message).to.equal('warnings: servers: more than one');
    expect(summary(invalidConfigConditions('ValidationFailed', 'chains: required', true))).to.deep.equal({
      ConfigValid: 'False/ValidationFailed',
      Ready: 'False/ConfigInvalid',
      Degraded: 'True/ConfigInvalid',
      Progressing: 'False/ConfigInvalid',
    });
  });
});

describe('operator status: the kstatus conditions (Reconciling, Stalled)', () => {
  const observed: WorkloadObservation = {
    stage: 'dev',
    gateway: { name: 'n-dev-gateway', wanted: true, ready: true, available: true },
    cycle: undefined,
  };
  const kstatus = (conditions: ReturnType<typeof mergeConditions>) =>
    Object.fromEntries(
      conditions
        .filter((c) => c.type === 'Reconciling' || c.type === 'Stalled')
        .map((c) => [c.type, `${c.status}/${c.reason}/${c.observedGeneration}`]),
    );
  const applied = (rolloutMessage?: string, gateway = observed.gateway) =>
    nodeConditions({ observed: { ...observed, gateway }, configWarnings: undefined, rolloutMessage });

  it('a settled node has neither (abnormal-true), so kstatus reads Ready', () => {
    expect(kstatus(mergeConditions(undefined, applied(), 'T', 3))).to.deep.equal({});
  });

  it('a stage or gateway rollout is Reconciling, with the reason and generation of Progressing', () => {
    expect(kstatus(mergeConditions(undefined, applied('Stage dev -> prod'), 'T', 2))).to.deep.equal({
      Reconciling: 'True/StageRollout/2',
    });
    const rolling = { ...observed.gateway, ready: false, available: true };
    expect(kstatus(mergeConditions(undefined, applied(undefined, rolling), 'T', 2))).to.deep.equal({
      Reconciling: 'True/GatewayRollingOut/2',
    });
  });

  it('a config that cannot be applied as written is Stalled; a Secret that does not exist yet is Reconciling', () => {
    for (const reason of ['ValidationFailed', 'SecretKeyMissing'] as const)
      expect(kstatus(mergeConditions(undefined, invalidConfigConditions(reason, 'm', true), 'T', 4))).to.deep.equal({
        Stalled: `True/${reason}/4`,
      });
    expect(
      kstatus(mergeConditions(undefined, invalidConfigConditions('SecretNotFound', 'm', false), 'T', 4)),
    ).to.deep.equal({ Reconciling: 'True/SecretNotFound/4' });
  });

  it('an apply retried with backoff is Reconciling; fixing the config removes Stalled and keeps no stale one', () => {
    const stalled = mergeConditions(undefined, invalidConfigConditions('ValidationFailed', 'm', true), 'T1', 1);
    const fixed = mergeConditions(stalled, applied(), 'T2', 2);
    expect(kstatus(fixed)).to.deep.equal({});
    const failing = mergeConditions(
      fixed,
      [{ type: 'Degraded', status: 'True', reason: 'ApplyFailed', message: 'x' }],
      'T3',
    );
    expect(kstatus(failing)).to.deep.equal({ Reconciling: 'True/ApplyFailed/undefined' });
  });

  it('paused: no Reconciling (the operator does nothing), a Stalled config stays Stalled', () => {
    const rolling = mergeConditions(undefined, applied('Stage dev -> prod'), 'T1', 1);
    expect(kstatus(mergeConditions(rolling, [PAUSED_CONDITION], 'T2'))).to.deep.equal({});
    const stalled = mergeConditions(undefined, invalidConfigConditions('ValidationFailed', 'm', true), 'T1', 1);
    expect(kstatus(mergeConditions(stalled, [PAUSED_CONDITION], 'T2'))).to.deep.equal({
      Stalled: 'True/ValidationFailed/1',
    });
  });

  it('keeps lastTransitionTime of Reconciling while the rollout goes on, and orders it after the others', () => {
    const first = mergeConditions(undefined, applied('Stage dev -> prod: waiting'), 'T1', 1);
    const later = mergeConditions(first, applied('Stage dev -> prod: old stage finishing'), 'T2', 1);
    expect(later.find((c) => c.type === 'Reconciling')).to.include({
      lastTransitionTime: 'T1',
      message: 'Stage dev -> prod: old stage finishing',
    });
    expect(later.map((c) => c.type)).to.deep.equal(['Ready', 'ConfigValid', 'Progressing', 'Degraded', 'Reconciling']);
    expect(kstatusConditions(later)).to.have.length(1);
  });
});

describe('operator apply diff', () => {
  const desired = withAppliedHash({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'c', namespace: 'n', labels: { a: 'b' } },
    data: { k: 'v' },
  } as Child);

  it('applies when missing, when a field we own drifted, or when the desired object changed', () => {
    expect(needsApply(desired, undefined)).to.equal(true);
    const live = {
      ...structuredClone(desired),
      metadata: { ...structuredClone(desired.metadata), uid: 'u', labels: { a: 'b', extra: 'x' } },
    };
    expect(needsApply(desired, live)).to.equal(false);
    expect(needsApply(desired, { ...live, data: { k: 'edited' } } as Child)).to.equal(true);
    const removedField = withAppliedHash({ ...desired, data: {} } as Child);
    expect(needsApply(removedField, live)).to.equal(true);
  });

  it('compares quantities by value and treats server defaults as not ours', () => {
    expect(isSubset({ cpu: '1000m', memory: '1Gi' }, { cpu: '1', memory: '1024Mi' })).to.equal(true);
    expect(isSubset({ cpu: '500m' }, { cpu: '1' })).to.equal(false);
    expect(isSubset([{ name: 'a' }], [{ name: 'a', imagePullPolicy: 'IfNotPresent' }])).to.equal(true);
    expect(isSubset([{ name: 'a' }], [{ name: 'a' }, { name: 'b' }])).to.equal(false);
    expect(isSubset({ tolerations: [] }, {})).to.equal(true);
  });
});
