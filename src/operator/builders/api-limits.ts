// spec.apiLimits: each API's budget for the whole node, divided among the pods that may call that API, as each pod's
// `--api-rate-limit` arguments (src/cli/api-limit-options.ts). Pure functions of the OracleNode and its config, so a
// change of replicas (or of the HPA's maxReplicas, or a chain's maxConcurrency) re-renders the arguments on the next
// reconcile, and the pods roll with their new share.
//
// The division: every pod that may call an API within one window of its budget gets the same whole share,
// floor(budget / pods), in the budget's own window (per second or per minute), so the pods' sum never exceeds the
// budget whichever of them call. The pods counted for an API (an endpoint, for an endpoint's own budget):
// - the gateway's, when a gateway that calls APIs is enabled and a trigger of it (triggers.http, httpSignedData) names
//   the API: the most replicas it can run with (the HPA's maxReplicas when autoscaling);
// - the cycle's workers, when an rrp trigger names the API: per window, a worker Job per chain (parallelism at most
//   the chain's maxConcurrency) and the window's Job (at most the largest maxConcurrency), twice over, because the
//   pods of two windows overlap at the hand-over and within any minute.
// The coordinator is not counted: its pod always carries the worker template (ORACLE_NODE_WORKER_TEMPLATE), so it
// hands every API call to those workers and makes none itself; only a coordinator run by hand calls APIs in process.
// A share below one leaves those pods none (`=0/s`, `=0/m`): they never call the API, a gateway answers 429 and a
// worker defers, which the metrics show; raise the budget, lower the replicas or maxConcurrency, or write a per-second
// budget per minute. A burst (calls within a second on top of a per-minute budget) is divided the same way; a share of
// it below one is left out, the pods keeping their per-minute share.
import type { Config } from '../../config/index.js';
import type { OracleNode } from '../resource.js';

type ApiLimitSpec = NonNullable<OracleNode['spec']['apiLimits']>[number];

/** Who may call the APIs, as the division counts them. */
export type CallingPods = {
  /** Gateway pods at most (0 without a gateway that calls APIs). */
  gateway: number;
  /** The cycle's worker pods that may call within one window of a budget. */
  worker: number;
};

export type ApiLimitShare = {
  /** `TITLE` or `TITLE/ENDPOINT`: the flag's target. */
  target: string;
  /** Pods counted for this API: the gateway's and the workers' (0 for a workload that never calls it). */
  gatewayPods: number;
  workerPods: number;
  /** Each pod's share in the budget's window, and of its burst (undefined: no burst, or a share below one). */
  perPod: { calls: number; window: 's' | 'm'; burst?: number };
};

/** Which APIs (OIS title, and endpoint name) the gateways and the cycle may call, from the config's triggers. */
function callers(config: Config) {
  const settings = config.nodeSettings;
  const gatewayCalls = settings.httpGateway.enabled || settings.httpSignedDataGateway.enabled;
  const key = (ois: string, endpoint?: string) => (endpoint === undefined ? ois : `${ois}\u0000${endpoint}`);
  const gateway = new Set<string>();
  const cycle = new Set<string>();
  const add = (set: Set<string>, trigger: { oisTitle: string; endpointName: string }) => {
    set.add(key(trigger.oisTitle));
    set.add(key(trigger.oisTitle, trigger.endpointName));
  };
  if (settings.httpGateway.enabled) for (const trigger of config.triggers.http ?? []) add(gateway, trigger);
  if (settings.httpSignedDataGateway.enabled)
    for (const trigger of config.triggers.httpSignedData ?? []) add(gateway, trigger);
  for (const trigger of config.triggers.rrp) add(cycle, trigger);
  return {
    gatewayCalls: (ois: string, endpoint?: string) => gatewayCalls && gateway.has(key(ois, endpoint)),
    cycleCalls: (ois: string, endpoint?: string) => cycle.has(key(ois, endpoint)),
  };
}

/**
 * The cycle's worker pods that may call APIs within one minute: per window, one worker Job per chain (at most its
 * maxConcurrency pods) and the window's Job (at most the largest maxConcurrency), for two windows.
 */
export function cycleWorkerPods(config: Config): number {
  const concurrency = config.chains.map((chain) => Math.max(1, chain.maxConcurrency));
  if (concurrency.length === 0) return 0;
  return 2 * (concurrency.reduce((sum, value) => sum + value, 0) + Math.max(...concurrency));
}

