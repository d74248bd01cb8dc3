// The apiserver answering 429 and 500 for a while (a loopback proxy injects them): the runtime backs off, never
// spins, and converges once the errors stop.
import { expect } from 'chai';
import { apply, kc, sleep, useNamespace, waitFor } from '../support/cluster.js';
import {
  ensureWidgetCrd,
  FaultProxy,
  metric,
  newReconcileLog,
  testManager,
  WIDGET,
  widget,
  widgetReconciler,
} from './harness.js';
import { adminClient, widgetsConverged } from './runtime-client.js';

describe('runtime (real control plane): 429 and 500 from the apiserver', function () {
  this.timeout(240_000);
  const ns = useNamespace('rt-faults');
  const admin = adminClient(kc);

  before(async () => {
    await ensureWidgetCrd(apply, () => admin.list(WIDGET, 'default'));
  });

  for (const fault of [
    { status: 500, retryAfterSeconds: undefined, seconds: 20 },
    { status: 429, retryAfterSeconds: 2, seconds: 20 },
  ]) {
    it(`backs off while every request gets ${fault.status} for ${fault.seconds} s, then converges`, async () => {
      const proxy = new FaultProxy(kc);
      await proxy.start();
      const log = newReconcileLog();
      const manager = testManager(proxy.clientConfig(), ns.name, {
        identity: `faults-${fault.status}`,
        leaderElect: true,
        // A generous client-side limit, so that anything bounding the request rate below is the backoff.
        qps: 100,
        burst: 200,
      });
      const running = manager.run(widgetReconciler(log));
      const expected = new Map<string, number>();
      for (let i = 0; i < 5; i++) {
        await admin.apply(WIDGET, widget(ns.name, `f${fault.status}-${i}`, 1));
        expected.set(`f${fault.status}-${i}`, 1);
      }
      // Other tests' widgets in the namespace are part of the expected state too.
      for (const w of await admin.list<{ metadata?: { name?: string }; spec?: { value?: number } }>(WIDGET, ns.name)) {
        expected.set(w.metadata!.name!, w.spec?.value ?? 0);
      }
      await waitFor(() => widgetsConverged(admin, ns.name, expected), 60_000, {
        description: 'converged before the fault',
      });

      const before = proxy.counts.total;
      proxy.mode = { status: fault.status, retryAfterSeconds: fault.retryAfterSeconds };
      proxy.dropConnections(); // watches reconnect into the fault
      // Edits made during the outage (straight to the apiserver) must be picked up afterwards.
      for (let i = 0; i < 5; i++) {
        await admin.apply(WIDGET, widget(ns.name, `f${fault.status}-${i}`, 2));
        expected.set(`f${fault.status}-${i}`, 2);
      }
      await sleep(fault.seconds * 1000);
      const during = proxy.counts.total - before;
      proxy.mode = undefined;
      const healedAt = Date.now();
      await waitFor(() => widgetsConverged(admin, ns.name, expected), 120_000, {
        description: 'converged after the fault',
      });
      const recoveryMs = Date.now() - healedAt;
      const perSecond = during / fault.seconds;
      console.log(
        `      ${fault.status} for ${fault.seconds} s: ${during} requests (${perSecond.toFixed(1)}/s), converged ${recoveryMs} ms after the fault ended`,
      );
      // A hot loop would be thousands; the QPS limit alone would allow 100/s. Backoff keeps it to a few per second.
      expect(perSecond).to.be.lessThan(10);
      expect(log.maxInFlightPerKey).to.equal(1);
      expect(manager.isLeader()).to.equal(true);
      expect(await metric(manager, 'rest_client_requests_total', { code: String(fault.status) })).to.be.greaterThan(0);
      await manager.stop();
      await running;
      await proxy.stop();
    });
  }
});
