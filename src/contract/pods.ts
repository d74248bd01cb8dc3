// The contract between the operator and the pods it creates, in one place: what the operator puts into a pod
// (environment variables, mounted paths, labels, the worker Job template) and what the pods give back (the cycle
// report). The operator's builders write it and the engine's Kubernetes adapters read it; neither imports the
// other. Everything a pod reads from its environment is parsed here, never cast.
import { createHash } from 'node:crypto';
import type { V1Job, V1OwnerReference, V1PodTemplateSpec } from '@kubernetes/client-node';
import { z } from 'zod';

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
  /** Coordinator only: the name of its own Job (from the Job controller's label), named in the cycle report. */
  jobName: 'JOB_NAME',
} as const;

/** Labels on everything the operator manages (and on worker Jobs, which the coordinator creates). */
export const LABELS = {
  managedBy: 'app.kubernetes.io/managed-by',
  name: 'oracle-node.io/name',
  stage: 'oracle-node.io/stage',
  component: 'app.kubernetes.io/component',
  partOf: 'app.kubernetes.io/part-of',
  instance: 'app.kubernetes.io/instance',
  cycle: 'oracle-node.io/cycle',
} as const;

/** Set by the Job controller on a Job's pods. */
export const JOB_NAME_LABEL = 'batch.kubernetes.io/job-name';
/** Set by the Job controller on each pod of an Indexed Job. */
export const COMPLETION_INDEX_ANNOTATION = 'batch.kubernetes.io/job-completion-index';
export const CHAIN_ID_ANNOTATION = 'oracle-node.io/chain-id';

export const CONFIG_DIR = '/etc/oracle-node';
export const CONFIG_FILE = `${CONFIG_DIR}/config.json`;
/** Not under the config mount: volumes cannot nest inside a ConfigMap volume. */
export const SHARD_DIR = '/var/run/oracle-node/shards';
export const SHARD_VOLUME = 'shards';
export const WORKER_CONTAINER = 'worker';
/** The key of shard `index` in a worker Job's input ConfigMap (and its file name under SHARD_DIR). */
export const shardKey = (index: number | string) => `shard-${index}.json`;

/** The worker Job template: computed by the operator, completed by the coordinator once per chain and cycle. */
export type WorkerTemplate = {
  namePrefix: string;
  labels: Record<string, string>;
  ownerReferences: V1OwnerReference[];
  activeDeadlineSeconds: number;
  ttlSecondsAfterFinished: number;
  /** The pod template; buildWorkerJob adds the shard-input volume and the Job-specific labels. */
  template: V1PodTemplateSpec;
};

const labelMap = z.record(z.string(), z.string());
const workerTemplateSchema = z.object({
  namePrefix: z.string().min(1).max(63),
  labels: labelMap,
  ownerReferences: z.array(
    z.looseObject({ apiVersion: z.string(), kind: z.string(), name: z.string(), uid: z.string() }),
  ),
  activeDeadlineSeconds: z.number().int().positive(),
  ttlSecondsAfterFinished: z.number().int().nonnegative(),
  template: z.looseObject({
    metadata: z.looseObject({ labels: labelMap.optional() }).optional(),
    spec: z.looseObject({ containers: z.array(z.looseObject({ name: z.string() })).min(1) }),
  }),
});

const MAX_NAME = 63;

/** A Job name within the 63-character label limit, unique per cycle and chain. */
export function workerJobName(prefix: string, cycleId: string): string {
  const suffix = `-${cycleId}`;
  const room = MAX_NAME - suffix.length;
  const digest = createHash('sha256').update(JSON.stringify(prefix)).digest('hex').slice(0, 8);
  const base = prefix.length <= room ? prefix : `${prefix.slice(0, room - 9)}-${digest}`;
  return `${base}${suffix}`.replace(/-+$/, '');
}

/**
 * The Indexed Job for one batch of shards, from the operator's template. It is created suspended: its input
 * ConfigMap is owned by the Job (so it is garbage-collected with it) and can only be created once the Job's uid
 * exists; then the Job is released.
 */
export function buildWorkerJob(
  template: WorkerTemplate,
  options: { name: string; shardCount: number; concurrency: number; chainId: string },
): V1Job {
  const completions = Math.max(1, options.shardCount);
  const parallelism = Math.max(1, Math.min(Math.floor(options.concurrency), completions));
  const labels = { ...template.labels, [LABELS.cycle]: options.name };
  const podTemplate = structuredClone(template.template);
  podTemplate.metadata = {
    ...podTemplate.metadata,
    labels: { ...podTemplate.metadata?.labels, [LABELS.cycle]: options.name },
  };
  const spec = podTemplate.spec!;
  spec.volumes = [...(spec.volumes ?? []), { name: SHARD_VOLUME, configMap: { name: options.name } }];
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: options.name,
      labels,
      annotations: { [CHAIN_ID_ANNOTATION]: options.chainId },
      ownerReferences: template.ownerReferences,
    },
    spec: {
      suspend: true,
      completionMode: 'Indexed',
      completions,
      parallelism,
      // One shard failing (e.g. its API is down) must not stop the others: failures are counted per index.
      backoffLimitPerIndex: 0,
      maxFailedIndexes: completions,
      activeDeadlineSeconds: template.activeDeadlineSeconds,
      ttlSecondsAfterFinished: template.ttlSecondsAfterFinished,
      template: podTemplate,
    },
  };
}

