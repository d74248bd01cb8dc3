// Leader election on a coordination.k8s.io/v1 Lease, following client-go's leaderelection package: a candidate
// acquires the lease when it is free, released (empty holder) or expired (its renewTime has not changed for
// leaseDuration by our own clock, never trusting the other replica's clock); the leader renews every retryPeriod
// and gives up when it could not renew for renewDeadline. Every one of those durations is measured on the monotonic
// clock (client-go's observedTime and its Since): the wall clock only fills the Lease's acquireTime and renewTime,
// which no replica reads a duration from, so a stepped wall clock can neither keep a cut-off leader leading past its
// renewDeadline nor let a candidate take a lease that is still being renewed. Writes use the lease's
// resourceVersion, so two candidates racing for the same lease cannot both win (the loser gets 409). Times are
// written with six fractional digits (microTimeIso) because the apiserver only accepts those for a MicroTime.
import type { Logger } from 'pino';
import { errorMessage } from '../common/errors.js';
import { microTimeIso } from '../common/time.js';
import { jitter } from './backoff.js';
import { type Clock, systemClock } from './clock.js';
import { isConflict, isNotFound } from './errors.js';
import type { RestClient } from './rest.js';

export type LeaseSpec = {
  holderIdentity?: string | null;
  leaseDurationSeconds?: number;
  acquireTime?: string | Date | null;
  renewTime?: string | Date | null;
  leaseTransitions?: number;
};

export type Lease = {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace: string; resourceVersion?: string; [key: string]: unknown };
  spec?: LeaseSpec;
};

/** The four Lease calls the elector needs; the REST implementation is below, tests use an in-memory one. */
export interface LeaseStore {
  get(namespace: string, name: string, signal?: AbortSignal): Promise<Lease | undefined>;
  create(lease: Lease, signal?: AbortSignal): Promise<Lease>;
  /** Must fail with a conflict (isConflict) when metadata.resourceVersion is stale. */
  update(lease: Lease, signal?: AbortSignal): Promise<Lease>;
}

export class RestLeaseStore implements LeaseStore {
  constructor(private readonly rest: RestClient) {}

  private path(namespace: string, name?: string): string {
    const base = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
    return name ? `${base}/${encodeURIComponent(name)}` : base;
  }

