import { expect } from 'chai';
import type { CycleSummary } from '../../../../src/node/cycle.js';
import { cycleCounts } from '../../../../src/node/kubernetes/cycle-report.js';
import { coordinatorKubernetes, workerKubernetesCache } from '../../../../src/node/kubernetes/index.js';

describe('coordinator in operator pods', () => {
  it('reports flat integer counts of a cycle', () => {
    const summary: CycleSummary = {
      providers: [
        { chainId: '1', provider: 'a', ok: true, rpcCalls: 3 },
        { chainId: '1', provider: 'b', ok: false, rpcCalls: 2 },
      ],
      requests: { discovered: 5, servable: 4, waitingForConfirmations: 1, overChainLimit: 0 },
      shards: { total: 2, failed: 0 },
      transactions: { fulfilled: 3, failed: 1, withdrawn: 0, skipped: 0, errors: 0 },
      apiCalls: 3,
      cacheHits: 1,
      rpcCalls: 9,
      timings: { discoveryMs: 1, shardsMs: 2 },
      sponsorWallets: [],
      results: [],
    };
    const counts = cycleCounts(summary);
    expect(counts).to.include({
      discovered: 5,
      fulfilled: 3,
      failed: 1,
      providersUp: 1,
      providersDown: 1,
      cacheHits: 1,
    });
    for (const value of Object.values(counts)) expect(Number.isInteger(value)).to.equal(true);
  });

  it('stays local (no Kubernetes client) outside operator pods', async () => {
    expect(await coordinatorKubernetes({})).to.equal(undefined);
    expect(await workerKubernetesCache({})).to.equal(undefined);
  });
});
