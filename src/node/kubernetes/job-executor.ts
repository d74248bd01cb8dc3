// Runs inside the coordinator pod. KubernetesJobExecutor is where the coordinator's API calls run on Kubernetes
// (its ApiWorkers): each call (one chain, one cycle) becomes one Indexed Job, completed from the operator's worker
// template, whose pods each call the APIs of one shard (`oracle-node worker --shard`), with parallelism capped at the
// chain's maxConcurrency. The coordinator signs and sends from their results (src/node/executor.ts). The Job, its
// input and its output are the contract's (src/contract/shard.ts). It talks to the API through a small interface so
// it can be unit-tested without a cluster.
import type { V1ConfigMap, V1Job, V1Pod } from '@kubernetes/client-node';
import { errorMessage } from '../../common/errors.js';
import { monotonicNow } from '../../common/time.js';
import { JOB_NAME_LABEL, jobFinished } from '../../contract/pods.js';
import {
  type ApiShardInput,
  buildShardInputConfigMap,
  buildWorkerJob,
  COMPLETION_INDEX_ANNOTATION,
  MAX_SHARD_OUTPUT_BYTES,
  MAX_WORKER_INPUT_BYTES,
  packShardInputs,
  parseShardOutput,
  splitShardInput,
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
  /** Deletes a Job (its pods with it); a Job already gone is no error. */
  deleteJob(name: string): Promise<void>;
  listJobPods(jobName: string): Promise<V1Pod[]>;
  /**
   * The end of the pod's log (its last WORKER_LOG_TAIL_LINES lines, at most MAX_SHARD_OUTPUT_BYTES of them), or
   * undefined when there is none (e.g. a pod that never ran a container).
   */
  readPodLog(podName: string, container: string): Promise<string | undefined>;
}

/**
 * How many of a worker pod's last log lines are read: its output is its last stdout line, and only the few lines its
 * process logs while it ends can follow it. The API's `limitBytes` alone keeps the start of a log, which lost the
 * output of a worker whose log passed the bound; the kubelet applies `tailLines` first, then `limitBytes`.
 */
export const WORKER_LOG_TAIL_LINES = 100;

export type JobExecutorOptions = {
  api: WorkerJobApi;
  template: WorkerTemplate;
  pollIntervalMs?: number;
  /** Give up waiting for the Job this long after its deadline (the Job controller should have failed it). */
  graceMs?: number;
  /** The clock the waits are measured on (monotonic unless a test gives its own). */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
};

export class KubernetesJobExecutor implements ApiWorkers {
  private sequence = 0;
  /** Names of the Jobs created, newest last (for the cycle report and tests). */
  readonly jobs: string[] = [];

  constructor(private readonly options: JobExecutorOptions) {}

  /**
   * The shards in as many Jobs as their inputs need (one, unless they pass what one input ConfigMap holds), with the
   * chain's concurrency shared between them. A shard too large for one input runs in pieces (its requests split), and
   * fails when one of them does; a piece that no input holds (one request too large) fails its shard alone.
   */
  async run(
    shards: ApiShardInput[],
    options: { concurrency: number; deadline?: WorkDeadline },
  ): Promise<ApiShardResult[]> {
    if (shards.length === 0) return [];
    const pieces = shards.flatMap((shard, index) => splitShardInput(shard).map((input) => ({ shard: index, input })));
    const { batches, oversized } = packShardInputs(pieces.map((piece) => JSON.stringify(piece.input)));
    const results: ApiShardResult[] = new Array(pieces.length);
    for (const { index, bytes } of oversized) {
      results[index] = {
        ok: false,
        error: `shard input is ${bytes} bytes, over the ${MAX_WORKER_INPUT_BYTES} a worker Job's input holds`,
      };
    }
    const concurrency = Math.max(1, Math.floor(options.concurrency / Math.max(1, batches.length)));
    await Promise.all(
      batches.map(async (batch) => {
        const batchResults = await this.runJob(
          batch.map((index) => pieces[index]!.input),
          { concurrency, ...(options.deadline ? { deadline: options.deadline } : {}) },
        );
        batch.forEach((index, position) => {
          results[index] = batchResults[position]!;
        });
      }),
    );
    return shards.map((_, index) => mergePieces(results.filter((_, piece) => pieces[piece]!.shard === index)));
  }

  /** One Indexed Job for shards whose inputs fit its ConfigMap. */
  private async runJob(
    shards: ApiShardInput[],
    options: { concurrency: number; deadline?: WorkDeadline },
  ): Promise<ApiShardResult[]> {
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
    // Wall time: the name stays unique across runs (a monotonic reading starts over with each process).
    const cycleId = `${Math.floor(Date.now() / 1000).toString(36)}${(this.sequence++).toString(36)}-${chainId.slice(-6)}`;
    const name = workerJobName(template.namePrefix, cycleId);
    const created = await api.createJob(
      buildWorkerJob(template, {
        name,
        shardCount: shards.length,
        concurrency: options.concurrency,
        chainId,
        // Read before the Job exists, so never after the Job controller's own count ends: a worker's call over its
        // API's budget is deferred in time for its answer to come back, rather than the pod being killed.
        deadlineAtEpochMs: Date.now() + template.activeDeadlineSeconds * 1000,
      }),
    );
    this.jobs.push(name);
    try {
      await api.createConfigMap(buildShardInputConfigMap(created, shards));
      await api.unsuspendJob(name);
    } catch (error) {
      // A suspended Job never finishes and would hold a stage rollout: it goes (best effort; its TTL cannot apply).
      await api.deleteJob(name).catch(() => undefined);
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
    const now = this.options.now ?? monotonicNow;
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

/** A shard's result from those of its pieces: their results together, or the first failure. */
function mergePieces(pieces: ApiShardResult[]): ApiShardResult {
  if (pieces.length === 1) return pieces[0]!;
  const failed = pieces.find((piece) => !piece.ok);
  if (failed) return failed;
  const outputs = pieces.flatMap((piece) => (piece.ok ? [piece.output] : []));
  return {
    ok: true,
    output: {
      format: outputs[0]!.format,
      results: outputs.flatMap((output) => output.results),
      apiMs: Math.max(...outputs.map((output) => output.apiMs)),
    },
  };
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
    deleteJob: (name) => client.delete(jobs, { namespace, name }, { propagationPolicy: 'Background' }),
    listJobPods: (jobName) => client.list<V1Pod>(pods, namespace, `${JOB_NAME_LABEL}=${jobName}`),
    async readPodLog(name, container) {
      try {
        return await client.podLog(
          { namespace, name },
          { container, tailLines: WORKER_LOG_TAIL_LINES, limitBytes: MAX_SHARD_OUTPUT_BYTES },
        );
      } catch {
        return undefined;
      }
    },
  };
}
