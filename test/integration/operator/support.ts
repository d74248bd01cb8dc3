// The operator's integration support: install the CRD, run the real runtime manager in-process with the OracleNode
// reconciler (one per suite, scoped to its namespace), load the samples, read objects, count API writes.

import { readFileSync, writeFileSync } from 'node:fs';
import { type KubeConfig, type KubernetesObject, loadYaml } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { LABELS } from '../../../src/contract/pods.js';
import { createManager, type RuntimeManager } from '../../../src/kube/manager.js';
import { createOracleNodeReconciler } from '../../../src/operator/controller.js';
import { OracleNodeMetrics } from '../../../src/operator/metrics.js';
import { API_VERSION, FIELD_MANAGER, KIND, type OracleNode } from '../../../src/operator/resource.js';
import { apply, kc, objects, serviceAccountKubeConfig, statusOf, waitFor } from '../support/cluster.js';

export const CRD_PATH = new URL('../../../crds/oracle-node.io_oraclenodes.yaml', import.meta.url);

/** Applies the generated AirnodeFeed CRD and waits until it is Established. */
export function installFeedCrd(): Promise<void> {
  return installCrd(new URL('../../../crds/oracle-node.io_airnodefeeds.yaml', import.meta.url));
}

/** Applies the generated CRD (OracleNode's unless another is named) and waits until it is Established. */
export async function installCrd(path: URL = CRD_PATH): Promise<void> {
  // loadYaml deserializes into client-node's typed model: its serializer would otherwise drop the keys whose JSON
  // names differ from the model's (enum, x-kubernetes-validations, x-kubernetes-preserve-unknown-fields, ...).
  const crd = loadYaml<KubernetesObject>(readFileSync(path, 'utf8'));
  await apply(crd);
  await waitFor(
    async () => {
      const live = (await objects.read(crd as never)) as KubernetesObject & {
        status?: { conditions?: { type: string; status: string }[] };
      };
      return live.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
    },
    60_000,
    { description: `the CRD ${crd.metadata?.name} to be Established` },
  );
}

export type SampleName = 'minimal' | 'full-multi-chain' | 'gateways-only';

export function sampleDocs(name: SampleName, namespace: string): { node: OracleNode; secret: KubernetesObject } {
  const text = readFileSync(new URL(`../../../manifests/samples/${name}.yaml`, import.meta.url), 'utf8');
  const docs = yaml.loadAll(text) as KubernetesObject[];
  for (const doc of docs) doc.metadata = { ...doc.metadata, namespace };
  return {
    node: docs.find((d) => d.kind === KIND) as OracleNode,
    secret: docs.find((d) => d.kind === 'Secret')!,
  };
}

export async function read<T extends KubernetesObject>(
  apiVersion: string,
  kind: string,
  namespace: string,
  name: string,
): Promise<T | undefined> {
  try {
    return (await objects.read({ apiVersion, kind, metadata: { name, namespace } } as never)) as T;
  } catch (error) {
    if (statusOf(error) === 404) return undefined;
    throw error;
  }
}

export const readNode = (namespace: string, name: string) => read<OracleNode>(API_VERSION, KIND, namespace, name);

export function condition(node: OracleNode | undefined, type: string) {
  return node?.status?.conditions?.find((c) => c.type === type);
}

export type RunningOperator = {
  manager: RuntimeManager;
  /** API writes (POST/PUT/PATCH/DELETE) the operator made so far. */
  writes(): Promise<number>;
  reconciles(): Promise<number>;
  stop(): Promise<void>;
};

async function metricSum(manager: RuntimeManager, name: string, filter: (labels: Record<string, unknown>) => boolean) {
  const found = manager.registry.getSingleMetric(name);
  if (!found) return 0;
  const { values } = await found.get();
  return values
    .filter((v) => !('metricName' in v) || !String(v.metricName).endsWith('_bucket'))
    .filter((v) => filter(v.labels))
    .reduce((sum, v) => sum + v.value, 0);
}

/** The runtime manager with the OracleNode reconciler, in this process, watching one namespace. */
export function startOperator(
  namespace: string,
  options: { workers?: number; waitPollMs?: number; kubeConfig?: KubeConfig } = {},
): RunningOperator {
  const manager = createManager({
    kubeConfig: options.kubeConfig ?? kc,
    namespaces: [namespace],
    leaderElection: { enabled: false, namespace, leaseName: 'oracle-node-operator', identity: 'integration' },
    workers: options.workers ?? 4,
    qps: 200,
    burst: 400,
    metricsPort: 0,
    healthPort: 0,
    fieldManager: FIELD_MANAGER,
    logger: pino({ level: process.env.OPERATOR_TEST_LOG_LEVEL ?? 'silent' }),
    // Coordinator Jobs are owned by their CronJob: the name label maps them to their OracleNode.
    tuning: { registry: new Registry(), ownerNameLabel: LABELS.name },
  });
  const reconciler = createOracleNodeReconciler({
    waitPollMs: options.waitPollMs ?? 1000,
    metrics: new OracleNodeMetrics(manager.registry),
  });
  const running = manager.run(reconciler).catch((error: unknown) => {
    console.error('operator manager stopped with an error', error);
  });
  return {
    manager,
    writes: () =>
      metricSum(manager, 'rest_client_requests_total', (labels) =>
        ['POST', 'PUT', 'PATCH', 'DELETE'].includes(String(labels.method).toUpperCase()),
      ),
    reconciles: () => metricSum(manager, 'controller_runtime_reconcile_total', () => true),
    async stop() {
      await manager.stop();
      await running;
    },
  };
}

/** A kubeconfig file with a token of the ServiceAccount: the processes call the apiserver as the pod would. */
export async function serviceAccountKubeConfigFile(namespace: string, name: string, file: string): Promise<string> {
  writeFileSync(file, (await serviceAccountKubeConfig(namespace, name)).exportConfig());
  return file;
}
