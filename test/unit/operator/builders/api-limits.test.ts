// spec.apiLimits divided among the pods that call each API (src/operator/builders/api-limits.ts): equal whole shares
// whose sum never exceeds the budget, carried as --api-rate-limit by the gateway Deployment and the worker pods.
import { expect } from 'chai';
import fc from 'fast-check';
import { ENV } from '../../../../src/contract/pods.js';
import { buildWindowWorkerJob, parseWorkerTemplate } from '../../../../src/contract/shard.js';
import {
  apiLimitArgs,
  apiLimitProblems,
  cycleWorkerPods,
  divideApiLimits,
  nodeApiLimitShares,
} from '../../../../src/operator/builders/api-limits.js';
import { buildCoordinatorCronJob } from '../../../../src/operator/builders/coordinator.js';
import { buildGatewayDeployment } from '../../../../src/operator/builders/gateway.js';
import { buildWorkerTemplate } from '../../../../src/operator/builders/worker.js';
import type { OracleNode } from '../../../../src/operator/resource.js';
import { inputFor } from './build-input.js';

const TITLE = 'Currency Converter API';
const ENDPOINT = 'convertToUSD';
type Limits = NonNullable<OracleNode['spec']['apiLimits']>;

const argsOf = (container: { args?: string[] } | undefined) => {
  const args = container?.args ?? [];
  return args.flatMap((arg, i) => (arg === '--api-rate-limit' ? [args[i + 1]!] : []));
};

