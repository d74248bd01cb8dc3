// A widget manager with leader election in its own process, so a test can SIGKILL it. It reports on stdout, one
// JSON object a line: {event: 'leading' | 'stopped-leading' | 'reconcile' | 'stopped'}.
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { createManager } from '../../../src/kube/manager.js';
import type { Reconciler } from '../../../src/kube/types.js';
import { widgetReconciler } from './harness.js';

const namespace = process.env.RUNTIME_TEST_NAMESPACE!;
const identity = process.env.RUNTIME_TEST_IDENTITY!;
const say = (event: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(event)}\n`);

const kubeConfig = new KubeConfig();
kubeConfig.loadFromDefault();
const inner = widgetReconciler();
const reconciler: Reconciler = {
  name: inner.name,
  watches: inner.watches,
  async reconcile(key, context) {
    say({ event: 'reconcile', key: `${key.namespace}/${key.name}` });
    return inner.reconcile(key, context);
  },
};
const manager = createManager({
  kubeConfig,
  namespaces: [namespace],
  leaderElection: { enabled: true, namespace, leaseName: 'widget-operator', identity },
  workers: 2,
  qps: 50,
  burst: 100,
  metricsPort: 0,
  healthPort: 0,
  fieldManager: 'widget-operator',
  logger: pino({ level: process.env.RUNTIME_TEST_LOG_LEVEL ?? 'silent' }, pino.destination(2)),
});
let wasLeader = false;
const timer = setInterval(() => {
  if (manager.isLeader() !== wasLeader) {
    wasLeader = manager.isLeader();
    say({ event: wasLeader ? 'leading' : 'stopped-leading', at: Date.now() });
  }
}, 20);
process.on('SIGTERM', () => {
  void manager.stop();
});
await manager.run(reconciler);
clearInterval(timer);
say({ event: 'stopped', at: Date.now() });
