// 500 Widgets edited at once: all converge, and the operator's memory stays bounded.
import { expect } from 'chai';
import { apply, kc, useNamespace, waitFor } from '../support/cluster.js';
import {
  ensureWidgetCrd,
  heapUsedMb,
  metric,
  newReconcileLog,
  testManager,
  WIDGET,
  widget,
  widgetReconciler,
} from './harness.js';
import { adminClient, widgetsConverged } from './runtime-client.js';

const COUNT = Number(process.env.RUNTIME_SCALE_COUNT ?? 500);

async function inBatches<T>(items: T[], size: number, run: (item: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(run));
}

describe(`runtime (real control plane): ${COUNT} objects edited at once`, function () {
  this.timeout(900_000);
  const ns = useNamespace('rt-scale');
  const admin = adminClient(kc);

  before(async () => {
    await ensureWidgetCrd(apply, () => admin.list(WIDGET, 'default'));
  });

  it(`converges ${COUNT} Widgets after a mass edit, heap bounded`, async () => {
    const names = Array.from({ length: COUNT }, (_, i) => `s${String(i).padStart(4, '0')}`);
    const heapStart = await heapUsedMb();
    const log = newReconcileLog();
    const manager = testManager(kc, ns.name, { identity: 'scale', workers: 4, qps: 50, burst: 100 });
    const running = manager.run(widgetReconciler(log));
    const expected = new Map<string, number>();
    const createdAt = Date.now();
    await inBatches(names, 25, (name) => admin.apply(WIDGET, widget(ns.name, name, 1)));
    for (const name of names) expected.set(name, 1);
    await waitFor(() => widgetsConverged(admin, ns.name, expected), 600_000, {
      description: 'initial convergence',
      intervalMs: 2000,
    });
    const createdConvergedMs = Date.now() - createdAt;
    const heapAfterCreate = await heapUsedMb();

    const editedAt = Date.now();
    await inBatches(names, 25, (name) => admin.apply(WIDGET, widget(ns.name, name, 2)));
    for (const name of names) expected.set(name, 2);
    await waitFor(() => widgetsConverged(admin, ns.name, expected), 600_000, {
      description: 'convergence after the mass edit',
      intervalMs: 2000,
    });
    const editConvergedMs = Date.now() - editedAt;
    const heapAfterEdit = await heapUsedMb();
    const rss = Math.round(process.memoryUsage().rss / 1024 / 1024);
    const requests = await metric(manager, 'rest_client_requests_total');
    console.log(
      `      ${COUNT} widgets: created+converged in ${createdConvergedMs} ms, mass edit converged in ${editConvergedMs} ms; ` +
        `${log.keys.length} reconciles, ${requests} API requests by the manager; heap ${heapStart} -> ${heapAfterCreate} -> ${heapAfterEdit} MB (test process incl. test client), rss ${rss} MB`,
    );
    expect(log.maxInFlightPerKey).to.equal(1);
    // The cache holds 2 x COUNT small objects; a leak per event would grow with the ~4 x COUNT events seen.
    expect(heapAfterEdit - heapStart).to.be.lessThan(150);
    await manager.stop();
    await running;
    expect(await metric(manager, 'workqueue_depth', { name: 'widget' })).to.equal(0);
  });
});
