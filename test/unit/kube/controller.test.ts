// The controller loop on its own: leadership terms start and stop its workers, and nothing piles up across terms.

import type { KubernetesObject } from '@kubernetes/client-node';
import { expect } from 'chai';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { systemClock } from '../../../src/kube/clock.js';
import { Controller } from '../../../src/kube/controller.js';
import { RuntimeMetrics } from '../../../src/kube/metrics.js';
import {
  type EventRecorder,
  type KubeWriter,
  type ObjectCache,
  type ReconcileResult,
  type Reconciler,
  type ResourceKind,
  TerminalError,
} from '../../../src/kube/types.js';
import { FakeClock } from '../../support/fake-clock.js';
import { waitFor } from '../../support/wait.js';

const CONFIGMAP: ResourceKind = { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };

/** A cache holding a fixed set of primaries: all a term's start reads from it. */
function cacheOf(names: string[]): ObjectCache {
  const objects: KubernetesObject[] = names.map((name) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'ns1' },
  }));
  return { get: () => undefined, list: <T extends KubernetesObject>() => objects as T[] };
}

describe('runtime controller: leadership terms', () => {
  it('starts `workers` worker loops per term and keeps none of an ended term once its reconciles return', async () => {
    const workers = 3;
    const terms = 6;
    const reconciled: string[] = [];
    let releaseSlow: (() => void) | undefined;
    const reconciler: Reconciler = {
      name: 'terms',
      watches: { primary: CONFIGMAP, owned: [] },
      async reconcile(key, context) {
        reconciled.push(key.name);
        if (key.name !== 'slow') return undefined;
        // Outlives its term: returns only after the term has ended and the test lets it go.
        await new Promise<void>((resolve) => context.signal.addEventListener('abort', () => resolve(), { once: true }));
        await new Promise<void>((resolve) => {
          releaseSlow = resolve;
        });
        return undefined;
      },
    };
    const controller = new Controller({
      reconciler,
      workers,
      cache: cacheOf(['a', 'b', 'slow']),
      client: {} as KubeWriter,
      events: { record: () => undefined } as EventRecorder,
      metrics: new RuntimeMetrics(new Registry()),
      logger: pino({ level: 'silent' }),
      clock: systemClock,
    });
    for (let term = 1; term <= terms; term++) {
      const leadership = new AbortController();
      controller.startTerm(leadership.signal);
      if (releaseSlow) {
        // The last term's slow reconcile is still running beside this term's workers, then returns.
        expect(controller.workerLoops()).to.equal(workers + 1);
        releaseSlow();
        releaseSlow = undefined;
        await waitFor(() => controller.workerLoops() === workers, 10_000, {
          description: `term ${term - 1}'s last worker to return`,
          intervalMs: 10,
        });
      } else {
        expect(controller.workerLoops()).to.equal(workers);
      }
      for (const name of ['a', 'b', 'slow'])
        await waitFor(() => reconciled.filter((seen) => seen === name).length === term, 10_000, {
          description: `${name} in term ${term}`,
          intervalMs: 10,
        });
      leadership.abort(new Error('leadership lost'));
      controller.endTerm();
      // The idle workers return at once; the one in the slow reconcile only when that reconcile does.
      await waitFor(() => releaseSlow !== undefined && controller.workerLoops() === 1, 10_000, {
        description: `term ${term} winding down`,
        intervalMs: 10,
      });
    }
    releaseSlow!();
    await waitFor(() => controller.workerLoops() === 0, 10_000, {
      description: 'the last slow reconcile to return',
      intervalMs: 10,
    });
    expect(reconciled.filter((name) => name === 'a')).to.have.length(terms);
    controller.shutDown();
    await controller.drained();
    expect(controller.workerLoops()).to.equal(0);
  });
});

describe('runtime controller: what a reconcile asks of the queue', () => {
  /** One primary `a`, reconciled by `outcome` on a fake clock; returns how many times it was reconciled. */
  async function run(outcome: () => Promise<ReconcileResult>) {
    const clock = new FakeClock();
    const registry = new Registry();
    let reconciles = 0;
    const controller = new Controller({
      reconciler: {
        name: 'queue',
        watches: { primary: CONFIGMAP, owned: [] },
        async reconcile() {
          reconciles++;
          return outcome();
        },
      },
      workers: 1,
      cache: cacheOf(['a']),
      client: {} as KubeWriter,
      events: { record: () => undefined } as EventRecorder,
      metrics: new RuntimeMetrics(registry),
      logger: pino({ level: 'silent' }),
      clock,
    });
    const leadership = new AbortController();
    controller.startTerm(leadership.signal);
    await waitFor(() => reconciles === 1 && controller.inFlight() === 0, 10_000, {
      description: 'the first reconcile',
      intervalMs: 5,
    });
    return {
      reconciles: () => reconciles,
      advance: (ms: number) => clock.advance(ms),
      metrics: () => registry.metrics(),
      stop: async () => {
        leadership.abort(new Error('done'));
        controller.shutDown();
        await controller.drained();
      },
    };
  }

  it('requeueAfterMs looks again after that long, not before', async () => {
    const loop = await run(async () => ({ requeueAfterMs: 1000 }));
    await loop.advance(999);
    expect(loop.reconciles()).to.equal(1);
    await loop.advance(1);
    await waitFor(() => loop.reconciles() === 2, 10_000, { description: 'the requeue', intervalMs: 5 });
    expect(await loop.metrics()).to.match(
      /controller_runtime_reconcile_total\{controller="queue",result="requeue_after"\} [12]/,
    );
    await loop.stop();
  });

  it("requeue: 'rateLimited' looks again after the object's backoff, which grows while it keeps asking", async () => {
    const loop = await run(async () => ({ requeue: 'rateLimited' }));
    await loop.advance(5);
    await waitFor(() => loop.reconciles() === 2, 10_000, { description: 'the first backoff (5 ms)', intervalMs: 5 });
    await loop.advance(9);
    expect(loop.reconciles()).to.equal(2);
    await loop.advance(1);
    await waitFor(() => loop.reconciles() === 3, 10_000, { description: 'the second backoff (10 ms)', intervalMs: 5 });
    expect(await loop.metrics()).to.match(
      /controller_runtime_reconcile_total\{controller="queue",result="requeue"\} [23]/,
    );
    await loop.stop();
  });

  it('a thrown error is retried with backoff', async () => {
    const loop = await run(async () => {
      throw new Error('the apiserver is away');
    });
    await loop.advance(5);
    await waitFor(() => loop.reconciles() === 2, 10_000, { description: 'the retry', intervalMs: 5 });
    await loop.stop();
  });

  it('a TerminalError is counted once and never retried: retrying cannot fix it', async () => {
    const loop = await run(async () => {
      throw new TerminalError('the object is invalid');
    });
    await loop.advance(3_600_000);
    expect(loop.reconciles()).to.equal(1);
    const text = await loop.metrics();
    expect(text).to.match(/controller_runtime_terminal_reconcile_errors_total\{controller="queue"\} 1/);
    expect(text).to.match(/controller_runtime_reconcile_errors_total\{controller="queue"\} 1/);
    await loop.stop();
  });
});
