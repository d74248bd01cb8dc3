// The coordinator <-> worker contract, in one place: the API calls a coordinator hands to a worker (those of one
// sponsor wallet on one chain in one cycle, that the response cache could not answer), the results the worker gives
// back, and the worker Job that carries them on Kubernetes (the operator's template, completed by the coordinator per
// chain and cycle, with the shards in a ConfigMap it owns). The worker needs neither the node key nor a provider: it
// only calls APIs; the coordinator signs and sends. Both sides read the other's JSON as untrusted input: it is parsed
// here with zod, never cast, and a worker's output is bounded and only ever answers the ids it was given.
import { createHash } from 'node:crypto';
import type { V1ConfigMap, V1Job, V1OwnerReference, V1PodTemplateSpec } from '@kubernetes/client-node';
import { z } from 'zod';
import { parseJsonText } from '../common/json.js';
import { API_OUTCOMES } from './request-log.js';

export const SHARD_FORMAT = 'oracle-node/shard@2';

/** A shard's lists are bounded by the chain's maxConcurrency in practice; this bound only stops a runaway input. */
const MAX_SHARD_ENTRIES = 10_000;
/** An API result's encoded value: far more than a fulfilment's gas allows, so only a runaway answer is refused. */
export const MAX_ENCODED_VALUE_BYTES = 64 * 1024;
/**
 * The worker's output is read from the end of its pod log, at most this much: MAX_SHARD_ENTRIES results near the
 * bound would not fit, but a chain's maxConcurrency keeps a shard far below it.
 */
export const MAX_SHARD_OUTPUT_BYTES = 8 * 1024 * 1024;
/** A worker's input comes from a ConfigMap (at most 1 MiB in all) or a file: more is not a shard. */
export const MAX_SHARD_INPUT_BYTES = 8 * 1024 * 1024;
const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/);
const bytes32 = z.string().regex(/^0x[0-9a-fA-F]{64}$/);
const chainId = z.string().min(1).max(78);
const text = z.string().max(10_000);
const count = z.int().nonnegative();

/** What one API call needs of a request: its endpoint, its parameters, the public metadata the OIS may read. */
const shardApiRequestSchema = z.object({
  id: bytes32,
  endpointId: bytes32,
  oisTitle: z.string().max(1000),
  endpointName: z.string().max(1000),
  /** Decoded parameters: template parameters overridden by the request's own. */
  parameters: z.record(z.string(), z.unknown()),
  requester: address,
  sponsor: address,
  sponsorWallet: address,
});

const shardInputSchema = z.object({
  format: z.literal(SHARD_FORMAT),
  chainId,
  requests: z.array(shardApiRequestSchema).max(MAX_SHARD_ENTRIES),
  /** W3C traceparent of each request's trace, by request id (only when the coordinator traces). */
  traceparents: z.record(bytes32, z.string().max(55)).optional(),
});

export type ApiShardInput = z.infer<typeof shardInputSchema>;
export type ApiShardRequest = ApiShardInput['requests'][number];

/** One request's API result: the encoded value (unsigned: the coordinator signs), or the engine's error message. */
const shardApiResultSchema = z.object({
  id: bytes32,
  result: z.discriminatedUnion('success', [
    z.object({
      success: z.literal(true),
      encodedValue: z
        .string()
        .max(2 + 2 * MAX_ENCODED_VALUE_BYTES)
        .regex(/^0x([0-9a-fA-F]{2})*$/),
    }),
    z.object({
      success: z.literal(false),
      errorMessage: text,
      /** The wait the API named with a 429 or 503 (ms, capped at the 10 min of src/ois/budget.ts's pauses). */
      retryAfterMs: z.number().int().nonnegative().max(600_000).optional(),
    }),
  ]),
  /** The call's status class (never the answer) and how long it took. */
  api: z.object({ outcome: z.enum(API_OUTCOMES), durationMs: count }),
});

const shardOutputSchema = z.object({
  format: z.literal(SHARD_FORMAT),
  results: z.array(shardApiResultSchema).max(MAX_SHARD_ENTRIES),
  /** Milliseconds from the first API call to the last answer. */
  apiMs: count,
});

