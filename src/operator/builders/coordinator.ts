// The coordinator CronJob: per schedule tick one window (the first cycle, then polls of new blocks) that lasts past
// the next tick by a hand-over allowance, the next run taking over through the node's coordinator Lease the moment it
// ends (docs/chain-cycle.md, "The hand-over"); or one cycle with windows off, never two at once.
import type { V1CronJob, V1PodSpec } from '@kubernetes/client-node';
import { CONFIG_FILE, ENV, JOB_NAME_LABEL } from '../../contract/pods.js';
import {
  DEFAULT_COORDINATOR_POLL_INTERVAL_SECONDS,
  DEFAULT_SCHEDULE,
  MIN_COORDINATOR_POLL_INTERVAL_SECONDS,
} from '../resource.js';
import { apiRetryWindowArgs } from './api-limits.js';
import { gasPriceCeilingArgs, standbyArgs } from './chain-limits.js';
import {
  type BuildInput,
  basePodSpec,
  canonicalJson,
  childNames,
  engineContainer,
  labels,
  metadata,
  podTemplateMetadata,
} from './common.js';
import { gatewayEnabled } from './gateway.js';
import { inheritedMetadata } from './pod-overrides.js';
import { NODE_SECRETS_AS_ENV, withScannerSkips } from './scanner-skips.js';
import { buildWorkerTemplate } from './worker.js';

/** A cycle that has not started 20 s after its tick is skipped: the next tick is near. */
export const STARTING_DEADLINE_SECONDS = 20;
/** A one-shot Job is cut off this long before the next tick (SIGTERM: it reports what it did). */
export const DEADLINE_BEFORE_NEXT_TICK_SECONDS = 5;
/**
 * A window lasts this long past the next tick: the next run's pod starts, loads its config and providers and waits
 * for the Lease meanwhile, so it is ready when this window ends (a start-up up to this much slower than this run's
 * still finds no gap).
 */
export const HANDOVER_ALLOWANCE_SECONDS = 10;
/**
 * A window's Job is cut off this long after its window's end: the hard end (HARD_END_MARGIN_MS, 5 s), the pod's
 * start-up before the window counts from (its clock starts with the process) and the report.
 */
export const WINDOW_DEADLINE_AFTER_END_SECONDS = 10;
/**
 * The coordinator pod's grace period after SIGTERM (the Job's deadline): it sends nothing new, writes its cycle report
 * and request log and exits (src/node/run.ts); deadline + grace end at the next tick, so the pod is gone then
 * and `Forbid` never skips a run for it.
 */
export const COORDINATOR_GRACE_SECONDS = DEADLINE_BEFORE_NEXT_TICK_SECONDS;
/** A one-shot cycle (windows off) is cut off before the next minute's tick. */
export const COORDINATOR_DEADLINE_SECONDS = 60 - DEADLINE_BEFORE_NEXT_TICK_SECONDS;
/**
 * The longest span a window is derived from: a rarer schedule gets a 10-minute window, not one of hours, so a
 * stage rollout (which waits for the old coordinator's Job) and `oracle-node cycle` wait at most that long.
 */
export const MAX_WINDOW_SPAN_SECONDS = 600;

/**
 * The shortest time in seconds between two ticks of a cron schedule, or a lower bound of it: the smallest gap
 * between the minutes its minute field names (cyclically, over the hour; other fields only space ticks further).
 * 60 for anything it does not read (macros, names): no cron schedule ticks more often than every minute.
 */
export function scheduleMinPeriodSeconds(schedule: string): number {
  const fields = schedule.trim().split(/\s+/);
  const minutes = fields.length === 5 ? cronMinutes(fields[0]!) : undefined;
  if (minutes === undefined || minutes.length === 0) return 60;
  if (minutes.length === 1) return 3600;
  let gap = 60 + minutes[0]! - minutes[minutes.length - 1]!;
  for (let i = 1; i < minutes.length; i++) gap = Math.min(gap, minutes[i]! - minutes[i - 1]!);
  return gap * 60;
}