  async get(namespace: string, name: string, signal?: AbortSignal): Promise<Lease | undefined> {
    try {
      // No retries inside the elector's calls: the elector's own loop is the retry, bounded by renewDeadline.
      return await this.rest.request<Lease>({ method: 'GET', path: this.path(namespace, name), signal, retry: false });
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  create(lease: Lease, signal?: AbortSignal): Promise<Lease> {
    return this.rest.request<Lease>({
      method: 'POST',
      path: this.path(lease.metadata.namespace),
      body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', ...lease },
      signal,
      retry: false,
    });
  }

  update(lease: Lease, signal?: AbortSignal): Promise<Lease> {
    return this.rest.request<Lease>({
      method: 'PUT',
      path: this.path(lease.metadata.namespace, lease.metadata.name),
      body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', ...lease },
      signal,
      retry: false,
    });
  }
}

export type LeaderElectionConfig = {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs?: number; // 15 s
  renewDeadlineMs?: number; // 10 s
  retryPeriodMs?: number; // 2 s
  /** Release the lease (empty holder, 1 s duration) when stopping while leader. */
  releaseOnCancel?: boolean;
};

export type LeaderCallbacks = {
  onStartedLeading(signal: AbortSignal): void;
  onStoppedLeading(): void;
  onNewLeader?(identity: string): void;
};

type LeaderState = 'stopped' | 'candidate' | 'leader';

export class LeaderElector {
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  /** The lease record as last seen, and when it last changed (monotonic). */
  private observed: { record: string; at: number; resourceVersion?: string } | undefined;
  private lastLease: Lease | undefined;
  private state: LeaderState = 'stopped';
  private stopController = new AbortController();
  private leadership: AbortController | undefined;
  private loop: Promise<void> | undefined;
  private knownLeader = '';
  /** When the current (other) holder's lease runs out by our monotonic clock, if it is held. */
  private expiresAt: number | undefined;

  constructor(
    private readonly store: LeaseStore,
    private readonly config: LeaderElectionConfig,
    private readonly callbacks: LeaderCallbacks,
    private readonly logger: Logger,
    private readonly clock: Clock = systemClock,
  ) {
    this.leaseDurationMs = config.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = config.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = config.retryPeriodMs ?? 2_000;
    if (this.leaseDurationMs <= this.renewDeadlineMs)
      throw new Error('leaseDuration must be greater than renewDeadline');
    if (this.renewDeadlineMs <= this.retryPeriodMs * 1.2)
      throw new Error('renewDeadline must be greater than retryPeriod*1.2');
  }

  isLeader(): boolean {
    return this.state === 'leader';
  }

  start(): void {
    if (this.loop) return;
    this.stopController = new AbortController();
    this.loop = this.run();
  }

  /** Stops campaigning; a leader stops leading (callbacks first) and releases the lease. */
  async stop(): Promise<void> {
    this.stopController.abort();
    await this.loop;
    this.loop = undefined;
  }

  private async run(): Promise<void> {
    const stopSignal = this.stopController.signal;
    while (!stopSignal.aborted) {
      this.state = 'candidate';
      const acquired = await this.acquire(stopSignal);
      if (!acquired) break;
      this.state = 'leader';
      this.leadership = new AbortController();
      this.logger.info(
        { lease: `${this.config.namespace}/${this.config.name}`, identity: this.config.identity },
        'became leader',
      );
      this.callbacks.onStartedLeading(this.leadership.signal);
      await this.renew(stopSignal);
      this.state = stopSignal.aborted ? 'stopped' : 'candidate';
      this.leadership.abort(new Error('leadership lost'));
      this.callbacks.onStoppedLeading();
      if (stopSignal.aborted) {
        if (this.config.releaseOnCancel ?? true) await this.release();
        break;
      }
      this.logger.warn({ lease: `${this.config.namespace}/${this.config.name}` }, 'lost leadership');
    }
    this.state = 'stopped';
  }

  /** Tries every retryPeriod (jittered) until the lease is ours; false when stopped first. */
  private async acquire(stopSignal: AbortSignal): Promise<boolean> {
    while (!stopSignal.aborted) {
      if (await this.tryAcquireOrRenew(stopSignal)) return true;
      // Wake at the jittered retry period, or right when the holder's lease runs out by our clock if sooner.
      const untilExpiry =
        this.expiresAt === undefined ? Number.POSITIVE_INFINITY : this.expiresAt - this.clock.monotonic() + 1;
      await this.clock.sleep(Math.max(0, Math.min(jitter(this.retryPeriodMs, 1.2), untilExpiry)), stopSignal);
    }
    return false;
  }

  /** Renews every retryPeriod; returns when renewDeadline passes without a successful renewal, or when stopped. */
  private async renew(stopSignal: AbortSignal): Promise<void> {
    let lastRenew = this.clock.monotonic();
    while (!stopSignal.aborted) {
      await this.clock.sleep(this.retryPeriodMs, stopSignal);
      if (stopSignal.aborted) return;
      const remaining = this.renewDeadlineMs - (this.clock.monotonic() - lastRenew);
      const attempt = new AbortController();
      const timer = this.clock.setTimeout(() => attempt.abort(), Math.max(0, remaining));
      const onStop = () => attempt.abort();
      stopSignal.addEventListener('abort', onStop, { once: true });
      let renewed = false;
      try {
        renewed = remaining > 0 && (await this.tryAcquireOrRenew(attempt.signal));
      } finally {
        timer.cancel();
        stopSignal.removeEventListener('abort', onStop);
      }
      if (stopSignal.aborted) return;
      if (renewed) {
        lastRenew = this.clock.monotonic();
        continue;
      }
      if (this.clock.monotonic() - lastRenew >= this.renewDeadlineMs) return;
      if (this.knownLeader && this.knownLeader !== this.config.identity) return; // someone else holds it now
    }
  }

  /** One round of client-go's tryAcquireOrRenew. Errors count as "not acquired". */
  async tryAcquireOrRenew(signal?: AbortSignal): Promise<boolean> {
    // Wall time for what is written (other replicas only compare it for a change), monotonic for the expiry.
    const now = this.clock.now();
    const monotonicNow = this.clock.monotonic();
    const spec = (acquireTime: Date | string | null | undefined, transitions: number): LeaseSpec => ({
      holderIdentity: this.config.identity,
      leaseDurationSeconds: Math.round(this.leaseDurationMs / 1000),
      acquireTime: microTimeIso(acquireTime || now),
      renewTime: microTimeIso(now),
      leaseTransitions: transitions,
    });
    try {
      const current = await this.store.get(this.config.namespace, this.config.name, signal);
      if (!current) {
        const created = await this.store.create(
          { metadata: { name: this.config.name, namespace: this.config.namespace }, spec: spec(null, 0) },
          signal,
        );
        this.observe(created);
        return true;
      }
      this.observe(current);
      const holder = current.spec?.holderIdentity ?? '';
      const isMine = holder === this.config.identity;
      const durationMs = (current.spec?.leaseDurationSeconds ?? 0) * 1000;
      const expired = !holder || this.observed!.at + durationMs <= monotonicNow;
      this.expiresAt = isMine || expired ? undefined : this.observed!.at + durationMs;
      if (!isMine && !expired) return false;
      const transitions = current.spec?.leaseTransitions ?? 0;
      const updated = await this.store.update(
        {
          ...current,
          metadata: { ...current.metadata },
          spec: isMine ? spec(current.spec?.acquireTime, transitions) : spec(null, transitions + 1),
        },
        signal,
      );
      this.observe(updated);
      return true;
    } catch (error) {
      if (!isConflict(error) && !signal?.aborted) {
        this.logger.warn({ err: errorMessage(error) }, 'lease acquire/renew failed');
      }
      return false;
    }
  }

  /** Remembers when the lease record last changed, by our monotonic clock (client-go's observedTime). */
  private observe(lease: Lease): void {
    const record = JSON.stringify([
      lease.spec?.holderIdentity ?? '',
      String(lease.spec?.renewTime ?? ''),
      lease.spec?.leaseDurationSeconds,
    ]);
    if (!this.observed || this.observed.record !== record) {
      this.observed = { record, at: this.clock.monotonic(), resourceVersion: lease.metadata.resourceVersion };
    }
    this.lastLease = lease;
    const holder = lease.spec?.holderIdentity ?? '';
    if (holder !== this.knownLeader) {
      this.knownLeader = holder;
      if (holder) this.callbacks.onNewLeader?.(holder);
    }
  }

  /** Hands the lease back: empty holder and a 1 s duration, so another replica takes over at once. */
  private async release(): Promise<void> {
    const lease = this.lastLease;
    if (!lease || lease.spec?.holderIdentity !== this.config.identity) return;
    const now = microTimeIso(this.clock.now());
    try {
      const released = await this.store.update({
        ...lease,
        spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now },
      });
      this.observe(released);
      this.logger.info({ lease: `${this.config.namespace}/${this.config.name}` }, 'released the lease');
    } catch (error) {
      this.logger.warn({ err: errorMessage(error) }, 'could not release the lease');
    }
  }
}
