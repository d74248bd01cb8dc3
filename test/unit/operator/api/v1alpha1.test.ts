import type { V1ConfigMap, V1Job } from '@kubernetes/client-node';
import { expect } from 'chai';
import { LABELS } from '../../../../src/contract/pods.js';
import { oracleNodeSpecSchema, oracleNodeStatusSchema } from '../../../../src/operator/api/v1alpha1.js';
import { createOracleNodeReconciler } from '../../../../src/operator/controller.js';
import { KINDS, type OracleNode } from '../../../../src/operator/resource.js';
import { FakeKube, loadSample } from '../fake-kube.js';

describe('OracleNode API v1alpha1', () => {
  for (const sample of ['minimal', 'full-multi-chain', 'gateways-only'] as const)
    it(`the ${sample} sample's spec is what the spec schema describes`, () => {
      const parsed = oracleNodeSpecSchema.safeParse(loadSample(sample).node.spec);
      expect(parsed.error?.issues ?? []).to.deep.equal([]);
    });

  it('the status a reconcile writes, with a full cycle report, is what the status schema describes', async () => {
    const kube = new FakeKube();
    const { node, secret } = loadSample('full-multi-chain');
    kube.put(KINDS.oracleNode, node);
    kube.put(KINDS.secret, secret);
    const reconciler = createOracleNodeReconciler({ now: () => new Date('2026-01-01T00:00:00Z') });
    const key = { namespace: 'default', name: node.metadata.name };
    await reconciler.reconcile(key, kube.context());
    const job: V1Job = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name: 'c-1',
        namespace: 'default',
        labels: { [LABELS.name]: node.metadata.name, [LABELS.component]: 'coordinator', [LABELS.stage]: 'prod-a' },
      },
      status: { startTime: new Date('2026-01-01T00:00:00Z') },
    };
    kube.put(KINDS.job, job);
    const cycle = kube.get<V1ConfigMap>(KINDS.configMap, {
      namespace: 'default',
      name: `${node.metadata.name}-cycle`,
    })!;
    cycle.data = {
      'cycle.json': JSON.stringify({
        job: 'c-1',
        outcome: 'PartiallyFailed',
        startTime: '2026-01-01T00:00:00.000Z',
        durationMs: 2500,
        counts: { fulfilled: 3, failed: 1, overChainLimit: 2 },
        providers: [{ chainId: '1', provider: 'a', ok: true, currentBlock: 100 }],
        sponsorWallets: [{ chainId: '1', sponsorWallet: `0x${'12'.repeat(20)}`, balanceWei: '1000' }],
        gasPrices: [{ chainId: '1', gasPriceWei: '20000000000' }],
        heartbeat: 'Sent',
        failedRequests: [{ chainId: '1', requestId: `0x${'ab'.repeat(32)}`, reason: 'reverted' }],
      }),
    };
    await reconciler.reconcile(key, kube.context());
    const status = kube.get<OracleNode>(KINDS.oracleNode, key)!.status!;
    expect(status.cycles).to.have.length(1);
    expect(status.recentFailedRequests).to.have.length(1);
    expect(status.lastCycle).to.include({ job: 'c-1', heartbeat: 'Sent' });
    expect(status.lastCycle!.sponsorWallets).to.have.length(1);
    const parsed = oracleNodeStatusSchema.safeParse(status);
    expect(parsed.error?.issues ?? []).to.deep.equal([]);
  });
});
