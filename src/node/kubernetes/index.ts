// The engine's Kubernetes adapters, used when a coordinator runs in a pod the operator made: the shards' API calls
// as worker Jobs, the response cache in a ConfigMap, the cycle report for status. A worker pod needs none of them:
// it reads its shard from a mounted file and prints its results. What a pod reads from its environment is the
// contract's (src/contract/pods.ts). The Kubernetes client (src/kube's, in-cluster credentials) is loaded only inside
// such a pod, so local runs never pay for it.
import { FEED_REPORT_KEY, type FeedReport } from '../../contract/feed-report.js';
import { API_RETRIES_KEY, PENDING_SIGHTINGS_KEY, readCoordinatorEnvironment } from '../../contract/pods.js';
import type { ResponseCache } from '../cache.js';
import type { CycleSummary } from '../cycle.js';
import { cycleRequestRecords } from '../request-log.js';
import type { VerifiedProvidersStore } from '../verified-providers.js';
import type { CycleContext } from './cycle-report.js';
import type { KubernetesJobExecutor } from './job-executor.js';
import type { KubernetesWindowWorkers } from './window-job.js';

export type CoordinatorKubernetes = {
  /** Worker Jobs that call the APIs of the coordinator's shards (the coordinator signs and sends). */
  workers: KubernetesJobExecutor;
  /**
   * The window's workers, started by `--window` runs: one worker Job for the window, fed over HTTP, with `workers`
   * for the polls before its pods are there. Undefined without the pod's IP (an operator older than this engine).
   */
  windowWorkers: KubernetesWindowWorkers | undefined;
  cache: ResponseCache;
  report: (
    summary: CycleSummary,
    context: Omit<CycleContext, 'jobName' | 'responseCacheWriteFailures'>,
  ) => Promise<void>;
  /** Where callers reach the gateways, for the heartbeat; undefined when the operator knows none. */
  gatewayUrl: string | undefined;
  /** The verified provider chain ids, in the cycle ConfigMap (which outlives each coordinator Job). */
  verifiedProviders: VerifiedProvidersStore;
  /** The sightings of pending transactions of a run without the hand-over Lease, in the cycle ConfigMap too. */
  pendingSightings: VerifiedProvidersStore;
  /** The retries of transient API failures of a run without the hand-over Lease, in the cycle ConfigMap too. */
  apiRetries: VerifiedProvidersStore;
};

type Env = Record<string, string | undefined>;

/**
 * The pod's client: its service account. The limit is kubectl's, not client-go's 5/s: at the end of a chain's
 * worker Job the coordinator reads one pod log per shard at once, and a cycle must not wait on its own client.
 * The component names the field manager of what the pod creates and replaces, and its user agent.
 */
async function podClient(component: 'coordinator' | 'worker' | 'feed') {
  const { loadClientConfig, RestClient, RuntimeClient } = await import('../../kube/api.js');
  const fieldManager = `oracle-node-${component}`;
  const rest = new RestClient(await loadClientConfig(), { qps: 50, burst: 100, userAgent: fieldManager });
  return new RuntimeClient(rest, fieldManager);
}

/**
 * What `oracle-node coordinator` uses in a coordinator pod: Jobs for the API calls, the ConfigMap cache and the cycle
 * report. Undefined outside one; throws when the pod's environment breaks the contract.
 */
export async function coordinatorKubernetes(env: Env = process.env): Promise<CoordinatorKubernetes | undefined> {
  const pod = readCoordinatorEnvironment(env);
  if (!pod) return undefined;
  const [
    client,
    { KubernetesJobExecutor, kubeWorkerJobApi },
    stores,
    { ConfigMapResponseCache },
    reports,
    verified,
    { KubernetesWindowWorkers },
  ] = await Promise.all([
    podClient('coordinator'),
    import('./job-executor.js'),
    import('./config-map-store.js'),
    import('./response-cache.js'),
    import('./cycle-report.js'),
    import('./verified-providers.js'),
    import('./window-job.js'),
  ]);
  const cycleStore = stores.kubeConfigMapStore(client, pod.namespace, pod.cycleConfigMap);
  const cache = new ConfigMapResponseCache({
    store: stores.kubeConfigMapStore(client, pod.namespace, pod.cacheConfigMap),
  });
  const jobApi = kubeWorkerJobApi(client, pod.namespace);
  const workers = new KubernetesJobExecutor({ api: jobApi, template: pod.workerTemplate });
  return {
    workers,
    windowWorkers: pod.podIp
      ? new KubernetesWindowWorkers({ api: jobApi, template: pod.workerTemplate, podIp: pod.podIp, perPoll: workers })
      : undefined,
    cache,
    report: (summary, context) =>
      reports.writeCycleReport(
        cycleStore,
        reports.cycleReport(summary, {
          ...context,
          jobName: pod.jobName,
          responseCacheWriteFailures: cache.writeFailures,
        }),
        cycleRequestRecords(summary, { job: pod.jobName, time: context.startTime ?? new Date() }),
      ),
    gatewayUrl: pod.gatewayUrl,
    verifiedProviders: verified.configMapVerifiedProvidersStore(cycleStore),
    pendingSightings: verified.configMapTextStore(cycleStore, PENDING_SIGHTINGS_KEY),
    apiRetries: verified.configMapTextStore(cycleStore, API_RETRIES_KEY),
  };
}

/**
 * What `oracle-node feed` uses in a pod the operator made: a writer of its report into the `<name>-feed-report`
 * ConfigMap the pod's environment names (readFeedReportEnvironment; its ServiceAccount may get and update only that
 * one).
 */
export async function feedReportWriter(pod: {
  namespace: string;
  configMap: string;
}): Promise<(report: FeedReport) => Promise<void>> {
  const [client, stores] = await Promise.all([podClient('feed'), import('./config-map-store.js')]);
  const store = stores.kubeConfigMapStore(client, pod.namespace, pod.configMap);
  return async (report) => {
    const written = await stores.updateConfigMapData(
      store,
      (data) => ({ ...data, [FEED_REPORT_KEY]: JSON.stringify(report) }),
      'the feed report ConfigMap',
    );
    if (!written) throw new Error(`ConfigMap ${pod.namespace}/${pod.configMap} not found`);
  };
}
