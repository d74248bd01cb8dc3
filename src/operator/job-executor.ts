// Runs inside the coordinator pod. KubernetesJobExecutor is the node's ShardExecutor for Kubernetes: each call
// (one chain, one cycle) becomes one Indexed Job whose pods each run one shard (`oracle-node worker --shard`),
// with parallelism capped at the chain's maxConcurrency. ConfigMapResponseCache is the node's ResponseCache in a
// ConfigMap that outlives cycles and stage rollouts. Both talk to the API through small interfaces so they can be
// unit-tested without a cluster.
import {
  BatchV1Api,
  CoreV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1ConfigMap,
  type V1Job,
  type V1Pod,
} from '@kubernetes/client-node';
import type { CachedResponse, ResponseCache } from '../node/cache.js';
import type { ShardExecutor, ShardResult } from '../node/executor.js';
import type { ShardInput, ShardOutput } from '../node/shard.js';
import { hashOf } from './builders/common.js';
import { SHARD_DIR, SHARD_VOLUME, WORKER_TEMPLATE_ENV, type WorkerTemplate } from './builders/worker.js';
import { LABELS } from './resource.js';
import { CYCLE_REPORT_KEY, type CycleReport } from './status.js';

export const JOB_NAME_LABEL = 'batch.kubernetes.io/job-name';
export const COMPLETION_INDEX_ANNOTATION = 'batch.kubernetes.io/job-completion-index';
const MAX_NAME = 63;

/** The API calls the executor makes: one implementation over client-node, one in the unit tests. */
export interface WorkerJobApi {
  createJob(job: V1Job): Promise<V1Job>;
  unsuspendJob(name: string): Promise<void>;
  readJob(name: string): Promise<V1Job | undefined>;
  createConfigMap(configMap: V1ConfigMap): Promise<void>;
  listJobPods(jobName: string): Promise<V1Pod[]>;
  /** The pod's log, or undefined when there is none (e.g. a pod that never ran a container). */
  readPodLog(podName: string, container: string): Promise<string | undefined>;
}

/** A Job name within the 63-character label limit, unique per cycle and chain. */
export function workerJobName(prefix: string, cycleId: string): string {
  const suffix = `-${cycleId}`;
  const room = MAX_NAME - suffix.length;
  const base = prefix.length <= room ? prefix : `${prefix.slice(0, room - 9)}-${hashOf(prefix).slice(0, 8)}`;
  return `${base}${suffix}`.replace(/-+$/, '');
}

export const shardKey = (index: number) => `shard-${index}.json`;

/**
 * The Indexed Job for one batch of shards. It is created suspended: its input ConfigMap is owned by the Job (so it
 * is garbage-collected with it) and can only be created once the Job's uid exists; then the Job is released.
 */
export function buildWorkerJob(
  template: WorkerTemplate,
  options: { name: string; shardCount: number; concurrency: number; chainId: string },
): V1Job {
  const completions = Math.max(1, options.shardCount);
  const parallelism = Math.max(1, Math.min(Math.floor(options.concurrency), completions));
  const labels = { ...template.labels, [LABELS.cycle]: options.name };
  const podTemplate = structuredClone(template.template);
  podTemplate.metadata = {
    ...podTemplate.metadata,
    labels: { ...podTemplate.metadata?.labels, [LABELS.cycle]: options.name },
  };
  const spec = podTemplate.spec!;
  spec.volumes = [...(spec.volumes ?? []), { name: SHARD_VOLUME, configMap: { name: options.name } }];
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: options.name,
      labels,
      annotations: { 'oracle-node.io/chain-id': options.chainId },
      ownerReferences: template.ownerReferences,
    },
    spec: {
      suspend: true,
      completionMode: 'Indexed',
      completions,
      parallelism,
      // One shard failing (e.g. its API is down) must not stop the others: failures are counted per index.
      backoffLimitPerIndex: 0,
      maxFailedIndexes: completions,
      activeDeadlineSeconds: template.activeDeadlineSeconds,
      ttlSecondsAfterFinished: template.ttlSecondsAfterFinished,
      template: podTemplate,
    },
  };
}

