// The Manager runs the runtime's shared parts, like controller-runtime's manager: one REST client, the informers
// and their cache (per namespace, or cluster-wide), leader election, Kubernetes Events, /metrics and /healthz +
// /readyz, and a graceful stop (no new work, in-flight reconciles finish within a bound, the lease is released).
// The controller loop itself (queue, workers, event handlers) is controller.ts; it runs only while this replica
// leads.

import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { errorMessage } from '../common/errors.js';
import { type ObservabilityServer, startObservabilityServer } from '../observability/http.js';
import { Registry } from '../observability/prom-client.js';
import { InformerCache } from './cache.js';
import { RuntimeClient } from './client.js';
import { type Clock, systemClock } from './clock.js';
import { Controller } from './controller.js';
import { ApiError } from './errors.js';
import { KubeEventRecorder } from './events.js';
import { Informer, type InformerTuning } from './informer.js';
import { LeaderElector, RestLeaseStore } from './leader.js';
import { RuntimeMetrics } from './metrics.js';
import { resourceName } from './paths.js';
import { RestClient } from './rest.js';
import type {
  Manager,
  ManagerOptions,
  ObjectKey,
  Reconciler,
  ResourceKind,
  Runnable,
  RunnableOptions,
} from './types.js';

/** Optional knobs beyond ManagerOptions; every one has a production default. */
export type RuntimeTuning = InformerTuning & {
  clock?: Clock;
  registry?: Registry;
  /** Lease timings, client-go's defaults: 15 s / 10 s / 2 s. */
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /** /readyz fails when a watch has delivered nothing (event, bookmark, list, clean close) for this long. */
  watchStaleAfterMs?: number;
  /** How long stop() waits for in-flight reconciles before giving up on them. */
  shutdownTimeoutMs?: number;
  itemBaseDelayMs?: number;
  itemMaxDelayMs?: number;
  retryQps?: number;
  retryBurst?: number;
  /** REST retries on 429/5xx/connection errors. */
  maxRetries?: number;
  retryInitialMs?: number;
  retryMaxMs?: number;
  requestTimeoutMs?: number;
  /** A child without an ownerReference to the primary kind maps to the owner named by this label, if set. */
  ownerNameLabel?: string;
  /** Address the metrics and health servers bind to. */
  listenHost?: string;
  /** Component name on Events. */
  eventComponent?: string;
};

type RunnableEntry = { runnable: Runnable; leaderElection: boolean; running: AbortController | undefined };

export type RuntimeManagerOptions = ManagerOptions & { tuning?: RuntimeTuning };

export type Readiness = { ready: boolean; reason?: string };

export class RuntimeManager implements Manager {
  readonly metrics: RuntimeMetrics;
  readonly registry: Registry;
  readonly rest: RestClient;
  readonly client: RuntimeClient;
  readonly cache = new InformerCache();
  readonly events: KubeEventRecorder;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly tuning: RuntimeTuning;
  private controllers: Controller[] = [];
  private readonly sharedInformers = new Map<
    string,
    { informer: Informer; transform: ((object: KubernetesObject) => KubernetesObject) | undefined }
  >();
  private elector: LeaderElector | undefined;
  private leading = false;
  private servers: ObservabilityServer[] = [];
  private boundPorts: { metrics?: number; health?: number } = {};
  private stopping: Promise<void> | undefined;
  private resolveRun: (() => void) | undefined;
  private started = false;
  private synced = false;
  private readonly runnables: RunnableEntry[] = [];

  constructor(private readonly options: RuntimeManagerOptions) {
    this.tuning = options.tuning ?? {};
    this.clock = this.tuning.clock ?? systemClock;
    this.registry = this.tuning.registry ?? new Registry();
    this.metrics = new RuntimeMetrics(this.registry);
    this.logger = options.logger;
    this.rest = new RestClient(options.kubeConfig, {
      qps: options.qps,
      burst: options.burst,
      metrics: this.metrics,
      logger: this.logger,
      clock: this.clock,
      userAgent: `oracle-node-operator/${options.fieldManager}`,
      maxRetries: this.tuning.maxRetries,
      retryInitialMs: this.tuning.retryInitialMs,
      retryMaxMs: this.tuning.retryMaxMs,
      requestTimeoutMs: this.tuning.requestTimeoutMs,
    });
    this.client = new RuntimeClient(this.rest, options.fieldManager);
    this.events = new KubeEventRecorder(this.rest, {
      component: this.tuning.eventComponent ?? options.fieldManager,
      instance: options.leaderElection.identity,
      logger: this.logger,
      metrics: this.metrics,
      clock: this.clock,
    });
  }

