// Leader election against the real control plane: two replicas, exactly one reconciles; a SIGKILLed leader (its
// own process, no release) is replaced within the lease duration; a graceful stop releases the lease.
import { expect } from 'chai';
import { apply, kc, kubeconfigPath, useNamespace, waitFor } from '../support/cluster.js';
import {
  ensureWidgetCrd,
  metric,
  newReconcileLog,
  spawnChildManager,
  testManager,
  WIDGET,
  widget,
  widgetReconciler,
} from './harness.js';
import { adminClient, widgetsConverged } from './runtime-client.js';

type LeaseView = { spec?: { holderIdentity?: string; leaseDurationSeconds?: number; leaseTransitions?: number } };
const LEASE = { group: 'coordination.k8s.io', version: 'v1', kind: 'Lease', plural: 'leases', namespaced: true };

describe('runtime (real control plane): leader election', function () {
  this.timeout(240_000);
  const ns = useNamespace('rt-leader');
  const admin = adminClient(kc);
  const lease = async () =>
    admin.get<LeaseView & { metadata?: object }>(LEASE, { namespace: ns.name, name: 'widget-operator' });

  before(async () => {
    await ensureWidgetCrd(apply, () => admin.list(WIDGET, 'default'));
  });

  it('two replicas: exactly one leads and reconciles; a graceful stop releases the Lease for a fast failover', async () => {
    const logA = newReconcileLog();
    const logB = newReconcileLog();
    const a = testManager(kc, ns.name, { identity: 'replica-a', leaderElect: true });
    const b = testManager(kc, ns.name, { identity: 'replica-b', leaderElect: true });
    const runA = a.run(widgetReconciler(logA));
    const runB = b.run(widgetReconciler(logB));
    await waitFor(() => a.isLeader() || b.isLeader(), 60_000, { description: 'a leader' });
    const [leader, follower, leaderLog, followerLog, runLeader] = a.isLeader()
      ? [a, b, logA, logB, runA]
      : [b, a, logB, logA, runB];
    const expected = new Map<string, number>();
    for (let i = 0; i < 5; i++) {
      await admin.apply(WIDGET, widget(ns.name, `w${i}`, i));
      expected.set(`w${i}`, i);
    }
    await waitFor(() => widgetsConverged(admin, ns.name, expected), 60_000, {
      description: 'converged under one leader',
    });
    expect(leader.isLeader() && !follower.isLeader()).to.equal(true);
    expect(followerLog.keys).to.have.length(0);
    expect(leaderLog.keys.length).to.be.greaterThan(0);
    expect(await metric(leader, 'leader_election_master_status', { name: 'widget-operator' })).to.equal(1);
    expect(await metric(follower, 'leader_election_master_status', { name: 'widget-operator' })).to.equal(0);
    expect((await lease())?.spec?.holderIdentity).to.equal(leader === a ? 'replica-a' : 'replica-b');

    const stoppedAt = Date.now();
    await leader.stop();
    await runLeader;
    const released = await lease();
    // Released (empty holder, 1 s) unless the follower already took it.
    expect(['', follower === a ? 'replica-a' : 'replica-b']).to.include(released?.spec?.holderIdentity);
    await waitFor(() => follower.isLeader(), 30_000, { description: 'the follower to take over' });
    const failoverMs = Date.now() - stoppedAt;
    console.log(`      graceful failover (stop -> other replica leading): ${failoverMs} ms`);
    await admin.apply(WIDGET, widget(ns.name, 'w0', 100));
    expected.set('w0', 100);
    await waitFor(() => widgetsConverged(admin, ns.name, expected), 60_000, {
      description: 'converged under the new leader',
    });
    expect(followerLog.keys.length).to.be.greaterThan(0);
    await follower.stop();
    await (follower === a ? runA : runB);
  });

  it('a SIGKILLed leader is replaced within the lease duration and the new leader converges', async () => {
    const child = spawnChildManager({ kubeconfig: kubeconfigPath, namespace: ns.name, identity: 'child-replica' });
    try {
      await waitFor(() => child.isLeader(), 60_000, { description: 'the child process to lead' });
      const log = newReconcileLog();
      const survivor = testManager(kc, ns.name, { identity: 'survivor', leaderElect: true });
      const running = survivor.run(widgetReconciler(log));
      await waitFor(async () => survivor.readiness().ready, 60_000, { description: 'survivor caches synced' });
      // Both are up; only the child reconciles.
      await admin.apply(WIDGET, widget(ns.name, 'k1', 1));
      await waitFor(() => child.lines.some((l) => l.event === 'reconcile' && l.key === `${ns.name}/k1`), 60_000);
      expect(survivor.isLeader()).to.equal(false);
      expect(log.keys).to.not.include(`${ns.name}/k1`);

      const killedAt = Date.now();
      child.process.kill('SIGKILL');
      await child.exited;
      const orphaned = await lease();
      expect(orphaned?.spec?.holderIdentity).to.equal('child-replica'); // not released: it was killed
      await admin.apply(WIDGET, widget(ns.name, 'k1', 2));
      await waitFor(() => survivor.isLeader(), 60_000, { description: 'the survivor to take over' });
      const takeoverMs = Date.now() - killedAt;
      const expected = new Map<string, number>();
      for (const w of await admin.list<{ metadata?: { name?: string }; spec?: { value?: number } }>(WIDGET, ns.name)) {
        expected.set(w.metadata!.name!, w.spec?.value ?? 0);
      }
      await waitFor(() => widgetsConverged(admin, ns.name, expected), 60_000, {
        description: 'converged after SIGKILL',
      });
      const convergedMs = Date.now() - killedAt;
      console.log(
        `      SIGKILL failover: new leader after ${takeoverMs} ms (lease 15 s), converged after ${convergedMs} ms`,
      );
      const taken = await lease();
      expect(taken?.spec?.holderIdentity).to.equal('survivor');
      expect(taken?.spec?.leaseTransitions).to.be.greaterThan(0);
      await survivor.stop();
      await running;
    } finally {
      if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL');
    }
  });
});