export function buildShardInputConfigMap(job: V1Job, shards: ShardInput[]): V1ConfigMap {
  const data: Record<string, string> = {};
  shards.forEach((shard, index) => {
    data[shardKey(index)] = JSON.stringify(shard);
  });
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: job.metadata!.name!,
      labels: job.metadata?.labels ?? {},
      ownerReferences: [
        { apiVersion: 'batch/v1', kind: 'Job', name: job.metadata!.name!, uid: job.metadata!.uid!, controller: true },
      ],
    },
    data,
  };
}

function jobOutcome(job: V1Job | undefined): 'Complete' | 'Failed' | undefined {
  for (const condition of job?.status?.conditions ?? []) {
    if (condition.status !== 'True') continue;
    if (condition.type === 'Complete') return 'Complete';
    if (condition.type === 'Failed') return 'Failed';
  }
  return undefined;
}

/** The worker prints its ShardOutput as the last line of stdout; logs go to stderr but may be interleaved. */
export function parseShardOutput(log: string | undefined): ShardOutput | undefined {
  if (!log) return undefined;
  const lines = log.trim().split('\n').reverse();
  for (const line of lines) {
    if (!line.startsWith('{')) continue;
    try {
      const parsed = JSON.parse(line) as Partial<ShardOutput>;
      if (typeof parsed.chainId === 'string' && Array.isArray(parsed.outcomes)) return parsed as ShardOutput;
    } catch {
      // not the output line
    }
  }
  return undefined;
}

export type JobExecutorOptions = {
  api: WorkerJobApi;
  template: WorkerTemplate;
  pollIntervalMs?: number;
  /** Give up waiting for the Job this long after its deadline (the Job controller should have failed it). */
  graceMs?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
};

export class KubernetesJobExecutor implements ShardExecutor {
  private sequence = 0;
  /** Names of the Jobs created, newest last (for the cycle report and tests). */
  readonly jobs: string[] = [];

  constructor(private readonly options: JobExecutorOptions) {}

  async run(shards: ShardInput[], options: { concurrency: number }): Promise<ShardResult[]> {
    if (shards.length === 0) return [];
    const { api, template } = this.options;
    const chainId = shards[0]!.chainId;
    const cycleId = `${Math.floor((this.options.now ?? Date.now)() / 1000).toString(36)}${(this.sequence++).toString(36)}-${chainId.slice(-6)}`;
    const name = workerJobName(template.namePrefix, cycleId);
    const created = await api.createJob(
      buildWorkerJob(template, { name, shardCount: shards.length, concurrency: options.concurrency, chainId }),
    );
    this.jobs.push(name);
    const failAll = (error: string): ShardResult[] =>
      shards.map((s) => ({ ok: false, chainId: s.chainId, sponsorWallet: s.sponsorWallet, error }));
    try {
      await api.createConfigMap(buildShardInputConfigMap(created, shards));
      await api.unsuspendJob(name);
    } catch (error) {
      return failAll(`could not start worker Job ${name}: ${(error as Error).message}`);
    }
    const finished = await this.waitForJob(name);
    if (!finished) return failAll(`worker Job ${name} did not finish in time`);
    return this.collect(name, shards);
  }

  private async waitForJob(name: string): Promise<V1Job | undefined> {
    const now = this.options.now ?? Date.now;
    const sleep = this.options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
    const deadline = now() + this.options.template.activeDeadlineSeconds * 1000 + (this.options.graceMs ?? 15_000);
    while (now() < deadline) {
      const job = await this.options.api.readJob(name).catch(() => undefined);
      if (job && jobOutcome(job)) return job;
      await sleep(this.options.pollIntervalMs ?? 1000);
    }
    return undefined;
  }

  private async collect(name: string, shards: ShardInput[]): Promise<ShardResult[]> {
    const pods = await this.options.api.listJobPods(name).catch(() => [] as V1Pod[]);
    const byIndex = new Map<number, V1Pod[]>();
    for (const pod of pods) {
      const index = Number(pod.metadata?.annotations?.[COMPLETION_INDEX_ANNOTATION]);
      if (!Number.isInteger(index)) continue;
      byIndex.set(index, [...(byIndex.get(index) ?? []), pod]);
    }
    return Promise.all(
      shards.map(async (shard, index): Promise<ShardResult> => {
        const failed = (error: string): ShardResult => ({
          ok: false,
          chainId: shard.chainId,
          sponsorWallet: shard.sponsorWallet,
          error,
        });
        const succeeded = (byIndex.get(index) ?? []).find((pod) => pod.status?.phase === 'Succeeded');
        if (!succeeded?.metadata?.name) return failed(`shard ${index} of Job ${name} did not succeed`);
        const log = await this.options.api.readPodLog(succeeded.metadata.name, 'worker').catch(() => undefined);
        const output = parseShardOutput(log);
        return output ? { ok: true, output } : failed(`shard ${index} of Job ${name} left no output`);
      }),
    );
  }
}

