// Runs inside the coordinator pod: the window's workers on Kubernetes (docs/chain-cycle.md, "Worker pods that stay
// for the window"). At the window's start the coordinator listens on its pod IP (WINDOW_WORKER_PORT) and creates one
// worker Job for the window (the contract's buildWindowWorkerJob: the operator's worker template, no token, the
// coordinator's URL and a random credential in its environment, the chain's maxConcurrency pods, the seconds left to
// the window's hard end). Until one of its workers asks for work, and whenever none is left, each poll runs its own
// per-poll worker Job (KubernetesJobExecutor), as before.
import { errorMessage } from '../../common/errors.js';
import type { Config } from '../../config/index.js';
import { buildWindowWorkerJob, WINDOW_WORKER_PORT, type WorkerTemplate, workerJobName } from '../../contract/shard.js';
import type { WorkDeadline } from '../deadline.js';
import type { ApiShardResult, ApiWorkers } from '../executor.js';
import type { Logger } from '../logger.js';
import { WindowWorkers } from '../window-workers.js';
import type { WorkerJobApi } from './job-executor.js';

/**
 * The most pods a window's worker Job runs. Each takes one shard at a time (its calls at once), so more shards in a
 * poll than workers wait a moment for one, never for a pod; and every window pays for its pods, idle or not, for its
 * whole length: a maxConcurrency of 100 (the reference's usual) must not mean 100 idle pods each minute.
 */
export const MAX_WINDOW_WORKERS = 4;

/**
 * The window Job's pods: the largest maxConcurrency of the chains (the coordinator fence's bound on parallelism), at
 * most MAX_WINDOW_WORKERS.
 */
export function windowWorkerParallelism(config: Config): number {
  return Math.max(1, Math.min(MAX_WINDOW_WORKERS, Math.max(...config.chains.map((chain) => chain.maxConcurrency))));
}

/** The window Job's activeDeadlineSeconds: the whole seconds left to the hard end (it lives as long as the window). */
export function windowWorkerDeadlineSeconds(deadline: WorkDeadline): number {
  return Math.max(1, Math.floor(deadline.timeLeftMs() / 1000));
}

export type KubernetesWindowWorkersOptions = {
  api: WorkerJobApi;
  template: WorkerTemplate;
  /** The coordinator's pod IP: where it listens for its window's workers. */
  podIp: string;
  /** The per-poll worker Jobs: before the window's workers are there, and when none is left. */
  perPoll: ApiWorkers;
  port?: number;
  now?: () => number;
};

export class KubernetesWindowWorkers implements ApiWorkers {
  private pool: WindowWorkers | undefined;
  private logger: Logger | undefined;
  /** The window Job's name, once created. */
  job: string | undefined;

  constructor(private readonly options: KubernetesWindowWorkersOptions) {}

  /** Whether runs go to the window's workers now, and how many of them wait for work. */
  get ready(): boolean {
    return this.pool?.ready ?? false;
  }
  get waitingWorkers(): number {
    return this.pool?.waitingWorkers ?? 0;
  }

  run(shards: Parameters<ApiWorkers['run']>[0], options: Parameters<ApiWorkers['run']>[1]): Promise<ApiShardResult[]> {
    return (this.pool ?? this.options.perPoll).run(shards, options);
  }

  /**
   * Listens and creates the window's worker Job; returns without waiting for its pods (their start-up overlaps the
   * window's first cycle). A failure to listen or to create the Job leaves every poll on per-poll Jobs.
   */
  async start(window: { config: Config; deadline: WorkDeadline; logger: Logger }): Promise<void> {
    const { api, template } = this.options;
    this.logger = window.logger;
    const pool = new WindowWorkers({ fallback: this.options.perPoll, logger: window.logger });
    const now = this.options.now ?? Date.now;
    try {
      await pool.start({
        host: this.options.podIp,
        port: this.options.port ?? WINDOW_WORKER_PORT,
        deadline: window.deadline,
        launch: async (coordinatorUrl, credential) => {
          const name = workerJobName(template.namePrefix, `w${Math.floor(now() / 1000).toString(36)}`);
          await api.createJob(
            buildWindowWorkerJob(template, {
              name,
              parallelism: windowWorkerParallelism(window.config),
              activeDeadlineSeconds: windowWorkerDeadlineSeconds(window.deadline),
              coordinatorUrl,
              credential,
            }),
          );
          this.job = name;
          window.logger.info({ job: name }, "the window's worker Job is created");
        },
      });
      this.pool = pool;
    } catch (error) {
      window.logger.warn(
        { err: errorMessage(error) },
        'no workers for the window: each poll starts its own worker Job',
      );
      await pool.stop();
    }
  }

  /** The window is over: its workers are told so and exit; the Job's TTL removes it. */
  async stop(): Promise<void> {
    const pool = this.pool;
    if (!pool) return;
    await pool.stop();
    // How many busy polls the window's workers served, and how many started a per-poll Job (its first seconds).
    this.logger?.info(
      { job: this.job, polls: pool.runs, tasksPutBack: pool.tasksPutBack },
      "the window's workers stop",
    );
  }
}
