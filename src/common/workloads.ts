/**
 * The engine's workloads on Kubernetes, one name each: what the operator builds a pod for, and the scope of the
 * secrets that pod receives.
 */
export const WORKLOADS = ['coordinator', 'gateway', 'worker'] as const;
export type Workload = (typeof WORKLOADS)[number];
