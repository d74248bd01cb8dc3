// The contract between the operator and the pods it creates, in one place: what the operator puts into a pod
// (environment variables, mounted paths, labels) and what the pods give back (the cycle report). The worker Job
// template and the shards it carries are the coordinator <-> worker contract (shard.ts). The operator's builders
// write it and the engine's Kubernetes adapters read it; neither imports the other. Everything a pod reads from its environment is parsed here, never cast.
import type { V1Job } from '@kubernetes/client-node';
import { z } from 'zod';
import { isRecord, parseJsonText } from '../common/json.js';
import { OTHER_SPONSOR } from '../common/sponsor-labels.js';
import { WORKLOADS, type Workload } from '../common/workloads.js';
import { NODE_ROLES } from './request-log.js';
import { CYCLE_LABEL, parseWorkerTemplate, type WorkerTemplate } from './shard.js';

/** Environment variables the operator sets on engine containers. */
export const ENV = {
  /** Path of the mounted config.json: the default of `-c` for every engine subcommand. */
  configPath: 'ORACLE_NODE_CONFIG',
  /** The OracleNode the pod runs for: bound into every log line. */
  oracleNode: 'ORACLE_NODE_NAME',
  namespace: 'POD_NAMESPACE',
  /** ConfigMap of the response cache (outlives cycles and stage rollouts). */
  cacheConfigMap: 'ORACLE_NODE_CACHE_CONFIGMAP',
  /** ConfigMap the coordinator writes its cycle report into. */
  cycleConfigMap: 'ORACLE_NODE_CYCLE_CONFIGMAP',
  /** Coordinator only: the worker Job template as JSON. */
  workerTemplate: 'ORACLE_NODE_WORKER_TEMPLATE',
  /**
   * Coordinator only: the OracleNode's uid. The coordinator Lease the coordinator creates is owned by the OracleNode
   * (ORACLE_NODE_OWNER), so it is deleted with the node. Absent: the Lease is created without an owner.
   */
  oracleNodeUid: 'ORACLE_NODE_UID',
  /** Coordinator only: the name of its own Job (from the Job controller's label), named in the cycle report. */
  jobName: 'JOB_NAME',
  /**
   * Coordinator only, optional: the base URL callers reach the gateways at (spec.gateway.publicUrl, else the
   * Service's load-balancer address), reported by the heartbeat. Absent: the heartbeat reports no gateway URL.
   */
  gatewayUrl: 'ORACLE_NODE_GATEWAY_URL',
  /**
   * Coordinator only, optional: its pod IP (the downward API's status.podIP), where its window's workers reach it
   * (shard.ts's WINDOW_WORKER_PORT). Absent: every poll starts its own worker Job, as before window workers.
   */
  podIp: 'POD_IP',
  /**
   * The workload whose keys of the Secret the pod was given (coordinator, gateway, worker): each pod receives only
   * the keys its own part of the config references, and its engine puts stand-ins in place of the others.
   */
  secretScope: 'ORACLE_NODE_SECRET_SCOPE',
  /**
   * Optional: a directory whose files are `${NAME}` values, one file per name (a Secret volume's keys), read like
   * variables of the same names (spec.secretRef.as: Files). The node key of a signing gateway may be one of them.
   */
  secretsDir: 'ORACLE_NODE_SECRETS_DIR',
  /**
   * Gateway only: the node's private key (0x and 64 hex digits, m/44'/60'/0'/0/0 of the mnemonic), which the
   * signed-data and OEV gateways sign with in place of the mnemonic; the operator derives it into its own Secret.
   */
  signingKey: 'ORACLE_NODE_SIGNING_KEY',
  /**
   * Optional, every engine pod: the OpenTelemetry standard variable (spec.telemetry.otlpEndpoint); tracing is off
   * without it (src/observability/tracing.ts reads it, with the other OTEL_* variables).
   */
  otlpEndpoint: 'OTEL_EXPORTER_OTLP_ENDPOINT',
  /** Optional, every engine pod, from spec.telemetry: the other standard variables the engine's exporter reads. */
  otlpHeaders: 'OTEL_EXPORTER_OTLP_HEADERS',
  otelServiceName: 'OTEL_SERVICE_NAME',
  otelResourceAttributes: 'OTEL_RESOURCE_ATTRIBUTES',
  otelSampler: 'OTEL_TRACES_SAMPLER',
  otelSamplerArg: 'OTEL_TRACES_SAMPLER_ARG',
} as const;

