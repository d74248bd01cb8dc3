// Support for the e2e tier: a real node (test/cluster/real-node.sh, `NODE=real make cluster-up`) whose
// pods really run the engine image. `make test-e2e` starts that cluster and exports what these helpers
// read: KUBECONFIG, REAL_NODE_NAME, REAL_NODE_GATEWAY (the host's address on the pod bridge) and
// REAL_NODE_IMAGE (the engine image imported into the node's containerd).

import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { BatchV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, type V1Job, type V1Pod } from '@kubernetes/client-node';
import { expect } from 'chai';
import { type FEED_KIND, FEED_PLURAL } from '../../src/operator/feed/api.js';
import { GROUP, KIND, PLURAL, VERSION } from '../../src/operator/resource.js';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const kubectlBinary = resolve(
  process.env['CLUSTER_BIN_DIR'] ?? resolve(repoRoot, '.cache/cluster/bin'),
  'kubectl',
);

export type RealNode = { kubeconfig: string; nodeName: string; gateway: string; image: string };

/** The real-node cluster from the environment, or the reason it is missing (suites then skip). */
export function realNode(): RealNode | string {
  const kubeconfig = process.env['KUBECONFIG'];
  const nodeName = process.env['REAL_NODE_NAME'];
  const gateway = process.env['REAL_NODE_GATEWAY'];
  const image = process.env['REAL_NODE_IMAGE'];
  if (!kubeconfig || !nodeName || !gateway || !image) {
    return 'no real node: run `make test-e2e`, or `NODE=real make cluster-up` and eval "$(test/cluster/real-node.sh env)"';
  }
  return { kubeconfig, nodeName, gateway, image };
}

/** The real node, inside a suite that skipped itself when realNode() gave the reason there is none. */
export function requireRealNode(node: RealNode | string): RealNode {
  if (typeof node === 'string') throw new Error(node);
  return node;
}

let kubeConfig: KubeConfig | undefined;
export function kc(): KubeConfig {
  if (!kubeConfig) {
    kubeConfig = new KubeConfig();
    kubeConfig.loadFromDefault();
  }
  return kubeConfig;
}
export const core = (): CoreV1Api => kc().makeApiClient(CoreV1Api);
export const batch = (): BatchV1Api => kc().makeApiClient(BatchV1Api);

export { describeError, sleep, waitFor } from '../support/wait.js';

import { waitFor } from '../support/wait.js';

/**
 * Creates an OracleNode or an AirnodeFeed, again each second until the apiserver takes it: a create made before the
 * operator is up (its admission webhook unreachable) is refused. `what` names it in the timeout's message.
 */
export async function createOnceAdmitted(
  namespace: string,
  resource: { kind: typeof KIND | typeof FEED_KIND; name: string; spec: Record<string, unknown> },
  what = `the ${resource.kind}`,
): Promise<void> {
  const custom = kc().makeApiClient(CustomObjectsApi);
  await waitFor(
    () =>
      custom
        .createNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace,
          plural: resource.kind === KIND ? PLURAL : FEED_PLURAL,
          body: {
            apiVersion: `${GROUP}/${VERSION}`,
            kind: resource.kind,
            metadata: { name: resource.name },
            spec: resource.spec,
          },
        })
        .then(() => true),
    180_000,
    { description: `${what} created (the operator up, its webhook reachable)`, intervalMs: 1000 },
  );
}

/** A fresh namespace for a suite, deleted afterwards (KEEP_TEST_NAMESPACES=1 keeps it). */
export function useNamespace(prefix: string): { readonly name: string } {
  const state = { name: '' };
  before(async function () {
    if (typeof realNode() === 'string') return;
    this.timeout(90_000);
    const name = `${prefix}-${randomBytes(4).toString('hex')}`;
    await core().createNamespace({
      body: { metadata: { name, labels: { 'oracle-node-operator.test/suite': 'e2e' } } },
    });
    await waitFor(
      () => core().readNamespacedServiceAccount({ name: 'default', namespace: name }),
      60_000,
      `ServiceAccount default in ${name}`,
    );
    state.name = name;
  });
  after(async function () {
    this.timeout(60_000);
    if (!state.name || process.env['KEEP_TEST_NAMESPACES'] === '1') return;
    await core()
      .deleteNamespace({ name: state.name })
      .catch(() => undefined);
  });
  return {
    get name(): string {
      if (!state.name) throw new Error('useNamespace(): the namespace exists only inside hooks and tests');
      return state.name;
    },
  };
}

/** The hardening every engine container gets in these tests (and in the operator's workloads). */
export const restricted = {
  runAsNonRoot: true,
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};

