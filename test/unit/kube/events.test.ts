import { expect } from 'chai';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { KubeEventRecorder } from '../../../src/kube/events.js';
import { RuntimeMetrics } from '../../../src/kube/metrics.js';
import { RestClient } from '../../../src/kube/rest.js';
import { FakeClock } from '../../support/fake-clock.js';
import { FakeApiServer } from './fake-apiserver.js';

const logger = pino({ level: 'silent' });
const node = {
  apiVersion: 'oracle.example/v1',
  kind: 'OracleNode',
  metadata: { name: 'n1', namespace: 'ns1', uid: 'u1' },
};

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 2000 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(check()).to.equal(true);
}

describe('operator runtime: EventRecorder', () => {
  let api: FakeApiServer;
  beforeEach(async () => {
    api = new FakeApiServer();
    await api.start();
  });
  afterEach(async () => {
    await api.stop();
  });

  it('creates an Event, then counts repeats on it instead of creating more', async () => {
    const recorder = new KubeEventRecorder(new RestClient(api.kubeConfig(), { qps: 100, burst: 100 }), {
      component: 'test',
      logger,
    });
    recorder.record(node, 'Normal', 'Ready', 'node is ready');
    await until(() => api.objects.size === 1);
    recorder.record(node, 'Normal', 'Ready', 'node is ready');
    recorder.record(node, 'Normal', 'Ready', 'node is ready');
    await until(() => api.requests.filter((r) => r.method === 'PATCH').length === 2);
    const [event] = [...api.objects.values()] as unknown as {
      count: number;
      involvedObject: { name: string; uid: string };
      reason: string;
    }[];
    expect(event!.count).to.equal(3);
    expect(event!.involvedObject).to.include({ name: 'n1', uid: 'u1' });
    expect(api.requests.filter((r) => r.method === 'POST')).to.have.length(1);
    await recorder.stop();
  });

  it('drops a flood per object and reason beyond the burst, without blocking the caller', async () => {
    const registry = new Registry();
    const metrics = new RuntimeMetrics(registry);
    const recorder = new KubeEventRecorder(new RestClient(api.kubeConfig(), { qps: 1000, burst: 1000 }), {
      component: 'test',
      logger,
      metrics,
      clock: new FakeClock(),
      burst: 5,
    });
    for (let i = 0; i < 20; i++) recorder.record(node, 'Warning', 'Failed', `attempt ${i}`);
    recorder.record(node, 'Normal', 'Other', 'a different reason has its own budget');
    await until(() => api.objects.size === 6);
    const dropped = (await metrics.eventsDropped.get()).values.find((v) => v.labels.reason === 'rate_limited')?.value;
    expect(dropped).to.equal(15);
    await recorder.stop();
  });
});
