// What the benchmarks against the test control plane share: finding and reaching it (skipped when none runs),
// server-side apply with the benchmarks' field manager, the CRD installed from crds/, percentiles.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CoreV1Api,
  KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  loadYaml,
  PatchStrategy,
} from '@kubernetes/client-node';

export { freePort } from '../../test/support/net.js';
export { sleep } from '../../test/support/wait.js';

export const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
export const FIELD_MANAGER = 'oracle-node-bench';

export const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

function kubeconfigPath(): string | undefined {
  if (process.env.KUBECONFIG) return process.env.KUBECONFIG;
  const local = join(root, '.cache/cluster/run/admin.kubeconfig');
  return existsSync(local) ? local : undefined;
}

export type TestCluster = {
  kc: KubeConfig;
  kubeconfigPath: string;
  objects: KubernetesObjectApi;
  /** Server-side apply, forced, with the benchmarks' field manager. */
  apply: <T extends KubernetesObject>(object: T) => Promise<T>;
};

/** The running test control plane (KUBECONFIG, else `make cluster-up`'s), or undefined after saying why not. */
export async function connectTestCluster(benchmark: string): Promise<TestCluster | undefined> {
  const path = kubeconfigPath();
  const kc = new KubeConfig();
  try {
    if (!path) throw new Error('no kubeconfig');
    kc.loadFromFile(path);
    await kc.makeApiClient(CoreV1Api).listNamespace({ limit: 1 });
  } catch (error) {
    console.log(
      `${benchmark} benchmark skipped: no test control plane is running (make cluster-up): ${(error as Error).message}`,
    );
    return undefined;
  }
  const objects = KubernetesObjectApi.makeApiClient(kc);
  const apply = <T extends KubernetesObject>(object: T) =>
    objects.patch(object, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply) as Promise<T>;
  return { kc, kubeconfigPath: path, objects, apply };
}

/**
 * Applies the OracleNode CRD from crds/ and gives the apiserver a moment to serve it. Typed (loadYaml):
 * client-node's serializer drops untyped keys such as enum and x-kubernetes-validations.
 */
export async function installCrd(cluster: TestCluster): Promise<void> {
  const crd = loadYaml<KubernetesObject>(readFileSync(join(root, 'crds/oracle-node.io_oraclenodes.yaml'), 'utf8'));
  await cluster.apply(crd);
  await new Promise((r) => setTimeout(r, 2000));
}