export type ApiShardResult = z.infer<typeof shardApiResultSchema>;
export type ApiShardOutput = z.infer<typeof shardOutputSchema>;

function explain(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
    .join('; ');
}

/**
 * Untrusted JSON text read against its schema, the one way every body of this contract is read: at most `maxLength`
 * characters, parsed without throwing, then zod. `check` looks at the parsed value before the schema does (a
 * format tag). The value, or why not (`reason` tells a caller that words its own errors which step refused).
 */
function parseBounded<T>(
  json: string,
  schema: z.ZodType<T>,
  options: { maxLength?: number; check?: (value: unknown) => string | undefined } = {},
): { value: T } | { error: string; reason: 'size' | 'json' | 'check' | 'schema' } {
  if (options.maxLength !== undefined && json.length > options.maxLength)
    return { error: `over ${options.maxLength} bytes`, reason: 'size' };
  const value = parseJsonText(json);
  if (value === undefined) return { error: 'not JSON', reason: 'json' };
  const refused = options.check?.(value);
  if (refused !== undefined) return { error: refused, reason: 'check' };
  const parsed = schema.safeParse(value);
  return parsed.success ? { value: parsed.data } : { error: explain(parsed.error), reason: 'schema' };
}

/** A shard from its JSON text (a file, stdin or the worker Job's ConfigMap), or why it is not one. */
export function parseShardInput(json: string): { shard: ApiShardInput } | { error: string } {
  const read = parseBounded(json, shardInputSchema, {
    maxLength: MAX_SHARD_INPUT_BYTES,
    check: (value) => {
      const format = (value as { format?: unknown } | null)?.format;
      return format === SHARD_FORMAT ? undefined : `unknown shard format ${String(format)}`;
    },
  });
  return 'value' in read ? { shard: read.value } : { error: read.error };
}

/**
 * The worker's output from its log: it prints its ApiShardOutput as the last JSON line of stdout (logs go to stderr
 * but may be interleaved). Undefined when no line is a well-formed output, or the log is over the bound.
 */
export function parseShardOutput(log: string | undefined): ApiShardOutput | undefined {
  if (!log || log.length > MAX_SHARD_OUTPUT_BYTES) return undefined;
  const lines = log.trim().split('\n').reverse();
  for (const line of lines) {
    if (!line.startsWith('{')) continue;
    const read = parseBounded(line, shardOutputSchema); // the log as a whole is bounded above
    if ('value' in read) return read.value;
  }
  return undefined;
}

/**
 * The results a coordinator takes from a worker's output: only those of the requests it gave that worker, the first
 * one of each. Whatever else the output holds is ignored: a worker can answer its own requests, nothing more.
 */
export function resultsFor(input: ApiShardInput, output: ApiShardOutput): Map<string, ApiShardResult> {
  const asked = new Set(input.requests.map((request) => request.id.toLowerCase()));
  const results = new Map<string, ApiShardResult>();
  for (const result of output.results) {
    const id = result.id.toLowerCase();
    if (asked.has(id) && !results.has(id)) results.set(id, result);
  }
  return results;
}

/** The label every worker Job and its pods carry: the Job's own name (the admission policy checks it). */
export const CYCLE_LABEL = 'oracle-node.io/cycle';
/** Set by the Job controller on each pod of an Indexed Job. */
export const COMPLETION_INDEX_ANNOTATION = 'batch.kubernetes.io/job-completion-index';
export const CHAIN_ID_ANNOTATION = 'oracle-node.io/chain-id';
/** Not under the config mount: volumes cannot nest inside a ConfigMap volume. */
export const SHARD_DIR = '/var/run/oracle-node/shards';
export const SHARD_VOLUME = 'shards';
export const WORKER_CONTAINER = 'worker';
/** A worker's share of an API's budget in its template's arguments (repeatable), kept by a window's Job. */
export const API_RATE_LIMIT_FLAG = '--api-rate-limit';
/**
 * Worker env of a per-poll worker Job (`worker --shard`): when the Job's activeDeadlineSeconds runs out, as epoch
 * milliseconds on the coordinator's clock (read when the Job is made, so no later than the Job controller's count).
 * A call over its API's budget waits for its turn no later than this allows (src/node/budget-wait.ts).
 */
