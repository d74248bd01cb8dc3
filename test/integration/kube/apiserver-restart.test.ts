// kube-apiserver stopped for 30 s and restarted while reconciles are in flight: the runtime recovers by itself,
// converges, and creates no duplicates. Runs on a private control plane (see private-cluster.ts).
import { KubeConfig } from '@kubernetes/client-node';
import { expect } from 'chai';
import { sleep, waitFor } from '../support/cluster.js';
import {
  CHILD_LABEL,
  CONFIGMAP,
  ensureWidgetCrd,
  metric,
  newReconcileLog,
  testManager,
  WIDGET,
  widget,
  widgetReconciler,
} from './harness.js';
import { PrivateCluster } from './private-cluster.js';
import { adminClient, widgetsConverged } from './runtime-client.js';

const OUTAGE_SECONDS = Number(process.env.RUNTIME_OUTAGE_SECONDS ?? 30);

describe('runtime (real control plane): kube-apiserver stopped and restarted mid-reconcile', function () {
  this.timeout(600_000);
  const cluster = new PrivateCluster('runtime-restart');
  let kubeConfig: KubeConfig;

  before(function () {
    this.timeout(360_000);
    cluster.up();
    kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(cluster.kubeconfig);
  });

  after(async function () {
    this.timeout(120_000);
    if (process.env.KEEP_PRIVATE_CLUSTER !== '1') await cluster.down();
  });

  it(`recovers from a ${OUTAGE_SECONDS} s apiserver outage, converges, no duplicate children`, async () => {
    const admin = adminClient(kubeConfig);
    const namespace = 'restart-test';
    await admin.apply(
      { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false },
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } },
    );
    await ensureWidgetCrd(
      (object) =>
        admin.apply(
          {
            group: 'apiextensions.k8s.io',
            version: 'v1',
            kind: 'CustomResourceDefinition',
            plural: 'customresourcedefinitions',
            namespaced: false,
          },
          object,
        ),
      () => admin.list(WIDGET, namespace),
    );
    const log = newReconcileLog();
    const manager = testManager(kubeConfig, namespace, { identity: 'restart', leaderElect: true, workers: 2 });
    const running = manager.run(widgetReconciler(log, { delayMs: 1500 }));
    const expected = new Map<string, number>();
    for (let i = 0; i < 20; i++) {
      await admin.apply(WIDGET, widget(namespace, `r${i}`, 1));
      expected.set(`r${i}`, 1);
    }
    await waitFor(() => widgetsConverged(admin, namespace, expected), 120_000, {
      description: 'converged before the outage',
    });

    for (let i = 0; i < 20; i++) {
      await admin.apply(WIDGET, widget(namespace, `r${i}`, 2));
      expected.set(`r${i}`, 2);
    }
    await waitFor(() => log.inFlight > 0, 30_000, { description: 'reconciles in flight' });
    const requestsBefore = await metric(manager, 'rest_client_requests_total');
    const errorsBefore = await metric(manager, 'rest_client_requests_total', { code: '<error>' });
    const stoppedAt = Date.now();
    await cluster.stopApiserver();
    await sleep(OUTAGE_SECONDS * 1000 - (Date.now() - stoppedAt));
    const requestsDuring = (await metric(manager, 'rest_client_requests_total')) - requestsBefore;
    const errorsDuring = (await metric(manager, 'rest_client_requests_total', { code: '<error>' })) - errorsBefore;
    cluster.startApiserver();
    const restartedAt = Date.now();
    await waitFor(async () => (await admin.list(WIDGET, namespace)).length === 20, 120_000, {
      description: 'apiserver back',
    });
    const apiBackAt = Date.now();
    await waitFor(() => widgetsConverged(admin, namespace, expected), 180_000, {
      description: 'converged after the outage',
    });
    const convergedAt = Date.now();
    // The restarted apiserver's watch cache starts at the current revision, so the informers' older resourceVersions
    // are answered with a real 410 Expired: they must have relisted.
    const goneRelists = await metric(manager, 'oracle_operator_relists_total', { reason: 'gone' });
    const children = await admin.list(CONFIGMAP, namespace, `${CHILD_LABEL}=true`);
    expect(children).to.have.length(20);
    expect(new Set(children.map((c) => c.metadata?.name)).size).to.equal(20);
    expect(log.maxInFlightPerKey).to.equal(1);
    expect(manager.isLeader()).to.equal(true);
    console.log(
      `      outage ${OUTAGE_SECONDS} s: ${requestsDuring} requests during it (${errorsDuring} connection errors, ` +
        `${(requestsDuring / OUTAGE_SECONDS).toFixed(1)}/s); apiserver serving ${apiBackAt - restartedAt} ms after restart; ` +
        `converged ${convergedAt - apiBackAt} ms after that (${convergedAt - restartedAt} ms after restart); ${goneRelists} relists after 410`,
    );
    expect(requestsDuring / OUTAGE_SECONDS).to.be.lessThan(10);
    await manager.stop();
    await running;
  });
});
