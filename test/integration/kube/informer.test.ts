// The runtime against the real control plane: informers (add/update/delete, 410 relist), the manager converging
// a Widget CRD with owned ConfigMaps, and /metrics + /readyz.
import type { KubernetesObject } from '@kubernetes/client-node';
import { expect } from 'chai';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { RuntimeClient } from '../../../src/kube/client.js';
import { Informer } from '../../../src/kube/informer.js';
import { RuntimeMetrics } from '../../../src/kube/metrics.js';
import { RestClient } from '../../../src/kube/rest.js';
import { apply, kc, useNamespace, waitFor } from '../support/cluster.js';
import {
  CONFIGMAP,
  ensureWidgetCrd,
  FaultProxy,
  freePort,
  metric,
  newReconcileLog,
  testManager,
  WIDGET,
  widget,
  widgetReconciler,
} from './harness.js';
import { adminClient, widgetsConverged } from './runtime-client.js';

const logger = pino({ level: process.env.RUNTIME_TEST_LOG_LEVEL ?? 'silent' });

function configMap(
  namespace: string,
  name: string,
  value: string,
  labels: Record<string, string> = { suite: 'informer' },
) {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace, labels },
    data: { value },
  } as KubernetesObject;
}

describe('runtime (real control plane): informers and the manager', function () {
  this.timeout(180_000);
  const ns = useNamespace('rt-informer');
  const admin = adminClient(kc);

  before(async () => {
    await ensureWidgetCrd(apply, () => admin.list(WIDGET, 'default'));
  });

  it('an informer delivers add, update and delete, caches only labelled objects, without managedFields', async () => {
    const rest = new RestClient(kc, { qps: 50, burst: 100 });
    const informer = new Informer({
      kind: CONFIGMAP,
      namespace: ns.name,
      labelSelector: 'suite=informer',
      client: new RuntimeClient(rest, 'test'),
      rest,
      logger,
    });
    const events: string[] = [];
    informer.on((type, object) => {
      const value = (object as { data?: { value?: string } }).data?.value;
      events.push(`${type}:${object.metadata?.name}:${value}`);
    });
    await admin.apply(CONFIGMAP, configMap(ns.name, 'before', '1'));
    informer.start();
    await informer.waitForSync();
    await admin.apply(CONFIGMAP, configMap(ns.name, 'unlabelled', '1', { other: 'x' }));
    await admin.apply(CONFIGMAP, configMap(ns.name, 'a', '1'));
    await admin.apply(CONFIGMAP, configMap(ns.name, 'a', '2'));
    await admin.delete(CONFIGMAP, { namespace: ns.name, name: 'a' });
    await waitFor(() => events.includes('delete:a:2'), 30_000, { description: 'the delete event' });
    expect(events).to.deep.equal(['add:before:1', 'add:a:1', 'update:a:2', 'delete:a:2']);
    expect(informer.list().map((o) => o.metadata?.name)).to.deep.equal(['before']);
    expect(informer.get(ns.name, 'before')?.metadata?.managedFields).to.equal(undefined);
    await informer.stop();
    rest.close();
  });

  it('a metadata-only informer (Secrets) sees every change and never holds a secret value', async () => {
    const SECRET = { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };
    const secret = (value: string) =>
      ({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'rotated', namespace: ns.name },
        stringData: { API_KEY: value },
      }) as KubernetesObject;
    const rest = new RestClient(kc, { qps: 50, burst: 100 });
    const informer = new Informer({
      kind: SECRET,
      namespace: ns.name,
      metadataOnly: true,
      client: new RuntimeClient(rest, 'test'),
      rest,
      logger,
    });
    const events: string[] = [];
    const seen: KubernetesObject[] = [];
    informer.on((type, object) => {
      events.push(`${type}:${object.metadata?.name}`);
      seen.push(object);
    });
    await admin.apply(SECRET, secret('listed-value-1'));
    informer.start();
    await informer.waitForSync();
    await admin.apply(SECRET, secret('watched-value-2'));
    await admin.delete(SECRET, { namespace: ns.name, name: 'rotated' });
    await waitFor(() => events.includes('delete:rotated'), 30_000, { description: 'the delete event' });
    expect(events).to.deep.equal(['add:rotated', 'update:rotated', 'delete:rotated']);
    // The apiserver answered with PartialObjectMetadata, on the list and on the watch: no data, no values.
    for (const object of seen) {
      expect(object.kind).to.equal('PartialObjectMetadata');
      expect(object).to.not.have.property('data');
      expect(JSON.stringify(object)).to.not.match(/value-[12]|bGlzdGVk|d2F0Y2hlZ/);
    }
    await informer.stop();
    rest.close();
  });

  it('a watch that expires (410 Expired) relists and misses no update made meanwhile', async () => {
    const proxy = new FaultProxy(kc);
    await proxy.start();
    const rest = new RestClient(proxy.clientConfig(), { qps: 50, burst: 100 });
    const metrics = new RuntimeMetrics(new Registry());
    const informer = new Informer({
      kind: CONFIGMAP,
      namespace: ns.name,
      labelSelector: 'suite=gone',
      client: new RuntimeClient(rest, 'test'),
      rest,
      logger,
      metrics,
      reconnectInitialMs: 200,
      reconnectMaxMs: 1000,
    });
    for (const name of ['g1', 'g2', 'g3'])
      await admin.apply(CONFIGMAP, configMap(ns.name, name, '0', { suite: 'gone' }));
    informer.start();
    await informer.waitForSync();
    expect(informer.size()).to.equal(3);
    // The watch breaks and cannot reconnect while the objects change.
    proxy.mode = { status: 503 };
    proxy.dropConnections();
    await admin.apply(CONFIGMAP, configMap(ns.name, 'g1', '1', { suite: 'gone' }));
    await admin.delete(CONFIGMAP, { namespace: ns.name, name: 'g2' });
    await admin.apply(CONFIGMAP, configMap(ns.name, 'g4', '1', { suite: 'gone' }));
    // The next watch is told its resourceVersion is gone (the apiserver's 410 Expired event; a real one, after an
    // apiserver restart, is exercised in apiserver-restart.test.ts: this fresh cluster's watch cache still covers
    // every resourceVersion, so a too-old one cannot be provoked here on demand).
    proxy.expireNextWatch = true;
    proxy.mode = undefined;
    await waitFor(
      () => {
        const g1 = informer.get(ns.name, 'g1') as { data?: { value?: string } } | undefined;
        return g1?.data?.value === '1' && !informer.get(ns.name, 'g2') && informer.get(ns.name, 'g4');
      },
      60_000,
      { description: 'the informer to catch up after 410' },
    );
    const relists = await metrics.relists.get();
    const gone = relists.values.filter((v) => v.labels.reason === 'gone').reduce((sum, v) => sum + v.value, 0);
    const watchGone = (await metrics.watchRestarts.get()).values.find((v) => v.labels.reason === 'gone')?.value ?? 0;
    console.log(
      `      410 relists: ${gone}, watch restarts for 410: ${watchGone}, proxy requests: ${proxy.counts.total}`,
    );
    expect(gone).to.be.greaterThan(0);
    // Afterwards the watch works again: a new update arrives without another relist.
    await admin.apply(CONFIGMAP, configMap(ns.name, 'g3', '9', { suite: 'gone' }));
    await waitFor(
      () => (informer.get(ns.name, 'g3') as { data?: { value?: string } } | undefined)?.data?.value === '9',
      30_000,
    );
    await informer.stop();
    rest.close();
    await proxy.stop();
  });

  it('the manager converges Widgets (create, edit, delete), one reconcile in flight per key, with /metrics and /readyz', async () => {
    const metricsPort = await freePort();
    const healthPort = await freePort();
    const log = newReconcileLog();
    const manager = testManager(kc, ns.name, {
      workers: 4,
      metricsPort,
      healthPort,
      tuning: { listenHost: '127.0.0.1' },
    });
    const running = manager.run(widgetReconciler(log, { delayMs: 20 }));
    const expected = new Map<string, number>();
    for (let i = 0; i < 10; i++) {
      await admin.apply(WIDGET, widget(ns.name, `w${i}`, 1));
      expected.set(`w${i}`, 1);
    }
    await waitFor(() => widgetsConverged(admin, ns.name, expected), 60_000, { description: 'widgets converged' });
    for (let i = 0; i < 10; i++) {
      await admin.apply(WIDGET, widget(ns.name, `w${i}`, 2 + i));
      expected.set(`w${i}`, 2 + i);
    }
    await admin.delete(WIDGET, { namespace: ns.name, name: 'w9' });
    expected.delete('w9');
    await waitFor(
      async () => (await admin.list(CONFIGMAP, ns.name, 'runtime-test.oracle-node.dev/managed=true')).length === 9,
      60_000,
      {
        description: 'the deleted widget child to be garbage collected',
      },
    );
    await waitFor(() => widgetsConverged(admin, ns.name, expected), 60_000, {
      description: 'widgets converged after edits',
    });
    expect(log.maxInFlightPerKey).to.equal(1);
    const ready = await fetch(`http://127.0.0.1:${healthPort}/readyz`);
    expect(ready.status).to.equal(200);
    expect((await fetch(`http://127.0.0.1:${healthPort}/healthz`)).status).to.equal(200);
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    for (const name of [
      'controller_runtime_reconcile_total',
      'controller_runtime_reconcile_errors_total',
      'controller_runtime_reconcile_time_seconds',
      'controller_runtime_active_workers',
      'controller_runtime_max_concurrent_reconciles',
      'workqueue_depth',
      'workqueue_adds_total',
      'workqueue_queue_duration_seconds',
      'workqueue_work_duration_seconds',
      'workqueue_retries_total',
      'workqueue_unfinished_work_seconds',
      'workqueue_longest_running_processor_seconds',
      'rest_client_requests_total',
      'rest_client_request_duration_seconds',
      'leader_election_master_status',
    ]) {
      expect(text, name).to.contain(`# TYPE ${name} `);
    }
    expect(
      await metric(manager, 'controller_runtime_reconcile_total', { controller: 'widget', result: 'success' }),
    ).to.be.greaterThan(0);
    await manager.stop();
    await running;
    const afterStop = await fetch(`http://127.0.0.1:${healthPort}/readyz`).catch(() => undefined);
    expect(afterStop).to.equal(undefined); // servers closed
  });
});
