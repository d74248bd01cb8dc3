import { expect } from 'chai';
import { Registry } from 'prom-client';
import { parseCycleReport } from '../../../src/contract/pods.js';
import { endpointKey, lastSuccessfulCycleSeconds, OracleNodeMetrics } from '../../../src/operator/metrics.js';
import { lastCycle, providerHealth } from '../../../src/operator/reconcile/status.js';
import type { OracleNodeStatus } from '../../../src/operator/resource.js';

const key = { namespace: 'oracles', name: 'eth-node' };

function statusWith(cycle: NonNullable<OracleNodeStatus['lastCycle']>, ready = 'True'): OracleNodeStatus {
  return {
    conditions: [{ type: 'Ready', status: ready as 'True', reason: 'Ready', message: '', lastTransitionTime: '' }],
    lastCycle: cycle,
  } as OracleNodeStatus;
}

async function sample(registry: Registry, name: string, labels: Record<string, string> = {}) {
  const metric = registry.getSingleMetric(name);
  const values = (await metric?.get())?.values ?? [];
  const found = values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
  return found?.value;
}

describe('oracle_node_* metrics from the OracleNode status', () => {
  const cycle = {
    job: 'eth-node-dev-coordinator-29000001',
    outcome: 'Succeeded' as const,
    startTime: '2026-11-21T07:00:00Z',
    completionTime: '2026-11-21T07:00:12Z',
    counts: { discovered: 7, fulfilled: 5, failed: 2 },
    providers: [
      { chainId: '1', provider: 'a', up: true, blockLag: 0 },
      { chainId: '1', provider: 'b', up: false, fault: 'unavailable' },
    ],
    sponsorWallets: [
      {
        chainId: '1',
        sponsorWallet: '0x228A54F33E46fbb32a62ca650Fcc9eD3C730511d',
        balanceWei: '5000000000000000',
        openRequests: 3,
        belowThreshold: true,
      },
      { chainId: '10', sponsorWallet: '0x0000000000000000000000000000000000000010', balanceWei: '0' },
    ],
  };

  it("publishes each watched sponsor wallet's open requests, and below-threshold only on chains with a threshold", async () => {
    const registry = new Registry();
    const metrics = new OracleNodeMetrics(registry);
    metrics.observe(key, statusWith(cycle));
    const first = { chain: '1', sponsor_wallet: '0x228A54F33E46fbb32a62ca650Fcc9eD3C730511d' };
    const second = { chain: '10', sponsor_wallet: '0x0000000000000000000000000000000000000010' };
    expect(await sample(registry, 'oracle_node_sponsor_wallet_below_threshold', first)).to.equal(1);
    expect(await sample(registry, 'oracle_node_sponsor_wallet_open_requests', first)).to.equal(3);
    expect(await sample(registry, 'oracle_node_sponsor_wallet_below_threshold', second)).to.equal(undefined);
    expect(await sample(registry, 'oracle_node_sponsor_wallet_balance_wei', second)).to.equal(0);
    metrics.forget(key);
    expect(await sample(registry, 'oracle_node_sponsor_wallet_open_requests', first)).to.equal(undefined);
  });

  it('publishes Ready, the last successful cycle, its duration, outcomes and provider health', async () => {
    const registry = new Registry();
    const metrics = new OracleNodeMetrics(registry);
    metrics.observe(key, statusWith(cycle));
    expect(await sample(registry, 'oracle_node_ready', key)).to.equal(1);
    expect(await sample(registry, 'oracle_node_last_successful_cycle_timestamp_seconds', key)).to.equal(
      Date.parse('2026-11-21T07:00:12Z') / 1000,
    );
    expect(await sample(registry, 'oracle_node_cycle_duration_seconds', key)).to.equal(12);
    expect(await sample(registry, 'oracle_node_requests_total', { ...key, outcome: 'seen' })).to.equal(7);
    expect(await sample(registry, 'oracle_node_requests_total', { ...key, outcome: 'fulfilled' })).to.equal(5);
    expect(await sample(registry, 'oracle_node_requests_total', { ...key, outcome: 'failed' })).to.equal(2);
    expect(await sample(registry, 'oracle_node_provider_up', { provider: 'a' })).to.equal(1);
    expect(await sample(registry, 'oracle_node_provider_up', { provider: 'b' })).to.equal(0);
    expect(await sample(registry, 'oracle_node_provider_block_lag', { provider: 'a' })).to.equal(0);
    expect(
      await sample(registry, 'oracle_node_provider_faults_total', { provider: 'b', fault: 'unavailable' }),
    ).to.equal(1);
    expect(
      await sample(registry, 'oracle_node_sponsor_wallet_balance_wei', {
        sponsor_wallet: '0x228A54F33E46fbb32a62ca650Fcc9eD3C730511d',
      }),
    ).to.equal(5e15);
  });

  it('counts a cycle once however often the status is observed, and adds the next one', async () => {
    const registry = new Registry();
    const metrics = new OracleNodeMetrics(registry);
    for (let i = 0; i < 3; i++) metrics.observe(key, statusWith(cycle));
    expect(await sample(registry, 'oracle_node_requests_total', { ...key, outcome: 'fulfilled' })).to.equal(5);
    metrics.observe(key, statusWith({ ...cycle, job: 'next', counts: { discovered: 1, fulfilled: 1 } }));
    expect(await sample(registry, 'oracle_node_requests_total', { ...key, outcome: 'fulfilled' })).to.equal(6);
  });

  it('counts the gas price strategy failures the coordinator reported, once per cycle', async () => {
    const registry = new Registry();
    const metrics = new OracleNodeMetrics(registry);
    const failing = { ...cycle, counts: { ...cycle.counts, gasPriceStrategyFailures: 2 } };
    for (let i = 0; i < 2; i++) metrics.observe(key, statusWith(failing));
    expect(await sample(registry, 'oracle_node_gas_price_strategy_failures_total', key)).to.equal(2);
    metrics.observe(key, statusWith({ ...failing, job: 'next' }));
    expect(await sample(registry, 'oracle_node_gas_price_strategy_failures_total', key)).to.equal(4);
  });

  it('keeps the last success time when the newest cycle failed, and follows Ready', async () => {
    const registry = new Registry();
    const metrics = new OracleNodeMetrics(registry);
    metrics.observe(key, statusWith(cycle));
    metrics.observe(
      key,
      statusWith({ ...cycle, job: 'failed-one', outcome: 'Failed', completionTime: '2026-11-21T07:05:00Z' }, 'False'),
    );
    expect(await sample(registry, 'oracle_node_ready', key)).to.equal(0);
    expect(await sample(registry, 'oracle_node_last_successful_cycle_timestamp_seconds', key)).to.equal(
      Date.parse('2026-11-21T07:00:12Z') / 1000,
    );
  });

  it('counts each reported heartbeat once by outcome, and publishes the gas price per chain', async () => {
    const registry = new Registry();
    const metrics = new OracleNodeMetrics(registry);
    const record = (job: string, heartbeat: 'Sent' | 'Failed') => ({
      job,
      fulfilled: 0,
      failed: 0,
      dropped: 0,
      heartbeat,
    });
    const withGas = { ...cycle, gasPrices: [{ chainId: '1', gasPriceWei: '1100000000' }] };
    metrics.observe(key, { ...statusWith(withGas), cycles: [record('a', 'Failed')] });
    metrics.observe(key, { ...statusWith(withGas), cycles: [record('a', 'Failed')] });
    metrics.observe(key, { ...statusWith(withGas), cycles: [record('b', 'Sent'), record('a', 'Failed')] });
    expect(await sample(registry, 'oracle_node_heartbeats_total', { ...key, outcome: 'Failed' })).to.equal(1);
    expect(await sample(registry, 'oracle_node_heartbeats_total', { ...key, outcome: 'Sent' })).to.equal(1);
    expect(await sample(registry, 'oracle_node_gas_price_wei', { ...key, chain: '1' })).to.equal(1.1e9);
    metrics.forget(key);
    expect(await sample(registry, 'oracle_node_gas_price_wei', key)).to.equal(undefined);
    expect(await sample(registry, 'oracle_node_heartbeats_total', key)).to.equal(undefined);
  });

  it('publishes no per-node series while not leading, drops them all when the lease is lost, and resumes', async () => {
    const registry = new Registry();
    const metrics = new OracleNodeMetrics(registry);
    metrics.setLeading(false);
    metrics.observe(key, statusWith(cycle));
    expect((await registry.getMetricsAsJSON()).flatMap((m) => m.values)).to.deep.equal([]);
    metrics.setLeading(true);
    metrics.observe(key, statusWith(cycle));
    expect(await sample(registry, 'oracle_node_ready', key)).to.equal(1);
    metrics.setLeading(false);
    expect((await registry.getMetricsAsJSON()).flatMap((m) => m.values)).to.deep.equal([]);
    // A reconcile still finishing after the lease was lost publishes nothing.
    metrics.observe(key, statusWith(cycle));
    expect(await sample(registry, 'oracle_node_ready', key)).to.equal(undefined);
    metrics.setLeading(true);
    metrics.observe(key, statusWith(cycle));
    expect(await sample(registry, 'oracle_node_requests_total', { ...key, outcome: 'seen' })).to.equal(7);
  });

  it('a new leader knows the last success from status.cycles even when the newest cycle failed', async () => {
    const registry = new Registry();
    const metrics = new OracleNodeMetrics(registry);
    const status = {
      ...statusWith({ job: 'j3', outcome: 'Failed', startTime: '2026-11-21T07:02:00Z' }),
      cycles: [
        { job: 'j2', startTime: '2026-11-21T07:01:00Z', durationSeconds: 4.5, fulfilled: 1, failed: 0, dropped: 0 },
        { job: 'j1', startTime: '2026-11-21T07:00:00Z', durationSeconds: 3, fulfilled: 0, failed: 0, dropped: 0 },
      ],
    } as OracleNodeStatus;
    metrics.observe(key, status);
    expect(await sample(registry, 'oracle_node_last_successful_cycle_timestamp_seconds', key)).to.equal(
      Date.parse('2026-11-21T07:01:04.5Z') / 1000,
    );
  });

  it('has no last success for a node that never completed a cycle', () => {
    expect(lastSuccessfulCycleSeconds({})).to.equal(undefined);
    expect(
      lastSuccessfulCycleSeconds({
        lastCycle: { job: 'j', outcome: 'Failed', completionTime: '2026-11-21T07:00:00Z' },
      }),
    ).to.equal(undefined);
  });

  describe("a window's latencies and polls, from its cycle report", () => {
    /** The report as the coordinator's ConfigMap holds it, with entries the operator must not trust. */
    const reportData = (job: string, latencySeconds: unknown) => ({
      'cycle.json': JSON.stringify({
        job,
        startTime: '2026-11-21T07:00:00Z',
        counts: { fulfilled: 3, polls: 44, idlePolls: 30 },
        latencySeconds,
      }),
    });
    const bucket = async (registry: Registry, stage: string, le: number) => {
      const metric = await registry.getSingleMetric('oracle_node_request_latency_seconds')?.get();
      return metric?.values.find(
        (v) =>
          (v as { metricName?: string }).metricName?.endsWith('_bucket') &&
          v.labels['stage'] === stage &&
          v.labels['le'] === le,
      )?.value;
    };
    const countOf = async (registry: Registry, stage: string) => {
      const metric = await registry.getSingleMetric('oracle_node_request_latency_seconds')?.get();
      return metric?.values.find(
        (v) => (v as { metricName?: string }).metricName?.endsWith('_count') && v.labels['stage'] === stage,
      )?.value;
    };

    it('observes each well-formed latency once per report, by stage, and adds the polls', async () => {
      const registry = new Registry();
      const metrics = new OracleNodeMetrics(registry);
      const report = parseCycleReport(
        reportData('j1', {
          submission: [0.8, 1.4, 2.5, 'x', -1, 1e9, null],
          inclusion: [3, 6, 61],
          fulfilment: [1],
        }),
      );
      for (let i = 0; i < 3; i++) metrics.observeCycleReport(key, report);
      expect(await countOf(registry, 'submission')).to.equal(3);
      expect(await bucket(registry, 'submission', 1)).to.equal(1);
      expect(await bucket(registry, 'submission', 3)).to.equal(3);
      expect(await countOf(registry, 'inclusion')).to.equal(3);
      expect(await bucket(registry, 'inclusion', 3)).to.equal(1);
      expect(await bucket(registry, 'inclusion', 6)).to.equal(2);
      expect(await bucket(registry, 'inclusion', 60)).to.equal(2);
      expect(await bucket(registry, 'inclusion', 90)).to.equal(3);
      expect(await sample(registry, 'oracle_node_window_polls_total', key)).to.equal(44);
      expect(await sample(registry, 'oracle_node_window_idle_polls_total', key)).to.equal(30);
      metrics.observeCycleReport(key, parseCycleReport(reportData('j2', { inclusion: [2] })));
      expect(await countOf(registry, 'inclusion')).to.equal(4);
      expect(await sample(registry, 'oracle_node_window_polls_total', key)).to.equal(88);
    });

    it('keeps at most 1000 latencies of a stage from one report', () => {
      const many = Array.from({ length: 1500 }, () => 2);
      expect(parseCycleReport(reportData('j', { inclusion: many }))?.latencySeconds?.inclusion).to.have.length(1000);
      expect(parseCycleReport(reportData('j', 'not an object'))?.latencySeconds).to.equal(undefined);
    });

    it('only the leader publishes them; a deleted node takes them along', async () => {
      const registry = new Registry();
      const metrics = new OracleNodeMetrics(registry);
      metrics.setLeading(false);
      metrics.observeCycleReport(key, parseCycleReport(reportData('j1', { inclusion: [3] })));
      expect(await countOf(registry, 'inclusion')).to.equal(undefined);
      metrics.setLeading(true);
      metrics.observeCycleReport(key, parseCycleReport(reportData('j1', { inclusion: [3] })));
      expect(await countOf(registry, 'inclusion')).to.equal(1);
      metrics.setLeading(false);
      expect(await countOf(registry, 'inclusion')).to.equal(undefined);
      expect(await sample(registry, 'oracle_node_window_polls_total', key)).to.equal(undefined);
      metrics.setLeading(true);
      metrics.observeCycleReport(key, parseCycleReport(reportData('j2', { inclusion: [3] })));
      metrics.forget(key);
      expect(await countOf(registry, 'inclusion')).to.equal(undefined);
      expect(await sample(registry, 'oracle_node_window_idle_polls_total', key)).to.equal(undefined);
    });
  });

  describe('API calls and fulfilments per sponsor, from the cycle reports', () => {
    const address = (n: number) => `0x${String(n).repeat(40)}`;
    const usageReport = (job: string, sponsors: [string, number][], apiCalls: unknown[] = []) =>
      parseCycleReport({
        'cycle.json': JSON.stringify({
          job,
          apiCalls,
          sponsorFulfilments: sponsors.map(([sponsor, count]) => ({
            chainId: '1',
            sponsor,
            outcome: 'fulfilled',
            count,
          })),
        }),
      });
    const bounds = (topSponsors?: number) => ({
      ...(topSponsors === undefined ? {} : { topSponsors }),
      endpoints: new Set([endpointKey('Prices', 'spot')]),
    });
    const sponsorCount = (registry: Registry, sponsor: string) =>
      sample(registry, 'oracle_node_sponsor_fulfilments_total', { ...key, chain: '1', sponsor, outcome: 'fulfilled' });

    it("counts each report once, the node's top N sponsors by address (first to fill the labels), the rest other", async () => {
      const registry = new Registry();
      const metrics = new OracleNodeMetrics(registry);
      const first = usageReport('j1', [
        [address(1), 5],
        [address(2), 9],
        [address(3), 1],
        ['other', 4],
      ]);
      for (let i = 0; i < 2; i++) metrics.observeCycleReport(key, first, bounds(2));
      expect(await sponsorCount(registry, address(2))).to.equal(9);
      expect(await sponsorCount(registry, address(1))).to.equal(5);
      // The coordinator's `other` and the sponsor beyond the node's N add up.
      expect(await sponsorCount(registry, 'other')).to.equal(5);
      // A bigger newcomer finds no free label; the labelled keep theirs though absent from this run.
      metrics.observeCycleReport(key, usageReport('j2', [[address(4), 100]]), bounds(2));
      expect(await sponsorCount(registry, 'other')).to.equal(105);
      expect(await sponsorCount(registry, address(4))).to.equal(undefined);
      expect(await sponsorCount(registry, address(2))).to.equal(9);
    });

    it("counts API calls only under the node's own OIS and endpoints; a deleted node takes the series along", async () => {
      const registry = new Registry();
      const metrics = new OracleNodeMetrics(registry);
      const report = usageReport(
        'j1',
        [[address(1), 1]],
        [
          { ois: 'Prices', endpoint: 'spot', outcome: '2xx', count: 7 },
          { ois: 'Prices', endpoint: 'spot', outcome: 'deferred', count: 2 },
          { ois: 'Invented', endpoint: 'spot', outcome: '2xx', count: 1 },
        ],
      );
      metrics.observeCycleReport(key, report, bounds());
      const calls = (labels: Record<string, string>) => sample(registry, 'oracle_node_api_calls_total', labels);
      expect(await calls({ ...key, ois: 'Prices', endpoint: 'spot', outcome: '2xx' })).to.equal(7);
      expect(await calls({ ...key, ois: 'Prices', endpoint: 'spot', outcome: 'deferred' })).to.equal(2);
      expect(await calls({ ois: 'Invented' })).to.equal(undefined);
      metrics.forget(key);
      expect(await calls(key)).to.equal(undefined);
      expect(await sponsorCount(registry, address(1))).to.equal(undefined);
    });

    it("counts deferred requests by the node's own OIS and class from each report once; a deleted node takes them along", async () => {
      const registry = new Registry();
      const metrics = new OracleNodeMetrics(registry);
      const report = parseCycleReport({
        'cycle.json': JSON.stringify({
          job: 'j1',
          apiDeferrals: [
            { ois: 'Prices', statusClass: '429', count: 3 },
            { ois: 'Prices', statusClass: 'no response', count: 1 },
            { ois: 'Invented', statusClass: '5xx', count: 9 },
            { ois: 'Prices', statusClass: 'whatever', count: 4 },
          ],
        }),
      });
      for (let i = 0; i < 2; i++) metrics.observeCycleReport(key, report, bounds());
      const deferrals = (labels: Record<string, string>) => sample(registry, 'oracle_node_api_deferrals_total', labels);
      expect(await deferrals({ ...key, ois: 'Prices', status_class: '429' })).to.equal(3);
      expect(await deferrals({ ...key, ois: 'Prices', status_class: 'no response' })).to.equal(1);
      expect(await deferrals({ ois: 'Invented' })).to.equal(undefined);
      metrics.forget(key);
      expect(await deferrals(key)).to.equal(undefined);
    });
  });

  it('removes every series of a deleted OracleNode', async () => {
    const registry = new Registry();
    const metrics = new OracleNodeMetrics(registry);
    metrics.observe(key, statusWith(cycle));
    metrics.forget(key);
    for (const name of [
      'oracle_node_ready',
      'oracle_node_provider_up',
      'oracle_node_requests_total',
      'oracle_node_sponsor_wallet_balance_wei',
    ])
      expect(await sample(registry, name, key), name).to.equal(undefined);
  });
});

