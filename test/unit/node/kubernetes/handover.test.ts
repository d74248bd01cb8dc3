// The coordinator hand-over's Lease rules (src/node/kubernetes/handover.ts) on an in-memory Lease API with the
// apiserver's optimistic concurrency, with short timings: the next run waits while the window holds the lease and
// takes it at its first ask after the release; a crashed holder's lease is taken once it has run out by the waiting
// run's clock; a run whose window ends first writes nothing; a holder that cannot renew stops sending.
import { expect } from 'chai';
import { pino } from 'pino';
import { monotonicNow } from '../../../../src/common/time.js';
import { ApiError } from '../../../../src/kube/errors.js';
import type { Lease, LeaseStore } from '../../../../src/kube/leader.js';
import { acquireHandoverLease, type HandoverOptions, ownedBy } from '../../../../src/node/kubernetes/handover.js';
import { waitFor } from '../../../support/wait.js';

const logger = pino({ level: 'silent' });
const timing = { leaseDurationMs: 1_000, renewDeadlineMs: 600, renewPeriodMs: 100, waitPollMs: 20 };

class MemoryLeases {
  lease: Lease | undefined;
  private version = 0;
  writes: string[] = [];

  private snapshot(lease: Lease): Lease {
    return JSON.parse(JSON.stringify(lease)) as Lease;
  }

  private write(lease: Lease): Lease {
    this.writes.push(lease.spec?.holderIdentity ?? '');
    this.lease = this.snapshot({ ...lease, metadata: { ...lease.metadata, resourceVersion: String(++this.version) } });
    return this.snapshot(this.lease);
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

describe('the coordinator hand-over lease (src/node/kubernetes/handover.ts)', () => {
  const run = (
    leases: MemoryLeases,
    identity: string,
    options: Partial<HandoverOptions> & { store?: LeaseStore } = {},
  ) => {
    const lost: string[] = [];
    const controller = new AbortController();
    const held = acquireHandoverLease({
      namespace: 'ns',
      name: 'node-coordinator',
      logger,
      waitUntil: monotonicNow() + 30_000,
      signal: controller.signal,
      onLost: () => lost.push(identity),
      identity,
      store: leases.client(),
      timing,
      ...options,
    });
    return { held, lost, controller };
  };
  const holder = (leases: MemoryLeases) => leases.lease?.spec?.holderIdentity;

  it('the next run waits while the window holds the lease and takes it at its first ask after the release', async () => {
    const leases = new MemoryLeases();
    const first = await run(leases, 'first').held;
    expect(first).not.to.equal(undefined);
    let secondHeld = false;
    const second = run(leases, 'second');
    void second.held.then(() => {
      secondHeld = true;
    });
    // The first renews several times meanwhile; the second only asks.
    await waitFor(() => leases.writes.filter((w) => w === 'first').length >= 4, 10_000, 'renewals');
    expect(secondHeld).to.equal(false);
    expect(leases.writes).not.to.include('second');
    await first!.release();
    expect(holder(leases)).to.equal('');
    const taken = await second.held;
    expect(taken).not.to.equal(undefined);
    expect(holder(leases)).to.equal('second');
    await taken!.release();
  });

  it("a crashed holder's lease is taken once it has run out by the waiting run's clock", async () => {
    const leases = new MemoryLeases();
    await leases.client().create({
      metadata: { name: 'node-coordinator', namespace: 'ns' },
      spec: { holderIdentity: 'crashed', leaseDurationSeconds: 1, renewTime: new Date().toISOString() },
    });
    const asked = Date.now();
    const next = await run(leases, 'next').held;
    expect(next).not.to.equal(undefined);
    expect(holder(leases)).to.equal('next');
    // Never before a whole lease duration seen unchanged (the holder's clock is not trusted).
    expect(Date.now() - asked).to.be.at.least(1_000);
    await next!.release();
  });

  it('a run whose window ends while another holds the lease gives up without writing', async () => {
    const leases = new MemoryLeases();
    const first = await run(leases, 'first').held;
    const late = await run(leases, 'late', { waitUntil: monotonicNow() + 300 }).held;
    expect(late).to.equal(undefined);
    expect(leases.writes).not.to.include('late');
    expect(holder(leases)).to.equal('first');
    await first!.release();
  });

  it('SIGTERM while waiting: the wait ends at once, nothing written', async () => {
    const leases = new MemoryLeases();
    const first = await run(leases, 'first').held;
    const waiting = run(leases, 'waiting');
    await waitFor(() => leases.writes.filter((w) => w === 'first').length >= 2, 10_000, 'renewals');
    waiting.controller.abort('SIGTERM');
    expect(await waiting.held).to.equal(undefined);
    expect(leases.writes).not.to.include('waiting');
    await first!.release();
  });

  it('a holder that cannot renew past its deadline is told to stop sending, before another may take the lease', async () => {
    const leases = new MemoryLeases();
    const store = leases.client();
    const first = run(leases, 'first', { store });
    const held = await first.held;
    expect(held).not.to.equal(undefined);
    store.down = true;
    await waitFor(() => first.lost.length > 0, 10_000, 'the lease lost');
    expect(first.lost).to.deep.equal(['first']);
    // The lease is still the first's by the others' clocks: nobody sends while it stops.
    expect(holder(leases)).to.equal('first');
    // Once it has run out, the next run takes it; the first never claims it again.
    store.down = false;
    const next = await run(leases, 'next').held;
    expect(holder(leases)).to.equal('next');
    await held!.release();
    expect(holder(leases)).to.equal('next');
    await next!.release();
  });

  it('with an owner, the Lease it creates or takes over without one is owned by the OracleNode (deleted with it)', async () => {
    const owner = { name: 'node', uid: '3f2c8a4e-0000-4000-8000-000000000001' };
    const reference = { apiVersion: 'oracle-node.io/v1alpha1', kind: 'OracleNode', name: 'node', uid: owner.uid };
    const created = new MemoryLeases();
    const first = await run(created, 'first', { owner }).held;
    expect(created.lease?.metadata['ownerReferences']).to.deep.equal([reference]);
    await first!.release();
    // A Lease an older coordinator created, without an owner: the owner is added when it is taken.
    const older = new MemoryLeases();
    await older
      .client()
      .create({ metadata: { name: 'node-coordinator', namespace: 'ns' }, spec: { holderIdentity: '' } });
    const second = await run(older, 'second', { owner }).held;
    expect(older.lease?.metadata['ownerReferences']).to.deep.equal([reference]);
    await second!.release();
    // Without an owner (a coordinator run by hand), none.
    const plain = new MemoryLeases();
    await (await run(plain, 'third').held)!.release();
    expect(plain.lease?.metadata['ownerReferences']).to.equal(undefined);
    // An owner already there is kept once, others kept beside it.
    const other = { apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: 'u' };
    const store = ownedBy(older.client(), owner);
    const kept = await store.update({
      ...older.lease!,
      metadata: { ...older.lease!.metadata, ownerReferences: [other, reference] },
    });
    expect(kept.metadata['ownerReferences']).to.deep.equal([other, reference]);
  });
});
