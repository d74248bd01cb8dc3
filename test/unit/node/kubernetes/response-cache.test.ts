import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { expect } from 'chai';
import { ApiError } from '../../../../src/kube/api.js';
import { FileResponseCache, type ResponseCache } from '../../../../src/node/cache.js';
import type { ConfigMapStore } from '../../../../src/node/kubernetes/config-map-store.js';
import {
  ConfigMapResponseCache,
  MAX_RESPONSE_CACHE_BYTES,
  pruneResponseCache,
} from '../../../../src/node/kubernetes/response-cache.js';

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

  it('keeps which side served an entry (primary or standby), locally and in the ConfigMap; anything else is dropped', async () => {
    const local = new FileResponseCache(mkdtempSync(join(tmpdir(), 'cache-role-')));
    const inConfigMap = new ConfigMapResponseCache({ store: store() });
    for (const cache of [local, inConfigMap] as ResponseCache[]) {
      await cache.set(id(1), { encodedValue: '0x01', signature: '0xs1', servedBy: 'standby' });
      await cache.set(id(2), { encodedValue: '0x02', signature: '0xs2' });
      await cache.flush?.();
      expect(await cache.get(id(1))).to.deep.equal({ encodedValue: '0x01', signature: '0xs1', servedBy: 'standby' });
      expect(await cache.get(id(2))).to.deep.equal({ encodedValue: '0x02', signature: '0xs2' });
    }
    writeFileSync(
      join(local.directory, `requestId-${id(3)}`),
      JSON.stringify({ encodedValue: '0x03', signature: '0xs3', servedBy: 'someone' }),
    );
    expect(await local.get(id(3))).to.deep.equal({ encodedValue: '0x03', signature: '0xs3' });
  });

  it('stores by requestId across instances (cycles), retries conflicts, prunes by TTL; a batch reads once, writes once', async () => {
    const backing = store();
    let reads = 0;
    let writes = 0;
    const read = backing.read;
    const replace = backing.replace;
    backing.read = async () => {
      reads++;
      return read();
    };
    backing.replace = async (next) => {
      writes++;
      return replace(next);
    };
    let now = 1000;
    const cache = new ConfigMapResponseCache({ store: backing, ttlMs: 10_000, now: () => now });
    expect(await cache.get(id(1))).to.equal(undefined);
    expect(await cache.get(id(2))).to.equal(undefined);
    await cache.set(id(1), { encodedValue: '0x01', signature: '0xs1' });
    await cache.set(id(2), { encodedValue: '0x02', signature: '0xs2' });
    expect(await cache.get(id(1)), 'set, not yet written').to.deep.equal({ encodedValue: '0x01', signature: '0xs1' });
    expect([reads, writes]).to.deep.equal([1, 0]);
    backing.conflicts = 2;
    await cache.flush();
    // One read for the gets, then the update: a read and a write per attempt (two conflicts).
    expect([reads, writes]).to.deep.equal([4, 3]);
    const nextCycle = new ConfigMapResponseCache({ store: backing, ttlMs: 10_000, now: () => now });
    expect(await nextCycle.get(id(1))).to.deep.equal({ encodedValue: '0x01', signature: '0xs1' });
    expect(await nextCycle.get(id(9))).to.equal(undefined);
    expect(reads).to.equal(5);
    await nextCycle.flush(); // nothing new: no write
    expect(writes).to.equal(3);
    now += 20_000;
    expect(await nextCycle.get(id(2)), 'expired').to.equal(undefined);
    await cache.set(id(5), { encodedValue: '0x05', signature: '0xs5' });
    await cache.flush();
    expect(Object.keys(backing.configMap.data!)).to.deep.equal([`requestId-${id(5)}`]);
  });

  it('prunes to a byte budget, oldest first: big entries never make the ConfigMap pass it', () => {
    // 2,000 entries of a 40-character string answer were 1,038,000 bytes with an entry bound.
    const value = (at: number) =>
      JSON.stringify({ encodedValue: `0x${'ab'.repeat(128)}`, signature: `0x${'cd'.repeat(65)}`, at });
    const data: Record<string, string> = { other: 'kept' };
    for (let n = 0; n < 2000; n++) data[`requestId-${id(n)}`] = value(n);
    const pruned = pruneResponseCache(data, { now: 2000, ttlMs: 10_000, maxBytes: MAX_RESPONSE_CACHE_BYTES });
    const bytes = Object.entries(pruned).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0);
    expect(bytes).to.be.at.most(MAX_RESPONSE_CACHE_BYTES);
    expect(MAX_RESPONSE_CACHE_BYTES).to.be.below((1024 * 1024) / 2 + 1);
    expect(pruned['other']).to.equal('kept');
    // The newest stay, the oldest went.
    expect(pruned).to.have.property(`requestId-${id(1999)}`);
    expect(pruned).to.not.have.property(`requestId-${id(0)}`);
    const kept = Object.keys(pruned).filter((k) => k.startsWith('requestId-')).length;
    expect(kept).to.be.within(900, 1100);
    // Expired and unreadable entries go first, whatever the budget.
    expect(
      pruneResponseCache(
        { [`requestId-${id(1)}`]: value(0), [`requestId-${id(2)}`]: 'garbled' },
        {
          now: 20_000,
          ttlMs: 10_000,
          maxBytes: MAX_RESPONSE_CACHE_BYTES,
        },
      ),
    ).to.deep.equal({});
  });

  it('a failed write rejects flush and keeps the entries for the next one, which writes them', async () => {
    const backing = store();
    const replace = backing.replace;
    backing.replace = async () => {
      throw new ApiError('PUT configmaps/n-cache: 403 forbidden', 403, 'Forbidden');
    };
    const cache = new ConfigMapResponseCache({ store: backing });
    await cache.set(id(1), { encodedValue: '0x01', signature: '0xs1' });
    const error = await cache.flush().catch((e: unknown) => e);
    expect(String(error)).to.contain('403');
    expect(cache.writeFailures).to.equal(1);
    expect(await cache.get(id(1))).to.deep.equal({ encodedValue: '0x01', signature: '0xs1' });
    backing.replace = replace;
    await cache.flush();
    expect(Object.keys(backing.configMap.data!)).to.deep.equal([`requestId-${id(1)}`]);
  });
});