/** The OracleNode as an owner reference names it: what the coordinator sets on the Lease it creates. */
export const ORACLE_NODE_OWNER = { apiVersion: 'oracle-node.io/v1alpha1', kind: 'OracleNode' } as const;

/** Labels on everything the operator manages (and on worker Jobs, which the coordinator creates). */
export const LABELS = {
  managedBy: 'app.kubernetes.io/managed-by',
  name: 'oracle-node.io/name',
  stage: 'oracle-node.io/stage',
  component: 'app.kubernetes.io/component',
  partOf: 'app.kubernetes.io/part-of',
  instance: 'app.kubernetes.io/instance',
  cycle: CYCLE_LABEL,
} as const;

/** Set by the Job controller on a Job's pods. */
export const JOB_NAME_LABEL = 'batch.kubernetes.io/job-name';

/**
 * The gateway pod's port for /healthz, /readyz and /metrics (`oracle-node gateway --metrics-port`): the probes
 * and scrapers use it; the caller-facing Service exposes only the gateway port.
 */
export const GATEWAY_METRICS_PORT = 9090;

export const CONFIG_DIR = '/etc/oracle-node';
export const CONFIG_FILE = `${CONFIG_DIR}/config.json`;
/** Where a pod's keys are mounted as files (ENV.secretsDir); not under the config mount, where volumes cannot nest. */
export const SECRETS_DIR = '/var/run/oracle-node/secrets';
export const SECRETS_VOLUME = 'secrets';
/** Where the gateway's callers Secret (spec.gateway.callers.secretRef) is mounted: one file per caller, its key. */
export const CALLERS_DIR = '/var/run/oracle-node/callers';
export const CALLERS_VOLUME = 'callers';
/** The cycle report: written by the coordinator into `<name>-cycle` (key cycle.json), read by the operator. */
export const CYCLE_REPORT_KEY = 'cycle.json';
/** The provider chain ids the coordinator verified, keyed by a fingerprint (never a URL), for its next run. */
export const VERIFIED_CHAIN_IDS_KEY = 'verified-chain-ids.json';
/**
 * A coordinator's sightings of pending transactions, for its next run when they are not handed over with the Lease
 * (one cycle a minute: src/node/pending-sightings.ts).
 */
export const PENDING_SIGHTINGS_KEY = 'pending-sightings.json';
/** A coordinator's retries of transient API failures, for its next run without the Lease (src/node/api-retries.ts). */
export const API_RETRIES_KEY = 'api-retries.json';

