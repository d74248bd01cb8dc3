// The request log of a cycle (src/contract/request-log.ts): one record per request the cycle discovered, with its
// shard's outcome or the reason no shard took it. Kept by the coordinator beside its cycle report in a pod, and in
// a file of the cache directory for a local run, so `oracle-node request <requestId>` can tell what the node did.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  boundedReason,
  type CycleRequestRecord,
  mergeRequestLog,
  parseRequestLog,
  REQUEST_LOG_KEY,
  type RequestRecord,
  withEarlierSighting,
} from '../contract/request-log.js';
import { redact } from '../observability/index.js';
import type { CycleSummary, SeenRequest } from './cycle.js';

export type CycleIdentity = { job?: string | undefined; time: Date };

/** Served requests first (their outcomes matter most), then the ones waiting, over the limit, dropped. */
const ORDER: Record<SeenRequest['state'], number> = {
  servable: 0,
  deferred: 1,
  waitingForConfirmations: 2,
  overChainLimit: 3,
  dropped: 4,
};

/** The records of one cycle. Reasons are redacted: a transport error may quote a provider URL. */
export function cycleRequestRecords(summary: CycleSummary, cycle: CycleIdentity): CycleRequestRecord[] {
  const lastSeen = { ...(cycle.job ? { job: cycle.job } : {}), time: cycle.time.toISOString() };
  const seen = new Map((summary.seen ?? []).map((request) => [`${request.chainId}/${request.id}`, request]));
  const blocks = (request: SeenRequest | undefined) => ({
    ...(request?.blockNumber === undefined ? {} : { madeInBlock: request.blockNumber }),
    ...(request ? { headBlock: request.headBlock } : {}),
  });
  const records: CycleRequestRecord[] = [];
  // A window's summary holds the results of each of its polls, oldest first: a request keeps its latest outcome
  // (skipped in one poll, fulfilled in a later one, is fulfilled), so the newest results are read first.
  const recorded = new Map<string, CycleRequestRecord>();
  const add = (record: CycleRequestRecord) => {
    const key = `${record.chainId}/${record.requestId}`;
    const later = recorded.get(key);
    if (later) {
      // The later outcome stands; it keeps the API call and the transaction of an earlier poll when it has none.
      Object.assign(later, withEarlierSighting(later, record));
      return;
    }
    recorded.set(key, record);
    records.push(record);
  };
  for (const result of [...summary.results].reverse()) {
    if (result.ok) {
      for (const outcome of result.output.outcomes) {
        if (outcome.kind !== 'api') continue;
        const key = `${result.output.chainId}/${outcome.id}`;
        add({
          chainId: result.output.chainId,
          requestId: outcome.id.toLowerCase(),
          state: outcome.outcome === 'withdrawn' ? 'error' : outcome.outcome,
          ...(outcome.reason ? { reason: boundedReason(redact(outcome.reason)) } : {}),
          lastSeen,
          ...blocks(seen.get(key)),
          ...(outcome.api ? { api: outcome.api } : {}),
          ...(outcome.txHash
            ? {
                transaction: {
                  hash: outcome.txHash,
                  ...(outcome.nonce === undefined ? {} : { nonce: outcome.nonce }),
                  ...(outcome.provider ? { provider: outcome.provider } : {}),
                  ...(outcome.outcome === 'fulfilled' || outcome.outcome === 'failed'
                    ? { kind: outcome.outcome === 'failed' ? ('fail' as const) : ('fulfil' as const) }
                    : {}),
                },
                servedBy: summary.role ?? 'primary',
              }
            : {}),
        });
      }
    } else {
      const held = result.requestIds && new Set(result.requestIds.map((id) => id.toLowerCase()));
      for (const request of summary.seen ?? []) {
        if (request.state !== 'servable' || request.chainId !== result.chainId) continue;
        if (request.sponsorWallet !== result.sponsorWallet) continue;
        if (held && !held.has(request.id.toLowerCase())) continue;
        add({
          chainId: request.chainId,
          requestId: request.id.toLowerCase(),
          state: 'shardFailed',
          reason: boundedReason(redact(result.error)),
          lastSeen,
          ...blocks(request),
        });
      }
    }
  }
  const unserved = (summary.seen ?? [])
    .filter(
      (request) => request.state !== 'servable' && !recorded.has(`${request.chainId}/${request.id.toLowerCase()}`),
    )
    .sort((a, b) => ORDER[a.state] - ORDER[b.state]);
  for (const request of unserved) {
    records.push({
      chainId: request.chainId,
      requestId: request.id.toLowerCase(),
      state: request.state as Exclude<SeenRequest['state'], 'servable'>,
      ...(request.reason ? { reason: boundedReason(redact(request.reason)) } : {}),
      lastSeen,
      ...blocks(request),
    });
  }
  return records;
}

/** The request log of a local run: `requests.json` in the cache directory, replaced atomically after each cycle. */
export class FileRequestLog {
  constructor(readonly directory: string) {}

  get path(): string {
    return join(this.directory, REQUEST_LOG_KEY);
  }

  async read(): Promise<RequestRecord[]> {
    try {
      return parseRequestLog(await readFile(this.path, 'utf8'));
    } catch {
      return [];
    }
  }

  async record(records: CycleRequestRecord[]): Promise<void> {
    const merged = mergeRequestLog(await this.read(), records);
    await mkdir(this.directory, { recursive: true });
    const temporary = `${this.path}.${process.pid}.tmp`;
    await writeFile(temporary, JSON.stringify(merged));
    await rename(temporary, this.path);
  }
}
