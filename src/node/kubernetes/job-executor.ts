// Runs inside the coordinator pod. KubernetesJobExecutor is where the coordinator's API calls run on Kubernetes
// (its ApiWorkers): each call (one chain, one cycle) becomes one Indexed Job, completed from the operator's worker
// template, whose pods each call the APIs of one shard (`oracle-node worker --shard`), with parallelism capped at the
// chain's maxConcurrency. The coordinator signs and sends from their results (src/node/executor.ts). The Job, its
// input and its output are the contract's (src/contract/shard.ts). It talks to the API through a small interface so
// it can be unit-tested without a cluster.
import type { V1ConfigMap, V1Job, V1Pod } from '@kubernetes/client-node';
import { errorMessage } from '../../common/errors.js';
import { JOB_NAME_LABEL, jobFinished } from '../../contract/pods.js';
import {
  type ApiShardInput,
  buildShardInputConfigMap,
  buildWorkerJob,
  COMPLETION_INDEX_ANNOTATION,
  MAX_SHARD_OUTPUT_BYTES,
  parseShardOutput,
  WORKER_CONTAINER,
  type WorkerTemplate,
  workerJobName,
} from '../../contract/shard.js';
import { BUILTIN_KINDS, type RuntimeClient } from '../../kube/api.js';
import { type WorkDeadline, whenStopped } from '../deadline.js';
import type { ApiShardResult, ApiWorkers } from '../executor.js';

/** The API calls the executor makes: one implementation over the API client, one in the unit tests. */
export interface WorkerJobApi {
  createJob(job: V1Job): Promise<V1Job>;
  unsuspendJob(name: string): Promise<void>;
  readJob(name: string): Promise<V1Job | undefined>;
  createConfigMap(configMap: V1ConfigMap): Promise<void>;
  listJobPods(jobName: string): Promise<V1Pod[]>;
  /**
   * The pod's log, at most MAX_SHARD_OUTPUT_BYTES of it, or undefined when there is none (e.g. a pod that never ran
   * a container).
   */
  readPodLog(podName: string, container: string): Promise<string | undefined>;
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

export class KubernetesJobExecutor implements ApiWorkers {
  private sequence = 0;
  /** Names of the Jobs created, newest last (for the cycle report and tests). */
  readonly jobs: string[] = [];

  constructor(private readonly options: JobExecutorOptions) {}

  async run(
    shards: ApiShardInput[],
    options: { concurrency: number; deadline?: WorkDeadline },
  ): Promise<ApiShardResult[]> {
    if (shards.length === 0) return [];
    const { api } = this.options;
    const { deadline } = options;
    const failAll = (error: string): ApiShardResult[] => shards.map(() => ({ ok: false, error }));
    const stopped = deadline?.reason;
    if (stopped) return failAll(`worker Job not started: ${stopped}`);
    // The worker gets the time left to the run's hard end, never more than the template's deadline: a pod stuck
    // Pending or an API that does not answer is ended by the Job controller before the coordinator stops waiting.
    const template = {
      ...this.options.template,
      activeDeadlineSeconds: workerDeadlineSeconds(this.options.template, deadline),
    };
    const chainId = shards[0]!.chainId;
    const cycleId = `${Math.floor((this.options.now ?? Date.now)() / 1000).toString(36)}${(this.sequence++).toString(36)}-${chainId.slice(-6)}`;
    const name = workerJobName(template.namePrefix, cycleId);
    const created = await api.createJob(
      buildWorkerJob(template, { name, shardCount: shards.length, concurrency: options.concurrency, chainId }),
    );
    this.jobs.push(name);
    try {
      await api.createConfigMap(buildShardInputConfigMap(created, shards));
      await api.unsuspendJob(name);
    } catch (error) {
      return failAll(`could not start worker Job ${name}: ${errorMessage(error)}`);
    }
    const finished = await this.waitForJob(name, template.activeDeadlineSeconds, deadline);
    if (!finished) {
      const why = deadline?.reason;
      return failAll(`worker Job ${name} did not finish ${why ? `before ${why}` : 'in time'}`);
    }
    return this.collect(name, shards);
  }

  /** The finished Job, or undefined when it is not finished by its deadline + grace or by the run's deadline. */
  private async waitForJob(
    name: string,
    activeDeadlineSeconds: number,
    runDeadline: WorkDeadline | undefined,
  ): Promise<V1Job | undefined> {
    const now = this.options.now ?? Date.now;
    const sleep = this.options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
    const until = now() + activeDeadlineSeconds * 1000 + (this.options.graceMs ?? 15_000);
    const stopped = whenStopped(runDeadline);
    while (now() < until && !runDeadline?.stopped) {
      const job = await Promise.race([this.options.api.readJob(name).catch(() => undefined), stopped]);
      if (job && jobFinished(job)) return job;
      await Promise.race([sleep(this.options.pollIntervalMs ?? 1000), stopped]);
    }
    return undefined;
  }

  private async collect(name: string, shards: ApiShardInput[]): Promise<ApiShardResult[]> {
    const pods = await this.options.api.listJobPods(name).catch(() => [] as V1Pod[]);
    const byIndex = new Map<number, V1Pod[]>();
    for (const pod of pods) {
      const index = Number(pod.metadata?.annotations?.[COMPLETION_INDEX_ANNOTATION]);
      if (!Number.isInteger(index)) continue;
      byIndex.set(index, [...(byIndex.get(index) ?? []), pod]);
    }
    return Promise.all(
      shards.map(async (_, index): Promise<ApiShardResult> => {
        const failed = (error: string): ApiShardResult => ({ ok: false, error });
        const succeeded = (byIndex.get(index) ?? []).find((pod) => pod.status?.phase === 'Succeeded');
        if (!succeeded?.metadata?.name) return failed(`shard ${index} of Job ${name} did not succeed`);
        const log = await this.options.api.readPodLog(succeeded.metadata.name, WORKER_CONTAINER).catch(() => undefined);
        const output = parseShardOutput(log);
        return output ? { ok: true, output } : failed(`shard ${index} of Job ${name} left no output`);
      }),
    );
  }
}

/** A worker Job's activeDeadlineSeconds: the template's, or the whole seconds left to the run's hard end if fewer. */
export function workerDeadlineSeconds(template: WorkerTemplate, deadline: WorkDeadline | undefined): number {
  const left = deadline?.timeLeftMs() ?? Number.POSITIVE_INFINITY;
  return Math.max(1, Math.min(template.activeDeadlineSeconds, Math.floor(left / 1000)));
}

/** WorkerJobApi over the API client, in one namespace. */
export function kubeWorkerJobApi(client: RuntimeClient, namespace: string): WorkerJobApi {
  const { job: jobs, configMap: configMaps, pod: pods } = BUILTIN_KINDS;
  const inNamespace = <T extends { metadata?: object }>(object: T): T => ({
    ...object,
    metadata: { ...object.metadata, namespace },
  });
  return {
    createJob: (job) => client.create(jobs, inNamespace(job)),
    unsuspendJob: (name) => client.mergePatch(jobs, { namespace, name }, { spec: { suspend: false } }),
    readJob: (name) => client.get<V1Job>(jobs, { namespace, name }),
    async createConfigMap(configMap) {
      await client.create(configMaps, inNamespace(configMap));
    },
    listJobPods: (jobName) => client.list<V1Pod>(pods, namespace, `${JOB_NAME_LABEL}=${jobName}`),
    async readPodLog(name, container) {
      try {
        return await client.podLog({ namespace, name }, { container, limitBytes: MAX_SHARD_OUTPUT_BYTES });
      } catch {
        return undefined;
      }
    },
  };
}
