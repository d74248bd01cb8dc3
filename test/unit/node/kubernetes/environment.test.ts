import { expect } from 'chai';
import { parseCycleReport } from '../../../../src/contract/pods.js';
import type { CycleSummary } from '../../../../src/node/cycle.js';
import { emptySummary } from '../../../../src/node/cycle-summary.js';
import { cycleCounts, cycleReport } from '../../../../src/node/kubernetes/cycle-report.js';
import { coordinatorKubernetes } from '../../../../src/node/kubernetes/index.js';
import type { WindowSummary } from '../../../../src/node/window.js';
import { clearSecrets, registerSecret } from '../../../../src/observability/index.js';

describe('coordinator in operator pods', () => {
  it('reports flat integer counts of a cycle', () => {
    const empty = emptySummary();
    const summary: CycleSummary = {
      ...empty,
      providers: [
        { chainId: '1', provider: 'a', ok: true, rpcCalls: 3 },
        { chainId: '1', provider: 'b', ok: false, rpcCalls: 2 },
      ],
      requests: { ...empty.requests, discovered: 5, servable: 4, waitingForConfirmations: 1 },
      shards: { total: 2, failed: 0 },
      transactions: { ...empty.transactions, fulfilled: 3, failed: 1 },
      apiCalls: 3,
      cacheHits: 1,
      rpcCalls: 9,
      timings: { discoveryMs: 1, shardsMs: 2 },
      gasPriceStrategyFailures: [
        { chainId: '1', strategy: 'providerRecommendedGasPrice', count: 2 },
        { chainId: '1', strategy: 'latestBlockPercentileGasPrice', count: 1 },
      ],
    };
    const counts = cycleCounts(summary);
    expect(counts).to.include({
      discovered: 5,
      fulfilled: 3,
      failed: 1,
      providersUp: 1,
      providersDown: 1,
      cacheHits: 1,
      gasPriceStrategyFailures: 3,
    });
    for (const value of Object.values(counts)) expect(Number.isInteger(value)).to.equal(true);
  });

  it("a standby's report says so and counts what it served; a primary's has no standby count", () => {
    const empty = emptySummary();
    const cycle: CycleSummary = {
      ...empty,
      role: 'standby',
      requests: { ...empty.requests, discovered: 3, servable: 3 },
      shards: { total: 1, failed: 0 },
      transactions: { ...empty.transactions, fulfilled: 2, failed: 1, withdrawn: 1 },
      apiCalls: 2,
      rpcCalls: 9,
      timings: { discoveryMs: 1, shardsMs: 2 },
    };
    const report = parseCycleReport({ 'cycle.json': JSON.stringify(cycleReport(cycle)) });
    expect(report?.role).to.equal('standby');
    expect(report?.counts?.['standbyServed']).to.equal(3);
    const primary = cycleReport({ ...cycle, role: 'primary' });
    expect(primary.role).to.equal('primary');
    expect(primary.counts).to.not.have.property('standbyServed');
  });

  it("a window's report carries its polls in the counts and its latencies by stage; a one-shot cycle's none", () => {
    const empty = emptySummary();
    const cycle: CycleSummary = {
      ...empty,
      requests: { ...empty.requests, discovered: 2, servable: 2 },
      shards: { total: 1, failed: 0 },
      transactions: { ...empty.transactions, fulfilled: 2 },
      apiCalls: 2,
      rpcCalls: 9,
      timings: { discoveryMs: 1, shardsMs: 2 },
    };
    const window: WindowSummary = {
      ...cycle,
      window: { polls: 44, idlePolls: 30 },
      latency: { submission: [1.2, 0.9], inclusion: [] },
    };
    const report = parseCycleReport({ 'cycle.json': JSON.stringify(cycleReport(window)) });
    expect(report?.counts).to.include({ polls: 44, idlePolls: 30 });
    expect(report?.latencySeconds).to.deep.equal({ submission: [1.2, 0.9] });
    const oneShot = cycleReport(cycle);
    expect(oneShot.counts).to.not.have.any.keys('polls', 'idlePolls');
    expect(oneShot).to.not.have.property('latencySeconds');
  });

  it('reports the heartbeat, timing, gas prices and the failed requests with their reason', () => {
    const id = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;
    const outcomes = Array.from({ length: 25 }, (_, n) => ({
      id: id(n),
      kind: 'api' as const,
      outcome: n === 0 ? ('fulfilled' as const) : ('failed' as const),
      reason: n === 1 ? 'x'.repeat(500) : 'reverted',
    }));
    const empty = emptySummary();
    const summary: CycleSummary = {
      ...empty,
      requests: { ...empty.requests, discovered: 25, servable: 25 },
      shards: { total: 1, failed: 0 },
      transactions: { ...empty.transactions, fulfilled: 1, failed: 24 },
      apiCalls: 25,
      rpcCalls: 9,
      timings: { discoveryMs: 1, shardsMs: 2 },
      gasPrices: [{ chainId: '1', gasPriceWei: '1100000000' }],
      results: [
        {
          ok: true as const,
          output: {
            chainId: '1',
            sponsorWallet: '0x0000000000000000000000000000000000000001',
            outcomes,
            apiCalls: 25,
            cacheHits: 0,
            rpcCalls: 1,
            timings: { apiMs: 0, planMs: 0, sendMs: 0 },
          },
        },
      ],
    };
    const report = cycleReport(summary, {
      jobName: 'n-dev-coordinator-1',
      startTime: new Date('2026-11-24T00:00:00Z'),
      durationMs: 1500.4,
      heartbeat: 'Failed',
    });
    expect(report).to.include({
      job: 'n-dev-coordinator-1',
      startTime: '2026-11-24T00:00:00.000Z',
      durationMs: 1500,
      heartbeat: 'Failed',
    });
    expect(report.gasPrices).to.deep.equal([{ chainId: '1', gasPriceWei: '1100000000' }]);
    expect(report.failedRequests).to.have.length(20);
    expect(report.failedRequests![1]!.reason).to.equal('reverted');
    expect(report.failedRequests![0]).to.deep.equal({
      chainId: '1',
      requestId: id(1),
      reason: `${'x'.repeat(297)}...`,
    });
  });

  it('redacts registered secrets in the reasons it reports (the operator makes Events of them)', () => {
    registerSecret('https://rpc.example/v3/secret-project-key');
    try {
      const empty = emptySummary();
      const summary: CycleSummary = {
        ...empty,
        requests: { ...empty.requests, discovered: 1, servable: 1 },
        shards: { total: 1, failed: 0 },
        transactions: { ...empty.transactions, errors: 1 },
        rpcCalls: 1,
        timings: { discoveryMs: 1, shardsMs: 2 },
        results: [
          {
            ok: true as const,
            output: {
              chainId: '1',
              sponsorWallet: '0x0000000000000000000000000000000000000001',
              outcomes: [
                {
                  id: `0x${'1'.repeat(64)}`,
                  kind: 'api' as const,
                  outcome: 'error' as const,
                  reason: 'provider unreachable: request to https://rpc.example/v3/secret-project-key failed',
                },
              ],
              apiCalls: 0,
              cacheHits: 0,
              rpcCalls: 1,
              timings: { apiMs: 0, planMs: 0, sendMs: 0 },
            },
          },
        ],
      };
      const [failed] = cycleReport(summary).failedRequests!;
      expect(failed!.reason).not.to.include('secret-project-key');
      expect(failed!.reason).to.include('[REDACTED]');
    } finally {
      clearSecrets();
    }
  });

  it('stays local (no Kubernetes client) outside operator pods', async () => {
    expect(await coordinatorKubernetes({})).to.equal(undefined);
  });
});