const MAX_REPORT_ENTRIES = 1000;
// The report's schemas carry the descriptions the OracleNode status shows them with: the operator's API
// (src/operator/api/v1alpha1.ts) reuses them for status.lastCycle, status.cycles and status.recentFailedRequests.
const providerReportSchema = z.object({
  chainId: z.string().max(78),
  provider: z.string().max(253),
  ok: z.boolean(),
  /** Why the provider was left out of the cycle (the engine's ProviderFault: unavailable, lagging, wrong-chain, …). */
  fault: z
    .string()
    .regex(/^[a-z][a-z-]{0,39}$/)
    .optional(),
  currentBlock: z.number().int().nonnegative().optional(),
});
export const sponsorWalletReportSchema = z.object({
  chainId: z.string().max(78).meta({ description: 'Chain id.' }),
  sponsorWallet: z
    .string()
    .regex(/^0x[0-9a-fA-F]{40}$/)
    .meta({ description: 'Sponsor wallet address.' }),
  balanceWei: z
    .string()
    .regex(/^[0-9]{1,78}$/)
    .meta({ description: 'Balance after the cycle, in wei (decimal string).' }),
  openRequests: z
    .int()
    .min(0)
    .max(1_000_000)
    .optional()
    .meta({ description: 'Requests of this wallet that were open (waiting or servable) in that cycle.' }),
  belowThreshold: z
    .boolean()
    .optional()
    .meta({ description: "True when the balance is below the chain's spec.chainLimits[].lowSponsorBalance." }),
});
export const cycleOutcomeSchema = z.enum(['Completed', 'PartiallyFailed']);
/** How the heartbeat after the cycle went (Disabled: nodeSettings.heartbeat.enabled is false). */
export const HEARTBEAT_RESULTS = ['Sent', 'Failed', 'Disabled'] as const;
export const heartbeatResultSchema = z.enum(HEARTBEAT_RESULTS);
/** At most this many failed requests are reported per cycle: the operator turns each into a Warning Event. */
export const MAX_REPORTED_FAILED_REQUESTS = 20;
export const failedRequestReportSchema = z.object({
  chainId: z.string().max(78).meta({ description: 'Chain id.' }),
  requestId: z
    .string()
    .regex(/^0x[0-9a-fA-F]{64}$/)
    .meta({ description: 'Request id.' }),
  reason: z.string().max(300).meta({ description: 'Why it failed.' }),
});
export const gasPriceReportSchema = z.object({
  chainId: z.string().max(78).meta({ description: 'Chain id.' }),
  gasPriceWei: z
    .string()
    .regex(/^[0-9]{1,78}$/)
    .meta({ description: 'Gas price in wei (decimal string).' }),
});
/**
 * Request latencies a coordinator window measured (src/node/latency.ts), in seconds from the request's block: to the
 * fulfilment's submission and to its inclusion. At most MAX_REPORTED_LATENCIES per stage and report.
 */
export const LATENCY_STAGES = ['submission', 'inclusion'] as const;
export const MAX_REPORTED_LATENCIES = 1000;
/** A latency above a day is no measurement: dropped on reading. */
export const MAX_LATENCY_SECONDS = 86_400;
/** Histogram buckets of request latency, here so the engine's and the operator's histograms agree: 1 s to 2 min. */
export const REQUEST_LATENCY_BUCKETS_SECONDS = [1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60, 90, 120];
const latencySecondsSchema = z.number().nonnegative().max(MAX_LATENCY_SECONDS);
/**
 * The outcome classes of an API call made (or kept back: `deferred`), as the engine's and the operator's metrics and
 * the heartbeat name them (src/node/usage-counts.ts).
 */
export const API_CALL_OUTCOMES = ['2xx', '3xx', '4xx', '5xx', 'no_response', 'failed', 'deferred'] as const;
/** API calls of a cycle by OIS title, endpoint name and outcome class (names from the config's triggers). */
export const apiCallReportSchema = z.object({
  ois: z.string().min(1).max(256).meta({ description: 'OIS title.' }),
  endpoint: z.string().min(1).max(256).meta({ description: 'Endpoint name in the OIS.' }),
  outcome: z.enum(API_CALL_OUTCOMES).meta({ description: 'Status class of the call, or deferred.' }),
  count: z.int().positive().max(1_000_000_000),
});
/**
 * The classes of a deferral: the API's failure for now (429, 408, 5xx, no answer) or this node's own rate budget
 * (src/node/api-retries.ts); each deferred request is retried later, failed on chain only past its retry window.
 */
