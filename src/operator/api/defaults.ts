// The OracleNode API's defaults and bounds, as CloudNativePG's api/v1/cluster_defaults.go: the schema (v1alpha1.ts)
// states them in the CRD, and the builders and the status apply the same values (through resource.ts).
export const DEFAULT_IMAGE = 'oracle-node:0.1.0';
export const DEFAULT_SCHEDULE = '* * * * *';
/** Seconds between a coordinator window's polls of new blocks; 0 turns windows off (one cycle per tick). */
export const DEFAULT_COORDINATOR_POLL_INTERVAL_SECONDS = 1;
/** The engine's least poll interval (`oracle-node coordinator --poll-interval`); a smaller non-zero one is raised to it. */
export const MIN_COORDINATOR_POLL_INTERVAL_SECONDS = 0.1;
export const MAX_COORDINATOR_POLL_INTERVAL_SECONDS = 30;
/** The average CPU utilisation (% of the CPU request) the gateway's HPA aims at when no metrics are given. */
export const DEFAULT_TARGET_CPU_UTILIZATION = 80;

/** spec.secretRef.as: the keys as one secretKeyRef variable each, or as files of a read-only Secret volume. */
export const SECRETS_AS = ['EnvVars', 'Files'] as const;

export const MAX_RECENT_FAILED_REQUESTS = 20;

export const MAX_CYCLE_HISTORY = 10;
