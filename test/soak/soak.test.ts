// A bounded soak (default 10 minutes; SOAK_DURATION_MS): a steady stream of edits to Widgets while the manager
// runs with leader election and short watch timeouts (so watches restart and relist many times). At the end every
// Widget must show the last value written (zero missed events) and the heap must be flat.
import { expect } from 'chai';
import {
  ensureWidgetCrd,
  heapUsedMb,
  metric,
  newReconcileLog,
  testManager,
  WIDGET,
  widget,
  widgetReconciler,
} from '../integration/kube/harness.js';
import { adminClient, widgetsConverged } from '../integration/kube/runtime-client.js';
import { apply, kc, sleep, useNamespace, waitFor } from '../integration/support/cluster.js';

const DURATION_MS = Number(process.env.SOAK_DURATION_MS ?? 600_000);
const WIDGETS = Number(process.env.SOAK_WIDGETS ?? 50);
const EDIT_INTERVAL_MS = Number(process.env.SOAK_EDIT_INTERVAL_MS ?? 100);

describe(`runtime soak: ${Math.round(DURATION_MS / 1000)} s of edits`, function () {
  this.timeout(DURATION_MS + 600_000);
  const ns = useNamespace('rt-soak');
  const admin = adminClient(kc);

  before(async () => {
    await ensureWidgetCrd(apply, () => admin.list(WIDGET, 'default'));
  });

  it('misses no event and keeps the heap flat', async () => {
    const log = newReconcileLog();
    const manager = testManager(kc, ns.name, {
      identity: 'soak',
      leaderElect: true,
      workers: 2,
      // Short server-side watch timeouts and a frequent relist exercise the reconnect paths all the time.
      tuning: { watchTimeoutMinSeconds: 20, watchTimeoutMaxSeconds: 40, relistIntervalMs: 60_000 },
    });
    const running = manager.run(widgetReconciler(log));
    const expected = new Map<string, number>();
    for (let i = 0; i < WIDGETS; i++) {
      await admin.apply(WIDGET, widget(ns.name, `soak${i}`, 0));
      expected.set(`soak${i}`, 0);
    }
    await waitFor(() => widgetsConverged(admin, ns.name, expected), 120_000, { description: 'initial convergence' });
    const heap: number[] = [await heapUsedMb()];
    const started = Date.now();
    let edits = 0;
    let reconciles = 0;
    let nextSample = started + 60_000;
    while (Date.now() - started < DURATION_MS) {
      const name = `soak${Math.floor(Math.random() * WIDGETS)}`;
      const value = (expected.get(name) ?? 0) + 1;
      await admin.apply(WIDGET, widget(ns.name, name, value));
      expected.set(name, value);
      edits++;
      if (Date.now() >= nextSample) {
        // The test's own record of reconciled keys must not grow the heap being measured.
        reconciles += log.keys.length;
        log.keys.length = 0;
        log.byKey.clear();
        heap.push(await heapUsedMb());
        nextSample += 60_000;
      }
      await sleep(EDIT_INTERVAL_MS);
    }
    await waitFor(() => widgetsConverged(admin, ns.name, expected), 300_000, { description: 'final convergence' });
    heap.push(await heapUsedMb());
    const restarts = await metric(manager, 'oracle_operator_watch_restarts_total');
    const relists = await metric(manager, 'oracle_operator_relists_total');
    console.log(
      `      soak: ${edits} edits over ${Math.round((Date.now() - started) / 1000)} s to ${WIDGETS} widgets, ${reconciles + log.keys.length} reconciles, ` +
        `${restarts} watch restarts, ${relists} lists; heap per minute (MB): ${heap.join(', ')}`,
    );
    // Flat: the last sample is within 30 MB of the first after the warm-up minute.
    const baseline = heap[Math.min(1, heap.length - 1)]!;
    expect(heap.at(-1)! - baseline).to.be.lessThan(30);
    expect(log.maxInFlightPerKey).to.equal(1);
    await manager.stop();
    await running;
  });
});
