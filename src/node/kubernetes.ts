// The coordinator's and worker's dependencies when they run in pods the operator made (src/operator): shards
// as Kubernetes Jobs, the response cache in a ConfigMap, and the cycle report for status.lastCycle. Loaded
// lazily, and only when the operator's environment variables are present, so local runs never touch the
// Kubernetes client.

import type { ResponseCache } from './cache.js';
import type { CycleSummary } from './cycle.js';
import type { ShardExecutor } from './executor.js';

export const WORKER_TEMPLATE_ENV = 'ORACLE_NODE_WORKER_TEMPLATE';
export const CACHE_CONFIGMAP_ENV = 'ORACLE_NODE_CACHE_CONFIGMAP';

async function kubeConfig() {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const config = new KubeConfig();
  config.loadFromDefault();
  return config;
}

export type CoordinatorEnvironment = {
  executor: ShardExecutor;
  cache: ResponseCache;
  report: (summary: CycleSummary) => Promise<void>;
};

/** Counts of a cycle as flat integers (the operator's status.lastCycle.counts). */
export function cycleCounts(summary: CycleSummary): Record<string, number> {
  return {
    discovered: summary.requests.discovered,
    servable: summary.requests.servable,
    waitingForConfirmations: summary.requests.waitingForConfirmations,
    overChainLimit: summary.requests.overChainLimit,
    ...summary.transactions,
    shards: summary.shards.total,
    failedShards: summary.shards.failed,
    apiCalls: summary.apiCalls,
    cacheHits: summary.cacheHits,
    providersUp: summary.providers.filter((p) => p.ok).length,
    providersDown: summary.providers.filter((p) => !p.ok).length,
  };
}

export async function coordinatorEnvironment(
  env: NodeJS.ProcessEnv = process.env,
): Promise<CoordinatorEnvironment | undefined> {
  if (!env[WORKER_TEMPLATE_ENV]) return undefined;
  const { kubernetesCoordinatorDeps } = await import('../operator/job-executor.js');
  const deps = kubernetesCoordinatorDeps(await kubeConfig(), env);
  if (!deps) return undefined;
  return {
    executor: deps.executor,
    cache: deps.cache,
    report: (summary) =>
      deps.reportCycle({
        ...(env['JOB_NAME'] ? { job: env['JOB_NAME'] } : {}),
        outcome: summary.shards.failed > 0 ? 'PartiallyFailed' : 'Completed',
        counts: cycleCounts(summary),
        providers: summary.providers.map(({ chainId, provider, ok, currentBlock }) => ({
          chainId,
          provider,
          ok,
          ...(currentBlock === undefined ? {} : { currentBlock }),
        })),
        sponsorWallets: summary.sponsorWallets,
      }),
  };
}

export async function workerCache(env: NodeJS.ProcessEnv = process.env): Promise<ResponseCache | undefined> {
  if (!env[CACHE_CONFIGMAP_ENV]) return undefined;
  const { kubernetesWorkerCache } = await import('../operator/job-executor.js');
  return kubernetesWorkerCache(await kubeConfig(), env);
}
