// Response cache for `cacheResponses: true` triggers (airnode-facts §3 step 7): a successful, signed
// response is stored by requestId and reused instead of calling the API again. Locally a directory of
// files (one per request, written atomically); the operator supplies its own store behind the same interface.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { NodeRole } from '../contract/request-log.js';
import { isBytes32 } from '../protocol/ids.js';

export type CachedResponse = {
  encodedValue: string;
  signature: string;
  /** Which side of a redundant deployment called the API (docs/chain-cycle.md, "Standby"); absent in older entries. */
  servedBy?: NodeRole;
};

/** The `servedBy` of a stored entry, when it is one of the roles (entries are read back as untrusted input). */
export const servedByOf = (value: unknown): { servedBy?: NodeRole } =>
  value === 'primary' || value === 'standby' ? { servedBy: value } : {};

export interface ResponseCache {
  get(requestId: string): Promise<CachedResponse | undefined>;
  set(requestId: string, value: CachedResponse): Promise<void>;
  /**
   * A store that writes in batches (the ConfigMap on Kubernetes): writes what `set` recorded since the last flush,
   * once a batch of shards has its answers and before their transactions leave. Rejects when the write failed; the
   * caller logs it and goes on (a cache that could not be written never stops a fulfilment).
   */
  flush?(): Promise<void>;
}

export class FileResponseCache implements ResponseCache {
  constructor(readonly directory: string) {}

  private path(requestId: string): string {
    if (!isBytes32(requestId)) throw new Error('cache key must be a requestId');
    return join(this.directory, `requestId-${requestId.toLowerCase()}`);
  }

  async get(requestId: string): Promise<CachedResponse | undefined> {
    try {
      const value = JSON.parse(await readFile(this.path(requestId), 'utf8')) as Partial<CachedResponse>;
      if (typeof value.encodedValue === 'string' && typeof value.signature === 'string') {
        return { encodedValue: value.encodedValue, signature: value.signature, ...servedByOf(value.servedBy) };
      }
    } catch {
      // missing or unreadable: treated as absent
    }
    return undefined;
  }

  async set(requestId: string, value: CachedResponse): Promise<void> {
    await mkdir(this.directory, { recursive: true });
    const target = this.path(requestId);
    const temporary = `${target}.${process.pid}.tmp`;
    await writeFile(temporary, JSON.stringify(value));
    await rename(temporary, target);
  }
}

export class MemoryResponseCache implements ResponseCache {
  readonly entries = new Map<string, CachedResponse>();
  async get(requestId: string) {
    return this.entries.get(requestId.toLowerCase());
  }
  async set(requestId: string, value: CachedResponse) {
    this.entries.set(requestId.toLowerCase(), value);
  }
}
