import { expect } from 'chai';
import { pino } from 'pino';
import { ApiError } from '../../../src/kube/errors.js';
import { LeaderElector, type Lease, type LeaseStore } from '../../../src/kube/leader.js';
import { FakeClock } from '../../support/fake-clock.js';

const logger = pino({ level: 'silent' });

/** An in-memory Lease API with the apiserver's optimistic concurrency, serializing times as JSON would. */
class MemoryLeases {
  lease: Lease | undefined;
  private version = 0;
  writes = 0;

  private snapshot(lease: Lease): Lease {
    return JSON.parse(JSON.stringify(lease)) as Lease;
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
        this.writes++;
        this.lease = this.snapshot({
          ...lease,
          metadata: { ...lease.metadata, resourceVersion: String(++this.version) },
        });
        return this.snapshot(this.lease);
      },
      update: async (lease: Lease) => {
        if (store.down) throw new ApiError('connection refused', 0);
        if (lease.metadata.resourceVersion !== this.lease?.metadata.resourceVersion)
          throw new ApiError('conflict', 409, 'Conflict');
        this.writes++;
        this.lease = this.snapshot({
          ...lease,
          metadata: { ...lease.metadata, resourceVersion: String(++this.version) },
        });
        return this.snapshot(this.lease);
      },
    };
    return store;
  }
}

function candidate(leases: MemoryLeases, clock: FakeClock, identity: string) {
  const store = leases.client();
  const log: string[] = [];
  let signal: AbortSignal | undefined;
  const elector = new LeaderElector(
    store,
    { namespace: 'ns', name: 'lock', identity },
    {
      onStartedLeading: (s) => {
        signal = s;
        log.push('started');
      },
      onStoppedLeading: () => log.push('stopped'),
    },
    logger,
    clock,
  );
  return { elector, store, log, signal: () => signal };
}

/** A fake clock, the in-memory Lease API, and candidates that join the election started. */
function election() {
  const clock = new FakeClock();
  const leases = new MemoryLeases();
  const join = (identity: string) => {
    const joined = candidate(leases, clock, identity);
    joined.elector.start();
    return joined;
  };
  return { clock, leases, join };
}

/** An election that `a` leads: joined first, its first try done. */
async function ledByA() {
  const arranged = election();
  const a = arranged.join('a');
  await arranged.clock.advance(0);
  return { ...arranged, a };
}

