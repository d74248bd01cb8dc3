// The coordinator hand-over (docs/chain-cycle.md, "The hand-over"): consecutive coordinator windows overlap, and a
// coordination.k8s.io Lease per node (`<node>-coordinator`, not per stage) keeps exactly one of them sending. The
// next run loads its config and providers, then asks for the Lease every HANDOVER_WAIT_POLL_MS and starts its first
// cycle the moment the running window releases it (right after its last poll's cycle) or its holder's lease runs
// out (a crashed pod). The holder renews it every HANDOVER_RENEW_PERIOD_MS; one that cannot renew for
// HANDOVER_RENEW_DEADLINE_MS stops sending at once, before anyone else may take it (HANDOVER_LEASE_DURATION_MS by the
// other's clock). Every one of these durations is on the monotonic clock: a wall clock stepped either way neither
// keeps a cut-off holder sending nor lets the next run take a lease that is still held. The Lease rules themselves
// are the operator's client-go style elector (src/kube/leader.ts).
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { PendingSightings } from '../../chain/pending.js';
import { ORACLE_NODE_OWNER } from '../../contract/pods.js';
import {
  type ClientConfig,
  type Clock,
  LeaderElector,
  type Lease,
  type LeaseStore,
  loadClientConfig,
  RestClient,
  RestLeaseStore,
  systemClock,
} from '../../kube/api.js';
import type { HandedOverState } from '../pending-sightings.js';

/** How long a holder's lease lasts without renewal: a crashed window is taken over this long after its last renewal. */
export const HANDOVER_LEASE_DURATION_MS = 5_000;
/** A holder that could not renew for this long stops sending (before the lease can run out for the others). */
export const HANDOVER_RENEW_DEADLINE_MS = 3_000;
/** How often the holder renews. */
export const HANDOVER_RENEW_PERIOD_MS = 1_000;
/** How often a waiting run asks for the lease: the most the hand-over adds to the gap between two polls. */
export const HANDOVER_WAIT_POLL_MS = 200;
/**
 * The Lease annotation that carries the holder's pending-transaction sightings (src/chain/pending.ts) to the next run:
 * written with every renewal and with the release, taken over with the Lease, so no call is added for it.
 */
export const PENDING_SIGHTINGS_ANNOTATION = 'oracle-node.io/pending-sightings';
/**
 * The Lease annotation that carries the holder's retries of transient API failures (src/node/api-retries.ts): the
 * next run calls no API sooner than its Retry-After, nor a request before its back-off, and fails none early.
 */
export const API_RETRIES_ANNOTATION = 'oracle-node.io/api-retries';

/** One state in its annotation, and what its log line calls what was taken over. */
export type CarriedState = { annotation: string; state: HandedOverState; taken: string };

export type HeldLease = {
  /** Stops renewing and hands the lease back (empty holder), so the waiting run takes it at its next ask. */
  release(): Promise<void>;
  /**
   * Whether the lease is still this run's to send under, asked before each send: it was renewed less than the renew
   * deadline ago by this process's monotonic clock (a renewal counts from when it was asked), and was not lost or
   * released. Unlike the elector's renewals, which timers drive, this holds whatever the process did meanwhile: a run
   * paused past its renew deadline (SIGSTOP, a VM freeze) answers false at its first send after resuming, before any
   * timer runs. A false answer is the loss: logged and `onLost` called, once, whichever noticed it first.
   */
  held(): boolean;
};

export type HandoverOptions = {
  namespace: string;
  name: string;
  logger: Logger;
  /** A reading of the clock's monotonic time: a run still waiting then gives up (its window is over). */
  waitUntil: number;
  /** Aborts the wait (SIGTERM). */
  signal: AbortSignal;
  /**
   * Called once when the lease is lost while held: renewals failed past their deadline, another holder, or `held()`
   * found the last renewal older than the deadline.
   */
  onLost: () => void;
  identity?: string;
  /**
   * The OracleNode the coordinator runs for (name and uid): the Lease is owned by it, so the garbage collector deletes
   * it with the node. Absent (a coordinator run by hand): the Lease has no owner.
   */
  owner?: { name: string; uid: string };
  store?: LeaseStore;
  /** This run's sightings of pending transactions: the last holder's are taken over with the Lease, ours handed on. */
  sightings?: PendingSightings;
  /** This run's retries of transient API failures: handed on with the Lease as the sightings are. */
  apiRetries?: HandedOverState;
  /** For tests: a wall clock they step; the system's otherwise. */
  clock?: Clock;
  /** For tests; the defaults above otherwise. */
  timing?: { leaseDurationMs: number; renewDeadlineMs: number; renewPeriodMs: number; waitPollMs: number };
};