describe('provider health in status.lastCycle', () => {
  it('computes block lag against the best provider of the same chain, never for a provider that is down', () => {
    expect(
      providerHealth([
        { chainId: '1', provider: 'a', ok: true, currentBlock: 100 },
        { chainId: '1', provider: 'b', ok: true, currentBlock: 97 },
        { chainId: '1', provider: 'c', ok: false },
        { chainId: '5', provider: 'd', ok: true, currentBlock: 7 },
      ]),
    ).to.deep.equal([
      { chainId: '1', provider: 'a', up: true, blockLag: 0 },
      { chainId: '1', provider: 'b', up: true, blockLag: 3 },
      { chainId: '1', provider: 'c', up: false },
      { chainId: '5', provider: 'd', up: true, blockLag: 0 },
    ]);
  });

  it('shows why a provider was left out, and the lag of one left out for lagging', () => {
    const report = parseCycleReport({
      'cycle.json': JSON.stringify({
        providers: [
          { chainId: '1', provider: 'a', ok: true, currentBlock: 500 },
          { chainId: '1', provider: 'stale', ok: false, fault: 'lagging', currentBlock: 400 },
          { chainId: '1', provider: 'mainnet', ok: false, fault: 'wrong-chain' },
          { chainId: '1', provider: 'odd', ok: false, fault: 'Not A Fault <b>' },
        ],
      }),
    });
    expect(providerHealth(report?.providers)).to.deep.equal([
      { chainId: '1', provider: 'a', up: true, blockLag: 0 },
      { chainId: '1', provider: 'stale', up: false, fault: 'lagging', blockLag: 100 },
      { chainId: '1', provider: 'mainnet', up: false, fault: 'wrong-chain' },
    ]);
  });

  it('keeps only well-formed sponsor wallet balances from the report', () => {
    const job = { metadata: { name: 'j1' }, status: { startTime: new Date('2026-11-21T07:00:00Z') } };
    const report = parseCycleReport({
      'cycle.json': JSON.stringify({
        job: 'j1',
        counts: { fulfilled: 1 },
        sponsorWallets: [
          { chainId: '1', sponsorWallet: '0x228A54F33E46fbb32a62ca650Fcc9eD3C730511d', balanceWei: '12' },
          { chainId: '1', sponsorWallet: 'not-an-address', balanceWei: '1' },
          { chainId: '1', sponsorWallet: '0x228A54F33E46fbb32a62ca650Fcc9eD3C730511d', balanceWei: '-5' },
        ],
      }),
    });
    const cycle = lastCycle([job as never], report);
    expect(cycle?.sponsorWallets).to.deep.equal([
      { chainId: '1', sponsorWallet: '0x228A54F33E46fbb32a62ca650Fcc9eD3C730511d', balanceWei: '12' },
    ]);
  });

  it("a standby's report gives status.lastCycle its role and served count, and the standby-serving metrics", async () => {
    const job = (name: string) => ({
      metadata: { name },
      status: {
        startTime: new Date('2026-11-21T07:00:00Z'),
        completionTime: new Date('2026-11-21T07:00:50Z'),
        succeeded: 1,
        conditions: [{ type: 'Complete', status: 'True' }],
      },
    });
    const reported = (name: string, report: Record<string, unknown>) =>
      lastCycle([job(name) as never], parseCycleReport({ 'cycle.json': JSON.stringify({ job: name, ...report }) }))!;
    const serving = reported('j1', { role: 'standby', counts: { fulfilled: 2, failed: 1, standbyServed: 3 } });
    expect(serving.role).to.equal('standby');
    expect(serving.counts?.['standbyServed']).to.equal(3);
    // The metrics come from each report once (it may precede its Job's completion), whatever the status says.
    const report = (name: string, body: Record<string, unknown>) =>
      parseCycleReport({ 'cycle.json': JSON.stringify({ job: name, ...body }) });
    const registry = new Registry();
    const metrics = new OracleNodeMetrics(registry);
    for (let i = 0; i < 2; i++)
      metrics.observeCycleReport(key, report('j1', { role: 'standby', counts: { fulfilled: 3, standbyServed: 3 } }));
    expect(await sample(registry, 'oracle_node_standby_serving', key)).to.equal(1);
    expect(await sample(registry, 'oracle_node_standby_served_requests_total', key)).to.equal(3);
    // The primary back: the standby's next cycle served nothing.
    metrics.observeCycleReport(key, report('j2', { role: 'standby', counts: { fulfilled: 0, standbyServed: 0 } }));
    expect(await sample(registry, 'oracle_node_standby_serving', key)).to.equal(0);
    expect(await sample(registry, 'oracle_node_standby_served_requests_total', key)).to.equal(3);
    // A primary's report (no role: an older engine, or a primary) never reads as a standby serving.
    const primary = reported('j3', { counts: { fulfilled: 4, standbyServed: 4 } });
    expect(primary.role).to.equal(undefined);
    metrics.observeCycleReport(key, report('j3', { counts: { fulfilled: 4, standbyServed: 4 } }));
    expect(await sample(registry, 'oracle_node_standby_serving', key)).to.equal(0);
    expect(reported('j4', { role: 'leader', counts: { fulfilled: 1 } }).role).to.equal(undefined);
    metrics.forget(key);
    expect(await sample(registry, 'oracle_node_standby_serving', key)).to.equal(undefined);
  });

  it('comes from the cycle report of the newest coordinator Job', () => {
    const job = {
      metadata: { name: 'j1' },
      status: {
        startTime: new Date('2026-11-21T07:00:00Z'),
        succeeded: 1,
        conditions: [{ type: 'Complete', status: 'True' }],
      },
    };
    const cycle = lastCycle([job as never], {
      job: 'j1',
      counts: { fulfilled: 1 },
      providers: [{ chainId: '1', provider: 'a', ok: true, currentBlock: 5 }],
    });
    expect(cycle?.providers).to.deep.equal([{ chainId: '1', provider: 'a', up: true, blockLag: 0 }]);
  });
});
