// The coordinator's hand-over Lease (src/node/kubernetes/handover.ts, its own timings: renewed every second, given up
// after 3 s without a renewal, run out for the others after 5 s) on the real apiserver with one side's wall clock
// stepped 10 s, as an NTP correction or a resumed VM steps it. The holder reaches the apiserver through a loopback
// proxy that then answers 503, so it can no longer renew; the next run keeps asking straight at the apiserver.
// Whichever way the clock steps, the holder is told to stop sending before the next run's write that takes the
// lease is even sent: never two senders.
import { expect } from 'chai';
import { pino } from 'pino';
import { monotonicNow } from '../../../src/common/time.js';
import type { ClientConfig, LeaseStore } from '../../../src/kube/api.js';
import { acquireHandoverLease, type HeldLease, restLeaseStore } from '../../../src/node/kubernetes/handover.js';
import { SteppedWallClock } from '../../support/fake-clock.js';
import { kc, useNamespace, waitFor } from '../support/cluster.js';
import { FaultProxy } from './harness.js';

const logger = pino({ level: 'silent' });
const STEP_MS = 10_000;

/** The Lease calls, noting when the first write that makes `identity` the holder was sent (monotonic). */
function notingTake(store: LeaseStore, identity: string, takes: number[]): LeaseStore {
  return {
    get: (namespace, name, signal) => store.get(namespace, name, signal),
    create: async (lease, signal) => {
      const sentAt = monotonicNow();
      const created = await store.create(lease, signal);
      takes.push(sentAt);
      return created;
    },
    update: async (lease, signal) => {
      const sentAt = monotonicNow();
      const updated = await store.update(lease, signal);
      if (lease.spec?.holderIdentity === identity) takes.push(sentAt);
      return updated;
    },
  };
}

describe('the hand-over Lease with a stepped wall clock (real control plane)', function () {
  this.timeout(120_000);
  const ns = useNamespace('rt-lease-clock');

  for (const step of [
    { side: 'holder', ms: -STEP_MS, says: "the holder's wall clock steps back" },
    { side: 'next', ms: STEP_MS, says: "the next run's wall clock steps forward" },
  ] as const) {
    it(`${step.says}: the cut-off holder stops sending before the next run takes the lease`, async () => {
      const proxy = new FaultProxy(kc);
      await proxy.start();
      const name = `step-${step.side}`;
      const clocks = { holder: new SteppedWallClock(), next: new SteppedWallClock() };
      const lost: number[] = [];
      const takes: number[] = [];
      const stop = new AbortController();
      const run = (identity: 'holder' | 'next', connection: ClientConfig, noted?: number[]) =>
        restLeaseStore(connection).then((store) =>
          acquireHandoverLease({
            namespace: ns.name,
            name,
            logger,
            waitUntil: monotonicNow() + 90_000,
            signal: stop.signal,
            onLost: () => lost.push(monotonicNow()),
            identity,
            store: noted ? notingTake(store, identity, noted) : store,
            clock: clocks[identity],
          }),
        );
      let next: HeldLease | undefined;
      try {
        const holder = await run('holder', proxy.clientConfig());
        expect(holder, 'the holder holds the lease').not.to.equal(undefined);
        const waiting = run('next', kc, takes).then((held) => (next = held));
        // The next run has asked and seen the lease held and renewed.
        const renewals = proxy.counts.forwarded;
        await waitFor(() => proxy.counts.forwarded >= renewals + 4, 30_000, { description: 'two renewals' });
        expect(takes).to.deep.equal([]);
        clocks[step.side].stepWall(step.ms);
        const cutAt = monotonicNow();
        proxy.mode = { status: 503 };
        await waiting;
        expect(next, 'the next run holds the lease').not.to.equal(undefined);
        expect(lost, 'the holder was told to stop').to.have.length(1);
        console.log(
          `      ${step.says} by ${Math.abs(step.ms) / 1000} s: the holder stopped ${Math.round(lost[0]! - cutAt)} ms after it was cut off, the next run took over ${Math.round(takes[0]! - cutAt)} ms after`,
        );
        expect(lost[0]!, 'the holder stopped before the next run took the lease').to.be.below(takes[0]!);
      } finally {
        stop.abort();
        await next?.release();
        await proxy.stop();
      }
    });
  }
});