/** The sorted minutes (0-59) a cron minute field names, or undefined when it is not plain numbers, ranges, steps. */
function cronMinutes(field: string): number[] | undefined {
  const minutes = new Set<number>();
  for (const part of field.split(',')) {
    const match = /^(\*|(\d{1,2})(?:-(\d{1,2}))?)(?:\/(\d{1,2}))?$/.exec(part);
    if (!match) return undefined;
    const step = match[4] === undefined ? 1 : Number(match[4]);
    const from = match[1] === '*' ? 0 : Number(match[2]);
    const to = match[1] === '*' ? 59 : match[3] !== undefined ? Number(match[3]) : match[4] !== undefined ? 59 : from;
    if (step < 1 || from > 59 || to > 59 || from > to) return undefined;
    for (let minute = from; minute <= to; minute += step) minutes.add(minute);
  }
  return [...minutes].sort((a, b) => a - b);
}

/** The engine's flag naming the Lease a coordinator window sends under (src/cli/coordinator.ts). */
const HANDOVER_LEASE_FLAG = '--handover-lease';

export type CoordinatorRun = {
  /** Arguments of the engine after `coordinator -c <config>`: the window and its Lease, or none (one cycle). */
  windowArgs: string[];
  activeDeadlineSeconds: number;
  /** Allow with windows: the next run starts while this one's window runs and waits for the Lease. */
  concurrencyPolicy: 'Allow' | 'Forbid';
};

/**
 * How each coordinator Job runs. With windows on: a window of the schedule's period (at most
 * MAX_WINDOW_SPAN_SECONDS) plus HANDOVER_ALLOWANCE_SECONDS, sending only while it holds the node's coordinator Lease
 * (`leaseName`), cut off WINDOW_DEADLINE_AFTER_END_SECONDS after the window; runs may overlap (Allow) and the
 * deadline keeps it to two at a time (it ends before the tick after next). With `pollInterval: 0`, one cycle per tick
 * as before windows existed (Forbid, no Lease). Pure.
 */
export function coordinatorRun(schedule: string, pollInterval: number, leaseName: string): CoordinatorRun {
  if (!(pollInterval > 0))
    return { windowArgs: [], activeDeadlineSeconds: COORDINATOR_DEADLINE_SECONDS, concurrencyPolicy: 'Forbid' };
  const span = Math.min(scheduleMinPeriodSeconds(schedule), MAX_WINDOW_SPAN_SECONDS);
  const poll = Math.max(pollInterval, MIN_COORDINATOR_POLL_INTERVAL_SECONDS);
  const window = span + HANDOVER_ALLOWANCE_SECONDS;
  return {
    windowArgs: ['--window', String(window), '--poll-interval', String(poll), HANDOVER_LEASE_FLAG, leaseName],
    activeDeadlineSeconds: window + WINDOW_DEADLINE_AFTER_END_SECONDS,
    concurrencyPolicy: 'Allow',
  };
}

export type CoordinatorOptions = {
  /**
   * Forced suspension (a stage rollout without a shared Lease: the new stage waits until the old one's Jobs are
   * done; src/operator/reconcile/rollout.ts).
   */
  holdForRollout?: boolean;
};

/** The node's coordinator run as the spec asks for it (the window and its Lease, or one cycle per tick). */
function nodeCoordinatorRun(input: BuildInput): CoordinatorRun {
  const names = childNames(input.node.metadata.name, input.config.nodeSettings.stage);
  return coordinatorRun(
    input.node.spec.coordinator?.schedule ?? DEFAULT_SCHEDULE,
    input.node.spec.coordinator?.pollInterval ?? DEFAULT_COORDINATOR_POLL_INTERVAL_SECONDS,
    names.coordinatorLease,
  );
}