describe('operator runtime: leader election (client-go algorithm, fake clock)', () => {
  it('creates the Lease and leads, renewing every retry period with 6-digit MicroTime', async () => {
    const { clock, leases, a } = await ledByA();
    expect(a.elector.isLeader()).to.equal(true);
    expect(leases.lease?.spec?.holderIdentity).to.equal('a');
    expect(leases.lease?.spec?.leaseDurationSeconds).to.equal(15);
    expect(String(leases.lease?.spec?.renewTime)).to.match(/\.\d{6}Z$/);
    const before = leases.writes;
    await clock.advance(10_000);
    expect(leases.writes - before).to.equal(5); // one renewal every 2 s
    expect(leases.lease?.spec?.leaseTransitions).to.equal(0);
    await a.elector.stop();
  });

  it('lets exactly one of two candidates lead', async () => {
    const { clock, join } = election();
    const a = join('a');
    const b = join('b');
    for (let i = 0; i < 20; i++) {
      await clock.advance(1000);
      expect([a.elector.isLeader(), b.elector.isLeader()].filter(Boolean)).to.have.length(1);
    }
    await Promise.all([a.elector.stop(), b.elector.stop()]);
  });

  it('a crashed leader (no renewals, no release) is replaced after the lease duration, not before', async () => {
    const { clock, leases, a, join } = await ledByA();
    const b = join('b');
    await clock.advance(3000);
    expect(b.elector.isLeader()).to.equal(false);
    a.store.down = true; // a is cut off: it can neither renew nor release
    await clock.advance(10_000);
    // a gave up within its renew deadline (10 s) and stopped leading; the lease is not yet expired for b.
    expect(a.elector.isLeader()).to.equal(false);
    expect(a.signal()?.aborted).to.equal(true);
    expect(a.log).to.deep.equal(['started', 'stopped']);
    expect(b.elector.isLeader()).to.equal(false);
    await clock.advance(10_000);
    expect(b.elector.isLeader()).to.equal(true);
    expect(leases.lease?.spec?.holderIdentity).to.equal('b');
    expect(leases.lease?.spec?.leaseTransitions).to.equal(1);
    await Promise.all([a.elector.stop(), b.elector.stop()]);
  });

  it('a graceful stop releases the Lease (empty holder, 1 s) so the other takes over at its next try', async () => {
    const { clock, leases, a, join } = await ledByA();
    const b = join('b');
    await clock.advance(2000);
    await a.elector.stop();
    expect(leases.lease?.spec?.holderIdentity).to.equal('');
    expect(leases.lease?.spec?.leaseDurationSeconds).to.equal(1);
    expect(a.log).to.deep.equal(['started', 'stopped']);
    await clock.advance(4400); // at most one jittered retry period (2 s * 2.2)
    expect(b.elector.isLeader()).to.equal(true);
    await b.elector.stop();
  });

  it('keeps leading through an API outage shorter than the renew deadline', async () => {
    const { clock, a } = await ledByA();
    a.store.down = true;
    await clock.advance(6000);
    a.store.down = false;
    await clock.advance(6000);
    expect(a.elector.isLeader()).to.equal(true);
    expect(a.log).to.deep.equal(['started']);
    await a.elector.stop();
  });

  it('a wall clock stepped back does not keep a cut-off leader leading past its renew deadline', async () => {
    const { clock, a } = await ledByA();
    a.store.down = true;
    clock.stepWall(-10_000); // an NTP step back, a VM resumed from an old snapshot
    await clock.advance(10_000); // the renew deadline since the last renewal
    expect(a.elector.isLeader()).to.equal(false);
    expect(a.signal()?.aborted).to.equal(true);
    expect(a.log).to.deep.equal(['started', 'stopped']);
  });

  it('a wall clock stepped forward neither ends a leader early nor expires its lease early for a candidate', async () => {
    const { clock, a, join } = await ledByA();
    const b = join('b');
    await clock.advance(3000);
    a.store.down = true; // a renewed at 2 s: it leads until 12 s, its lease runs out for b 15 s after b saw that
    clock.stepWall(10_000);
    for (let elapsed = 0; elapsed < 8_000; elapsed += 500) {
      await clock.advance(500);
      expect(a.elector.isLeader(), `a leading ${elapsed + 500} ms after the step`).to.equal(true);
      expect(b.elector.isLeader(), `b leading ${elapsed + 500} ms after the step`).to.equal(false);
    }
    await clock.advance(15_000);
    expect(a.log).to.deep.equal(['started', 'stopped']);
    expect(b.elector.isLeader()).to.equal(true);
    await Promise.all([a.elector.stop(), b.elector.stop()]);
  });

  it('loses a write race through resourceVersion conflicts rather than double-leading', async () => {
    const { clock, leases } = election();
    const a = candidate(leases, clock, 'a');
    const b = candidate(leases, clock, 'b');
    // Both see an expired lease held by a third replica, then race to take it.
    await leases.client().create({
      metadata: { name: 'lock', namespace: 'ns' },
      spec: { holderIdentity: 'c', leaseDurationSeconds: 15, renewTime: new Date(clock.now()).toISOString() },
    });
    await a.elector.tryAcquireOrRenew();
    await b.elector.tryAcquireOrRenew();
    await clock.advance(16_000);
    const results = await Promise.all([a.elector.tryAcquireOrRenew(), b.elector.tryAcquireOrRenew()]);
    expect(results.filter(Boolean)).to.have.length(1);
  });

  it('rejects timings that cannot work', () => {
    const leases = new MemoryLeases();
    const callbacks = { onStartedLeading() {}, onStoppedLeading() {} };
    expect(
      () =>
        new LeaderElector(
          leases.client(),
          { namespace: 'n', name: 'l', identity: 'x', leaseDurationMs: 5000, renewDeadlineMs: 5000 },
          callbacks,
          logger,
        ),
    ).to.throw(/leaseDuration/);
  });
});
