// The response cache of `cacheResponses` triggers on Kubernetes, in the OracleNode's `<name>-cache` ConfigMap:
// it survives cycles (each is a new pod) and stage rollouts, and stays bounded by TTL and entry count.
import { isBytes32 } from '../../protocol/ids.js';
import type { CachedResponse, ResponseCache } from '../cache.js';
import { type ConfigMapStore, updateConfigMapData } from './config-map-store.js';

type CacheEntry = CachedResponse & { at: number };

export type ConfigMapResponseCacheOptions = {
  store: ConfigMapStore;
  /** Entries older than this are pruned on write. Default 24 h (a request is not retried after a day). */
  ttlMs?: number;
  /** Bound on the number of entries; the oldest go first. Default 2000 (well under the 1 MiB object limit). */
  maxEntries?: number;
  now?: () => number;
};

const ENTRY_PREFIX = 'requestId-';
const entryKey = (requestId: string) => `${ENTRY_PREFIX}${requestId.toLowerCase()}`;

export class ConfigMapResponseCache implements ResponseCache {
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(private readonly options: ConfigMapResponseCacheOptions) {
    this.ttlMs = options.ttlMs ?? 24 * 3600_000;
    this.maxEntries = options.maxEntries ?? 2000;
    this.now = options.now ?? Date.now;
  }

  async get(requestId: string): Promise<CachedResponse | undefined> {
    if (!isBytes32(requestId)) return undefined;
    const configMap = await this.options.store.read();
    const raw = configMap?.data?.[entryKey(requestId)];
    if (!raw) return undefined;
    try {
      const entry = JSON.parse(raw) as Partial<CacheEntry>;
      if (typeof entry.encodedValue !== 'string' || typeof entry.signature !== 'string') return undefined;
      if (typeof entry.at === 'number' && this.now() - entry.at > this.ttlMs) return undefined;
      return { encodedValue: entry.encodedValue, signature: entry.signature };
    } catch {
      return undefined;
    }
  }

  async set(requestId: string, value: CachedResponse): Promise<void> {
    if (!isBytes32(requestId)) throw new Error('cache key must be a requestId');
    const stored = await updateConfigMapData(
      this.options.store,
      (data) => {
        const pruned = this.prune(data);
        pruned[entryKey(requestId)] = JSON.stringify({ ...value, at: this.now() });
        return pruned;
      },
      'the response cache ConfigMap',
    );
    if (!stored) throw new Error('the response cache ConfigMap does not exist');
  }

  /** Drops expired entries and, above the bound, the oldest ones (room for the one being added). */
  private prune(data: Record<string, string>): Record<string, string> {
    const entries: [string, number][] = [];
    for (const [key, raw] of Object.entries(data)) {
      if (!key.startsWith(ENTRY_PREFIX)) continue;
      let at = 0;
      try {
        at = (JSON.parse(raw) as Partial<CacheEntry>).at ?? 0;
      } catch {
        // unreadable: oldest
      }
      if (this.now() - at > this.ttlMs) delete data[key];
      else entries.push([key, at]);
    }
    entries.sort((a, b) => a[1] - b[1]);
    while (entries.length >= this.maxEntries) delete data[entries.shift()![0]];
    return data;
  }
}