  isLeader(): boolean {
    return this.leading;
  }

  ports(): { metrics?: number; health?: number } {
    return { ...this.boundPorts };
  }

  /** Adds a key by hand (tests, and controllers that need an extra trigger). */
  enqueue(key: ObjectKey): void {
    this.controllers[0]?.enqueue(key);
  }

  /** The controller's worker loops not yet returned (bounded by `workers` across leadership terms). */
  workerLoops(): number {
    return this.controllers.reduce((sum, controller) => sum + controller.workerLoops(), 0);
  }

  add(runnable: Runnable, options: RunnableOptions): void {
    const entry: RunnableEntry = { runnable, leaderElection: options.leaderElection, running: undefined };
    this.runnables.push(entry);
    if (this.stopping) return;
    if (entry.leaderElection ? this.leading : this.started) this.startRunnable(entry);
  }

  private startRunnable(entry: RunnableEntry): void {
    if (entry.running) return;
    const running = new AbortController();
    entry.running = running;
    Promise.resolve()
      .then(() => entry.runnable.start(running.signal))
      .catch((error: unknown) => this.logger.error({ err: errorMessage(error) }, 'a runnable failed to start'));
  }

  private async stopRunnables(leaderElection: boolean): Promise<void> {
    const running = this.runnables.filter((entry) => entry.leaderElection === leaderElection && entry.running);
    await Promise.all(
      running.map(async (entry) => {
        entry.running?.abort();
        entry.running = undefined;
        await entry.runnable
          .stop()
          .catch((error: unknown) => this.logger.warn({ err: errorMessage(error) }, 'a runnable failed to stop'));
      }),
    );
  }

  readiness(): Readiness {
    if (this.stopping) return { ready: false, reason: 'shutting down' };
    const informers = this.cache.informers();
    if (!this.synced || informers.some((informer) => !informer.hasSynced()))
      return { ready: false, reason: 'caches not synced' };
    const staleAfter = this.tuning.watchStaleAfterMs ?? 15 * 60_000;
    for (const informer of informers) {
      const silent = informer.silentForMs();
      if (silent > staleAfter) {
        return {
          ready: false,
          reason: `watch ${resourceName(informer.kind)} in ${informer.namespace ?? 'all namespaces'} silent for ${Math.round(silent / 1000)} s`,
        };
      }
    }
    for (const { runnable, running } of this.runnables) {
      const readiness = running ? runnable.readiness?.() : undefined;
      if (readiness && !readiness.ready) return readiness;
    }
    return { ready: true };
  }