/** The cycle report: written by the coordinator into `<name>-cycle` (key cycle.json), read by the operator. */
export const CYCLE_REPORT_KEY = 'cycle.json';

const MAX_REPORT_ENTRIES = 1000;
const providerReportSchema = z.object({
  chainId: z.string().max(78),
  provider: z.string().max(253),
  ok: z.boolean(),
  currentBlock: z.number().int().nonnegative().optional(),
});
const sponsorWalletReportSchema = z.object({
  chainId: z.string().max(78),
  sponsorWallet: z.string().regex(/^0x[0-9a-fA-F]{40}$/),
  balanceWei: z.string().regex(/^[0-9]{1,78}$/),
});
const cycleOutcomeSchema = z.enum(['Completed', 'PartiallyFailed']);

export type ProviderReport = z.infer<typeof providerReportSchema>;
export type SponsorWalletReport = z.infer<typeof sponsorWalletReportSchema>;
export type CycleReport = {
  job?: string;
  outcome?: z.infer<typeof cycleOutcomeSchema>;
  /** Counts of the cycle as flat integers (requests seen, fulfilled, failed, ...). */
  counts?: Record<string, number>;
  providers?: ProviderReport[];
  sponsorWallets?: SponsorWalletReport[];
};

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The well-formed entries of a reported list (at most MAX_REPORT_ENTRIES), or undefined when none is. */
function validEntries<T>(schema: z.ZodType<T>, value: unknown): T[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const valid = value.slice(0, MAX_REPORT_ENTRIES).flatMap((entry) => {
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
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (!isRecord(value)) return undefined;
  const report: CycleReport = {};
  if (typeof value['job'] === 'string' && value['job'].length <= 253) report.job = value['job'];
  const outcome = cycleOutcomeSchema.safeParse(value['outcome']);
  if (outcome.success) report.outcome = outcome.data;
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
  return report;
}

/** What an engine process reads from the environment on any pod: where its config is and whom it runs for. */
export type EngineEnvironment = { configPath?: string; oracleNode?: string };

/** What a coordinator pod needs to run shards as Jobs, share the response cache and report its cycle. */
export type CoordinatorEnvironment = {
  namespace: string;
  cacheConfigMap: string;
  cycleConfigMap: string;
  workerTemplate: WorkerTemplate;
  jobName?: string;
};

/** What a worker pod needs to share the response cache. */
export type WorkerEnvironment = { namespace: string; cacheConfigMap: string };

const name = z.string().min(1).max(253);
const workerEnvironmentSchema = z.object({ [ENV.namespace]: name, [ENV.cacheConfigMap]: name });
const coordinatorEnvironmentSchema = workerEnvironmentSchema.extend({
  [ENV.cycleConfigMap]: name,
  [ENV.workerTemplate]: z.string().min(2),
  [ENV.jobName]: z.string().max(253).optional(),
});

function explain(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');
}

type Env = Record<string, string | undefined>;
const present = (env: Env, key: string) => (env[key] ? env[key] : undefined);

export function readEngineEnvironment(env: Env): EngineEnvironment {
  const configPath = present(env, ENV.configPath);
  const oracleNode = present(env, ENV.oracleNode);
  return { ...(configPath ? { configPath } : {}), ...(oracleNode ? { oracleNode } : {}) };
}

/**
 * The coordinator's pod environment, or undefined outside a coordinator pod (no worker template: a local run).
 * Throws with the variable and the rule when the operator's variables are present but wrong.
 */
export function readCoordinatorEnvironment(env: Env): CoordinatorEnvironment | undefined {
  if (!present(env, ENV.workerTemplate)) return undefined;
  const parsed = coordinatorEnvironmentSchema.safeParse(env);
  if (!parsed.success) throw new Error(`invalid coordinator pod environment: ${explain(parsed.error)}`);
  let rawTemplate: unknown;
  try {
    rawTemplate = JSON.parse(parsed.data[ENV.workerTemplate]);
  } catch {
    throw new Error(`invalid coordinator pod environment: ${ENV.workerTemplate} is not JSON`);
  }
  const template = workerTemplateSchema.safeParse(rawTemplate);
  if (!template.success)
    throw new Error(`invalid coordinator pod environment: ${ENV.workerTemplate}.${explain(template.error)}`);
  const jobName = parsed.data[ENV.jobName];
  return {
    namespace: parsed.data[ENV.namespace],
    cacheConfigMap: parsed.data[ENV.cacheConfigMap],
    cycleConfigMap: parsed.data[ENV.cycleConfigMap],
    workerTemplate: template.data as WorkerTemplate,
    ...(jobName ? { jobName } : {}),
  };
}

/** The worker's pod environment, or undefined outside a pod the operator made (no cache ConfigMap). */
export function readWorkerEnvironment(env: Env): WorkerEnvironment | undefined {
  if (!present(env, ENV.cacheConfigMap)) return undefined;
  const parsed = workerEnvironmentSchema.safeParse(env);
  if (!parsed.success) throw new Error(`invalid worker pod environment: ${explain(parsed.error)}`);
  return { namespace: parsed.data[ENV.namespace], cacheConfigMap: parsed.data[ENV.cacheConfigMap] };
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
