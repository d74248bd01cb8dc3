import { expect } from 'chai';
import { Registry } from 'prom-client';
import { RuntimeMetrics } from '../../../src/kube/metrics.js';
import { WorkQueue } from '../../../src/kube/queue.js';
import { FakeClock } from '../../support/fake-clock.js';

async function value(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number | undefined> {
  const metric = registry.getSingleMetric(name);
  const { values } = await metric!.get();
  return values.find((entry) => Object.entries(labels).every(([key, v]) => String(entry.labels[key]) === v))?.value;
}

describe('operator runtime: WorkQueue', () => {
  it('queues an item once however often it is added', async () => {
    const queue = new WorkQueue<string>({ name: 'test', clock: new FakeClock() });
    queue.add('a');
    queue.add('a');
    queue.add('b');
    expect(queue.length()).to.equal(2);
    expect(await queue.get()).to.equal('a');
    expect(await queue.get()).to.equal('b');
    expect(queue.length()).to.equal(0);
  });

  it('never hands the same item to two workers; a re-add while processing is processed again after done', async () => {
    const queue = new WorkQueue<string>({ name: 'test', clock: new FakeClock() });
    queue.add('a');
    const first = await queue.get();
    expect(first).to.equal('a');
    queue.add('a'); // an event arrives while a is being reconciled
    expect(queue.length()).to.equal(0);
    let second: string | undefined;
    void queue.get().then((item) => {
      second = item;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(second).to.equal(undefined); // a second worker waits rather than getting a
    queue.done('a');
    await new Promise((resolve) => setImmediate(resolve));
    expect(second).to.equal('a');
    expect(queue.isProcessing('a')).to.equal(true);
  });

  it('drops nothing: an item added while processing and then done is queued exactly once', async () => {
    const queue = new WorkQueue<string>({ name: 'test', clock: new FakeClock() });
    queue.add('a');
    await queue.get();
    queue.add('a');
    queue.add('a');
    queue.done('a');
    expect(queue.length()).to.equal(1);
  });

  it('backs off failures per item exponentially from 5 ms, and forget resets', async () => {
    const clock = new FakeClock();
    const queue = new WorkQueue<string>({ name: 'test', clock });
    const delays = [1, 2, 3, 4, 5].map(() => queue.addRateLimited('a'));
    expect(delays).to.deep.equal([5, 10, 20, 40, 80]);
    expect(queue.retries('a')).to.equal(5);
    queue.forget('a');
    expect(queue.addRateLimited('a')).to.equal(5);
    expect(queue.addRateLimited('b')).to.equal(5); // other items are independent
  });

  it('caps the per-item backoff', () => {
    const queue = new WorkQueue<string>({ name: 'test', clock: new FakeClock(), itemMaxDelayMs: 1000 });
    let last = 0;
    for (let i = 0; i < 40; i++) last = queue.addRateLimited('a');
    expect(last).to.equal(1000);
  });

  it('applies the global token bucket to rate-limited adds once its burst is spent', () => {
    const queue = new WorkQueue<string>({ name: 'test', clock: new FakeClock(), retryQps: 10, retryBurst: 3 });
    const delays = ['a', 'b', 'c', 'd', 'e'].map((item) => queue.addRateLimited(item));
    expect(delays.slice(0, 3)).to.deep.equal([5, 5, 5]);
    expect(delays[3]).to.equal(100); // one token per 100 ms at 10 qps
    expect(delays[4]).to.equal(200);
  });

  it('adds delayed items when their time comes, keeping the earliest schedule per item', async () => {
    const clock = new FakeClock();
    const queue = new WorkQueue<string>({ name: 'test', clock });
    queue.addAfter('a', 1000);
    queue.addAfter('a', 500);
    queue.addAfter('a', 2000);
    expect(queue.pendingDelayed()).to.equal(1);
    await clock.advance(499);
    expect(queue.length()).to.equal(0);
    await clock.advance(1);
    expect(queue.length()).to.equal(1);
    await clock.advance(5000);
    expect(queue.length()).to.equal(1); // the later schedules were dropped
  });

  it('answers waiting workers with undefined on shutdown and takes no more work', async () => {
    const queue = new WorkQueue<string>({ name: 'test', clock: new FakeClock() });
    const waiting = queue.get();
    queue.shutDown();
    expect(await waiting).to.equal(undefined);
    queue.add('a');
    expect(queue.length()).to.equal(0);
    expect(await queue.get()).to.equal(undefined);
  });

  it('exports the workqueue metrics with client-go names', async () => {
    const registry = new Registry();
    const metrics = new RuntimeMetrics(registry);
    const clock = new FakeClock();
    const queue = new WorkQueue<string>({ name: 'ctl', clock, metrics });
    queue.add('a');
    queue.add('b');
    queue.add('a');
    expect(await value(registry, 'workqueue_depth', { name: 'ctl' })).to.equal(2);
    expect(await value(registry, 'workqueue_adds_total', { name: 'ctl' })).to.equal(2);
    await queue.get();
    await clock.advance(3000);
    expect(await value(registry, 'workqueue_longest_running_processor_seconds', { name: 'ctl' })).to.equal(3);
    expect(await value(registry, 'workqueue_unfinished_work_seconds', { name: 'ctl' })).to.equal(3);
    queue.done('a');
    queue.addRateLimited('a');
    expect(await value(registry, 'workqueue_retries_total', { name: 'ctl' })).to.equal(1);
    const text = await registry.metrics();
    for (const name of ['workqueue_queue_duration_seconds', 'workqueue_work_duration_seconds']) {
      expect(text).to.contain(`${name}_count{name="ctl"}`);
    }
  });
});
