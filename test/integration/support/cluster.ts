// Shared support for the integration tier: which cluster to talk to, a namespace per suite, polling.
//
// The cluster is the one KUBECONFIG points at; without KUBECONFIG it is the test control plane of
// `make cluster-up` (.cache/cluster/run/admin.kubeconfig). Every suite works in its own namespace,
// so suites can run together or one at a time against an already running cluster:
//
//   KUBECONFIG=.cache/cluster/run/admin.kubeconfig node_modules/.bin/mocha test/integration/cluster/gc.test.ts

import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type ApiConstructor,
  ApiException,
  type ApiType,
  CoreV1Api,
  KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  type V1Job,
} from '@kubernetes/client-node';
import { RestClient, RuntimeClient } from '../../../src/kube/api.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** Where `make cluster-up` keeps its kubeconfigs. */
export const clusterRunDir = process.env['CLUSTER_RUN_DIR'] ?? resolve(repoRoot, '.cache/cluster/run');
const defaultAdminKubeconfig = resolve(clusterRunDir, 'admin.kubeconfig');
const defaultRestrictedKubeconfig = resolve(clusterRunDir, 'restricted.kubeconfig');

/** The user name of the restricted client certificate that `make cluster-up` issues (no RBAC bindings of its own). */
export const restrictedUser = 'oracle-test-restricted';

/** Label put on every namespace the tests create, so leftovers can be found: `kubectl get ns -l <label>`. */
export const testNamespaceLabel = 'oracle-node-operator.test/suite';

/** Field manager used by the tests for server-side apply. */
export const testFieldManager = 'oracle-node-operator-tests';

function loadKubeConfig(): { kc: KubeConfig; path: string } {
  const fromEnv = process.env['KUBECONFIG'];
  const path = fromEnv && fromEnv.length > 0 ? fromEnv : defaultAdminKubeconfig;
  if (!fromEnv && !existsSync(path)) {
    throw new Error(
      `no cluster for the integration tests: KUBECONFIG is not set and ${path} does not exist. ` +
        'Run `make cluster-up` (or set KUBECONFIG to a kind/k3d/real cluster you may create namespaces in).',
    );
  }
  const kc = new KubeConfig();
  // KUBECONFIG may be a path list like kubectl's; loadFromDefault merges it the same way.
  if (fromEnv) kc.loadFromDefault();
  else kc.loadFromFile(path);
  if (!kc.getCurrentCluster()) throw new Error(`kubeconfig ${path} has no current cluster`);
  return { kc, path };
}

const loaded = loadKubeConfig();

/** The admin KubeConfig the suites use. */
export const kc: KubeConfig = loaded.kc;
/** The kubeconfig file (or KUBECONFIG list) it came from. */
export const kubeconfigPath: string = loaded.path;

/** A typed API client on the admin identity, e.g. `api(AppsV1Api).createNamespacedDeployment({ namespace, body })`. */
export function api<T extends ApiType>(apiClass: ApiConstructor<T>, config: KubeConfig = kc): T {
  return config.makeApiClient(apiClass);
}

/** Generic client (any kind, incl. custom resources) on the admin identity. */
export const objects: KubernetesObjectApi = KubernetesObjectApi.makeApiClient(kc);

/** src/kube's client (what the pods and the CLI use) on a kubeconfig of the suite, the admin's by default. */
export function kubeClient(config: KubeConfig = kc, fieldManager = testFieldManager): RuntimeClient {
  return new RuntimeClient(new RestClient(config, { qps: 500, burst: 500 }), fieldManager);
}

/** True when the cluster is the test control plane of `make cluster-up` (its restricted identity is then available). */
export function isLocalTestCluster(): boolean {
  return resolve(kubeconfigPath) === defaultAdminKubeconfig;
}

/**
 * The KubeConfig of a second, RBAC-restricted identity (user `restrictedUser`, no bindings unless a test adds them).
 * In order: CLUSTER_RESTRICTED_KUBECONFIG; the client certificate issued by `make cluster-up` when the suites run
 * against that cluster; otherwise the admin identity impersonating `restrictedUser` (works on kind/k3d/real clusters
 * when the admin may impersonate, which cluster-admin can).
 */
export function restrictedKubeConfig(): KubeConfig {
  const explicit = process.env['CLUSTER_RESTRICTED_KUBECONFIG'];
  const file = explicit || (isLocalTestCluster() ? defaultRestrictedKubeconfig : undefined);
  const restricted = new KubeConfig();
  if (file && existsSync(file)) {
    restricted.loadFromFile(file);
    return restricted;
  }
  const current = kc.getCurrentUser();
  if (!current) throw new Error('the admin kubeconfig has no current user to impersonate from');
  restricted.loadFromOptions({
    clusters: kc.clusters,
    users: kc.users.map((u) => (u.name === current.name ? { ...u, impersonateUser: restrictedUser } : u)),
    contexts: kc.contexts,
    currentContext: kc.currentContext,
  });
  return restricted;
}

