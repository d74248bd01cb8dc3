import type { V1ConfigMap } from '@kubernetes/client-node';
import { expect } from 'chai';
import { ApiError } from '../../../../src/kube/api.js';
import type { ConfigMapStore } from '../../../../src/node/kubernetes/config-map-store.js';
import { ConfigMapResponseCache } from '../../../../src/node/kubernetes/response-cache.js';

describe('ConfigMapResponseCache', () => {
  const id = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;
  function store(): ConfigMapStore & { configMap: V1ConfigMap; conflicts: number } {
    const s = {
      configMap: { metadata: { name: 'n-cache', resourceVersion: '1' }, data: {} } as V1ConfigMap,
      conflicts: 0,
      async read() {
        return structuredClone(s.configMap);
      },
      async replace(next: V1ConfigMap) {
        if (s.conflicts > 0) {
          s.conflicts--;
          throw new ApiError('PUT configmaps/n-cache: 409 conflict', 409, 'Conflict');
        }
        s.configMap = {
          ...next,
          metadata: { ...next.metadata, resourceVersion: String(Number(next.metadata!.resourceVersion) + 1) },
        };
        return s.configMap;
      },
    };
    return s;
  }

  it('stores by requestId across instances (cycles), retries conflicts, prunes by TTL and size', async () => {
    const backing = store();
    let now = 1000;
    const cache = new ConfigMapResponseCache({ store: backing, ttlMs: 10_000, maxEntries: 3, now: () => now });
    await cache.set(id(1), { encodedValue: '0x01', signature: '0xs1' });
    backing.conflicts = 2;
    await cache.set(id(2), { encodedValue: '0x02', signature: '0xs2' });
    const nextCycle = new ConfigMapResponseCache({ store: backing, ttlMs: 10_000, maxEntries: 3, now: () => now });
    expect(await nextCycle.get(id(1))).to.deep.equal({ encodedValue: '0x01', signature: '0xs1' });
    expect(await nextCycle.get(id(9))).to.equal(undefined);
    now += 1;
    await cache.set(id(3), { encodedValue: '0x03', signature: '0xs3' });
    now += 1;
    await cache.set(id(4), { encodedValue: '0x04', signature: '0xs4' });
    expect(Object.keys(backing.configMap.data!)).to.have.length(3);
    expect(await cache.get(id(1))).to.equal(undefined);
    now += 20_000;
    expect(await cache.get(id(4))).to.equal(undefined);
    await cache.set(id(5), { encodedValue: '0x05', signature: '0xs5' });
    expect(Object.keys(backing.configMap.data!)).to.deep.equal([`requestId-${id(5)}`]);
  });
});