/** The Lease the node's coordinator windows take turns through; undefined for one cycle per tick (no Lease). */
export function coordinatorHandoverLease(input: BuildInput): string | undefined {
  return leaseOfArgs(nodeCoordinatorRun(input).windowArgs);
}

/** The Lease a coordinator pod (a CronJob's or Job's) sends under, from its arguments; undefined without one. */
export function handoverLeaseOf(pod: V1PodSpec | undefined): string | undefined {
  const container = pod?.containers.find((c) => c.args?.[0] === 'coordinator');
  return leaseOfArgs(container?.args ?? []);
}

function leaseOfArgs(args: string[]): string | undefined {
  const at = args.indexOf(HANDOVER_LEASE_FLAG);
  return at >= 0 ? args[at + 1] : undefined;
}

export function buildCoordinatorCronJob(
  input: BuildInput,
  options: CoordinatorOptions = {},
): V1CronJob & { metadata: { name: string } } {
  const stage = input.config.nodeSettings.stage;
  const names = childNames(input.node.metadata.name, stage);
  const schedule = input.node.spec.coordinator?.schedule ?? DEFAULT_SCHEDULE;
  const run = nodeCoordinatorRun(input);
  const args = [
    'coordinator',
    '-c',
    CONFIG_FILE,
    ...run.windowArgs,
    ...gasPriceCeilingArgs(input.node),
    ...standbyArgs(input.node),
    ...apiRetryWindowArgs(input.node),
  ];
  const container = engineContainer(input, 'coordinator', args, 'coordinator', [
    { name: ENV.workerTemplate, value: canonicalJson(buildWorkerTemplate(input)) },
    // The cycle report names its Job, so status.lastCycle pairs the counts with the right cycle.
    { name: ENV.jobName, valueFrom: { fieldRef: { fieldPath: `metadata.labels['${JOB_NAME_LABEL}']` } } },
    // The coordinator Lease it creates is owned by the node, so it goes with it.
    ...(input.node.metadata.uid ? [{ name: ENV.oracleNodeUid, value: input.node.metadata.uid }] : []),
    // Where the window's workers reach the coordinator (its own port on the pod IP; no Service).
    { name: ENV.podIp, valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
    // The heartbeat reports the gateways where callers reach them; without a public URL, none.
    ...(input.publicGatewayUrl && gatewayEnabled(input)
      ? [{ name: ENV.gatewayUrl, value: input.publicGatewayUrl }]
      : []),
  ]);
  // The coordinator creates the cycle's worker Jobs and writes its cache and cycle report.
  const podSpec = basePodSpec(input, [container], {
    workload: 'coordinator',
    serviceAccountName: names.coordinator,
    apiToken: true,
  });
  podSpec.restartPolicy = 'Never';
  podSpec.terminationGracePeriodSeconds = COORDINATOR_GRACE_SECONDS;
  const podLabels = labels(input.node, stage, 'coordinator');
  return {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: withScannerSkips(metadata(input, names.coordinator, 'coordinator'), podSpec, {
      apiToken: 'it creates its worker Jobs and writes its Lease and reports through the Kubernetes API',
      secretsAsEnv: NODE_SECRETS_AS_ENV,
    }),
    spec: {
      schedule,
      suspend: options.holdForRollout === true || input.node.spec.coordinator?.suspend === true,
      concurrencyPolicy: run.concurrencyPolicy,
      startingDeadlineSeconds: STARTING_DEADLINE_SECONDS,
      successfulJobsHistoryLimit: 3,
      failedJobsHistoryLimit: 3,
      jobTemplate: {
        metadata: inheritedMetadata(input.node, { labels: podLabels }),
        spec: {
          activeDeadlineSeconds: run.activeDeadlineSeconds,
          backoffLimit: 0,
          template: {
            metadata: podTemplateMetadata(input, 'coordinator', podLabels),
            spec: podSpec,
          },
        },
      },
    },
  };
}
