// The contract between the controller runtime (informers, work queue, leader election, rate-limited client,
// events, metrics; src/operator/runtime/) and the OracleNode controller (src/operator/*.ts). The runtime plays the
// part controller-runtime plays for Go operators; the controller only says what to watch and how to reconcile.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ClientConfig } from './kubeconfig.js';

/** A resource kind the runtime can list, watch and write. `plural` and `namespaced` drive the REST paths. */
export type ResourceKind = {
  group: string; // '' for the core group
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
};

export type ObjectKey = { namespace: string; name: string };

/** What to watch: the primary kind, plus owned kinds whose events map to their owner's key. */
export type WatchSpec = {
  primary: ResourceKind;
  /** Children are cached only when they carry this label selector (never cluster-wide caches of foreign objects). */
  owned: {
    kind: ResourceKind;
    labelSelector: string;
    /** What the cache keeps of each child (runtime/fields.ts); all of it (but managedFields) when absent. */
    transform?: (object: KubernetesObject) => KubernetesObject;
  }[];
  /**
   * Objects the primaries refer to but do not own (e.g. the user's Secret): watched as metadata only, in the same
   * namespaces, and every change enqueues the primaries `map` names (controller-runtime's EnqueueRequestsFromMapFunc).
   */
  referenced?: { kind: ResourceKind; map: (object: KubernetesObject, cache: ObjectCache) => ObjectKey[] }[];
};

/**
 * Read-only view of the informer caches (objects have managedFields stripped; `referenced` kinds are
 * PartialObjectMetadata: metadata only).
 */
export interface ObjectCache {
  get<T extends KubernetesObject>(kind: ResourceKind, key: ObjectKey): T | undefined;
  list<T extends KubernetesObject>(kind: ResourceKind, namespace?: string, labels?: Record<string, string>): T[];
}

export type ApplyOptions = { force?: boolean; dryRun?: boolean };

/**
 * Writes go through one client that enforces the client-side QPS/burst limit, counts requests for
 * rest_client_requests_total, and uses one field manager for server-side apply.
 */
export interface KubeWriter {
  /**
   * Server-side apply of a full desired object (apiVersion/kind/metadata.name/namespace required). The applied
   * object is not read back: it reaches the cache through the informer, and parsing every answer (the whole
   * object with its managedFields) was most of a convergence burst's garbage.
   */
  apply<T extends KubernetesObject>(kind: ResourceKind, object: T, options?: ApplyOptions): Promise<void>;
  /** Server-side apply to the status subresource (not read back either). */
  applyStatus<T extends KubernetesObject>(kind: ResourceKind, object: T): Promise<void>;
  /** Delete; a missing object is not an error. */
  delete(
    kind: ResourceKind,
    key: ObjectKey,
    options?: { propagationPolicy?: 'Background' | 'Foreground' },
  ): Promise<void>;
  /** Live read, bypassing the cache, for decisions that must not act on stale data. */
  get<T extends KubernetesObject>(kind: ResourceKind, key: ObjectKey): Promise<T | undefined>;
  list<T extends KubernetesObject>(kind: ResourceKind, namespace: string, labelSelector?: string): Promise<T[]>;
}

export type EventType = 'Normal' | 'Warning';

/** Kubernetes Events, rate-limited and de-duplicated per (object, reason). */
export interface EventRecorder {
  record(object: KubernetesObject, type: EventType, reason: string, message: string): void;
}

export type ReconcileContext = {
  logger: Logger; // carries namespace/name bindings on every line
  cache: ObjectCache;
  client: KubeWriter;
  events: EventRecorder;
  signal: AbortSignal; // aborted when leadership is lost or shutdown begins
};

/**
 * What a reconcile asks of the work queue, each meaning by its own name (controller-runtime deprecated its bare
 * `Requeue` for the same ambiguity):
 * - `undefined`: done; the next watch event of the object, its children or what it references wakes it.
 * - `{ requeueAfterMs }`: look again after that many milliseconds (a wait being polled, the periodic resync).
 * - `{ requeue: 'rateLimited' }`: look again after the object's backoff, as after an error but without one.
 * Throwing requeues with the object's backoff; throwing a TerminalError does not (see there).
 */
export type ReconcileResult = { requeueAfterMs: number } | { requeue: 'rateLimited' } | undefined;

/**
 * Thrown by a reconcile for what retrying cannot fix (controller-runtime's reconcile.TerminalError): it is logged
 * and counted once and the object is not requeued; the next change of the object or its children wakes it.
 */
export class TerminalError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TerminalError';
  }
}

export interface Reconciler {
  readonly name: string; // the controller label of controller_runtime_* metrics
  readonly watches: WatchSpec;
  reconcile(key: ObjectKey, context: ReconcileContext): Promise<ReconcileResult>;
}

export type ManagerOptions = {
  /** runtime/kubeconfig.ts's loadClientConfig(), or a client-node KubeConfig. */
  kubeConfig: ClientConfig;
  /** Empty: all namespaces. */
  namespaces: string[];
  leaderElection: { enabled: boolean; namespace: string; leaseName: string; identity: string };
  workers: number;
  qps: number;
  burst: number;
  metricsPort: number; // 0 disables
  healthPort: number; // 0 disables
  fieldManager: string;
  logger: Logger;
};

/**
 * Something long-running beside the controller that the manager starts and stops (controller-runtime's
 * manager.Runnable): the admission webhook, the coordinator fence, what only the leader publishes. `start` returns
 * once it has started (its work goes on in the background); the signal aborts when it must stop, and `stop` waits for
 * it to end. A runnable with `readiness` holds the manager's /readyz until it is ready.
 */
export interface Runnable {
  start(signal: AbortSignal): void | Promise<void>;
  stop(): Promise<void>;
  readiness?(): { ready: boolean; reason?: string };
}

export type RunnableOptions = {
  /**
   * true: runs only while this replica holds the Lease (started on election, stopped when leadership is lost, before
   * the Lease is released); false: runs on every replica from the manager's start to its stop.
   */
  leaderElection: boolean;
};

export interface Manager {
  /** Adds a runnable; one added after `run` starts at once when its group is running. */
  add(runnable: Runnable, options: RunnableOptions): void;
  /** Starts watches, the queue, the runnables and (when elected) the workers; resolves when stopped. */
  run(reconciler: Reconciler): Promise<void>;
  /** Graceful stop: no new work, in-flight reconciles finish, the lease is released. */
  stop(): Promise<void>;
  isLeader(): boolean;
}
