// The coordinator <-> worker contract, in one place: the shard a coordinator hands to a worker (one sponsor
// wallet on one chain), what the worker gives back, and the worker Job that carries it on Kubernetes (the
// operator's template, completed by the coordinator per chain and cycle, with the shards in a ConfigMap it owns).
// Both sides read the other's JSON as untrusted input: it is parsed here with zod, never cast.
import { createHash } from 'node:crypto';
import type { V1ConfigMap, V1Job, V1OwnerReference, V1PodTemplateSpec } from '@kubernetes/client-node';
import { z } from 'zod';
import { API_OUTCOMES } from './request-log.js';

export const SHARD_FORMAT = 'oracle-node/shard@1';

/** A shard's lists are bounded by the chain's maxConcurrency in practice; this bound only stops a runaway input. */
const MAX_SHARD_ENTRIES = 10_000;
const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/);
const bytes32 = z.string().regex(/^0x[0-9a-fA-F]{64}$/);
const hexData = z.string().regex(/^0x[0-9a-fA-F]*$/);
const decimal = z.string().regex(/^[0-9]{1,78}$/);
const chainId = z.string().min(1).max(78);
const blockNumber = z.int().nonnegative();
const text = z.string().max(10_000);

const logPosition = { blockNumber, logIndex: z.int().nonnegative(), transactionHash: bytes32 };

/** A request that survived discovery (the engine's DiscoveredApiCall), as the coordinator hands it over. */
const shardApiCallSchema = z.object({
  ...logPosition,
  type: z.enum(['full', 'template']),
  id: bytes32,
  nodeAddress: address,
  requesterRequestCount: decimal,
  chainId,
  requester: address,
  endpointId: bytes32,
  templateId: bytes32.nullable(),
  sponsor: address,
  sponsorWallet: address,
  fulfillAddress: address,
  fulfillFunctionId: z.string().regex(/^0x[0-9a-fA-F]{8}$/),
  /** Node-ABI encoded parameters of the request itself. */
  encodedParameters: hexData,
  /** Decoded parameters: template parameters overridden by the request's own. */
  parameters: z.record(z.string(), z.unknown()),
  template: z.object({ nodeAddress: address, endpointId: bytes32, encodedParameters: hexData }).optional(),
  oisTitle: z.string().max(1000),
  endpointName: z.string().max(1000),
  cacheResponses: z.boolean(),
  /** Set when the request cannot be served (the worker fails it on chain without calling the API). */
  errorMessage: text.optional(),
});

const shardWithdrawalSchema = z.object({
  ...logPosition,
  id: bytes32,
  nodeAddress: address,
  sponsor: address,
  sponsorWallet: address,
});

const gasLimit = { gasLimit: decimal.optional() };
/** The chain's gas price in one cycle (the engine's GasTargetJson): wei as decimal strings. */
const shardGasTargetSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal(0), gasPrice: decimal, ...gasLimit }),
  z.object({ type: z.literal(2), maxFeePerGas: decimal, maxPriorityFeePerGas: decimal, ...gasLimit }),
]);

const shardInputSchema = z.object({
  format: z.literal(SHARD_FORMAT),
  chainId,
  sponsor: address,
  sponsorWallet: address,
  /** Provider names of the chain, most preferred first (healthy in discovery). */
  providers: z.array(z.string().min(1).max(253)).max(100),
  /** The lowest head among the healthy providers: every provider the shard may use knows this block. */
  currentBlock: blockNumber,
  /** The chain's gas price in this cycle, read once by the coordinator for all shards; absent: the shard reads it. */
  gasTarget: shardGasTargetSchema.optional(),
  apiCalls: z.array(shardApiCallSchema).max(MAX_SHARD_ENTRIES),
  withdrawals: z.array(shardWithdrawalSchema).max(MAX_SHARD_ENTRIES),
  /**
   * Nonces of this wallet's transactions that the coordinator's window sent and still awaits (not stuck): when they
   * are all that is pending, the shard sends at the next nonce instead of waiting (src/chain/pending.ts).
   */
  inFlightNonces: z.array(z.int().nonnegative()).max(MAX_SHARD_ENTRIES).optional(),
  /** W3C traceparent of each request's trace, by request id (only when the coordinator traces). */
  traceparents: z.record(bytes32, z.string().max(55)).optional(),
});