// ---------------------------------------------------------------------------------------------------------------
// errors and polling

/** The HTTP status of a client-node API error, or undefined for anything else. */
export function statusOf(err: unknown): number | undefined {
  return err instanceof ApiException ? err.code : undefined;
}

/** Whether the Job has finished with every completion done (its Complete condition is True). */
export function jobComplete(job: V1Job): boolean {
  return job.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True') ?? false;
}

/** Awaits `promise`, expecting it to fail with HTTP `code`; returns the error (fails the test otherwise). */
export async function expectStatus(promise: Promise<unknown>, code: number): Promise<ApiException<unknown>> {
  let result: unknown;
  try {
    result = await promise;
  } catch (err) {
    if (err instanceof ApiException && err.code === code) return err as ApiException<unknown>;
    throw new Error(`expected HTTP ${code}, got ${describeError(err)}`);
  }
  throw new Error(`expected HTTP ${code}, but the request succeeded: ${JSON.stringify(result)?.slice(0, 300)}`);
}

/** A KubeConfig holding a token of the ServiceAccount: calls made as that identity, not an impersonation. */
export async function serviceAccountKubeConfig(namespace: string, name: string): Promise<KubeConfig> {
  const token = await api(CoreV1Api).createNamespacedServiceAccountToken({
    namespace,
    name,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const cluster = kc.getCurrentCluster()!;
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [cluster],
    users: [{ name, token: token.status!.token }],
    contexts: [{ name, cluster: cluster.name, user: name }],
    currentContext: name,
  });
  return config;
}

export { describeError, sleep, type WaitOptions, waitFor } from '../../support/wait.js';

import { describeError, waitFor } from '../../support/wait.js';

// ---------------------------------------------------------------------------------------------------------------
// namespaces

/** A DNS-1123 name `<prefix>-<random>` (max 63 chars). */
export function uniqueName(prefix: string): string {
  const clean =
    prefix
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 50) || 'test';
  return `${clean}-${randomBytes(4).toString('hex')}`;
}

/** Creates a uniquely named, labelled namespace and waits until its `default` ServiceAccount exists (pods need it). */
export async function createNamespace(prefix: string): Promise<string> {
  const core = api(CoreV1Api);
  const name = uniqueName(prefix);
  await core.createNamespace({ body: { metadata: { name, labels: { [testNamespaceLabel]: 'true' } } } });
  await waitFor(
    async () => {
      try {
        return await core.readNamespacedServiceAccount({ name: 'default', namespace: name });
      } catch (err) {
        if (statusOf(err) === 404) return undefined;
        throw err;
      }
    },
    60_000,
    { description: `ServiceAccount default in namespace ${name}` },
  );
  return name;
}

/**
 * Deletes a namespace (foreground: its objects go first). Set KEEP_TEST_NAMESPACES=1 to keep them for debugging.
 * With `wait`, returns once the namespace is gone.
 */
export async function deleteNamespace(name: string, wait = false): Promise<void> {
  if (process.env['KEEP_TEST_NAMESPACES'] === '1') {
    console.log(`    (keeping namespace ${name}: KEEP_TEST_NAMESPACES=1)`);
    return;
  }
  const core = api(CoreV1Api);
  try {
    await core.deleteNamespace({ name, propagationPolicy: 'Foreground' });
  } catch (err) {
    if (statusOf(err) !== 404) throw err;
  }
  if (!wait) return;
  await waitFor(
    async () => {
      try {
        await core.readNamespace({ name });
        return false;
      } catch (err) {
        if (statusOf(err) === 404) return true;
        throw err;
      }
    },
    120_000,
    { description: `namespace ${name} to be deleted` },
  );
}

/**
 * Registers mocha hooks in the calling `describe` that create a fresh namespace before its tests and delete it
 * after them. Read `.name` inside hooks/tests (it is set once the `before` hook ran).
 */
export function useNamespace(prefix: string): { readonly name: string } {
  const state = { name: '' };
  before(async function () {
    this.timeout(90_000);
    state.name = await createNamespace(prefix);
  });
  after(async function () {
    this.timeout(60_000);
    if (state.name) await deleteNamespace(state.name);
  });
  return {
    get name(): string {
      if (!state.name) throw new Error('useNamespace(): the namespace exists only inside hooks and tests');
      return state.name;
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// objects

/**
 * Server-side apply of any object (built-in or custom; `apiVersion`, `kind`, `metadata.name` required) with the
 * tests' field manager, forcing ownership of conflicting fields.
 */
export async function apply<T extends KubernetesObject>(object: T, fieldManager = testFieldManager): Promise<T> {
  return objects.patch(object, undefined, undefined, fieldManager, true, PatchStrategy.ServerSideApply);
}