  /**
   * Runs the controllers of the given reconcilers (one queue and `workers` workers each) until stop(). Two
   * controllers watching the same kind with the same selector share one informer.
   */
  async run(reconcilers: Reconciler | Reconciler[]): Promise<void> {
    if (this.started) throw new Error('the manager runs once');
    this.started = true;
    const done = new Promise<void>((resolve) => {
      this.resolveRun = resolve;
    });
    const all = await this.servedOnly(Array.isArray(reconcilers) ? reconcilers : [reconcilers]);
    for (const reconciler of all) this.controllers.push(this.controllerOf(reconciler));
    this.metrics.leaderStatus.set({ name: this.options.leaderElection.leaseName }, 0);
    await this.startServers();
    // The runnables of every replica (the webhook) serve from the start, before the caches sync.
    for (const entry of this.runnables) if (!entry.leaderElection) this.startRunnable(entry);
    this.logger.info(
      {
        controllers: all.map((reconciler) => reconciler.name),
        namespaces: this.options.namespaces.length ? this.options.namespaces : ['*'],
        workers: this.options.workers,
        leaderElection: this.options.leaderElection.enabled,
        identity: this.options.leaderElection.identity,
        ports: this.boundPorts,
      },
      'manager starting',
    );
    for (const informer of this.cache.informers()) informer.start();
    await Promise.race([Promise.all(this.cache.informers().map((informer) => informer.waitForSync())), done]);
    if (!this.stopping) {
      this.synced = true;
      this.logger.info({ informers: this.cache.informers().length }, 'caches synced');
      if (this.options.leaderElection.enabled) {
        const { namespace, leaseName, identity } = this.options.leaderElection;
        this.elector = new LeaderElector(
          new RestLeaseStore(this.rest),
          {
            namespace,
            name: leaseName,
            identity,
            leaseDurationMs: this.tuning.leaseDurationMs,
            renewDeadlineMs: this.tuning.renewDeadlineMs,
            retryPeriodMs: this.tuning.retryPeriodMs,
            releaseOnCancel: true,
          },
          {
            onStartedLeading: (signal) => this.startLeading(signal),
            onStoppedLeading: () => this.stopLeading(),
            onNewLeader: (holder) => this.logger.info({ leader: holder }, 'observed leader'),
          },
          this.logger.child({ subsystem: 'leader-election' }),
          this.clock,
        );
        this.elector.start();
      } else {
        this.startLeading(new AbortController().signal);
      }
    }
    await done;
  }

  /**
   * The reconcilers whose primary kind the apiserver serves. A custom resource whose CRD is not installed would
   * have its informer fail every list with 404 and hold /readyz unready in silence: such a controller is left out
   * with one error line naming the CRD, and the manager refuses to start when none is left. An apiserver that does
   * not answer discovery is not taken for a missing CRD: the informers retry as they always do.
   */
  private async servedOnly(reconcilers: Reconciler[]): Promise<Reconciler[]> {
    const served: Reconciler[] = [];
    const missing: string[] = [];
    for (const reconciler of reconcilers) {
      const kind = reconciler.watches.primary;
      if (kind.group === '' || (await this.serves(kind))) {
        served.push(reconciler);
        continue;
      }
      const crd = `${kind.plural}.${kind.group}`;
      missing.push(crd);
      this.logger.error(
        { controller: reconciler.name, crd },
        `the CRD ${crd} is not installed, so the ${reconciler.name} controller does not run: install it ` +
          `(helm upgrade of the chart, or kubectl apply --server-side -f crds/${kind.group}_${kind.plural}.yaml) ` +
          'and restart the operator',
      );
    }
    if (!served.length) throw new Error(`no controller can run: CRDs not installed: ${missing.join(', ')}`);
    return served;
  }

  /** Whether discovery lists the kind; true when discovery itself fails for another reason than 404. */
  private async serves(kind: ResourceKind): Promise<boolean> {
    try {
      const list = await this.rest.request<{ resources?: { name?: string }[] }>({
        method: 'GET',
        path: `/apis/${kind.group}/${kind.version}`,
      });
      return (list?.resources ?? []).some((resource) => resource.name === kind.plural);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return false;
      this.logger.warn(
        { err: errorMessage(error), group: kind.group },
        'API discovery failed; assuming the kind is served',
      );
      return true;
    }
  }

  private controllerOf(reconciler: Reconciler): Controller {
    const controller = new Controller({
      reconciler,
      workers: this.options.workers,
      cache: this.cache,
      client: this.client,
      events: this.events,
      metrics: this.metrics,
      logger: this.logger,
      clock: this.clock,
      itemBaseDelayMs: this.tuning.itemBaseDelayMs,
      itemMaxDelayMs: this.tuning.itemMaxDelayMs,
      retryQps: this.tuning.retryQps,
      retryBurst: this.tuning.retryBurst,
      ownerNameLabel: this.tuning.ownerNameLabel,
    });
    controller.watch((kind, { labelSelector, metadataOnly, transform }) =>
      this.namespacesFor(kind).map((namespace) =>
        this.informer(kind, namespace, labelSelector, metadataOnly, transform),
      ),
    );
    return controller;
  }

