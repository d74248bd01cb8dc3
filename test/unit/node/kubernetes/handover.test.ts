// The coordinator hand-over's Lease rules (src/node/kubernetes/handover.ts) on an in-memory Lease API with the
// apiserver's optimistic concurrency, with short timings: the next run waits while the window holds the lease and
// takes it at its first ask after the release; a crashed holder's lease is taken once it has run out by the waiting
// run's clock; a run whose window ends first writes nothing; a holder that cannot renew stops sending.
import { expect } from 'chai';
import { pino } from 'pino';
import { PendingSightings } from '../../../../src/chain/pending.js';
import type { RpcClient } from '../../../../src/chain/rpc.js';
import { monotonicNow } from '../../../../src/common/time.js';
import type { LeaseStore } from '../../../../src/kube/leader.js';
import { ApiRetries } from '../../../../src/node/api-retries.js';
import {
  API_RETRIES_ANNOTATION,
  acquireHandoverLease,
  carrying,
  type HandoverOptions,
  ownedBy,
  PENDING_SIGHTINGS_ANNOTATION,
} from '../../../../src/node/kubernetes/handover.js';
import { MemoryLeases } from '../../../support/leases.js';
import { waitFor } from '../../../support/wait.js';

const logger = pino({ level: 'silent' });
const timing = { leaseDurationMs: 1_000, renewDeadlineMs: 600, renewPeriodMs: 100, waitPollMs: 20 };

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

  it('a holder paused past its renew deadline no longer holds the lease the moment it resumes, before any timer has run', async () => {
    const leases = new MemoryLeases();
    const first = run(leases, 'paused');
    const held = await first.held;
    expect(held!.held()).to.equal(true);
    // A freeze (SIGSTOP, a VM pause) as the process sees it: no timer runs, the monotonic clock goes on.
    const frozenUntil = performance.now() + timing.renewDeadlineMs + 50;
    while (performance.now() < frozenUntil);
    expect(held!.held()).to.equal(false);
    expect(first.lost).to.deep.equal(['paused']);
    await held!.release();
    expect(held!.held()).to.equal(false);
  });

  describe('a loss is logged and told once, whichever notices it first', () => {
    /** A holder whose Lease API the test can cut off, with its log lines recorded. */
    const recordedHolder = async (identity: string) => {
      const lines: { level: number; msg: string; cause?: string }[] = [];
      const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
      const losses = () => lines.filter((line) => line.msg === 'lost the coordinator lease: nothing new is sent');
      const leases = new MemoryLeases();
      const store = leases.client();
      const first = run(leases, identity, { store, logger });
      return { lines, losses, store, first, held: await first.held };
    };

    it('the renewals first (the apiserver unreachable), then a send asks', async () => {
      const { lines, losses, store, first, held } = await recordedHolder('cut');
      store.down = true;
      await waitFor(() => first.lost.length > 0, 10_000, 'the elector gives up');
      expect(held!.held()).to.equal(false);
      expect(first.lost).to.deep.equal(['cut']);
      expect(losses()).to.have.length(1);
      expect(losses()[0]!.cause).to.match(/^not renewed within the renew deadline/);
      await held!.release();
      expect(losses()).to.have.length(1);
      expect(lines.filter((line) => line.level >= 50)).to.have.length(1);
    });

    it('a send first (the process paused past the deadline), then the renewals fail', async () => {
      const { lines, losses, store, first, held } = await recordedHolder('frozen');
      const frozenUntil = performance.now() + timing.renewDeadlineMs + 50;
      while (performance.now() < frozenUntil);
      expect(held!.held()).to.equal(false);
      expect(losses()).to.have.length(1);
      expect(losses()[0]!.cause).to.equal('its last renewal is older than the renew deadline');
      // The elector then gives up too (its renewals fail past the deadline) and tries to hand the lease back.
      store.down = true;
      await waitFor(
        () => lines.some((line) => line.msg === 'could not release the lease'),
        10_000,
        'the elector stops',
      );
      expect(first.lost).to.deep.equal(['frozen']);
      expect(losses()).to.have.length(1);
    });
  });

  it("carries the holder's pending-transaction sightings in the Lease to the next run, with no call of its own", async () => {
    const leases = new MemoryLeases();
    const annotation = () =>
      (leases.lease?.metadata['annotations'] as Record<string, string> | undefined)?.[PENDING_SIGHTINGS_ANNOTATION];
    const wallet = `31337:0x${'ab'.repeat(20)}`;
    const firstSightings = new PendingSightings();
    const first = await run(leases, 'first', { sightings: firstSightings }).held;
    firstSightings.observe(wallet, { latestCount: 5, pendingCount: 7, block: 100 });
    // The next renewal writes them; nothing else is written for them.
    await waitFor(() => annotation() !== undefined, 10_000, 'the sightings in the Lease');
    const writes = leases.writes.length;
    const nextSightings = new PendingSightings();
    const waiting = run(leases, 'next', { sightings: nextSightings });
    firstSightings.sent(wallet, { latestCount: 5, nextNonce: 7, block: 102 });
    await first!.release();
    const next = await waiting.held;
    expect(leases.writes.slice(writes).filter((w) => w === '')).to.have.length(1);
    // The release's: the send at block 102 included.
    expect(nextSightings.observe(wallet, { latestCount: 5, pendingCount: 7, block: 103 })).to.equal(1);
    await next!.release();
    expect(JSON.parse(annotation()!)).to.deep.equal({
      version: 1,
      sightings: { [wallet]: [5, 7, 102] },
    });
  });

  it("carries the holder's API retries in the Lease beside the sightings: the next run calls no API sooner", async () => {
    const leases = new MemoryLeases();
    const annotations = () => (leases.lease?.metadata['annotations'] as Record<string, string> | undefined) ?? {};
    const firstRetries = new ApiRetries(300);
    const first = await run(leases, 'first', { sightings: new PendingSightings(), apiRetries: firstRetries }).held;
    const noBlock = { request: async () => Promise.reject(new Error('no block')) } as unknown as RpcClient;
    await firstRetries.decide(
      '31337',
      { id: `0x${'ab'.repeat(32)}`, oisTitle: 'A', blockNumber: 1 },
      { errorMessage: 'API call failed with status code 429', retryAfterMs: 120_000 },
      noBlock,
    );
    await waitFor(() => annotations()[API_RETRIES_ANNOTATION] !== undefined, 10_000, 'the API retries in the Lease');
    const nextRetries = new ApiRetries(300);
    const waiting = run(leases, 'next', { sightings: new PendingSightings(), apiRetries: nextRetries });
    await first!.release();
    const next = await waiting.held;
    expect(nextRetries.gate('31337', { id: `0x${'cd'.repeat(32)}`, oisTitle: 'A' }).kind).to.equal('wait');
    expect(nextRetries.gate('31337', { id: `0x${'cd'.repeat(32)}`, oisTitle: 'B' }).kind).to.equal('call');
    await next!.release();
  });

  it('a run that loses the race for the Lease takes over nothing from it', async () => {
    const leases = new MemoryLeases();
    const handedOver = JSON.stringify({ version: 1, sightings: { [`31337:0x${'cd'.repeat(20)}`]: [1, 2, 10] } });
    await leases.client().create({
      metadata: {
        name: 'node-coordinator',
        namespace: 'ns',
        annotations: { [PENDING_SIGHTINGS_ANNOTATION]: handedOver },
      },
      spec: { holderIdentity: '' },
    });
    const read = (await leases.client().get('ns', 'node-coordinator'))!;
    await leases.client().update({ ...read, spec: { holderIdentity: 'winner' } });
    const sightings = new PendingSightings();
    const loser = carrying(
      leases.client(),
      'loser',
      [{ annotation: PENDING_SIGHTINGS_ANNOTATION, state: sightings, taken: 'took over' }],
      logger,
    );
    const lost = await loser.update({ ...read, spec: { holderIdentity: 'loser' } }).catch((error: unknown) => error);
    expect(lost).to.be.instanceOf(Error);
    expect(sightings.toHandOver()).to.equal(undefined);
    // Its next write that wins takes them over.
    const current = (await leases.client().get('ns', 'node-coordinator'))!;
    await loser.update({ ...current, spec: { holderIdentity: 'loser' } });
    expect(sightings.toHandOver()).to.equal(handedOver);
  });
});
