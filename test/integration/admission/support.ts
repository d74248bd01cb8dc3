// Admission support: the webhook component as the operator runs it (a real HTTPS server on loopback that the
// test control plane calls through a ValidatingWebhookConfiguration with a URL), kubectl.
import { BatchV1Api, CoreV1Api, type KubeConfig, type V1ConfigMap } from '@kubernetes/client-node';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { buildWorkerJob, type WorkerTemplate, workerJobName } from '../../../src/contract/shard.js';
import { RuntimeClient } from '../../../src/kube/client.js';
import { RestClient } from '../../../src/kube/rest.js';
import { buildCoordinatorFence } from '../../../src/operator/builders/admission.js';
import { DEFAULT_IMAGE, FIELD_MANAGER } from '../../../src/operator/resource.js';
import { ADMISSION_KINDS, AdmissionComponent, type AdmissionOptions } from '../../../src/operator/webhook/admission.js';
import { apply, describeError, kc, uniqueName, waitFor } from '../support/cluster.js';
import { runKubectl } from '../support/kubectl.js';

export { freePort } from '../../support/net.js';

/** kubectl with the admin kubeconfig; resolves with the exit code and both outputs (never rejects on exit code). */
export const kubectl = runKubectl;

export function restClient(): RuntimeClient {
  return new RuntimeClient(new RestClient(kc, { qps: 100, burst: 200, retryMaxMs: 2000 }), FIELD_MANAGER);
}

/** The admission component of one operator replica, reached by the API server at https://127.0.0.1:<port>. */
export function startAdmission(
  options: Partial<AdmissionOptions> &
    Pick<AdmissionOptions, 'configurationName' | 'namespace' | 'secretName' | 'watchNamespaces'> & {
      port: number;
      urlPort?: number;
    },
): AdmissionComponent {
  const component = new AdmissionComponent({
    client: restClient(),
    logger: pino({ level: process.env.OPERATOR_TEST_LOG_LEVEL ?? 'silent' }),
    registry: new Registry(),
    host: '127.0.0.1',
    target: { url: `https://127.0.0.1:${options.urlPort ?? options.port}` },
    certificateSource: 'self',
    failurePolicy: 'Fail',
    timeoutSeconds: 5,
    coordinatorFence: false,
    workloadImage: DEFAULT_IMAGE,
    checkIntervalMs: 1000,
    ...options,
  });
  component.start();
  return component;
}

/**
 * The coordinator fence as the operator keeps it (cluster-wide), applied; resolves once the API server enforces both
 * policies for `coordinator` (a token of a node's coordinator ServiceAccount, whose worker template is `template`):
 * the policies reach admission through an informer, each on its own.
 */
export async function installCoordinatorFence(
  coordinator: KubeConfig,
  namespace: string,
  template: WorkerTemplate,
): Promise<void> {
  for (const object of buildCoordinatorFence(DEFAULT_IMAGE)) await apply(object);
  const refusedByFence = async (create: () => Promise<unknown>) => {
    try {
      await create();
      return false;
    } catch (error) {
      if (describeError(error).includes('ValidatingAdmissionPolicy')) return true;
      throw error; // reported as the last error on timeout
    }
  };
  await waitFor(
    () =>
      refusedByFence(() => {
        const name = workerJobName(template.namePrefix, uniqueName('probe').slice(-8));
        const job = buildWorkerJob(template, { name, shardCount: 1, concurrency: 1, chainId: '31337' });
        job.spec!.template.spec!.containers[0]!.image = 'attacker/miner:latest';
        return coordinator.makeApiClient(BatchV1Api).createNamespacedJob({ namespace, body: job });
      }),
    60_000,
    { description: 'the Jobs fence policy to be enforced' },
  );
  await waitFor(
    () =>
      refusedByFence(() => {
        const body: V1ConfigMap = { metadata: { name: uniqueName('probe') }, data: {} };
        return coordinator.makeApiClient(CoreV1Api).createNamespacedConfigMap({ namespace, body });
      }),
    60_000,
    { description: 'the ConfigMaps fence policy to be enforced' },
  );
}

/** Takes the fence away again (it is cluster-wide: other suites run without it). */
export async function removeCoordinatorFence(): Promise<void> {
  const client = restClient();
  for (const object of buildCoordinatorFence(DEFAULT_IMAGE)) {
    const kind = object.kind === 'ValidatingAdmissionPolicy' ? ADMISSION_KINDS.policy : ADMISSION_KINDS.policyBinding;
    await client.delete(kind, { namespace: '', name: object.metadata.name });
  }
}