export const DEFERRAL_CLASSES = ['429', '408', '5xx', 'no response', 'budget'] as const;
/** Requests of a cycle left open after their API failed for now, by OIS title and class. */
export const apiDeferralReportSchema = z.object({
  ois: z.string().min(1).max(256).meta({ description: 'OIS title.' }),
  statusClass: z.enum(DEFERRAL_CLASSES).meta({ description: '429, 408, 5xx, no response, or budget.' }),
  count: z.int().positive().max(1_000_000_000),
});
/** Requests answered on chain in a cycle per sponsor: the top N sponsors of the run by address, the rest `other`. */
export const sponsorFulfilmentReportSchema = z.object({
  chainId: z.string().max(78).meta({ description: 'Chain id.' }),
  sponsor: z.union([z.string().regex(/^0x[0-9a-f]{40}$/), z.literal(OTHER_SPONSOR)]),
  outcome: z.enum(['fulfilled', 'failed']),
  count: z.int().positive().max(1_000_000_000),
});
/** Counts of a cycle as flat integers (requests seen, fulfilled, failed, ...). */
export const cycleCountsSchema = z.record(z.string(), z.int());
const isoTime = z.iso.datetime({ offset: true });

export type ProviderReport = z.infer<typeof providerReportSchema>;
export type SponsorWalletReport = z.infer<typeof sponsorWalletReportSchema>;
export type HeartbeatReport = z.infer<typeof heartbeatResultSchema>;
export type FailedRequestReport = z.infer<typeof failedRequestReportSchema>;
export type GasPriceReport = z.infer<typeof gasPriceReportSchema>;
export type ApiCallReport = z.infer<typeof apiCallReportSchema>;
export type ApiDeferralReport = z.infer<typeof apiDeferralReportSchema>;
export type SponsorFulfilmentReport = z.infer<typeof sponsorFulfilmentReportSchema>;
/**
 * The whole report, each field optional. parseCycleReport reads it field by field (a malformed field or entry is
 * dropped, not the report), so this schema gives the report its type and each field its rule.
 */
const cycleReportSchema = z.object({
  job: z.string().max(253).optional(),
  outcome: cycleOutcomeSchema.optional(),
  /** When the cycle started (ISO 8601) and how long it took, heartbeat included. */
  startTime: isoTime.optional(),
  durationMs: z.int().nonnegative().optional(),
  /** Counts of the cycle as flat integers (requests seen, fulfilled, failed, ...). */
  counts: cycleCountsSchema.optional(),
  providers: z.array(providerReportSchema).optional(),
  sponsorWallets: z.array(sponsorWalletReportSchema).optional(),
  heartbeat: heartbeatResultSchema.optional(),
  /** The requests that failed in the cycle, first MAX_REPORTED_FAILED_REQUESTS, with the reason. */
  failedRequests: z.array(failedRequestReportSchema).optional(),
  /** The gas price each chain's transactions were sent at in the cycle (the highest, when they differ). */
  gasPrices: z.array(gasPriceReportSchema).optional(),
  /** Which side of a redundant deployment ran the cycle (docs/chain-cycle.md, "Standby"); absent: the primary. */
  role: z.enum(NODE_ROLES).optional(),
  /** A window's request latencies by stage (seconds); absent for a one-shot cycle. */
  latencySeconds: z
    .partialRecord(z.enum(LATENCY_STAGES), z.array(latencySecondsSchema).max(MAX_REPORTED_LATENCIES))
    .optional(),
  /** The cycle's API calls by OIS, endpoint and outcome class; absent in reports of older engines. */
  apiCalls: z.array(apiCallReportSchema).optional(),
  /** The cycle's requests answered on chain per sponsor (its top N sponsors, the rest `other`). */
  sponsorFulfilments: z.array(sponsorFulfilmentReportSchema).optional(),
  /** The cycle's requests left open after their API failed for now, by OIS and class; absent: none. */
  apiDeferrals: z.array(apiDeferralReportSchema).optional(),
});
export type CycleReport = z.infer<typeof cycleReportSchema>;
const reportField = cycleReportSchema.shape;