export type ShardInput = z.infer<typeof shardInputSchema>;
export type ShardApiCall = ShardInput['apiCalls'][number];

const shardOutcomeSchema = z.object({
  id: bytes32,
  kind: z.enum(['api', 'withdrawal']),
  outcome: z.enum(['fulfilled', 'failed', 'withdrawn', 'skipped', 'error']),
  txHash: bytes32.optional(),
  nonce: z.int().nonnegative().optional(),
  provider: z.string().max(253).optional(),
  reason: text.optional(),
  /**
   * The transaction replaces a stuck one at the same nonce (src/chain/pending.ts), sent for the same request in an
   * earlier cycle: counted as `replaced`, not as a second fulfilment.
   */
  replacement: z.literal(true).optional(),
  /** The request's API call: its status class (never the answer) and how long it took. */
  api: z.object({ outcome: z.enum(API_OUTCOMES), durationMs: z.int().nonnegative() }).optional(),
});

const count = z.int().nonnegative();
const shardOutputSchema = z.object({
  chainId,
  sponsorWallet: address,
  outcomes: z.array(shardOutcomeSchema).max(2 * MAX_SHARD_ENTRIES),
  apiCalls: count,
  cacheHits: count,
  rpcCalls: count,
  /** Milliseconds spent calling APIs, planning (static calls, estimates) and sending. */
  timings: z.object({ apiMs: count, planMs: count, sendMs: count }),
  /** The gas price (legacy) or max fee per gas (EIP-1559) the transactions were priced at (wei, decimal). */
  gasPriceWei: decimal.optional(),
  /** Gas price strategies that failed (each also logged at WARN), in the order they were tried. */
  gasPriceStrategyFailures: z
    .array(z.object({ strategy: z.string().max(100), reason: text }))
    .max(100)
    .optional(),
});

export type ShardOutcome = z.infer<typeof shardOutcomeSchema>;
export type ShardOutput = z.infer<typeof shardOutputSchema>;

function explain(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
    .join('; ');
}

/** A shard from its JSON text (a file, stdin or the worker Job's ConfigMap), or why it is not one. */
export function parseShardInput(json: string): { shard: ShardInput } | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return { error: 'not JSON' };
  }
  const format = (value as { format?: unknown } | null)?.format;
  if (format !== SHARD_FORMAT) return { error: `unknown shard format ${String(format)}` };
  const parsed = shardInputSchema.safeParse(value);
  return parsed.success ? { shard: parsed.data } : { error: explain(parsed.error) };
}

/**
 * The worker's output from its log: it prints its ShardOutput as the last JSON line of stdout (logs go to stderr
 * but may be interleaved). Undefined when no line is a well-formed output.
 */
export function parseShardOutput(log: string | undefined): ShardOutput | undefined {
  if (!log) return undefined;
  const lines = log.trim().split('\n').reverse();
  for (const line of lines) {
    if (!line.startsWith('{')) continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      continue; // not the output line
    }
    const parsed = shardOutputSchema.safeParse(value);
    if (parsed.success) return parsed.data;
  }
  return undefined;
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

/** The worker template of the coordinator's environment (JSON), or why it is not one (to follow the variable's name). */
export function parseWorkerTemplate(json: string): { template: WorkerTemplate } | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return { error: ' is not JSON' };
  }
  const parsed = workerTemplateSchema.safeParse(value);
  // The pod template is checked where the coordinator relies on it (a container); the rest is the API server's.
  return parsed.success ? { template: parsed.data as WorkerTemplate } : { error: `.${explain(parsed.error)}` };
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
  options: { name: string; shardCount: number; concurrency: number; chainId: string },
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

/** The worker Job's input: one key per shard, owned by the Job so it goes with it. */
export function buildShardInputConfigMap(job: V1Job, shards: ShardInput[]): V1ConfigMap {
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