describe('spec.apiLimits: the division of a budget among the pods', () => {
  it('counts the gateway replicas and twice the workers a window may run, and gives each pod an equal share', () => {
    // Two gateway replicas; chains of maxConcurrency 10 and 4: 2 x (10 + 4 + 10) = 48 worker pods.
    const input = inputFor('full-multi-chain', (node) => {
      node.spec.apiLimits = [
        { ois: TITLE, callsPerMinute: 600, burst: 100 },
        { ois: TITLE, endpoint: ENDPOINT, callsPerSecond: 100 },
      ];
    });
    expect(cycleWorkerPods(input.config)).to.equal(48);
    const shares = nodeApiLimitShares(input.node, input.config, 2);
    expect(shares).to.deep.equal([
      { target: TITLE, gatewayPods: 2, workerPods: 48, perPod: { calls: 12, window: 'm', burst: 2 } },
      { target: `${TITLE}/${ENDPOINT}`, gatewayPods: 2, workerPods: 48, perPod: { calls: 2, window: 's' } },
    ]);
    const gateway = buildGatewayDeployment(input).spec!.template.spec!.containers[0];
    expect(argsOf(gateway)).to.deep.equal([`${TITLE}=12/m`, `${TITLE}=2/s`, `${TITLE}/${ENDPOINT}=2/s`]);
    const worker = buildWorkerTemplate(input).template.spec!.containers[0];
    expect(argsOf(worker)).to.deep.equal([`${TITLE}=12/m`, `${TITLE}=2/s`, `${TITLE}/${ENDPOINT}=2/s`]);
    // A window's Job keeps the template's shares when it turns the worker into `worker --coordinator`.
    const window = buildWindowWorkerJob(buildWorkerTemplate(input), {
      name: 'w',
      parallelism: 4,
      activeDeadlineSeconds: 60,
      coordinatorUrl: 'http://10.0.0.1:8090',
      credential: 'c',
    });
    const windowArgs = window.spec!.template.spec!.containers[0]!.args!;
    expect(windowArgs.slice(0, 2)).to.deep.equal(['worker', '--coordinator']);
    expect(argsOf({ args: windowArgs })).to.deep.equal(argsOf(worker));
  });

  it('gives the coordinator no share: its pod always hands its API calls to worker Jobs (it carries their template)', () => {
    const input = inputFor('full-multi-chain', (node) => {
      node.spec.apiLimits = [{ ois: TITLE, callsPerSecond: 100 }];
    });
    const container = buildCoordinatorCronJob(input).spec!.jobTemplate.spec!.template.spec!.containers[0]!;
    expect(argsOf(container)).to.deep.equal([]);
    // The variable without which the engine would run the calls in process (readCoordinatorEnvironment).
    const template = container.env?.find((env) => env.name === ENV.workerTemplate)?.value;
    expect(parseWorkerTemplate(template ?? '')).to.have.property('template');
  });

  it('redivides when the replicas or the HPA maximum change; a workload that never calls the API gets no share', () => {
    const withReplicas = (replicas: number, maxReplicas?: number) =>
      inputFor('gateways-only', (node) => {
        node.spec.apiLimits = [{ ois: TITLE, callsPerMinute: 100 }];
        node.spec.gateway = { ...node.spec.gateway, replicas };
        if (maxReplicas) node.spec.gateway.autoscaling = { maxReplicas };
      });
    const gatewayArgs = (replicas: number, maxReplicas?: number) =>
      argsOf(buildGatewayDeployment(withReplicas(replicas, maxReplicas)).spec!.template.spec!.containers[0]);
    expect(gatewayArgs(1)).to.deep.equal([`${TITLE}=100/m`]);
    expect(gatewayArgs(3)).to.deep.equal([`${TITLE}=33/m`]);
    expect(gatewayArgs(2, 8)).to.deep.equal([`${TITLE}=12/m`]);
    // No rrp trigger: the workers never call it, so the gateway's replicas share it alone and workers carry nothing.
    expect(argsOf(buildWorkerTemplate(withReplicas(3)).template.spec!.containers[0])).to.deep.equal([]);
    // No gateway: the minimal node's workers (2 x (10 + 10) = 40 pods) share it alone.
    const minimal = inputFor('minimal', (node) => {
      node.spec.apiLimits = [{ ois: TITLE, callsPerMinute: 100 }];
    });
    expect(argsOf(buildWorkerTemplate(minimal).template.spec!.containers[0])).to.deep.equal([`${TITLE}=2/m`]);
    // Without spec.apiLimits the arguments are what they were.
    expect(argsOf(buildGatewayDeployment(inputFor('gateways-only')).spec!.template.spec!.containers[0])).to.deep.equal(
      [],
    );
  });

  it('a budget smaller than the pods leaves each a share of 0; a burst share below one is left out', () => {
    const input = inputFor('full-multi-chain');
    const [share] = divideApiLimits([{ ois: TITLE, callsPerSecond: 30, burst: undefined }], input.config, {
      gateway: 2,
      worker: 48,
    });
    expect(share!.perPod).to.deep.equal({ calls: 0, window: 's' });
    expect(apiLimitArgs([share!], 'gateway')).to.deep.equal(['--api-rate-limit', `${TITLE}=0/s`]);
    const [withBurst] = divideApiLimits([{ ois: TITLE, callsPerMinute: 6000, burst: 20 }], input.config, {
      gateway: 2,
      worker: 48,
    });
    expect(withBurst!.perPod).to.deep.equal({ calls: 120, window: 'm' });
  });

  it('never lets the pods together exceed a budget or its burst, whatever the replicas and concurrency (property)', () => {
    const input = inputFor('full-multi-chain');
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 100 }),
        fc.integer({ min: 0, max: 500 }),
        fc.oneof(
          fc.record({ callsPerSecond: fc.integer({ min: 1, max: 100_000 }) }),
          fc.record({
            callsPerMinute: fc.integer({ min: 1, max: 1_000_000 }),
            burst: fc.option(fc.integer({ min: 1, max: 100_000 }), { nil: undefined }),
          }),
        ),
        (gateway, worker, budget) => {
          const limits: Limits = [{ ois: TITLE, ...budget }];
          const [share] = divideApiLimits(limits, input.config, { gateway, worker });
          const pods = share!.gatewayPods + share!.workerPods;
          const total = 'callsPerSecond' in budget ? budget.callsPerSecond : budget.callsPerMinute;
          expect(pods * share!.perPod.calls).to.be.at.most(total);
          expect(share!.perPod.calls).to.be.at.least(0);
          if ('burst' in budget && budget.burst !== undefined && share!.perPod.burst !== undefined)
            expect(pods * share!.perPod.burst).to.be.at.most(budget.burst);
          // Each share is as large as it can be: one more call each would exceed the budget.
          if (pods > 0) expect(pods * (share!.perPod.calls + 1)).to.be.above(total);
        },
      ),
      { seed: 46 },
    );
  });

  it('names a budget whose OIS or endpoint the config lacks (the node is refused until it is fixed)', () => {
    const { config } = inputFor('minimal');
    expect(
      apiLimitProblems(
        [
          { ois: TITLE, endpoint: ENDPOINT, callsPerSecond: 1 },
          { ois: 'Currency Converter', callsPerSecond: 1 },
          { ois: TITLE, endpoint: 'convert', callsPerMinute: 1 },
        ],
        config,
      ),
    ).to.deep.equal([
      "spec.apiLimits[1].ois: the config has no OIS titled 'Currency Converter'",
      `spec.apiLimits[2].endpoint: OIS '${TITLE}' has no endpoint named 'convert'`,
    ]);
  });
});