export const jobDone = (job: V1Job): 'Complete' | 'Failed' | undefined =>
  job.status?.conditions?.find((c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True')?.type as
    | 'Complete'
    | 'Failed'
    | undefined;

export async function podsOf(namespace: string, labelSelector: string): Promise<V1Pod[]> {
  return (await core().listNamespacedPod({ namespace, labelSelector })).items;
}

/** ms from the pod's creation to its first container having started (from the API's timestamps). */
export function podStartMs(pod: V1Pod): number | undefined {
  const created = pod.metadata?.creationTimestamp;
  const status = pod.status?.containerStatuses?.[0];
  const started = status?.state?.running?.startedAt ?? status?.state?.terminated?.startedAt;
  if (!created || !started) return undefined;
  return new Date(started).getTime() - new Date(created).getTime();
}

const execFileP = promisify(execFile);
/** Runs the test cluster's kubectl against KUBECONFIG. */
export async function kubectl(...args: string[]): Promise<string> {
  const { stdout } = await execFileP(kubectlBinary, args, { env: process.env, maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

/** Runs kubectl with `input` on stdin; never throws for a non-zero exit (for answers that must be refusals). */
export function kubectlWithInput(
  input: string,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolvePromise) => {
    const child = execFile(
      kubectlBinary,
      args,
      { env: process.env, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolvePromise({ code, stdout, stderr });
      },
    );
    child.stdin?.end(input);
  });
}

/** Records a measured duration for docs/benchmarks.md (.cache/e2e/timings.txt and the test output). */
export function recordTiming(name: string, ms: number): void {
  const dir = resolve(repoRoot, '.cache/e2e');
  mkdirSync(dir, { recursive: true });
  appendFileSync(resolve(dir, 'timings.txt'), `${new Date().toISOString()} ${name}=${Math.round(ms)}\n`);
  console.log(`      timing: ${name} = ${Math.round(ms)} ms`);
}

/** Records a measured count beside the timings (.cache/e2e/timings.txt and the test output). */
export function recordCount(name: string, count: number): void {
  const dir = resolve(repoRoot, '.cache/e2e');
  mkdirSync(dir, { recursive: true });
  appendFileSync(resolve(dir, 'timings.txt'), `${new Date().toISOString()} ${name}=${count}\n`);
  console.log(`      count: ${name} = ${count}`);
}

function imageOf(): string {
  const node = realNode();
  if (typeof node === 'string') throw new Error(node);
  return node.image;
}

/** Runs `args` (after the image's entrypoint, `node /app/dist/cli/index.js`) or `command` as a Job; returns its pod. */
export async function runJob(
  namespace: string,
  name: string,
  container: { args?: string[]; command?: string[]; env?: { name: string; value: string }[] },
): Promise<{ pod: V1Pod; outcome: 'Complete' | 'Failed'; elapsedMs: number }> {
  const t0 = Date.now();
  await batch().createNamespacedJob({
    namespace,
    body: {
      metadata: { name },
      spec: {
        backoffLimit: 0,
        template: {
          metadata: { labels: { job: name } },
          spec: {
            restartPolicy: 'Never',
            automountServiceAccountToken: true,
            securityContext: { runAsUser: 65532, runAsGroup: 65532, fsGroup: 65532 },
            containers: [
              {
                name: 'engine',
                image: imageOf(),
                imagePullPolicy: 'Never',
                ...container,
                securityContext: restricted,
                volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
              },
            ],
            volumes: [{ name: 'tmp', emptyDir: {} }],
          },
        },
      },
    },
  });
  const outcome = await waitFor(
    async () => jobDone(await batch().readNamespacedJob({ name, namespace })),
    120_000,
    `Job ${name} to finish`,
  );
  const elapsedMs = Date.now() - t0;
  const [pod] = await podsOf(namespace, `job=${name}`);
  if (!pod) throw new Error(`no pod for Job ${name}`);
  return { pod, outcome, elapsedMs };
}

/** Runs `node -e script` in a Job of the engine image; expects it to complete and returns its trimmed log. */
export async function runNodeScript(namespace: string, name: string, script: string): Promise<string> {
  const { pod, outcome } = await runJob(namespace, name, { command: ['node', '-e', script] });
  const log = (await logsOf(namespace, pod)).trim();
  expect(outcome, log).to.equal('Complete');
  return log;
}

export async function logsOf(namespace: string, pod: V1Pod): Promise<string> {
  return core().readNamespacedPodLog({ name: pod.metadata?.name ?? '', namespace });
}

const OPERATOR_NAMESPACE = 'oracle-node-system';
const installManifestPath = () => resolve(repoRoot, '.cache/e2e/install.yaml');

/** manifests/install.yaml with every use of the chart's default image (operator and workloads) set to `image`. */
function withLocalImage(manifest: string, image: string): string {
  const published = /^\s+image: "?([^"\s]+)"?$/m.exec(manifest)?.[1];
  if (!published) throw new Error('manifests/install.yaml names no image');
  const replaced = manifest.replaceAll(published, image);
  if (replaced.split(image).length - 1 < 2) throw new Error(`expected ${published} for the operator and workloads`);
  return replaced;
}

/**
 * Applies the product's install manifest (CRD, RBAC, operator Deployment) with its image set to the one `make image`
 * built and the node imported, as `--set image.repository=...` does with the chart (the published image is not
 * pulled here). A suite before may have uninstalled it without waiting: its CRD and namespace are let go first.
 */
export async function installOperator(): Promise<void> {
  await waitFor(
    async () => {
      const terminating = await kubectl(
        'get',
        'crd/oraclenodes.oracle-node.io',
        `namespace/${OPERATOR_NAMESPACE}`,
        '--ignore-not-found',
        '-o',
        'jsonpath={.items[*].metadata.deletionTimestamp}',
      );
      return terminating.trim() === '';
    },
    120_000,
    { description: 'the operator of a suite before uninstalled', intervalMs: 1000 },
  );
  const path = installManifestPath();
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, withLocalImage(readFileSync(resolve(repoRoot, 'manifests/install.yaml'), 'utf8'), imageOf()));
  await kubectl('apply', '--server-side', '-f', path);
}

/** Deletes what installOperator() applied, without waiting (KEEP_TEST_NAMESPACES=1 keeps it). */
export async function uninstallOperator(): Promise<void> {
  if (process.env['KEEP_TEST_NAMESPACES'] === '1') return;
  await kubectl('delete', '--ignore-not-found', '--wait=false', '-f', installManifestPath()).catch(() => undefined);
}