export const WORKER_DEADLINE_AT_ENV = 'ORACLE_NODE_WORKER_DEADLINE_AT';
/** The key of shard `index` in a worker Job's input ConfigMap (and its file name under SHARD_DIR). */
export const shardKey = (index: number | string) => `shard-${index}.json`;

/** The worker Job template: computed by the operator, completed by the coordinator once per chain and cycle. */
export type WorkerTemplate = {
  namePrefix: string;
  labels: Record<string, string>;
  /** Annotations of every Job made from it: a policy scanner's skips (operator/builders/scanner-skips.ts). */
  annotations?: Record<string, string>;
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
  annotations: labelMap.optional(),
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

/** The worker template of the coordinator's environment (JSON), or why it is not one (to follow the variable's name). */
export function parseWorkerTemplate(json: string): { template: WorkerTemplate } | { error: string } {
  // The pod template is checked where the coordinator relies on it (a container); the rest is the API server's.
  const read = parseBounded(json, workerTemplateSchema);
  if ('value' in read) return { template: read.value as WorkerTemplate };
  return { error: read.reason === 'json' ? ' is not JSON' : `.${read.error}` };
}

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
  options: {
    name: string;
    shardCount: number;
    concurrency: number;
    chainId: string;
    /** Epoch ms at which the Job's deadline runs out, for the workers (WORKER_DEADLINE_AT_ENV). */
    deadlineAtEpochMs?: number;
  },
): V1Job {
  const completions = Math.max(1, options.shardCount);
  const parallelism = Math.max(1, Math.min(Math.floor(options.concurrency), completions));
  const labels = { ...template.labels, [CYCLE_LABEL]: options.name };
  const podTemplate = structuredClone(template.template);
  podTemplate.metadata = {
    ...podTemplate.metadata,
    labels: { ...podTemplate.metadata?.labels, [CYCLE_LABEL]: options.name },
  };
  const spec = podTemplate.spec!;
  spec.volumes = [...(spec.volumes ?? []), { name: SHARD_VOLUME, configMap: { name: options.name } }];
  const deadlineAt = options.deadlineAtEpochMs;
  if (deadlineAt !== undefined)
    spec.containers = spec.containers.map((container) =>
      container.name === WORKER_CONTAINER
        ? {
            ...container,
            env: [
              ...(container.env ?? []).filter((env) => env.name !== WORKER_DEADLINE_AT_ENV),
              { name: WORKER_DEADLINE_AT_ENV, value: String(Math.floor(deadlineAt)) },
            ],
          }
        : container,
    );
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: options.name,
      labels,
      annotations: { ...template.annotations, [CHAIN_ID_ANNOTATION]: options.chainId },
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

/**
 * What one worker Job's input ConfigMap carries at most (keys and values, UTF-8): the API server refuses an object
 * over 1 MiB (1,048,576 bytes, etcd's request limit), and the rest of the margin is the object's metadata.
 */
export const MAX_WORKER_INPUT_BYTES = 900 * 1024;

/**
 * A shard whose input passes `budget` as its requests in order, in pieces that each fit (a request too large alone is
 * a piece of its own, which no Job carries); a shard that fits is its only piece. A piece is a shard of its own for
 * the worker: its results are those of its requests.
 */
export function splitShardInput(shard: ApiShardInput, budget = MAX_WORKER_INPUT_BYTES): ApiShardInput[] {
  const pieceOf = (requests: ApiShardRequest[]): ApiShardInput => {
    const { traceparents, ...rest } = shard;
    if (!traceparents) return { ...rest, requests };
    const kept = requests.flatMap((r) => (traceparents[r.id] ? [[r.id, traceparents[r.id]!] as const] : []));
    return { ...rest, requests, traceparents: Object.fromEntries(kept) };
  };
  if (Buffer.byteLength(JSON.stringify(shard)) <= budget) return [shard];
  const base = Buffer.byteLength(JSON.stringify(pieceOf([])));
  // A request's share of its piece: its JSON, a comma, and its traceparent entry (id, value, quotes, colon, comma).
  const share = (request: ApiShardRequest) =>
    Buffer.byteLength(JSON.stringify(request)) + 1 + (shard.traceparents?.[request.id] ? 128 : 0);
  const pieces: ApiShardRequest[][] = [];
  let piece: ApiShardRequest[] = [];
  let used = base;
  for (const request of shard.requests) {
    const bytes = share(request);
    if (piece.length > 0 && used + bytes > budget) {
      pieces.push(piece);
      piece = [];
      used = base;
    }
    piece.push(request);
    used += bytes;
  }
  if (piece.length > 0) pieces.push(piece);
  return pieces.map(pieceOf);
}

/**
 * Shards' inputs (their JSON texts, by index) packed in order into batches that each fit one worker Job's input
 * ConfigMap, and the shards that alone do not fit (they fail alone: no Job could carry them).
 */
export function packShardInputs(
  texts: readonly string[],
  budget = MAX_WORKER_INPUT_BYTES,
): { batches: number[][]; oversized: { index: number; bytes: number }[] } {
  const batches: number[][] = [];
  const oversized: { index: number; bytes: number }[] = [];
  let batch: number[] = [];
  let used = 0;
  texts.forEach((text, index) => {
    // Keyed by its index in the batch: the key is at most as long as this one.
    const bytes = Buffer.byteLength(shardKey(index)) + Buffer.byteLength(text);
    if (bytes > budget) {
      oversized.push({ index, bytes });
      return;
    }
    if (used + bytes > budget) {
      batches.push(batch);
      batch = [];
      used = 0;
    }
    batch.push(index);
    used += bytes;
  });
  if (batch.length > 0) batches.push(batch);
  return { batches, oversized };
}

/** The worker Job's input: one key per shard, owned by the Job so it goes with it. */
export function buildShardInputConfigMap(job: V1Job, shards: ApiShardInput[]): V1ConfigMap {
  const data: Record<string, string> = {};
  shards.forEach((shard, index) => {
    data[shardKey(index)] = JSON.stringify(shard);
  });
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: job.metadata!.name!,
      labels: job.metadata?.labels ?? {},
      ownerReferences: [
        { apiVersion: 'batch/v1', kind: 'Job', name: job.metadata!.name!, uid: job.metadata!.uid!, controller: true },
      ],
    },
    data,
  };
}

