// The operator's integration support: install the CRD, run the real runtime manager in-process with the OracleNode
// reconciler (one per suite, scoped to its namespace), load the samples, read objects, count API writes; useOperator
// sets all of it up for a suite.

import { readFileSync, writeFileSync } from 'node:fs';
import {
  type KubeConfig,
  type KubernetesObject,
  loadYaml,
  type V1CronJob,
  type V1Deployment,
  type V1Job,
} from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { LABELS } from '../../../src/contract/pods.js';
import { createManager, type RuntimeManager } from '../../../src/kube/manager.js';
import { createOracleNodeReconciler } from '../../../src/operator/controller.js';
import { OracleNodeMetrics } from '../../../src/operator/metrics.js';
import { API_VERSION, FIELD_MANAGER, KIND, type OracleNode } from '../../../src/operator/resource.js';
import {
  apply,
  jobComplete,
  kc,
  objects,
  serviceAccountKubeConfig,
  statusOf,
  useNamespace,
  waitFor,
} from '../support/cluster.js';

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

/** The latest second of a minute at which a coordinator Job is still taken as the one a test reports for. */
const LATEST_SECOND_TO_REPORT = 40;

/**
 * A completed coordinator Job of the node that stays its newest finished one for at least 20 s: created in the
 * current minute, now at most 40 s into it. The CronJob fires on whole minutes, and status.lastCycle follows the
 * newest finished Job: a report written for an older Job, or just before the next minute's Job completes, would
 * never show there. So a test writes its cycle report for this Job at once, and the operator has 20 s to show it.
 */
export function freshCompletedCoordinatorJob(namespace: string, node: string): Promise<V1Job> {
  const minuteOf = (time: Date) => Math.floor(time.getTime() / 60_000);
  return waitFor(
    async () => {
      const jobs = (
        (await objects.list(
          'batch/v1',
          'Job',
          namespace,
          undefined,
          undefined,
          undefined,
          undefined,
          `${LABELS.name}=${node},app.kubernetes.io/component=coordinator`,
        )) as { items: V1Job[] }
      ).items;
      const created = (job: V1Job) => new Date(job.metadata?.creationTimestamp ?? 0);
      const newest = jobs.sort((a, b) => created(b).getTime() - created(a).getTime())[0];
      const now = new Date();
      if (!newest || minuteOf(created(newest)) !== minuteOf(now) || now.getUTCSeconds() > LATEST_SECOND_TO_REPORT)
        return undefined;
      return jobComplete(newest) ? newest : undefined;
    },
    150_000,
    { description: `a coordinator Job of ${node} completed early in the current minute`, intervalMs: 500 },
  );
}

/** A kubeconfig file with a token of the ServiceAccount: the processes call the apiserver as the pod would. */
export async function serviceAccountKubeConfigFile(namespace: string, name: string, file: string): Promise<string> {
  writeFileSync(file, (await serviceAccountKubeConfig(namespace, name)).exportConfig());
  return file;
}

/** What a suite of the operator's gets from useOperator: its namespace, its operator, and readers and edits there. */
export type OperatorSuite = {
  /** The suite's namespace (inside hooks and tests only). */
  readonly namespace: string;
  /** The operator watching it (inside tests only). */
  readonly operator: RunningOperator;
  cronJob(name: string): Promise<V1CronJob | undefined>;
  deployment(name: string): Promise<V1Deployment | undefined>;
  /** Applies a sample's Secret and OracleNode (the node edited first), in the suite's namespace. */
  applySample(sample: SampleName, edit?: (node: OracleNode) => void): Promise<OracleNode>;
  /** Applies the live node's spec after `edit`, as a user edits a node. */
  editNode(name: string, edit: (node: OracleNode) => void): Promise<void>;
  /** The node once its status is of its generation and `test` holds. */
  nodeWhere(name: string, test: (node: OracleNode) => boolean, description: string): Promise<OracleNode>;
  /** The node once its status is of its generation and Ready. */
  readyNode(name: string): Promise<OracleNode>;
};

/**
 * The set-up every operator suite shares, as mocha hooks (call it at the top of a describe): a namespace of its own
 * (deleted after the suite), the CRD installed, and the operator running in this process, watching that namespace,
 * until the suite is over.
 */
export function useOperator(prefix: string, options: Parameters<typeof startOperator>[1] = {}): OperatorSuite {
  const namespace = useNamespace(prefix);
  let running: RunningOperator | undefined;
  before(async () => {
    await installCrd();
    running = startOperator(namespace.name, options);
  });
  after(async () => {
    await running?.stop();
  });
  const ns = () => namespace.name;
  const nodeWhere = (name: string, test: (node: OracleNode) => boolean, description: string) =>
    waitFor(
      async () => {
        const node = await readNode(ns(), name);
        return node && node.status?.observedGeneration === node.metadata.generation && test(node) ? node : undefined;
      },
      120_000,
      { description: `OracleNode ${name}: ${description}`, intervalMs: 300 },
    );
  return {
    get namespace() {
      return ns();
    },
    get operator() {
      if (!running) throw new Error('useOperator(): the operator runs only inside tests');
      return running;
    },
    cronJob: (name) => read<V1CronJob>('batch/v1', 'CronJob', ns(), name),
    deployment: (name) => read<V1Deployment>('apps/v1', 'Deployment', ns(), name),
    async applySample(sample, edit) {
      const { node, secret } = sampleDocs(sample, ns());
      edit?.(node);
      await apply(secret);
      await apply(node);
      return node;
    },
    async editNode(name, edit) {
      const live = (await readNode(ns(), name))!;
      const desired = {
        apiVersion: API_VERSION,
        kind: KIND,
        metadata: { name, namespace: ns() },
        spec: structuredClone(live.spec),
      } as OracleNode;
      edit(desired);
      await apply(desired);
    },
    nodeWhere,
    readyNode: (name) => nodeWhere(name, (node) => condition(node, 'Ready')?.status === 'True', 'Ready'),
  };
}
