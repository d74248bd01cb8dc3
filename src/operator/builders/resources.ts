// Compute resources of the containers the operator creates: a default per workload, sized from the measurements
// in docs/benchmarks.md, with spec.resources and then spec.<workload>.resources merged over it key by key, so that
// setting one value (a CPU limit) never drops the others (the memory request and limit).
import type { V1ResourceRequirements } from '@kubernetes/client-node';
import type { Workload } from '../../common/workloads.js';
import type { OracleNode } from '../resource.js';

type Quantities = Record<string, string>;

/**
 * Requests and a memory limit for every workload; no CPU limit (throttling a signer or a probe server helps nobody).
 * The figures are RSS measured in docs/benchmarks.md:
 * - coordinator: a whole 1,000-request cycle peaked at 178 MB with the shards in the same process ("Request-response
 *   cycle"); in a pod the shards run as worker Jobs, and validating a 4.9 MiB config peaks at 120 MiB.
 * - gateway: 117 MB at start, 386 MB at the peak of 20 concurrent 32 MB snippets, 157 MB once they finished
 *   ("gateway RSS", hostile inputs).
 * - worker: one shard in the same engine process as the gateway at start (117-120 MB), its snippets in the
 *   memory-capped QuickJS pool.
 * CPU requests are a scheduling share, not a measurement: 100m each (the gateway's HPA targets % of it).
 */
export const DEFAULT_RESOURCES: Readonly<Record<Workload, { requests: Quantities; limits: Quantities }>> = {
  coordinator: { requests: { cpu: '100m', memory: '192Mi' }, limits: { memory: '512Mi' } },
  gateway: { requests: { cpu: '100m', memory: '192Mi' }, limits: { memory: '512Mi' } },
  worker: { requests: { cpu: '100m', memory: '160Mi' }, limits: { memory: '384Mi' } },
};

const SUFFIXES: Record<string, number> = {
  '': 1,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};
const QUANTITY = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei))?$/;

/** The value of a Kubernetes quantity ("512Mi", "0.5", "100m", "1e3"), or undefined when it is not one. */
export function quantityValue(quantity: string | number | undefined): number | undefined {
  if (typeof quantity === 'number') return quantity;
  const match = quantity === undefined ? null : QUANTITY.exec(quantity);
  if (!match) return undefined;
  const [, number, exponent, suffix] = match;
  return Number(number) * (exponent ? 10 ** Number(exponent.slice(1)) : SUFFIXES[suffix ?? '']!);
}

function quantities(value: unknown): Quantities {
  if (!value || typeof value !== 'object') return {};
  return Object.fromEntries(Object.entries(value).map(([name, quantity]) => [name, String(quantity)]));
}

/**
 * The workload's default, then spec.resources, then spec.<workload>.resources, merged per resource name within
 * requests and limits. A request that only the defaults set is lowered to a limit the user set below it, as
 * Kubernetes would default a request that is absent: the pod stays valid (request <= limit).
 */
export function mergeResources(
  defaults: { requests: Quantities; limits: Quantities },
  ...overrides: (V1ResourceRequirements | undefined)[]
): V1ResourceRequirements {
  const requests: Quantities = { ...defaults.requests };
  const limits: Quantities = { ...defaults.limits };
  const requestedByUser = new Set<string>();
  for (const override of overrides) {
    const userRequests = quantities(override?.requests);
    Object.assign(requests, userRequests);
    for (const name of Object.keys(userRequests)) requestedByUser.add(name);
    Object.assign(limits, quantities(override?.limits));
  }
  for (const [name, limit] of Object.entries(limits)) {
    if (requestedByUser.has(name) || requests[name] === undefined) continue;
    const request = quantityValue(requests[name]);
    const ceiling = quantityValue(limit);
    if (request !== undefined && ceiling !== undefined && request > ceiling) requests[name] = limit;
  }
  const merged: V1ResourceRequirements = { requests, limits };
  // Anything else a container's resources may hold (claims) is the user's, taken from the most specific setting.
  for (const override of overrides) {
    if (override?.claims) merged.claims = override.claims;
  }
  return merged;
}

/** The resources of a workload's container: its default with spec.resources and spec.<workload>.resources over it. */
export function workloadResources(node: OracleNode, workload: Workload): V1ResourceRequirements {
  return mergeResources(DEFAULT_RESOURCES[workload], node.spec.resources, node.spec[workload]?.resources);
}
