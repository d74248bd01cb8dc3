// An in-memory Lease API with the apiserver's optimistic concurrency (resourceVersions, 409 on a stale write), for the
// hand-over's Lease rules (src/node/kubernetes/handover.ts) in unit and component tests: each `client()` is one
// process's view, which can be cut off (`down`: every call fails as an unreachable apiserver would).
import { ApiError } from '../../src/kube/errors.js';
import type { Lease, LeaseStore } from '../../src/kube/leader.js';

export class MemoryLeases {
  lease: Lease | undefined;
  private version = 0;
  /** The holder written by each write, in order. */
  writes: string[] = [];

  private snapshot(lease: Lease): Lease {
    return JSON.parse(JSON.stringify(lease)) as Lease;
  }

  private write(lease: Lease): Lease {
    this.writes.push(lease.spec?.holderIdentity ?? '');
    this.lease = this.snapshot({ ...lease, metadata: { ...lease.metadata, resourceVersion: String(++this.version) } });
    return this.snapshot(this.lease);
  }

  get holder(): string | undefined {
    return this.lease?.spec?.holderIdentity ?? undefined;
  }

  client(): LeaseStore & { down: boolean } {
    const store = {
      down: false,
      get: async () => {
        if (store.down) throw new ApiError('connection refused', 0);
        return this.lease && this.snapshot(this.lease);
      },
      create: async (lease: Lease) => {
        if (store.down) throw new ApiError('connection refused', 0);
        if (this.lease) throw new ApiError('already exists', 409, 'AlreadyExists');
        return this.write(lease);
      },
      update: async (lease: Lease) => {
        if (store.down) throw new ApiError('connection refused', 0);
        if (lease.metadata.resourceVersion !== this.lease?.metadata.resourceVersion)
          throw new ApiError('conflict', 409, 'Conflict');
        return this.write(lease);
      },
    };
    return store;
  }
}