/** The well-formed entries of a reported list (at most `limit`), or undefined when none is. */
function validEntries<T>(schema: z.ZodType<T>, value: unknown, limit = MAX_REPORT_ENTRIES): T[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const valid = value.slice(0, limit).flatMap((entry) => {
    const parsed = schema.safeParse(entry);
    return parsed.success ? [parsed.data] : [];
  });
  return valid.length > 0 ? valid : undefined;
}

/**
 * The cycle report of a `<name>-cycle` ConfigMap's data, or undefined when it is missing or not a JSON object.
 * The coordinator's identity can write that ConfigMap, so the operator reads it as untrusted input: only
 * well-formed fields and entries are kept.
 */
export function parseCycleReport(data: Record<string, string> | undefined): CycleReport | undefined {
  const raw = data?.[CYCLE_REPORT_KEY];
  if (!raw) return undefined;
  const value = parseJsonText(raw);
  if (!isRecord(value)) return undefined;
  const report: CycleReport = {};
  const job = reportField.job.safeParse(value['job']);
  if (job.success && job.data !== undefined) report.job = job.data;
  const outcome = cycleOutcomeSchema.safeParse(value['outcome']);
  if (outcome.success) report.outcome = outcome.data;
  const startTime = isoTime.safeParse(value['startTime']);
  if (startTime.success) report.startTime = startTime.data;
  const durationMs = reportField.durationMs.safeParse(value['durationMs']);
  if (durationMs.success && durationMs.data !== undefined) report.durationMs = durationMs.data;
  const heartbeat = heartbeatResultSchema.safeParse(value['heartbeat']);
  if (heartbeat.success) report.heartbeat = heartbeat.data;
  const role = reportField.role.safeParse(value['role']);
  if (role.success && role.data !== undefined) report.role = role.data;
  if (isRecord(value['counts'])) {
    const counts = Object.entries(value['counts'])
      .slice(0, MAX_REPORT_ENTRIES)
      .filter((entry): entry is [string, number] => Number.isInteger(entry[1]));
    if (counts.length > 0) report.counts = Object.fromEntries(counts);
  }
  const providers = validEntries(providerReportSchema, value['providers']);
  if (providers) report.providers = providers;
  const sponsorWallets = validEntries(sponsorWalletReportSchema, value['sponsorWallets']);
  if (sponsorWallets) report.sponsorWallets = sponsorWallets;
  const failedRequests = validEntries(failedRequestReportSchema, value['failedRequests'], MAX_REPORTED_FAILED_REQUESTS);
  if (failedRequests) report.failedRequests = failedRequests;
  const gasPrices = validEntries(gasPriceReportSchema, value['gasPrices']);
  if (gasPrices) report.gasPrices = gasPrices;
  const apiCalls = validEntries(apiCallReportSchema, value['apiCalls']);
  if (apiCalls) report.apiCalls = apiCalls;
  const sponsorFulfilments = validEntries(sponsorFulfilmentReportSchema, value['sponsorFulfilments']);
  if (sponsorFulfilments) report.sponsorFulfilments = sponsorFulfilments;
  const apiDeferrals = validEntries(apiDeferralReportSchema, value['apiDeferrals']);
  if (apiDeferrals) report.apiDeferrals = apiDeferrals;
  if (isRecord(value['latencySeconds'])) {
    const latencies: NonNullable<CycleReport['latencySeconds']> = {};
    for (const stage of LATENCY_STAGES) {
      const valid = validEntries(latencySecondsSchema, value['latencySeconds'][stage], MAX_REPORTED_LATENCIES);
      if (valid) latencies[stage] = valid;
    }
    if (Object.keys(latencies).length > 0) report.latencySeconds = latencies;
  }
  return report;
}

/**
 * What an engine process reads from the environment on any pod: where its config is, whom it runs for, and which
 * workload's secrets it holds.
 */