/**
 * The Lease API through the process's own credentials (in a pod its ServiceAccount, else the kubeconfig), or through
 * the connection given.
 */
export async function restLeaseStore(connection?: ClientConfig): Promise<LeaseStore> {
  // A Lease call unanswered for 2 s counts as failed: the holder's renewal deadline is 3 s.
  const rest = new RestClient(connection ?? (await loadClientConfig()), {
    qps: 20,
    burst: 40,
    userAgent: 'oracle-node-coordinator',
    requestTimeoutMs: 2_000,
  });
  return new RestLeaseStore(rest);
}

/**
 * Waits for the lease and holds it: undefined when `waitUntil` passed or the signal aborted first. While held, it is
 * renewed in the background; a loss calls `onLost` (the caller stops sending) and is never followed by a new claim.
 */
export async function acquireHandoverLease(options: HandoverOptions): Promise<HeldLease | undefined> {
  const timing = options.timing ?? {
    leaseDurationMs: HANDOVER_LEASE_DURATION_MS,
    renewDeadlineMs: HANDOVER_RENEW_DEADLINE_MS,
    renewPeriodMs: HANDOVER_RENEW_PERIOD_MS,
    waitPollMs: HANDOVER_WAIT_POLL_MS,
  };
  const clock = options.clock ?? systemClock;
  const rest = options.store ?? (await restLeaseStore());
  const identity = options.identity ?? `${process.env.HOSTNAME || hostname()}_${randomUUID().slice(0, 8)}`;
  const owned = options.owner ? ownedBy(rest, options.owner) : rest;
  const states: CarriedState[] = [];
  if (options.sightings)
    states.push({
      annotation: PENDING_SIGHTINGS_ANNOTATION,
      state: options.sightings,
      taken: 'took over the pending transactions seen by the previous window',
    });
  if (options.apiRetries)
    states.push({
      annotation: API_RETRIES_ANNOTATION,
      state: options.apiRetries,
      taken: 'took over the API retries of the previous window',
    });
  const carried = states.length > 0 ? carrying(owned, identity, states, options.logger) : owned;
  const renewals = renewedBy(carried, identity, clock);
  const store = renewals.store;
  const lease = { lease: `${options.namespace}/${options.name}`, identity };
  let releasing = false;
  let lost = false;
  // The one loss, whichever notices it first: the elector's renewals past their deadline (a timer), or `held()` before
  // a send finding the last renewal too old (a process paused past it, whose timers have not run yet). One log line
  // and one onLost either way, so what an operator alerts on does not depend on which came first.
  const lose = (cause: string) => {
    if (lost) return;
    lost = true;
    options.logger.error({ ...lease, cause }, 'lost the coordinator lease: nothing new is sent');
    options.onLost();
  };
  let started: (() => void) | undefined;
  const leading = new Promise<void>((resolve) => (started = resolve));
  const elector = new LeaderElector(
    store,
    {
      namespace: options.namespace,
      name: options.name,
      identity,
      leaseDurationMs: timing.leaseDurationMs,
      renewDeadlineMs: timing.renewDeadlineMs,
      retryPeriodMs: timing.renewPeriodMs,
      releaseOnCancel: true,
    },
    {
      onStartedLeading: () => started?.(),
      onStoppedLeading: () => {
        if (releasing) return;
        // Lost while held: stop sending now, and never claim it again (the next run holds it).
        releasing = true;
        lose('not renewed within the renew deadline, or another run holds it');
        void elector.stop();
      },
    },
    options.logger,
    clock,
  );
  const sleep = (ms: number, keepAlive = true) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      if (!keepAlive) timer.unref();
      function done() {
        clearTimeout(timer);
        options.signal.removeEventListener('abort', done);
        resolve();
      }
      options.signal.addEventListener('abort', done, { once: true });
    });
  const open = () => !options.signal.aborted && clock.monotonic() < options.waitUntil;
  let logged = false;
  let acquired = false;
  // The wait: one GET per ask; the PUT that takes the lease only once it is free or has run out by our clock.
  while (open()) {
    acquired = await elector.tryAcquireOrRenew(options.signal);
    if (acquired) break;
    if (!logged) options.logger.info(lease, 'waiting for the coordinator lease (another window holds it)');
    logged = true;
    await sleep(Math.min(timing.waitPollMs, Math.max(0, options.waitUntil - clock.monotonic())));
  }
  if (!acquired) return undefined;
  // Taken: the elector renews it from here (its first round renews what we hold, one GET and one PUT).
  elector.start();
  await Promise.race([leading, sleep(timing.renewDeadlineMs, false)]);
  if (!elector.isLeader() || !open()) {
    // Not confirmed in time, or the window ended meanwhile: hand it back unused.
    releasing = true;
    await elector.stop();
    return undefined;
  }
  options.logger.info(lease, 'holds the coordinator lease');
  return {
    async release() {
      if (releasing) return;
      releasing = true;
      await elector.stop();
    },
    held: () => {
      if (releasing || lost) return false;
      if (clock.monotonic() - renewals.lastRenewalAskedAt() < timing.renewDeadlineMs) return true;
      lose('its last renewal is older than the renew deadline');
      return false;
    },
  };
}