/** WorkerJobApi over @kubernetes/client-node, in one namespace. */
export function kubeWorkerJobApi(kubeConfig: KubeConfig, namespace: string): WorkerJobApi {
  const batch = kubeConfig.makeApiClient(BatchV1Api);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const notFound = (error: unknown) => (error as { code?: number }).code === 404;
  return {
    createJob: (body) => batch.createNamespacedJob({ namespace, body }),
    async unsuspendJob(name) {
      await batch.patchNamespacedJob(
        { name, namespace, body: { spec: { suspend: false } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    },
    async readJob(name) {
      try {
        return await batch.readNamespacedJob({ name, namespace });
      } catch (error) {
        if (notFound(error)) return undefined;
        throw error;
      }
    },
    async createConfigMap(body) {
      await core.createNamespacedConfigMap({ namespace, body });
    },
    async listJobPods(jobName) {
      return (await core.listNamespacedPod({ namespace, labelSelector: `${JOB_NAME_LABEL}=${jobName}` })).items;
    },
    async readPodLog(name, container) {
      try {
        return await core.readNamespacedPodLog({ name, namespace, container });
      } catch {
        return undefined;
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Response cache

/** The API calls of the cache: read and replace one ConfigMap (optimistic concurrency on resourceVersion). */
export interface ConfigMapStore {
  read(): Promise<V1ConfigMap | undefined>;
  /** Replaces the ConfigMap; rejects with a 409 conflict when resourceVersion is stale. */
  replace(configMap: V1ConfigMap): Promise<V1ConfigMap>;
}

type CacheEntry = CachedResponse & { at: number };

export type ConfigMapResponseCacheOptions = {
  store: ConfigMapStore;
  /** Entries older than this are pruned on write. Default 24 h (a request is not retried after a day). */
  ttlMs?: number;
  /** Bound on the number of entries; the oldest go first. Default 2000 (well under the 1 MiB object limit). */
  maxEntries?: number;
  now?: () => number;
};

const REQUEST_ID = /^0x[0-9a-fA-F]{64}$/;
const entryKey = (requestId: string) => `requestId-${requestId.toLowerCase()}`;

/**
 * The response cache of `cacheResponses` triggers, in the OracleNode's `<name>-cache` ConfigMap: it survives
 * cycles (each is a new pod) and stage rollouts, and stays bounded by TTL and entry count.
 */
export class ConfigMapResponseCache implements ResponseCache {
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(private readonly options: ConfigMapResponseCacheOptions) {
    this.ttlMs = options.ttlMs ?? 24 * 3600_000;
    this.maxEntries = options.maxEntries ?? 2000;
    this.now = options.now ?? Date.now;
  }

  async get(requestId: string): Promise<CachedResponse | undefined> {
    if (!REQUEST_ID.test(requestId)) return undefined;
    const configMap = await this.options.store.read();
    const raw = configMap?.data?.[entryKey(requestId)];
    if (!raw) return undefined;
    try {
      const entry = JSON.parse(raw) as Partial<CacheEntry>;
      if (typeof entry.encodedValue !== 'string' || typeof entry.signature !== 'string') return undefined;
      if (typeof entry.at === 'number' && this.now() - entry.at > this.ttlMs) return undefined;
      return { encodedValue: entry.encodedValue, signature: entry.signature };
    } catch {
      return undefined;
    }
  }

  async set(requestId: string, value: CachedResponse): Promise<void> {
    if (!REQUEST_ID.test(requestId)) throw new Error('cache key must be a requestId');
    for (let attempt = 0; attempt < 5; attempt++) {
      const configMap = await this.options.store.read();
      if (!configMap) throw new Error('the response cache ConfigMap does not exist');
      const data = this.prune({ ...(configMap.data ?? {}) });
      data[entryKey(requestId)] = JSON.stringify({ ...value, at: this.now() });
      try {
        await this.options.store.replace({ ...configMap, data });
        return;
      } catch (error) {
        if ((error as { code?: number }).code !== 409) throw error;
      }
    }
    throw new Error('the response cache ConfigMap kept changing (5 conflicts)');
  }

  /** Drops expired entries and, above the bound, the oldest ones (room for the one being added). */
  private prune(data: Record<string, string>): Record<string, string> {
    const entries: [string, number][] = [];
    for (const [key, raw] of Object.entries(data)) {
      if (!key.startsWith('requestId-')) continue;
      let at = 0;
      try {
        at = (JSON.parse(raw) as Partial<CacheEntry>).at ?? 0;
      } catch {
        // unreadable: oldest
      }
      if (this.now() - at > this.ttlMs) delete data[key];
      else entries.push([key, at]);
    }
    entries.sort((a, b) => a[1] - b[1]);
    while (entries.length >= this.maxEntries) delete data[entries.shift()![0]];
    return data;
  }
}

export function kubeConfigMapStore(kubeConfig: KubeConfig, namespace: string, name: string): ConfigMapStore {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  return {
    async read() {
      try {
        return await core.readNamespacedConfigMap({ name, namespace });
      } catch (error) {
        if ((error as { code?: number }).code === 404) return undefined;
        throw error;
      }
    },
    replace: (body) => core.replaceNamespacedConfigMap({ name, namespace, body }),
  };
}

/** Writes the cycle report the operator turns into status.lastCycle (key cycle.json of `<name>-cycle`). */
export async function writeCycleReport(store: ConfigMapStore, report: CycleReport): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const configMap = await store.read();
    if (!configMap) return;
    try {
      await store.replace({
        ...configMap,
        data: { ...(configMap.data ?? {}), [CYCLE_REPORT_KEY]: JSON.stringify(report) },
      });
      return;
    } catch (error) {
      if ((error as { code?: number }).code !== 409) throw error;
    }
  }
}

export type KubernetesCoordinatorDeps = {
  executor: KubernetesJobExecutor;
  cache: ConfigMapResponseCache;
  reportCycle: (report: CycleReport) => Promise<void>;
};

/**
 * What `oracle-node coordinator` uses when it runs in a coordinator pod the operator made (the worker template is
 * in its environment): Jobs for shards, the ConfigMap cache, and the cycle report. Undefined elsewhere.
 */
export function kubernetesCoordinatorDeps(
  kubeConfig: KubeConfig,
  env: NodeJS.ProcessEnv = process.env,
): KubernetesCoordinatorDeps | undefined {
  const rawTemplate = env[WORKER_TEMPLATE_ENV];
  const namespace = env.POD_NAMESPACE;
  if (!rawTemplate || !namespace) return undefined;
  const template = JSON.parse(rawTemplate) as WorkerTemplate;
  const cycleStore = kubeConfigMapStore(kubeConfig, namespace, env.ORACLE_NODE_CYCLE_CONFIGMAP ?? '');
  const cacheStore = kubeConfigMapStore(kubeConfig, namespace, env.ORACLE_NODE_CACHE_CONFIGMAP ?? '');
  return {
    executor: new KubernetesJobExecutor({ api: kubeWorkerJobApi(kubeConfig, namespace), template }),
    cache: new ConfigMapResponseCache({ store: cacheStore }),
    reportCycle: (report) => writeCycleReport(cycleStore, report),
  };
}

/** The response cache a worker pod uses (its ServiceAccount may read and update only that ConfigMap). */
export function kubernetesWorkerCache(
  kubeConfig: KubeConfig,
  env: NodeJS.ProcessEnv = process.env,
): ConfigMapResponseCache | undefined {
  const name = env.ORACLE_NODE_CACHE_CONFIGMAP;
  const namespace = env.POD_NAMESPACE;
  if (!name || !namespace) return undefined;
  return new ConfigMapResponseCache({ store: kubeConfigMapStore(kubeConfig, namespace, name) });
}

export { SHARD_DIR };
