// The response cache of `cacheResponses` triggers on Kubernetes, in the OracleNode's `<name>-cache` ConfigMap:
// it survives cycles (each is a new pod) and stage rollouts, and stays bounded by TTL and by bytes. A batch of
// shards (one chain's, in one cycle or poll) reads it once and writes it once: `set` only records the entry, and
// `flush` merges the batch's new entries into the ConfigMap in one update (again from a fresh read on a conflict).
import { isBytes32 } from '../../protocol/ids.js';
import { type CachedResponse, type ResponseCache, servedByOf } from '../cache.js';
import { type ConfigMapStore, updateConfigMapData } from './config-map-store.js';

type CacheEntry = CachedResponse & { at: number };

/**
 * What the cache's data may hold, keys and values in UTF-8 bytes: half the API server's 1 MiB object limit, so the
 * ConfigMap's other keys and metadata and one more batch's entries always fit. About 1,000 entries of a 40-character
 * string answer (some 520 bytes each).
 */
export const MAX_RESPONSE_CACHE_BYTES = 512 * 1024;

export type ConfigMapResponseCacheOptions = {
  store: ConfigMapStore;
  /** Entries older than this are pruned on write. Default 24 h (a request is not retried after a day). */
  ttlMs?: number;
  /** Bound on the data's bytes; the oldest entries go first. Default MAX_RESPONSE_CACHE_BYTES. */
  maxBytes?: number;
  now?: () => number;
};

const ENTRY_PREFIX = 'requestId-';
const entryKey = (requestId: string) => `${ENTRY_PREFIX}${requestId.toLowerCase()}`;

function entryTime(raw: string): number {
  try {
    const at = (JSON.parse(raw) as Partial<CacheEntry>).at;
    return typeof at === 'number' ? at : 0;
  } catch {
    return 0; // unreadable: oldest
  }
}

const bytesOf = (key: string, value: string) => Buffer.byteLength(key) + Buffer.byteLength(value);

/**
 * The cache's data without expired entries and, above `maxBytes` (all keys and values), without its oldest entries
 * until it fits. Keys that are not entries are kept and counted.
 */
export function pruneResponseCache(
  data: Record<string, string>,
  options: { now: number; ttlMs: number; maxBytes: number },
): Record<string, string> {
  const pruned: Record<string, string> = {};
  const entries: { key: string; at: number; bytes: number }[] = [];
  let total = 0;
  for (const [key, value] of Object.entries(data)) {
    if (key.startsWith(ENTRY_PREFIX)) {
      const at = entryTime(value);
      if (options.now - at > options.ttlMs) continue;
      entries.push({ key, at, bytes: bytesOf(key, value) });
    }
    pruned[key] = value;
    total += bytesOf(key, value);
  }
  entries.sort((a, b) => a.at - b.at);
  for (const entry of entries) {
    if (total <= options.maxBytes) break;
    delete pruned[entry.key];
    total -= entry.bytes;
  }
  return pruned;
}

export class ConfigMapResponseCache implements ResponseCache {
  private readonly ttlMs: number;
  private readonly maxBytes: number;
  private readonly now: () => number;
  /** The ConfigMap's data as this batch read it, once. */
  private snapshot: Promise<Record<string, string>> | undefined;
  /** Entries set since the last successful flush, by key (kept for the next flush when a write fails). */
  private readonly pending = new Map<string, string>();
  /** Flushes that could not write the ConfigMap, for the cycle report. */
  writeFailures = 0;

  constructor(private readonly options: ConfigMapResponseCacheOptions) {
    this.ttlMs = options.ttlMs ?? 24 * 3600_000;
    this.maxBytes = options.maxBytes ?? MAX_RESPONSE_CACHE_BYTES;
    this.now = options.now ?? Date.now;
  }

  async get(requestId: string): Promise<CachedResponse | undefined> {
    if (!isBytes32(requestId)) return undefined;
    const key = entryKey(requestId);
    const raw = this.pending.get(key) ?? (await this.read())[key];
    if (!raw) return undefined;
    try {
      const entry = JSON.parse(raw) as Partial<CacheEntry>;
      if (typeof entry.encodedValue !== 'string' || typeof entry.signature !== 'string') return undefined;
      if (typeof entry.at === 'number' && this.now() - entry.at > this.ttlMs) return undefined;
      return { encodedValue: entry.encodedValue, signature: entry.signature, ...servedByOf(entry.servedBy) };
    } catch {
      return undefined;
    }
  }

  /** Records the entry; it reaches the ConfigMap at the next flush. */
  async set(requestId: string, value: CachedResponse): Promise<void> {
    if (!isBytes32(requestId)) throw new Error('cache key must be a requestId');
    this.pending.set(entryKey(requestId), JSON.stringify({ ...value, at: this.now() }));
  }

  /**
   * Writes the entries set since the last flush in one update, pruned to the byte budget; the next `get` reads the
   * ConfigMap again. Rejects when the write fails: the entries stay for the next flush (pruned to the same budget).
   */
  async flush(): Promise<void> {
    this.snapshot = undefined;
    if (this.pending.size === 0) return;
    const entries = Object.fromEntries(this.pending);
    const prune = (data: Record<string, string>) =>
      pruneResponseCache(data, { now: this.now(), ttlMs: this.ttlMs, maxBytes: this.maxBytes });
    try {
      const stored = await updateConfigMapData(
        this.options.store,
        (data) => prune({ ...data, ...entries }),
        'the response cache ConfigMap',
      );
      if (!stored) throw new Error('the response cache ConfigMap does not exist');
      for (const key of Object.keys(entries)) this.pending.delete(key);
    } catch (error) {
      this.writeFailures++;
      const kept = prune(Object.fromEntries(this.pending));
      for (const key of this.pending.keys()) if (!(key in kept)) this.pending.delete(key);
      throw error;
    }
  }

  private read(): Promise<Record<string, string>> {
    this.snapshot ??= this.options.store.read().then(
      (configMap) => configMap?.data ?? {},
      (error: unknown) => {
        this.snapshot = undefined; // read again by the next get
        throw error;
      },
    );
    return this.snapshot;
  }
}