// The window's workers (docs/chain-cycle.md, "Worker pods that stay for the window"): one Job per coordinator window
// whose pods fetch shards from the coordinator over HTTP on the pod network and post their results back. The shards
// and results are the same as above; what follows is the wire between the two and the Job that carries the workers.

/** The coordinator's port for its window's workers (its pod IP only; the chart's NetworkPolicy opens it to them). */
export const WINDOW_WORKER_PORT = 8090;
/** Worker env: the coordinator's base URL (http://<pod IP>:<port>). */
export const WINDOW_COORDINATOR_URL_ENV = 'ORACLE_NODE_COORDINATOR_URL';
/** Worker env: the window's random credential, checked by the coordinator on every call (no Kubernetes token). */
export const WINDOW_CREDENTIAL_ENV = 'ORACLE_NODE_WORKER_CREDENTIAL';
export const WINDOW_PATHS = {
  /** GET: long-polls for a task; 200 {task, shard}, 204 none yet (ask again), 410 the window is over (exit). */
  next: '/v1/tasks/next',
  /** POST /v1/tasks/<task>/alive: the worker still works on it (204), or 404 (the task is no longer its). */
  alive: (task: string) => `/v1/tasks/${task}/alive`,
  /** POST /v1/tasks/<task>/result with the ApiShardOutput: 204 taken, 404 not a task given to this caller. */
  result: (task: string) => `/v1/tasks/${task}/result`,
} as const;
/** A task's id: 32 random hex digits, the capability to answer that task and no other. */
export const TASK_ID_PATTERN = /^[0-9a-f]{32}$/;

