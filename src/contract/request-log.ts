// The request log: what the node records about each request it saw, for `oracle-node request <requestId>`. The
// coordinator keeps it beside its cycle report (key `requests.json` of the `<name>-cycle` ConfigMap; locally a file
// in the cache directory), one entry per request, the most recently seen first, at most MAX_RECORDED_REQUESTS.
// Never an API's answer, URL or parameters: only the outcome's class and its duration. Read back as untrusted
// input (the coordinator's identity can write the ConfigMap), so only well-formed entries are kept.
import { z } from 'zod';
import { parseJsonText } from '../common/json.js';

export const REQUEST_LOG_KEY = 'requests.json';
/** 200 entries of at most ~0.8 KB: the ConfigMap stays far below its 1 MiB limit. */
export const MAX_RECORDED_REQUESTS = 200;
const MAX_REASON_LENGTH = 300;

/** Where a request stands after a cycle: a transaction outcome of its shard, or why no shard took it. */
export const REQUEST_STATES = [
  'fulfilled',
  'failed',
  'error',
  'skipped',
  /** Its API failed for now (429, 5xx, no answer) or was over this node's budget: retried later (docs/chain-cycle.md). */
  'deferred',
  'shardFailed',
  'waitingForConfirmations',
  'overChainLimit',
  'dropped',
] as const;
export type RequestState = (typeof REQUEST_STATES)[number];

/** The API call of a request: the HTTP status class, or what happened instead of an answer. */
export const API_OUTCOMES = ['2xx', '3xx', '4xx', '5xx', 'no response', 'failed', 'cached', 'not called'] as const;
export type ApiOutcome = (typeof API_OUTCOMES)[number];

/** Which side of a redundant deployment served a request (docs/chain-cycle.md, "Standby"). */
export const NODE_ROLES = ['primary', 'standby'] as const;
export type NodeRole = (typeof NODE_ROLES)[number];

const cycleSchema = z.object({
  /** The coordinator Job (in a pod) that saw it; absent locally. */
  job: z.string().max(253).optional(),
  time: z.iso.datetime({ offset: true }),
});

const requestRecordSchema = z.object({
  chainId: z.string().max(78),
  requestId: z.string().regex(/^0x[0-9a-f]{64}$/),
  state: z.enum(REQUEST_STATES),
  reason: z.string().max(MAX_REASON_LENGTH).optional(),
  firstSeen: cycleSchema,
  lastSeen: cycleSchema,
  /** How many cycles saw it. */
  cycles: z.number().int().positive(),
  /** The block of its Made*Request event and the confirmed head of the cycle that saw it last. */
  madeInBlock: z.number().int().nonnegative().optional(),
  headBlock: z.number().int().nonnegative().optional(),
  api: z.object({ outcome: z.enum(API_OUTCOMES), durationMs: z.number().int().nonnegative() }).optional(),
  /**
   * The fulfil or fail transaction sent for it: this cycle's, or the one an earlier cycle sent when this one sent
   * none (a request served and seen again later, e.g. skipped as no longer awaiting fulfilment, keeps what served it).
   */
  transaction: z
    .object({
      hash: z.string().regex(/^0x[0-9a-fA-F]{64}$/),
      nonce: z.number().int().nonnegative().optional(),
      provider: z.string().max(253).optional(),
      /** What it answered the request with; absent in entries of older engines (read from `state`). */
      kind: z.enum(['fulfil', 'fail']).optional(),
    })
    .optional(),
  /** The side whose transaction it is: 'standby' when the primary left it open past the standby delay. */
  servedBy: z.enum(NODE_ROLES).optional(),
});

export type RequestRecord = z.infer<typeof requestRecordSchema>;
/** What one cycle says about a request: a record without the history fields the merge keeps. */
export type CycleRequestRecord = Omit<RequestRecord, 'firstSeen' | 'cycles'>;

/** A reason shortened to what the record keeps. */
export function boundedReason(reason: string): string {
  return reason.length > MAX_REASON_LENGTH ? `${reason.slice(0, MAX_REASON_LENGTH - 3)}...` : reason;
}

const keyOf = (record: { chainId: string; requestId: string }) => `${record.chainId}/${record.requestId}`;

/**
 * The later of two sightings of a request, keeping what only the earlier one knows: the API outcome of the cycle
 * that called the API, and the transaction that answered it (with the side that sent it) when the later one sent
 * none. The later state and reason stand: they are the request's last word.
 */
export function withEarlierSighting<T extends CycleRequestRecord>(
  later: T,
  earlier: CycleRequestRecord | undefined,
): T {
  if (!earlier) return later;
  const answered = earlier.transaction && (earlier.transaction.kind !== undefined || isAnswer(earlier.state));
  return {
    ...later,
    ...(later.api === undefined && earlier.api ? { api: earlier.api } : {}),
    ...(later.transaction === undefined && answered
      ? {
          transaction: {
            ...earlier.transaction!,
            kind: earlier.transaction!.kind ?? (earlier.state === 'failed' ? 'fail' : 'fulfil'),
          },
          ...(earlier.servedBy ? { servedBy: earlier.servedBy } : {}),
        }
      : {}),
  };
}

const isAnswer = (state: RequestState) => state === 'fulfilled' || state === 'failed';

/**
 * The log after one cycle: this cycle's records first (their first sighting and cycle count carried over), then
 * the previous entries it did not see, cut at `limit`.
 */
export function mergeRequestLog(
  previous: readonly RequestRecord[],
  current: readonly CycleRequestRecord[],
  limit = MAX_RECORDED_REQUESTS,
): RequestRecord[] {
  const before = new Map(previous.map((record) => [keyOf(record), record]));
  const merged: RequestRecord[] = [];
  const seen = new Set<string>();
  for (const record of current) {
    const key = keyOf(record);
    if (seen.has(key)) continue;
    seen.add(key);
    const old = before.get(key);
    merged.push({
      // A request served earlier keeps the API outcome and the transaction of the cycle that served it.
      ...withEarlierSighting(record, old),
      firstSeen: old?.firstSeen ?? record.lastSeen,
      cycles: (old?.cycles ?? 0) + 1,
    });
  }
  for (const record of previous) if (!seen.has(keyOf(record))) merged.push(record);
  return merged.slice(0, limit);
}

/** The entries of a stored request log (JSON text); empty when it is missing or not a JSON array. */
export function parseRequestLog(raw: string | undefined): RequestRecord[] {
  if (!raw) return [];
  const value = parseJsonText(raw);
  if (!Array.isArray(value)) return [];
  return value.slice(0, MAX_RECORDED_REQUESTS).flatMap((entry) => {
    const parsed = requestRecordSchema.safeParse(entry);
    return parsed.success ? [parsed.data] : [];
  });
}
