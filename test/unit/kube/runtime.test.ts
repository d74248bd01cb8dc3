// The runtime against an in-memory API server: transport, informer, client and manager wiring.

import type { KubernetesObject } from '@kubernetes/client-node';
import { expect } from 'chai';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { RuntimeClient } from '../../../src/kube/client.js';
import { ApiError } from '../../../src/kube/errors.js';
import { Informer } from '../../../src/kube/informer.js';
import { createManager, type RuntimeTuning } from '../../../src/kube/manager.js';
import { RuntimeMetrics } from '../../../src/kube/metrics.js';
import { RestClient } from '../../../src/kube/rest.js';
import type { ObjectKey, Reconciler, ResourceKind } from '../../../src/kube/types.js';
import { FakeClock } from '../../support/fake-clock.js';
import { capturingLogger } from '../../support/logs.js';
import { waitFor } from '../../support/wait.js';
import { FakeApiServer } from './fake-apiserver.js';

const logger = pino({ level: process.env.DEBUG_RUNTIME ? 'debug' : 'silent' });
const CONFIGMAP: ResourceKind = { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
const SECRET: ResourceKind = { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };

function configMap(name: string, data: Record<string, string>, labels?: Record<string, string>) {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'ns1', labels }, data };
}

describe('operator runtime against an in-memory API server', () => {
  let api: FakeApiServer;
  beforeEach(async () => {
    api = new FakeApiServer();
    await api.start();
  });
  afterEach(async () => {
    await api.stop();
  });

  /** A manager against the fake API server, scoped to ns1, with what each test tunes on top. */
  function testManager(
    options: {
      namespaces?: string[];
      leaderElection?: boolean;
      workers?: number;
      tuning?: Partial<RuntimeTuning>;
    } = {},
  ) {
    return createManager({
      kubeConfig: api.kubeConfig(),
      namespaces: options.namespaces ?? ['ns1'],
      leaderElection: { enabled: options.leaderElection ?? false, namespace: 'ns1', leaseName: 'lock', identity: 'me' },
      workers: options.workers ?? 1,
      qps: 1000,
      burst: 1000,
      metricsPort: 0,
      healthPort: 0,
      fieldManager: 'test',
      logger,
      tuning: { registry: new Registry(), ...options.tuning },
    });
  }

  function rest(options: Partial<ConstructorParameters<typeof RestClient>[1]> = {}) {
    return new RestClient(api.kubeConfig(), { qps: 1000, burst: 1000, retryInitialMs: 5, retryMaxMs: 50, ...options });
  }

  it('informer: lists, then delivers add/update/delete from the watch with managedFields stripped', async () => {
    api.upsert('configmaps', configMap('a', { v: '1' }));
    const transport = rest();
    const informer = new Informer({
      kind: CONFIGMAP,
      namespace: 'ns1',
      client: new RuntimeClient(transport, 'test'),
      rest: transport,
      logger,
    });
    const seen: string[] = [];
    informer.on((type, object) =>
      seen.push(`${type}:${object.metadata?.name}:${(object as { data?: { v?: string } }).data?.v ?? ''}`),
    );
    informer.start();
    await informer.waitForSync();
    expect(informer.get('ns1', 'a')?.metadata?.managedFields).to.equal(undefined);
    expect(informer.get('ns1', 'a')?.kind).to.equal('ConfigMap');
    api.upsert('configmaps', configMap('b', { v: '1' }));
    api.upsert('configmaps', configMap('a', { v: '2' }));
    const b = api.objects.get('configmaps/ns1/b')!;
    api.write('configmaps', 'DELETED', b);
    await waitFor(() => seen.length === 4, 10_000, { description: 'four events', intervalMs: 10 });
    expect(seen).to.deep.equal(['add:a:1', 'add:b:1', 'update:a:2', 'delete:b:1']);
    expect(informer.size()).to.equal(1);
    await informer.stop();
  });

  it('informer: a paginated list is reduced to the cache form page by page, not after the last page', async () => {
    for (let i = 0; i < 5; i++) api.upsert('configmaps', configMap(`c${i}`, { v: String(i), big: 'x'.repeat(100) }));
    const transport = rest();
    const listRequests = () => api.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/configmaps')).length;
    const requestsWhenTransformed: number[] = [];
    const informer = new Informer({
      kind: CONFIGMAP,
      namespace: 'ns1',
      client: new RuntimeClient(transport, 'test', 2),
      rest: transport,
      logger,
      transform: (object) => {
        requestsWhenTransformed.push(listRequests());
        const { big: _dropped, ...kept } = (object as { data: Record<string, string> }).data;
        return { ...object, data: kept } as KubernetesObject;
      },
    });
    informer.start();
    await informer.waitForSync();
    await informer.stop();
    // Three pages of 2, 2 and 1: each page's items are transformed before the next page is requested.
    expect(requestsWhenTransformed).to.deep.equal([1, 1, 2, 2, 3]);
    expect(informer.get('ns1', 'c3')).to.deep.include({ data: { v: '3' } });
  });

  it('informer: a watch expiring (410) relists and misses no update made while it was away', async () => {
    for (let i = 0; i < 5; i++) api.upsert('configmaps', configMap(`c${i}`, { v: '0' }));
    const transport = rest();
    const metrics = new RuntimeMetrics(new Registry());
    const informer = new Informer({
      kind: CONFIGMAP,
      client: new RuntimeClient(transport, 'test'),
      rest: transport,
      logger,
      metrics,
      reconnectInitialMs: 200,
    });
    informer.start();
    await informer.waitForSync();
    // The watch drops; while it is away, objects change and history is compacted.
    const inject = api.inject;
    api.inject = (req) => (req.url?.includes('watch=true') ? { status: 503 } : undefined);
    api.closeWatches();
    api.upsert('configmaps', configMap('c1', { v: '1' }));
    api.write('configmaps', 'DELETED', api.objects.get('configmaps/ns1/c2')!);
    api.upsert('configmaps', configMap('c9', { v: '1' }));
    api.compact();
    api.inject = inject;
    await waitFor(() => (informer.get('ns1', 'c1') as { data?: { v?: string } } | undefined)?.data?.v === '1', 10_000, {
      description: 'c1 v1',
      intervalMs: 10,
    });
    await waitFor(() => informer.get('ns1', 'c9') !== undefined && informer.get('ns1', 'c2') === undefined, 10_000, {
      description: 'c9 added, c2 gone',
      intervalMs: 10,
    });
    const relists = await metrics.relists.get();
    expect(relists.values.find((v) => v.labels.reason === 'gone')?.value).to.equal(1);
    await informer.stop();
  });

  it('informer: a server answering every watch with 410 gets relists with backoff, not a relist storm', async () => {
    api.upsert('configmaps', configMap('a', {}));
    api.inject = (req) => (req.url?.includes('watch=true') ? { status: 410 } : undefined);
    const transport = rest();
    const informer = new Informer({
      kind: CONFIGMAP,
      namespace: 'ns1',
      client: new RuntimeClient(transport, 'test'),
      rest: transport,
      logger,
      reconnectInitialMs: 100,
      reconnectMaxMs: 400,
    });
    informer.start();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await informer.stop();
    const listsAndWatches = api.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/configmaps')).length;
    // 1000 qps would allow ~1000 requests; backoff (100, 200, 400, 400 ms ...) allows about a dozen.
    expect(listsAndWatches).to.be.within(2, 30);
  });

  it('informer: a watch that goes silent is cut by the inactivity timeout and reconnected', async () => {
    api.upsert('configmaps', configMap('a', { v: '1' }));
    const transport = rest();
    const metrics = new RuntimeMetrics(new Registry());
    const informer = new Informer({
      kind: CONFIGMAP,
      namespace: 'ns1',
      client: new RuntimeClient(transport, 'test'),
      rest: transport,
      logger,
      metrics,
      watchTimeoutMinSeconds: 0,
      watchTimeoutMaxSeconds: 0,
      watchInactivityGraceMs: 150,
      reconnectInitialMs: 10,
    });
    informer.start();
    await informer.waitForSync();
    const watches = () => api.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/configmaps')).length;
    await waitFor(() => watches() >= 4, 10_000, {
      description: 'the silent watch to be replaced a few times',
      intervalMs: 10,
    });
    // Reconnecting from the last resourceVersion, not relisting: still one list.
    expect((await metrics.relists.get()).values.reduce((sum, v) => sum + v.value, 0)).to.equal(1);
    api.upsert('configmaps', configMap('a', { v: '2' }));
    await waitFor(() => (informer.get('ns1', 'a') as { data?: { v?: string } }).data?.v === '2', 10_000, {
      description: 'the update after reconnects',
      intervalMs: 10,
    });
    await informer.stop();
  });

  it('manager: /readyz fails when a watch has been silent too long, and recovers with the next sign of life', async () => {
    const manager = testManager({ tuning: { watchStaleAfterMs: 300 } });
    const reconciler: Reconciler = {
      name: 'quiet',
      watches: { primary: CONFIGMAP, owned: [] },
      reconcile: async () => undefined,
    };
    expect(manager.readiness()).to.deep.include({ ready: false, reason: 'caches not synced' });
    const running = manager.run(reconciler);
    await waitFor(() => manager.readiness().ready, 10_000, { description: 'ready after sync', intervalMs: 10 });
    await waitFor(() => !manager.readiness().ready, 10_000, {
      description: 'not ready once the watch is silent',
      intervalMs: 10,
    });
    expect(manager.readiness().reason).to.match(/silent/);
    api.upsert('configmaps', configMap('wake', {}));
    await waitFor(() => manager.readiness().ready, 10_000, {
      description: 'ready again after an event',
      intervalMs: 10,
    });
    await manager.stop();
    await running;
    expect(manager.readiness()).to.deep.include({ ready: false, reason: 'shutting down' });
  });

  it('manager: /readyz also waits for the runnables beside the controller (the webhook serving)', async () => {
    let webhookServing = false;
    const manager = testManager();
    manager.add(
      {
        start: () => undefined,
        stop: async () => undefined,
        readiness: () => (webhookServing ? { ready: true } : { ready: false, reason: 'webhook not serving' }),
      },
      { leaderElection: false },
    );
    const running = manager.run({
      name: 'quiet',
      watches: { primary: CONFIGMAP, owned: [] },
      reconcile: async () => undefined,
    });
    await waitFor(() => manager.readiness().reason === 'webhook not serving', 10_000, { intervalMs: 10 });
    webhookServing = true;
    expect(manager.readiness()).to.deep.equal({ ready: true });
    await manager.stop();
    await running;
  });

  it('manager: runnables of every replica run from start to stop; leader runnables only while the Lease is held', async () => {
    const log: string[] = [];
    const runnable = (name: string) => ({
      start: (signal: AbortSignal) => {
        log.push(`${name} start`);
        signal.addEventListener('abort', () => log.push(`${name} aborted`), { once: true });
      },
      stop: async () => {
        log.push(`${name} stop`);
      },
    });
    const manager = testManager({
      leaderElection: true,
      tuning: { leaseDurationMs: 1500, renewDeadlineMs: 1000, retryPeriodMs: 200 },
    });
    manager.add(runnable('everywhere'), { leaderElection: false });
    manager.add(runnable('leader'), { leaderElection: true });
    api.inject = (req) => (req.url?.includes('/leases') ? { status: 500 } : undefined);
    const running = manager.run({
      name: 'quiet',
      watches: { primary: CONFIGMAP, owned: [] },
      reconcile: async () => undefined,
    });
    await waitFor(() => log.includes('everywhere start'), 10_000, {
      description: 'the webhook-like runnable',
      intervalMs: 10,
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(log).to.deep.equal(['everywhere start']); // no Lease, no leader runnable
    api.inject = undefined;
    await waitFor(() => log.includes('leader start'), 15_000, { description: 'election', intervalMs: 10 });
    api.inject = (req) => (req.url?.includes('/leases') ? { status: 500 } : undefined);
    await waitFor(() => log.includes('leader stop'), 10_000, { description: 'leadership lost', intervalMs: 10 });
    expect(log).to.include('leader aborted');
    expect(log).to.not.include('everywhere stop'); // still serving on a replica that does not lead
    api.inject = undefined;
    await waitFor(() => log.filter((l) => l === 'leader start').length === 2, 15_000, {
      description: 're-election restarts the leader runnable',
      intervalMs: 10,
    });
    manager.add(runnable('late'), { leaderElection: false });
    await waitFor(() => log.includes('late start'), 10_000, {
      description: 'a runnable added while running',
      intervalMs: 10,
    });
    await manager.stop();
    await running;
    // The leader runnable stops before the Lease is released; the others last.
    const stops = log.slice(log.lastIndexOf('leader start'));
    expect(stops.indexOf('leader stop')).to.be.lessThan(stops.indexOf('everywhere stop'));
    expect(stops).to.include.members(['everywhere stop', 'late stop', 'everywhere aborted']);
  });

  it('informer: the label selector keeps foreign objects out of the cache', async () => {
    api.upsert('configmaps', configMap('mine', {}, { app: 'x' }));
    api.upsert('configmaps', configMap('foreign', {}));
    const transport = rest();
    const informer = new Informer({
      kind: CONFIGMAP,
      labelSelector: 'app=x',
      client: new RuntimeClient(transport, 't'),
      rest: transport,
      logger,
    });
    informer.start();
    await informer.waitForSync();
    expect(informer.list().map((o) => o.metadata?.name)).to.deep.equal(['mine']);
    await informer.stop();
  });

  it('rest: retries 429 and 500 with backoff (honouring Retry-After), then gives up without a hot loop', async () => {
    let failures = 2;
    api.inject = () => (failures-- > 0 ? { status: 429, headers: { 'retry-after': '0' } } : undefined);
    const transport = rest({ maxRetries: 3 });
    const client = new RuntimeClient(transport, 'test');
    expect(await client.get(CONFIGMAP, { namespace: 'ns1', name: 'none' })).to.equal(undefined);
    expect(api.requests).to.have.length(3);
    api.requests.length = 0;
    api.inject = () => ({ status: 500 });
    const error = await client.get(CONFIGMAP, { namespace: 'ns1', name: 'none' }).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(ApiError);
    expect((error as ApiError).status).to.equal(500);
    expect(api.requests).to.have.length(4); // the first try and maxRetries retries, no more
  });

  it('rest: the client-side QPS/burst limit holds back a burst of calls', async () => {
    // One token a second after a burst of 2, on a clock that only moves when told: the third call waits for it.
    const clock = new FakeClock();
    const transport = rest({ qps: 1, burst: 2, clock });
    const client = new RuntimeClient(transport, 'test');
    const started = Promise.all(
      Array.from({ length: 3 }, (_, i) => client.get(CONFIGMAP, { namespace: 'ns1', name: `x${i}` })),
    );
    await waitFor(() => api.requests.length >= 2, 10_000, { description: 'the burst of two', intervalMs: 10 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(api.requests).to.have.length(2);
    await clock.advance(999);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(api.requests).to.have.length(2);
    await clock.advance(1);
    await started;
    expect(api.requests).to.have.length(3);
  });

  it('client: server-side apply with the apply content type and field manager; delete tolerates 404', async () => {
    const client = new RuntimeClient(rest(), 'my-manager');
    // The answer (the whole applied object) is not parsed: the informer brings the object.
    expect(await client.apply(CONFIGMAP, configMap('s', { k: 'v' }))).to.equal(undefined);
    const request = api.requests.at(-1)!;
    expect(request.method).to.equal('PATCH');
    expect(request.contentType).to.equal('application/apply-patch+yaml');
    expect((await client.get(CONFIGMAP, { namespace: 'ns1', name: 's' }))?.metadata?.name).to.equal('s');
    await client.applyStatus(CONFIGMAP, configMap('s', { k: 'v' }));
    expect(api.requests.at(-1)!.path).to.equal('/api/v1/namespaces/ns1/configmaps/s/status');
    await client.delete(CONFIGMAP, { namespace: 'ns1', name: 's' });
    await client.delete(CONFIGMAP, { namespace: 'ns1', name: 's' });
    expect(await client.get(CONFIGMAP, { namespace: 'ns1', name: 's' })).to.equal(undefined);
    try {
      await client.apply(CONFIGMAP, { metadata: { name: 'no-kind', namespace: 'ns1' } } as KubernetesObject);
      expect.fail('apply without apiVersion/kind must throw');
    } catch (error) {
      expect(String(error)).to.match(/apiVersion and kind/);
    }
  });

  for (const namespaces of [['ns1', 'ns2'], []]) {
    it(`manager: namespace scoping ${namespaces.length ? 'to a list (one watch per namespace)' : 'to all namespaces'}`, async () => {
      for (const namespace of ['ns1', 'ns2', 'ns3']) {
        api.upsert('configmaps', {
          ...configMap(`in-${namespace}`, {}),
          metadata: { name: `in-${namespace}`, namespace },
        });
      }
      const seen = new Set<string>();
      const manager = testManager({ namespaces });
      const running = manager.run({
        name: 'scoped',
        watches: { primary: CONFIGMAP, owned: [] },
        reconcile: async (key) => {
          seen.add(`${key.namespace}/${key.name}`);
          return undefined;
        },
      });
      const expected = namespaces.length ? ['ns1/in-ns1', 'ns2/in-ns2'] : ['ns1/in-ns1', 'ns2/in-ns2', 'ns3/in-ns3'];
      await waitFor(() => expected.every((key) => seen.has(key)), 10_000, {
        description: 'reconciles in the watched namespaces',
        intervalMs: 10,
      });
      expect([...seen].sort()).to.deep.equal(expected);
      const watched = api.requests
        .filter((r) => r.method === 'GET' && r.path.includes('configmaps'))
        .map((r) => r.path);
      if (namespaces.length)
        expect(new Set(watched)).to.deep.equal(
          new Set(['/api/v1/namespaces/ns1/configmaps', '/api/v1/namespaces/ns2/configmaps']),
        );
      else expect(new Set(watched)).to.deep.equal(new Set(['/api/v1/configmaps']));
      await manager.stop();
      await running;
    });
  }

  it('manager: losing the Lease aborts in-flight reconciles at once and stops taking work until re-elected', async () => {
    api.upsert('configmaps', configMap('held', {}));
    const started: string[] = [];
    let aborted = 0;
    const reconciler: Reconciler = {
      name: 'blocking',
      watches: { primary: CONFIGMAP, owned: [] },
      async reconcile(key, context) {
        started.push(key.name);
        if (key.name !== 'held') return undefined;
        // Holds on until leadership goes away.
        await new Promise<void>((resolve) => context.signal.addEventListener('abort', () => resolve(), { once: true }));
        aborted++;
        throw new Error('aborted');
      },
    };
    const manager = testManager({
      leaderElection: true,
      workers: 2,
      tuning: { leaseDurationMs: 1500, renewDeadlineMs: 1000, retryPeriodMs: 200 },
    });
    const running = manager.run(reconciler);
    await waitFor(() => started.includes('held'), 10_000, { description: 'the blocking reconcile', intervalMs: 10 });
    api.inject = (req) => (req.url?.includes('/leases') ? { status: 500 } : undefined);
    await waitFor(() => aborted === 1, 10_000, {
      description: 'the reconcile signal to abort when the Lease cannot be renewed',
      intervalMs: 10,
    });
    expect(manager.isLeader()).to.equal(false);
    const before = started.length;
    api.upsert('configmaps', configMap('while-not-leading', {}));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(started.length).to.equal(before); // no work without the Lease
    api.inject = undefined;
    await waitFor(() => manager.isLeader(), 15_000, { description: 're-election', intervalMs: 10 });
    await waitFor(() => started.includes('while-not-leading'), 10_000, {
      description: 'work resumed after re-election',
      intervalMs: 10,
    });
    expect(manager.workerLoops()).to.equal(2); // the new term's workers; the lost term's have returned
    await manager.stop();
    await running;
  });

  it('manager: reconciles primaries and owned children map to their owner; errors back off and retry', async () => {
    api.upsert('configmaps', configMap('p1', { v: '1' }));
    const reconciled: string[] = [];
    let failOnce = true;
    const reconciler: Reconciler = {
      name: 'test',
      watches: { primary: CONFIGMAP, owned: [{ kind: SECRET, labelSelector: 'owned=yes' }] },
      async reconcile(key: ObjectKey, context) {
        reconciled.push(`${key.namespace}/${key.name}`);
        expect(context.cache.get(CONFIGMAP, key) ?? null).to.not.equal(undefined);
        if (key.name === 'p2' && failOnce) {
          failOnce = false;
          throw new Error('transient');
        }
        return undefined;
      },
    };
    const registry = new Registry();
    const manager = testManager({ leaderElection: true, workers: 2, tuning: { registry } });
    const running = manager.run(reconciler);
    await waitFor(() => reconciled.includes('ns1/p1'), 10_000, { description: 'p1 reconciled', intervalMs: 10 });
    expect(manager.isLeader()).to.equal(true);
    expect(manager.readiness().ready).to.equal(true);
    api.upsert('configmaps', configMap('p2', {}));
    await waitFor(() => reconciled.filter((k) => k === 'ns1/p2').length === 2, 10_000, {
      description: 'p2 retried after its error',
      intervalMs: 10,
    });
    const before = reconciled.filter((k) => k === 'ns1/p1').length;
    api.upsert('secrets', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'child',
        namespace: 'ns1',
        labels: { owned: 'yes' },
        ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'p1', uid: 'u' }],
      },
    } as never);
    await waitFor(() => reconciled.filter((k) => k === 'ns1/p1').length === before + 1, 10_000, {
      description: 'p1 reconciled for its child',
      intervalMs: 10,
    });
    const text = await registry.metrics();
    expect(text).to.match(/controller_runtime_reconcile_total\{controller="test",result="error"\} 1/);
    expect(text).to.match(/controller_runtime_reconcile_errors_total\{controller="test"\} 1/);
    expect(text).to.match(/leader_election_master_status\{name="lock"\} 1/);
    expect(text).to.match(/rest_client_requests_total\{code="200",method="GET",host="127.0.0.1:\d+"\}/);
    await manager.stop();
    await running;
    const lease = api.objects.get('leases/ns1/lock') as { spec?: { holderIdentity?: string } };
    expect(lease.spec?.holderIdentity).to.equal('');
  });
  it('manager: two controllers, each with its own primary, share one informer per identical watch', async () => {
    api.upsert('configmaps', configMap('cm', {}));
    api.upsert('secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'sec', namespace: 'ns1' } } as never);
    const reconciled: string[] = [];
    const reconcilerOf = (name: string, primary: ResourceKind, owned: ResourceKind): Reconciler => ({
      name,
      watches: { primary, owned: [{ kind: owned, labelSelector: 'owned=yes' }] },
      async reconcile(key: ObjectKey) {
        reconciled.push(`${name}:${key.name}`);
        return undefined;
      },
    });
    const manager = testManager();
    // Watches: a's configmaps and b's secrets (primaries), and secrets labelled owned=yes for both: the last is one
    // informer, so three in all.
    const running = manager.run([reconcilerOf('a', CONFIGMAP, SECRET), reconcilerOf('b', SECRET, SECRET)]);
    try {
      await waitFor(() => reconciled.includes('a:cm') && reconciled.includes('b:sec'), 10_000, {
        description: 'both controllers reconciled their primary',
        intervalMs: 10,
      });
      expect(reconciled).to.not.include('a:sec');
      expect(reconciled).to.not.include('b:cm');
      const plurals = manager.cache.informers().map((informer) => `${informer.kind.plural}`);
      expect(plurals.sort()).to.deep.equal(['configmaps', 'secrets', 'secrets']);
    } finally {
      await manager.stop();
      await running;
    }
  });

  it('manager: a controller whose CRD is not served is left out with one line naming it; the others run', async () => {
    // The fake API server answers discovery of any group with 404, as an apiserver does for a CRD never installed.
    const feeds: ResourceKind = { group: 'example.io', version: 'v1', kind: 'Feed', plural: 'feeds', namespaced: true };
    api.upsert('configmaps', configMap('cm', {}));
    const reconciled: string[] = [];
    const reconcilerOf = (name: string, primary: ResourceKind): Reconciler => ({
      name,
      watches: { primary, owned: [] },
      async reconcile(key: ObjectKey) {
        reconciled.push(`${name}:${key.name}`);
        return undefined;
      },
    });
    const { logger: captured, at } = capturingLogger();
    const manager = createManager({
      kubeConfig: api.kubeConfig(),
      namespaces: ['ns1'],
      leaderElection: { enabled: false, namespace: 'ns1', leaseName: 'lock', identity: 'me' },
      workers: 1,
      qps: 1000,
      burst: 1000,
      metricsPort: 0,
      healthPort: 0,
      fieldManager: 'test',
      logger: captured,
      tuning: { registry: new Registry() },
    });
    const running = manager.run([reconcilerOf('nodes', CONFIGMAP), reconcilerOf('feeds', feeds)]);
    try {
      await waitFor(() => reconciled.includes('nodes:cm') && manager.readiness().ready, 10_000, {
        description: 'the served controller reconciled and the manager is ready',
        intervalMs: 10,
      });
      const errors = at('ERROR').map((line) => line.msg);
      expect(errors).to.have.length(1);
      expect(errors[0]).to.contain('the CRD feeds.example.io is not installed');
      expect(errors[0]).to.contain('kubectl apply --server-side -f crds/example.io_feeds.yaml');
      expect(manager.cache.informers().map((informer) => informer.kind.plural)).to.deep.equal(['configmaps']);
    } finally {
      await manager.stop();
      await running;
    }
  });

  it('manager: refuses to run when no controller has its CRD served, naming the CRDs', async () => {
    const feeds: ResourceKind = { group: 'example.io', version: 'v1', kind: 'Feed', plural: 'feeds', namespaced: true };
    const manager = testManager();
    const noop: Reconciler = {
      name: 'feeds',
      watches: { primary: feeds, owned: [] },
      reconcile: async () => undefined,
    };
    let failure: unknown;
    await manager.run(noop).catch((error: unknown) => {
      failure = error;
    });
    expect(String(failure)).to.contain('CRDs not installed: feeds.example.io');
    await manager.stop();
  });

  it("manager: an owned kind's transform decides what its cache keeps (before managedFields are dropped)", async () => {
    api.upsert('configmaps', configMap('p1', { v: '1' }));
    api.upsert('secrets', {
      apiVersion: 'v1',
      kind: 'Secret',
      data: { big: 'x'.repeat(1000) },
      metadata: {
        name: 'child',
        namespace: 'ns1',
        labels: { owned: 'yes' },
        ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'p1', uid: 'u', controller: true }],
        managedFields: [{ manager: 'test', operation: 'Apply', fieldsType: 'FieldsV1', fieldsV1: {} }],
      },
    } as never);
    const seenByTransform: boolean[] = [];
    const cached: (KubernetesObject | undefined)[] = [];
    const reconciler: Reconciler = {
      name: 'test',
      watches: {
        primary: CONFIGMAP,
        owned: [
          {
            kind: SECRET,
            labelSelector: 'owned=yes',
            transform: (object) => {
              seenByTransform.push(object.metadata?.managedFields !== undefined);
              const { data: _dropped, ...rest } = object as KubernetesObject & { data?: unknown };
              return rest;
            },
          },
        ],
      },
      async reconcile(key: ObjectKey, context) {
        if (key.name === 'p1') cached.push(context.cache.get(SECRET, { namespace: 'ns1', name: 'child' }));
        return undefined;
      },
    };
    const manager = testManager({});
    const running = manager.run(reconciler);
    try {
      await waitFor(() => cached.some((object) => object !== undefined), 10_000, {
        description: 'the child in the cache',
        intervalMs: 10,
      });
      const child = cached.find((object) => object !== undefined) as KubernetesObject & { data?: unknown };
      expect(child).to.not.have.property('data');
      expect(child.metadata?.managedFields).to.equal(undefined);
      expect(seenByTransform).to.include(true);
    } finally {
      await manager.stop();
      await running;
    }
  });
});
