import type { V1ConfigMap } from '@kubernetes/client-node';
import { expect } from 'chai';
import { CYCLE_REPORT_KEY } from '../../../../src/contract/pods.js';
import { parseRequestLog, REQUEST_LOG_KEY } from '../../../../src/contract/request-log.js';
import type { ConfigMapStore } from '../../../../src/node/kubernetes/config-map-store.js';
import { writeCycleReport } from '../../../../src/node/kubernetes/cycle-report.js';

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
});