  private namespacesFor(kind: ResourceKind): (string | undefined)[] {
    if (!kind.namespaced || this.options.namespaces.length === 0) return [undefined];
    return this.options.namespaces;
  }

  private informer(
    kind: ResourceKind,
    namespace: string | undefined,
    labelSelector: string | undefined,
    metadataOnly = false,
    transform?: (object: KubernetesObject) => KubernetesObject,
  ): Informer {
    // The same watch for a second controller (the same function object as transform): one informer, two handlers.
    const key = [resourceName(kind), namespace ?? '', labelSelector ?? '', metadataOnly].join('|');
    const shared = this.sharedInformers.get(key);
    if (shared && shared.transform === transform) return shared.informer;
    const informer = new Informer({
      ...this.tuning,
      kind,
      namespace,
      labelSelector,
      metadataOnly,
      ...(transform ? { transform } : {}),
      client: this.client,
      rest: this.rest,
      logger: this.logger,
      metrics: this.metrics,
      clock: this.clock,
    });
    this.cache.add(informer);
    if (!shared) this.sharedInformers.set(key, { informer, transform });
    return informer;
  }

  private startLeading(leadership: AbortSignal): void {
    this.leading = true;
    this.metrics.leaderStatus.set({ name: this.options.leaderElection.leaseName }, 1);
    for (const entry of this.runnables) if (entry.leaderElection) this.startRunnable(entry);
    for (const controller of this.controllers) controller.startTerm(leadership);
  }

  private stopLeading(): void {
    this.leading = false;
    this.metrics.leaderStatus.set({ name: this.options.leaderElection.leaseName }, 0);
    for (const controller of this.controllers) controller.endTerm();
    void this.stopRunnables(true);
    if (!this.stopping) this.logger.warn('stopped reconciling: leadership lost');
  }

  /** /metrics on metricsPort; /healthz and /readyz on healthPort (the shared observability handler). */
  private async startServers(): Promise<void> {
    const host = this.tuning.listenHost ?? '0.0.0.0';
    if (this.options.metricsPort > 0) {
      const server = await startObservabilityServer({ registry: this.registry, port: this.options.metricsPort, host });
      this.servers.push(server);
      this.boundPorts.metrics = server.port;
    }
    if (this.options.healthPort > 0) {
      const server = await startObservabilityServer({
        registry: this.registry,
        port: this.options.healthPort,
        host,
        ready: () => this.readiness(),
      });
      this.servers.push(server);
      this.boundPorts.health = server.port;
    }
  }

  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    this.logger.info('manager stopping: no new work');
    // In-flight reconciles see their signal abort and get shutdownTimeoutMs to finish.
    for (const controller of this.controllers) controller.shutDown();
    const workers = Promise.all(this.controllers.map((controller) => controller.drained()));
    // 20 s leaves time to release the Lease within the default 30 s terminationGracePeriodSeconds.
    const timeoutMs = this.tuning.shutdownTimeoutMs ?? 20_000;
    const timer = new AbortController(); // cancels the bound's timer so it does not keep the process alive
    const finished = await Promise.race([
      workers.then(() => true),
      this.clock.sleep(timeoutMs, timer.signal).then(() => false),
    ]);
    timer.abort();
    if (!finished)
      this.logger.warn(
        { inFlight: this.controllers.reduce((sum, controller) => sum + controller.inFlight(), 0), timeoutMs },
        'in-flight reconciles did not finish in time',
      );
    // Only now release the lease, so the next leader never overlaps with our last reconciles or leader runnables.
    await this.stopRunnables(true);
    if (this.elector) await this.elector.stop();
    else if (this.leading) this.stopLeading();
    await this.stopRunnables(false);
    await Promise.all(this.cache.informers().map((informer) => informer.stop()));
    await this.events.stop();
    await Promise.all(this.servers.map((server) => server.close()));
    this.rest.close();
    this.logger.info('manager stopped');
    this.resolveRun?.();
  }
}

export function createManager(options: RuntimeManagerOptions): RuntimeManager {
  return new RuntimeManager(options);
}