/**
 * The Lease calls, noting when the last write that left `identity` the holder was asked (the monotonic clock): the
 * others see that renewal no earlier, so they take over no sooner than a lease duration after it, by their clocks.
 */
function renewedBy(
  store: LeaseStore,
  identity: string,
  clock: Clock,
): { store: LeaseStore; lastRenewalAskedAt: () => number } {
  let lastRenewalAskedAt = Number.NEGATIVE_INFINITY;
  const noted = async (write: () => Promise<Lease>): Promise<Lease> => {
    const askedAt = clock.monotonic();
    const written = await write();
    if (written.spec?.holderIdentity === identity) lastRenewalAskedAt = Math.max(lastRenewalAskedAt, askedAt);
    return written;
  };
  return {
    store: {
      get: (namespace, name, signal) => store.get(namespace, name, signal),
      create: (lease, signal) => noted(() => store.create(lease, signal)),
      update: (lease, signal) => noted(() => store.update(lease, signal)),
    },
    lastRenewalAskedAt: () => lastRenewalAskedAt,
  };
}

/**
 * The Lease calls with the OracleNode as the Lease's owner: set when the coordinator creates it, and added when it
 * takes over or renews one without it (a Lease an older coordinator created), so it is deleted with the node. Not the
 * controller reference and no blockOwnerDeletion: the operator does not manage the Lease, and the coordinator may
 * not update the node.
 */
export function ownedBy(store: LeaseStore, owner: { name: string; uid: string }): LeaseStore {
  const reference = { ...ORACLE_NODE_OWNER, name: owner.name, uid: owner.uid };
  const withOwner = (lease: Lease): Lease => {
    const references = (lease.metadata['ownerReferences'] as { uid?: string }[] | undefined) ?? [];
    if (references.some((r) => r.uid === owner.uid)) return lease;
    return { ...lease, metadata: { ...lease.metadata, ownerReferences: [...references, reference] } };
  };
  return {
    get: (namespace, name, signal) => store.get(namespace, name, signal),
    create: (lease, signal) => store.create(withOwner(lease), signal),
    update: (lease, signal) => store.update(withOwner(lease), signal),
  };
}

/**
 * The Lease calls with each carried state in its annotation (the pending-transaction sightings, the API retries). The
 * write that makes `identity` the holder keeps what the last holder wrote there (the Lease it read, so exactly the
 * hand-over it takes) and, once it succeeded, takes it over (a write lost to another run takes nothing); every later
 * write of ours (renewals, the release) carries our states at the time.
 */
export function carrying(
  store: LeaseStore,
  identity: string,
  carried: readonly CarriedState[],
  logger: Logger,
): LeaseStore {
  let takenOver = false;
  const write = async (lease: Lease, send: (lease: Lease) => Promise<Lease>): Promise<Lease> => {
    const annotations = (lease.metadata['annotations'] as Record<string, string> | undefined) ?? {};
    if (!takenOver && lease.spec?.holderIdentity === identity) {
      const written = await send(lease);
      takenOver = true;
      for (const { annotation, state, taken } of carried) {
        const count = state.takeOver(annotations[annotation]);
        if (count > 0) logger.info({ count }, taken);
      }
      return written;
    }
    const next = { ...annotations };
    for (const { annotation, state } of carried) {
      const handed = state.toHandOver();
      if (handed === undefined) delete next[annotation];
      else next[annotation] = handed;
    }
    return send({ ...lease, metadata: { ...lease.metadata, annotations: next } });
  };
  return {
    get: (namespace, name, signal) => store.get(namespace, name, signal),
    create: (lease, signal) => write(lease, (written) => store.create(written, signal)),
    update: (lease, signal) => write(lease, (written) => store.update(written, signal)),
  };
}
