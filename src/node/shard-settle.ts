// The settling of a shard: lost sends that a provider knows by their hash count as sent, what has an outcome leaves
// the pending items, what no provider took ends in an error that says why, and the shard's output (with its
// requests' submission spans).
import type { RpcClient } from '../chain/rpc.js';
import { isKnown } from '../chain/sending.js';
import { mapLimit } from '../common/concurrency.js';
import { parseTraceparent, type Tracer } from '../observability/tracing.js';
import { itemId, NO_TRACER, type ShardAnswers, type ShardRun } from './shard-run.js';
import type { ShardInput, ShardOutcome, ShardOutput } from './shard-types.js';

/** Lost sends that this provider knows by their hash count as sent; the others stay lost, never sent blindly. */
export async function confirmLostSends(run: ShardRun, client: RpcClient, provider: string): Promise<void> {
  const sends = [...run.lost.values()];
  const known = await mapLimit(sends, 8, (send) => isKnown(client, send.txHash));
  sends.forEach((send, i) => {
    if (!known[i]) return;
    run.lost.delete(send.id);
    run.outcomes.push({ ...send.outcome, acceptedAtMs: Date.now() });
    run.logger.info(
      { requestId: send.id, nonce: send.outcome.nonce, txHash: send.txHash, provider },
      'a transaction whose answer was lost is known by its hash',
    );
  });
}

/** Drops from `run.pending` what already has an outcome. */
export function dropSettled(run: ShardRun): void {
  const done = new Set(run.outcomes.map((o) => o.id));
  run.pending = run.pending.filter((item) => !done.has(itemId(item)));
}

export function skipPending(run: ShardRun, reason: string): void {
  for (const item of run.pending) run.outcomes.push({ id: itemId(item), kind: item.kind, outcome: 'skipped', reason });
  run.pending = [];
}

export function settleUntaken(run: ShardRun): void {
  for (const item of run.pending) {
    run.outcomes.push({
      id: itemId(item),
      kind: item.kind,
      outcome: 'error',
      reason: run.lost.has(itemId(item))
        ? 'sent, but its answer was lost and no provider knows the transaction by its hash'
        : run.checkFailed
          ? 'no provider could answer the fulfilment check (a provider error, not a revert); the request stays open'
          : 'no provider could take the transaction',
    });
  }
  run.pending = [];
}

export function shardOutput(run: ShardRun, apis: ShardAnswers): ShardOutput {
  const { shard, outcomes, timings } = run;
  const calls = new Map(shard.apiCalls.map((call) => [call.id, call]));
  for (const outcome of outcomes) {
    if (outcome.kind !== 'api') continue;
    const api = apis.records.get(outcome.id);
    if (api) outcome.api = api;
    const call = calls.get(outcome.id);
    if (call) Object.assign(outcome, { oisTitle: call.oisTitle, endpointName: call.endpointName });
  }
  traceSubmissions(run.context.tracer ?? NO_TRACER, shard, outcomes, run.submissionStartMs);
  return {
    chainId: shard.chainId,
    sponsor: shard.sponsor,
    sponsorWallet: shard.sponsorWallet,
    outcomes,
    apiCalls: shard.apiCalls.length - apis.cacheHits,
    cacheHits: apis.cacheHits,
    rpcCalls: run.rpcCalls,
    timings: {
      apiMs: Math.round(apis.apiMs),
      planMs: Math.round(timings.planMs),
      sendMs: Math.round(timings.sendMs),
    },
    ...(run.gasPriceWei === undefined ? {} : { gasPriceWei: run.gasPriceWei }),
    ...(run.gasPriceStrategyFailures.length === 0 ? {} : { gasPriceStrategyFailures: run.gasPriceStrategyFailures }),
  };
}

/** One span per request from planning its transaction to the answer of the send, child of the request's trace. */
function traceSubmissions(tracer: Tracer, shard: ShardInput, outcomes: ShardOutcome[], startMs: number): void {
  if (!tracer.enabled) return;
  for (const outcome of outcomes) {
    if (outcome.kind !== 'api') continue;
    const span = tracer.startSpan('submission', {
      parent: parseTraceparent(shard.traceparents?.[outcome.id]),
      kind: 'client',
      startMs,
      attributes: {
        requestId: outcome.id,
        chainId: shard.chainId,
        endpointId: shard.apiCalls.find((call) => call.id === outcome.id)?.endpointId,
        'rpc.system': 'jsonrpc',
        'rpc.method': 'eth_sendRawTransaction',
        'oracle_node.outcome': outcome.outcome,
        'oracle_node.provider': outcome.provider,
        'oracle_node.transaction_hash': outcome.txHash,
        'oracle_node.nonce': outcome.nonce,
      },
    });
    if (outcome.outcome === 'error') span.fail(outcome.reason ?? 'transaction not accepted');
    span.end();
  }
}
