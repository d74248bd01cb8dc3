// Direct (non-operator) access for the suites: a RuntimeClient on the admin identity with a generous rate limit.

import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { RuntimeClient } from '../../../src/kube/client.js';
import { RestClient } from '../../../src/kube/rest.js';
import { CONFIGMAP, WIDGET, type Widget } from './harness.js';

export function adminClient(kubeConfig: KubeConfig): RuntimeClient {
  return new RuntimeClient(new RestClient(kubeConfig, { qps: 500, burst: 500 }), 'runtime-tests');
}

export async function widgetsConverged(
  client: RuntimeClient,
  namespace: string,
  expected: Map<string, number>,
): Promise<boolean> {
  const widgets = await client.list<Widget>(WIDGET, namespace);
  const children = await client.list<KubernetesObject & { data?: { value?: string } }>(
    CONFIGMAP,
    namespace,
    'runtime-test.oracle-node.dev/managed=true',
  );
  if (widgets.length !== expected.size || children.length !== expected.size) return false;
  const childValues = new Map(children.map((child) => [child.metadata!.name!, child.data?.value]));
  return widgets.every((w) => {
    const value = expected.get(w.metadata!.name!);
    return (
      value !== undefined &&
      w.status?.observedValue === value &&
      w.status?.observedGeneration === w.metadata?.generation &&
      childValues.get(`${w.metadata!.name}-child`) === String(value)
    );
  });
}
