import { expect } from 'chai';
import {
  ENV,
  parseCycleReport,
  readCoordinatorEnvironment,
  readEngineEnvironment,
} from '../../../src/contract/pods.js';
import type { WorkerTemplate } from '../../../src/contract/shard.js';

const template: WorkerTemplate = {
  namePrefix: 'n-dev-worker',
  labels: { 'oracle-node.io/name': 'n' },
  ownerReferences: [{ apiVersion: 'oracle-node.io/v1alpha1', kind: 'OracleNode', name: 'n', uid: 'u' }],
  activeDeadlineSeconds: 50,
  ttlSecondsAfterFinished: 300,
  template: { metadata: { labels: {} }, spec: { containers: [{ name: 'worker', image: 'i' }] } },
};

const coordinatorEnv = (overrides: Record<string, string | undefined> = {}) => ({
  [ENV.namespace]: 'team-a',
  [ENV.cacheConfigMap]: 'n-cache',
  [ENV.cycleConfigMap]: 'n-cycle',
  [ENV.workerTemplate]: JSON.stringify(template),
  [ENV.jobName]: 'n-dev-coordinator-1',
  ...overrides,
});

describe('the operator <-> pod contract', () => {
  it('a coordinator pod environment is parsed, not cast', () => {
    expect(readCoordinatorEnvironment(coordinatorEnv())).to.deep.equal({
      namespace: 'team-a',
      cacheConfigMap: 'n-cache',
      cycleConfigMap: 'n-cycle',
      workerTemplate: template,
      jobName: 'n-dev-coordinator-1',
    });
    // No worker template: not a coordinator pod (a local run).
    expect(readCoordinatorEnvironment({})).to.equal(undefined);
  });

  it('a broken coordinator pod environment names the variable and the rule', () => {
    expect(() => readCoordinatorEnvironment(coordinatorEnv({ [ENV.namespace]: undefined }))).to.throw(/POD_NAMESPACE/);
    expect(() => readCoordinatorEnvironment(coordinatorEnv({ [ENV.workerTemplate]: '{not json' }))).to.throw(
      /ORACLE_NODE_WORKER_TEMPLATE is not JSON/,
    );
    const noContainers = { ...template, template: { spec: { containers: [] } } };
    expect(() =>
      readCoordinatorEnvironment(coordinatorEnv({ [ENV.workerTemplate]: JSON.stringify(noContainers) })),
    ).to.throw(/ORACLE_NODE_WORKER_TEMPLATE\.template\.spec\.containers/);
    const negativeDeadline = { ...template, activeDeadlineSeconds: -1 };
    expect(() =>
      readCoordinatorEnvironment(coordinatorEnv({ [ENV.workerTemplate]: JSON.stringify(negativeDeadline) })),
    ).to.throw(/activeDeadlineSeconds/);
  });

  it('engine environments', () => {
    expect(
      readEngineEnvironment({ [ENV.configPath]: '/etc/oracle-node/config.json', [ENV.oracleNode]: 'n' }),
    ).to.deep.equal({ configPath: '/etc/oracle-node/config.json', oracleNode: 'n' });
    expect(readEngineEnvironment({ [ENV.configPath]: '' })).to.deep.equal({});
  });

  it('the cycle report keeps only well-formed fields and entries (the coordinator is not trusted)', () => {
    const report = parseCycleReport({
      'cycle.json': JSON.stringify({
        job: 'c-1',
        outcome: 'Exploded',
        counts: { fulfilled: 2, bad: 'x', frac: 0.5 },
        providers: [
          { chainId: '1', provider: 'a', ok: true, currentBlock: 7 },
          { chainId: 1, provider: 'b' },
        ],
      }),
    });
    expect(report).to.deep.equal({
      job: 'c-1',
      counts: { fulfilled: 2 },
      providers: [{ chainId: '1', provider: 'a', ok: true, currentBlock: 7 }],
    });
    expect(parseCycleReport({ 'cycle.json': '[1,2]' })).to.equal(undefined);
    expect(parseCycleReport({})).to.equal(undefined);
  });

  it('the cycle report keeps well-formed API call and sponsor entries only: no label a coordinator could invent', () => {
    const sponsor = `0x${'ab'.repeat(20)}`;
    const report = parseCycleReport({
      'cycle.json': JSON.stringify({
        apiCalls: [
          { ois: 'Prices', endpoint: 'spot', outcome: '2xx', count: 3 },
          { ois: 'Prices', endpoint: 'spot', outcome: 'teapot', count: 1 },
          { ois: 'Prices', endpoint: 'spot', outcome: '5xx', count: 0 },
          { ois: 'x'.repeat(257), endpoint: 'spot', outcome: '2xx', count: 1 },
        ],
        sponsorFulfilments: [
          { chainId: '1', sponsor, outcome: 'fulfilled', count: 2 },
          { chainId: '1', sponsor: 'other', outcome: 'failed', count: 1 },
          { chainId: '1', sponsor: sponsor.toUpperCase().replace('0X', '0x'), outcome: 'fulfilled', count: 1 },
          { chainId: '1', sponsor: 'anyone', outcome: 'fulfilled', count: 1 },
          { chainId: '1', sponsor, outcome: 'withdrawn', count: 1 },
        ],
      }),
    });
    expect(report).to.deep.equal({
      apiCalls: [{ ois: 'Prices', endpoint: 'spot', outcome: '2xx', count: 3 }],
      sponsorFulfilments: [
        { chainId: '1', sponsor, outcome: 'fulfilled', count: 2 },
        { chainId: '1', sponsor: 'other', outcome: 'failed', count: 1 },
      ],
    });
  });

  it('the cycle report carries the heartbeat, timing, failed requests (bounded) and gas prices', () => {
    const requestId = `0x${'ab'.repeat(32)}`;
    const report = parseCycleReport({
      'cycle.json': JSON.stringify({
        job: 'c-2',
        startTime: '2026-11-24T00:00:01.000Z',
        durationMs: 1234,
        heartbeat: 'Failed',
        failedRequests: [...Array.from({ length: 30 }, () => ({ chainId: '1', requestId, reason: 'reverted' }))],
        gasPrices: [
          { chainId: '1', gasPriceWei: '1000' },
          { chainId: '2', gasPriceWei: '-1' },
        ],
      }),
    });
    expect(report?.heartbeat).to.equal('Failed');
    expect(report?.startTime).to.equal('2026-11-24T00:00:01.000Z');
    expect(report?.durationMs).to.equal(1234);
    expect(report?.failedRequests).to.have.length(20);
    expect(report?.gasPrices).to.deep.equal([{ chainId: '1', gasPriceWei: '1000' }]);
    const bad = parseCycleReport({
      'cycle.json': JSON.stringify({
        startTime: 'yesterday',
        durationMs: -5,
        heartbeat: 'Maybe',
        failedRequests: [{ chainId: '1', requestId: '0x12', reason: 'x' }],
      }),
    });
    expect(bad).to.deep.equal({});
  });

  it("an optional pod IP, where the window's workers reach the coordinator: an IP, empty means absent", () => {
    expect(readCoordinatorEnvironment(coordinatorEnv({ [ENV.podIp]: '10.244.0.7' }))).to.include({
      podIp: '10.244.0.7',
    });
    expect(readCoordinatorEnvironment(coordinatorEnv({ [ENV.podIp]: 'fd00::7' }))).to.include({ podIp: 'fd00::7' });
    expect(readCoordinatorEnvironment(coordinatorEnv({ [ENV.podIp]: '' }))).not.to.have.property('podIp');
    expect(() => readCoordinatorEnvironment(coordinatorEnv({ [ENV.podIp]: 'evil.example.org' }))).to.throw(/POD_IP/);
  });

  it('an optional gateway URL for the heartbeat: http(s) only, empty means absent', () => {
    expect(readCoordinatorEnvironment(coordinatorEnv({ [ENV.gatewayUrl]: 'https://oracle.example.org' }))).to.include({
      gatewayUrl: 'https://oracle.example.org',
    });
    expect(readCoordinatorEnvironment(coordinatorEnv({ [ENV.gatewayUrl]: '' }))).not.to.have.property('gatewayUrl');
    expect(() => readCoordinatorEnvironment(coordinatorEnv({ [ENV.gatewayUrl]: 'ftp://x' }))).to.throw(
      /ORACLE_NODE_GATEWAY_URL/,
    );
  });
});