const windowTaskSchema = z.object({ task: z.string().regex(TASK_ID_PATTERN), shard: shardInputSchema });
export type WindowTask = z.infer<typeof windowTaskSchema>;

/** A task from the coordinator's answer (the worker's side), or why it is not one. */
export function parseWindowTask(json: string): { task: WindowTask } | { error: string } {
  const read = parseBounded(json, windowTaskSchema, { maxLength: MAX_SHARD_INPUT_BYTES });
  return 'value' in read ? { task: read.value } : { error: read.error };
}

/** A worker's posted output (the coordinator's side): the same schema and bound as one read from a pod's log. */
export function parseShardOutputBody(json: string): ApiShardOutput | undefined {
  const read = parseBounded(json, shardOutputSchema, { maxLength: MAX_SHARD_OUTPUT_BYTES });
  return 'value' in read ? read.value : undefined;
}

/**
 * The window's worker Job, from the operator's worker template: `parallelism` pods of `oracle-node worker
 * --coordinator`, each serving tasks until the coordinator says the window is over (exit 0: with no completions set,
 * the Job is complete once they all are). A pod that fails is replaced by the Job controller. The pods carry the
 * coordinator's URL and the window's credential in their environment, no shard volume, and the template's no-token
 * pod spec as it is.
 */
export function buildWindowWorkerJob(
  template: WorkerTemplate,
  options: {
    name: string;
    parallelism: number;
    activeDeadlineSeconds: number;
    coordinatorUrl: string;
    credential: string;
  },
): V1Job {
  const labels = { ...template.labels, [CYCLE_LABEL]: options.name };
  const podTemplate = structuredClone(template.template);
  podTemplate.metadata = {
    ...podTemplate.metadata,
    labels: { ...podTemplate.metadata?.labels, [CYCLE_LABEL]: options.name },
  };
  const spec = podTemplate.spec!;
  spec.containers = spec.containers.map((container) => {
    if (container.name !== WORKER_CONTAINER) return container;
    const args = container.args ?? [];
    // The template's `worker --shard <file> -c <config>`: the same worker, fed by the coordinator instead.
    const configAt = args.indexOf('-c');
    const config = configAt >= 0 && args[configAt + 1] ? ['-c', args[configAt + 1]!] : [];
    // The pod's share of the APIs' budgets goes with it.
    const budgets = args.flatMap((arg, i) =>
      arg === API_RATE_LIMIT_FLAG && args[i + 1] !== undefined ? [arg, args[i + 1]!] : [],
    );
    return {
      ...container,
      args: ['worker', '--coordinator', ...config, ...budgets],
      env: [
        ...(container.env ?? []).filter(
          (env) => env.name !== WINDOW_COORDINATOR_URL_ENV && env.name !== WINDOW_CREDENTIAL_ENV,
        ),
        { name: WINDOW_COORDINATOR_URL_ENV, value: options.coordinatorUrl },
        { name: WINDOW_CREDENTIAL_ENV, value: options.credential },
      ],
      volumeMounts: (container.volumeMounts ?? []).filter((mount) => mount.name !== SHARD_VOLUME),
    };
  });
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: options.name,
      labels,
      ...(template.annotations ? { annotations: template.annotations } : {}),
      ownerReferences: template.ownerReferences,
    },
    spec: {
      parallelism: Math.max(1, Math.floor(options.parallelism)),
      // A worker that crashes is replaced; its task goes back to the queue once (src/node/window-tasks.ts).
      backoffLimit: Math.max(6, 2 * Math.floor(options.parallelism)),
      activeDeadlineSeconds: Math.max(1, Math.floor(options.activeDeadlineSeconds)),
      ttlSecondsAfterFinished: template.ttlSecondsAfterFinished,
      template: podTemplate,
    },
  };
}
