import type { V1ConfigMap } from '@kubernetes/client-node';
import { expect } from 'chai';
import { MAX_TOP_SPONSORS } from '../../../../src/common/sponsor-labels.js';
import { CYCLE_REPORT_KEY, parseCycleReport } from '../../../../src/contract/pods.js';
import { parseRequestLog, REQUEST_LOG_KEY } from '../../../../src/contract/request-log.js';
import { emptySummary } from '../../../../src/node/cycle-summary.js';
import type { ConfigMapStore } from '../../../../src/node/kubernetes/config-map-store.js';
import { cycleReport, writeCycleReport } from '../../../../src/node/kubernetes/cycle-report.js';

describe('cycle report ConfigMap', () => {
  it("writes the cycle's requests into the request log beside the report, merged with what it held", async () => {
    let stored: V1ConfigMap = { metadata: { name: 'n-cycle' }, data: { other: 'kept' } };
    const store: ConfigMapStore = {
      read: async () => structuredClone(stored),
      replace: async (configMap) => {
        stored = configMap;
        return configMap;
      },
    };
    const requestId = (n: number) => `0x${String(n).repeat(64)}`;
    const seen = (n: number, time: string) => ({
      chainId: '1',
      requestId: requestId(n),
      state: 'waitingForConfirmations' as const,
      lastSeen: { job: 'j', time },
    });
    await writeCycleReport(store, { outcome: 'Completed' }, [seen(1, '2026-11-25T10:00:00Z')]);
    await writeCycleReport(store, { outcome: 'Completed' }, [
      seen(2, '2026-11-25T10:01:00Z'),
      seen(1, '2026-11-25T10:01:00Z'),
    ]);
    expect(stored.data!['other']).to.equal('kept');
    expect(JSON.parse(stored.data![CYCLE_REPORT_KEY]!)).to.deep.equal({ outcome: 'Completed' });
    const log = parseRequestLog(stored.data![REQUEST_LOG_KEY]);
    expect(log.map((r) => [r.requestId, r.cycles])).to.deep.equal([
      [requestId(2), 1],
      [requestId(1), 2],
    ]);
  });

  it('reports the answers of at most N sponsors by address, the rest as other, all of it within what the operator reads', () => {
    const summary = emptySummary();
    const address = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;
    for (let n = 1; n <= 600; n++)
      summary.results.push({
        ok: true,
        output: {
          chainId: '1',
          sponsor: address(n),
          sponsorWallet: address(10_000 + n),
          outcomes: [
            { id: `${n}a`, kind: 'api', outcome: 'fulfilled' },
            { id: `${n}b`, kind: 'api', outcome: 'failed' },
            // More requests from the first sponsors: they are the run's biggest.
            ...(n <= 5 ? [{ id: `${n}c`, kind: 'api' as const, outcome: 'fulfilled' as const }] : []),
          ],
          apiCalls: 0,
          cacheHits: 0,
          rpcCalls: 0,
          timings: { apiMs: 0, planMs: 0, sendMs: 0 },
        },
      });
    const reported = parseCycleReport({
      [CYCLE_REPORT_KEY]: JSON.stringify(cycleReport(summary, { topSponsors: MAX_TOP_SPONSORS })),
    })!.sponsorFulfilments!;
    const named = new Set(reported.filter((e) => e.sponsor !== 'other').map((e) => e.sponsor));
    expect(named.size).to.equal(MAX_TOP_SPONSORS);
    for (let n = 1; n <= 5; n++) expect(named.has(address(n)), address(n)).to.equal(true);
    const total = (outcome: string) =>
      reported.filter((e) => e.outcome === outcome).reduce((sum, e) => sum + e.count, 0);
    expect(total('fulfilled')).to.equal(605);
    expect(total('failed')).to.equal(600);
    expect(cycleReport(summary, { topSponsors: 2 }).sponsorFulfilments).to.have.length(6);
  });
});
