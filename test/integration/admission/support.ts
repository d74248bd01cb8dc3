// Admission support: the webhook component as the operator runs it (a real HTTPS server on loopback that the
// test control plane calls through a ValidatingWebhookConfiguration with a URL), kubectl.
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { RuntimeClient } from '../../../src/kube/client.js';
import { RestClient } from '../../../src/kube/rest.js';
import { DEFAULT_IMAGE, FIELD_MANAGER } from '../../../src/operator/resource.js';
import { AdmissionComponent, type AdmissionOptions } from '../../../src/operator/webhook/admission.js';
import { kc } from '../support/cluster.js';
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