export type EngineEnvironment = { configPath?: string; oracleNode?: string; secretScope?: Workload };

/** What a coordinator pod needs to run shards as Jobs, share the response cache and report its cycle. */
export type CoordinatorEnvironment = {
  namespace: string;
  cacheConfigMap: string;
  cycleConfigMap: string;
  workerTemplate: WorkerTemplate;
  jobName?: string;
  /** Where callers reach the gateways (an http(s) URL), for the heartbeat. */
  gatewayUrl?: string;
  /** The pod's IP, where the window's workers reach the coordinator. */
  podIp?: string;
};

const name = z.string().min(1).max(253);
const coordinatorEnvironmentSchema = z.object({
  [ENV.namespace]: name,
  [ENV.cacheConfigMap]: name,
  [ENV.cycleConfigMap]: name,
  [ENV.workerTemplate]: z.string().min(2),
  [ENV.jobName]: z.string().max(253).optional(),
  [ENV.gatewayUrl]: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
    .max(2048)
    .optional(),
  [ENV.podIp]: z.union([z.ipv4(), z.ipv6()]).optional(),
});

function explain(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');
}

type Env = Record<string, string | undefined>;
const present = (env: Env, key: string) => (env[key] ? env[key] : undefined);

export function readEngineEnvironment(env: Env): EngineEnvironment {
  const configPath = present(env, ENV.configPath);
  const oracleNode = present(env, ENV.oracleNode);
  const scope = present(env, ENV.secretScope);
  // Anything but a workload's name is no scope: the engine then wants every key, and says which is missing.
  const secretScope = WORKLOADS.find((workload) => workload === scope);
  return {
    ...(configPath ? { configPath } : {}),
    ...(oracleNode ? { oracleNode } : {}),
    ...(secretScope ? { secretScope } : {}),
  };
}

/**
 * The coordinator's pod environment, or undefined outside a coordinator pod (no worker template: a local run).
 * Throws with the variable and the rule when the operator's variables are present but wrong.
 */
export function readCoordinatorEnvironment(env: Env): CoordinatorEnvironment | undefined {
  if (!present(env, ENV.workerTemplate)) return undefined;
  // An empty optional variable is an absent one.
  const parsed = coordinatorEnvironmentSchema.safeParse({
    ...env,
    [ENV.gatewayUrl]: present(env, ENV.gatewayUrl),
    [ENV.podIp]: present(env, ENV.podIp),
  });
  if (!parsed.success) throw new Error(`invalid coordinator pod environment: ${explain(parsed.error)}`);
  const template = parseWorkerTemplate(parsed.data[ENV.workerTemplate]);
  if ('error' in template)
    throw new Error(`invalid coordinator pod environment: ${ENV.workerTemplate}${template.error}`);
  const jobName = parsed.data[ENV.jobName];
  const gatewayUrl = parsed.data[ENV.gatewayUrl];
  const podIp = parsed.data[ENV.podIp];
  return {
    namespace: parsed.data[ENV.namespace],
    cacheConfigMap: parsed.data[ENV.cacheConfigMap],
    cycleConfigMap: parsed.data[ENV.cycleConfigMap],
    workerTemplate: template.template,
    ...(jobName ? { jobName } : {}),
    ...(gatewayUrl ? { gatewayUrl } : {}),
    ...(podIp ? { podIp } : {}),
  };
}

/** Whether a Job has finished and how, from its conditions (the Job controller's, including the early ones). */
export function jobFinished(job: V1Job): 'Succeeded' | 'Failed' | undefined {
  for (const condition of job.status?.conditions ?? []) {
    if (condition.status !== 'True') continue;
    if (condition.type === 'Complete' || condition.type === 'SuccessCriteriaMet') return 'Succeeded';
    if (condition.type === 'Failed' || condition.type === 'FailureTarget') return 'Failed';
  }
  return undefined;
}