/**
 * The division of every budget among the pods: pure, so the property holds by construction and is tested as such
 * (test/unit/operator/builders/api-limits.test.ts): for each budget, (gateway pods + worker pods) x share <= budget.
 */
export function divideApiLimits(limits: readonly ApiLimitSpec[], config: Config, pods: CallingPods): ApiLimitShare[] {
  const calls = callers(config);
  return limits.map((limit) => {
    const gatewayPods = calls.gatewayCalls(limit.ois, limit.endpoint) ? pods.gateway : 0;
    const workerPods = calls.cycleCalls(limit.ois, limit.endpoint) ? pods.worker : 0;
    return { target: targetOf(limit), gatewayPods, workerPods, perPod: shareOf(limit, gatewayPods + workerPods) };
  });
}

const targetOf = (limit: ApiLimitSpec) => (limit.endpoint === undefined ? limit.ois : `${limit.ois}/${limit.endpoint}`);

/** One pod's whole share of a budget among `pods` (at least one). */
function shareOf(limit: ApiLimitSpec, pods: number): ApiLimitShare['perPod'] {
  const total = Math.max(1, pods);
  const perMinute = limit.callsPerMinute !== undefined;
  const budget = perMinute ? limit.callsPerMinute! : limit.callsPerSecond!;
  const burst = limit.burst === undefined ? 0 : Math.floor(limit.burst / total);
  return { calls: Math.floor(budget / total), window: perMinute ? 'm' : 's', ...(burst > 0 ? { burst } : {}) };
}

/** The `--api-rate-limit` arguments of a workload that is the only caller of its APIs (an AirnodeFeed's one pod). */
export function soleCallerApiLimitArgs(limits: readonly ApiLimitSpec[] | undefined): string[] {
  return flags((limits ?? []).map((limit) => ({ target: targetOf(limit), perPod: shareOf(limit, 1) })));
}

function flags(shares: readonly Pick<ApiLimitShare, 'target' | 'perPod'>[]): string[] {
  return shares.flatMap(({ target, perPod }) => [
    '--api-rate-limit',
    `${target}=${perPod.calls}/${perPod.window}`,
    ...(perPod.burst === undefined ? [] : ['--api-rate-limit', `${target}=${perPod.burst}/s`]),
  ]);
}

/** The `--api-rate-limit` arguments of one pod of a workload, from the division (none for an API it never calls). */
export function apiLimitArgs(shares: readonly ApiLimitShare[], workload: 'gateway' | 'worker'): string[] {
  return flags(shares.filter((share) => (workload === 'gateway' ? share.gatewayPods : share.workerPods) > 0));
}

/** The division of an OracleNode's spec.apiLimits among its gateway replicas (at most) and its cycle's workers. */
export function nodeApiLimitShares(node: OracleNode, config: Config, gatewayMaxReplicas: number): ApiLimitShare[] {
  const limits = node.spec.apiLimits ?? [];
  if (limits.length === 0) return [];
  return divideApiLimits(limits, config, { gateway: gatewayMaxReplicas, worker: cycleWorkerPods(config) });
}

/**
 * What is wrong with spec.apiLimits against the config: a budget for an OIS or endpoint the config lacks would limit
 * nothing (a typo leaving the real API unlimited), so the node is refused (ConfigValid=False) until it is fixed.
 */
export function apiLimitProblems(limits: readonly ApiLimitSpec[] | undefined, config: Config): string[] {
  return (limits ?? []).flatMap((limit, i) => {
    const ois = config.ois.find((candidate) => candidate.title === limit.ois);
    if (!ois) return [`spec.apiLimits[${i}].ois: the config has no OIS titled '${limit.ois}'`];
    if (limit.endpoint !== undefined && !ois.endpoints.some((endpoint) => endpoint.name === limit.endpoint))
      return [`spec.apiLimits[${i}].endpoint: OIS '${limit.ois}' has no endpoint named '${limit.endpoint}'`];
    return [];
  });
}

/** The coordinator's `--api-retry-window SECONDS` when spec.apiRetryWindowSeconds is set (absent: the engine's 300). */
export function apiRetryWindowArgs(node: OracleNode): string[] {
  const seconds = node.spec.apiRetryWindowSeconds;
  return seconds === undefined ? [] : ['--api-retry-window', String(seconds)];
}
