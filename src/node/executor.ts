// Shard executors: how a cycle's shards (one per sponsor wallet) are run. InProcessExecutor runs both halves of each
// shard in this process (local runs, `oracle-node start`). WorkerExecutor is the coordinator's on Kubernetes: the
// API half goes to API workers (worker Jobs, src/node/kubernetes/job-executor.ts) with only what the calls need,
// and the chain half runs here, with the node key and the providers, from the results they give back.

import { mapLimit } from '../common/concurrency.js';
import { errorMessage } from '../common/errors.js';
import {
  type ApiShardInput,
  type ApiShardOutput,
  type ApiShardRequest,
  resultsFor,
  SHARD_FORMAT,
} from '../contract/shard.js';
import { parseTraceparent } from '../observability/tracing.js';
import type { WorkDeadline } from './deadline.js';
import {
  type Answer,
  answerFromResult,
  answerWithoutCall,
  type ChainContext,
  runChainHalf,
  runShard,
  type ShardAnswers,
  type ShardContext,
} from './shard.js';
import type { ShardApiCall, ShardInput, ShardOutput } from './shard-types.js';

export type ShardResult =
  | { ok: true; output: ShardOutput }
  | {
      ok: false;
      chainId: string;
      sponsorWallet: string;
      error: string;
      /** The requests the shard held (the request log marks only these as shardFailed). */
      requestIds?: string[];
    };

export interface ShardExecutor {
  /** Runs the shards with at most `concurrency` at a time; never rejects because of one shard. */
  run(shards: ShardInput[], options: { concurrency: number }): Promise<ShardResult[]>;
}

function failedShard(shard: ShardInput, error: unknown, context: ChainContext): ShardResult {
  context.logger.error(
    { chainId: shard.chainId, sponsorWallet: shard.sponsorWallet, err: errorMessage(error) },
    'shard failed',
  );
  return {
    ok: false,
    chainId: shard.chainId,
    sponsorWallet: shard.sponsorWallet,
    error: errorMessage(error),
    requestIds: shard.apiCalls.map((call) => call.id),
  };
}

/** Writes what a batch-writing cache (the ConfigMap on Kubernetes) recorded for the shards; a failed write is a WARN. */
async function flushCache(context: ChainContext): Promise<void> {
  try {
    await context.cache?.flush?.();
  } catch (error) {
    context.logger.warn({ err: errorMessage(error) }, 'response cache not written; fulfilments go on without it');
  }
}

export class InProcessExecutor implements ShardExecutor {
  constructor(private readonly context: ShardContext) {}

  async run(shards: ShardInput[], options: { concurrency: number }): Promise<ShardResult[]> {
    const results = await mapLimit(shards, options.concurrency, async (shard): Promise<ShardResult> => {
      try {
        return { ok: true, output: await runShard(shard, this.context) };
      } catch (error) {
        return failedShard(shard, error, this.context);
      }
    });
    // Each shard sends as soon as its answers are in, so a batch-writing cache is written after them here.
    await flushCache(this.context);
    return results;
  }
}

export type ApiShardResult = { ok: true; output: ApiShardOutput } | { ok: false; error: string };

/** Where the API calls of a coordinator's shards run: each shard's calls in a worker, in input order. */
export interface ApiWorkers {
  /**
   * At most `concurrency` shards at a time; never rejects because of one shard. With a deadline: nothing starts
   * after it, and a shard not done by it has no result.
   */
  run(shards: ApiShardInput[], options: { concurrency: number; deadline?: WorkDeadline }): Promise<ApiShardResult[]>;
}

/** What a worker's output lacks for a request it was given: a failed API call, never a transaction of its own. */
const NO_RESULT: Answer = {
  response: { success: false, errorMessage: 'API call failed: the worker gave no result' },
  cached: false,
  api: { outcome: 'failed', durationMs: 0 },
};

/** One shard's API work: the answers known without a call (cache, unservable), and the requests for a worker. */
type Dispatch = { shard: ShardInput; known: Map<string, Answer>; requests: ApiShardRequest[] };

export class WorkerExecutor implements ShardExecutor {
  constructor(
    private readonly context: ChainContext,
    private readonly workers: ApiWorkers,
  ) {}

  async run(shards: ShardInput[], options: { concurrency: number }): Promise<ShardResult[]> {
    const dispatches = await Promise.all(shards.map((shard) => this.dispatchOf(shard)));
    // A cache hit or a request that cannot be served is not sent to a worker; a shard with nothing left needs none.
    const sent = dispatches.filter((d) => d.requests.length > 0);
    const inputs = sent.map(({ shard, requests }) => apiShardInput(shard, requests));
    const { deadline } = this.context;
    const results =
      inputs.length > 0 ? await this.workers.run(inputs, { ...options, ...(deadline ? { deadline } : {}) }) : [];
    const workerResults = new Map(sent.map((dispatch, i) => [dispatch, { input: inputs[i]!, result: results[i] }]));
    const answered = await mapLimit(dispatches, options.concurrency, async (dispatch) => {
      const worker = workerResults.get(dispatch);
      try {
        let output: { input: ApiShardInput; output: ApiShardOutput } | undefined;
        if (worker) {
          // A worker that did not finish its shard (crashed, timed out) fails the shard: nothing is sent for it.
          if (!worker.result?.ok) throw new Error(worker.result?.error ?? 'the worker gave no result');
          output = { input: worker.input, output: worker.result.output };
        }
        return { dispatch, answers: await this.answersOf(dispatch, output) };
      } catch (error) {
        return { dispatch, failure: failedShard(dispatch.shard, error, this.context) };
      }
    });
    // Every shard's new cache entries in one write, before any of their transactions leaves.
    await flushCache(this.context);
    return mapLimit(answered, options.concurrency, async (shard): Promise<ShardResult> => {
      if (!shard.answers) return shard.failure;
      try {
        return { ok: true, output: await runChainHalf(shard.dispatch.shard, shard.answers, this.context) };
      } catch (error) {
        return failedShard(shard.dispatch.shard, error, this.context);
      }
    });
  }

  private async dispatchOf(shard: ShardInput): Promise<Dispatch> {
    const known = new Map<string, Answer>();
    const requests: ApiShardRequest[] = [];
    for (const call of shard.apiCalls) {
      const answer = await answerWithoutCall(this.context, call);
      if (answer) known.set(call.id, answer);
      else requests.push(apiRequestOf(call));
    }
    return { shard, known, requests };
  }

  /** Every request's answer: known before, else the worker's result for it, signed here, else a failed API call. */
  private async answersOf(
    { shard, known }: Dispatch,
    worker: { input: ApiShardInput; output: ApiShardOutput } | undefined,
  ): Promise<ShardAnswers> {
    const results = worker ? resultsFor(worker.input, worker.output) : new Map();
    const answers: ShardAnswers = {
      responses: new Map(),
      answered: Promise.resolve(),
      failure: undefined,
      cacheHits: 0,
      records: new Map(),
      apiMs: worker?.output.apiMs ?? 0,
    };
    for (const call of shard.apiCalls) {
      const result = results.get(call.id.toLowerCase());
      const answer =
        known.get(call.id) ??
        (result
          ? await answerFromResult(
              this.context,
              shard.chainId,
              call,
              result,
              parseTraceparent(shard.traceparents?.[call.id]),
            )
          : NO_RESULT);
      if (answer.cached) answers.cacheHits++;
      answers.records.set(call.id, answer.api);
      answers.responses.set(call.id, Promise.resolve(answer.response));
    }
    return answers;
  }
}

/** What a worker needs of a request for its API call: no log position, fulfil address or encoded parameters. */
export function apiRequestOf(call: ShardApiCall): ApiShardRequest {
  return {
    id: call.id,
    endpointId: call.endpointId,
    oisTitle: call.oisTitle,
    endpointName: call.endpointName,
    parameters: call.parameters,
    requester: call.requester,
    sponsor: call.sponsor,
    sponsorWallet: call.sponsorWallet,
  };
}

/** A worker's input: what the API calls need, and nothing of the chain, the providers or the node's key. */
export function apiShardInput(shard: ShardInput, requests: ApiShardRequest[]): ApiShardInput {
  const traceparents = Object.fromEntries(
    requests.flatMap((request) => {
      const traceparent = shard.traceparents?.[request.id];
      return traceparent ? [[request.id, traceparent]] : [];
    }),
  );
  return {
    format: SHARD_FORMAT,
    chainId: shard.chainId,
    requests,
    ...(shard.traceparents ? { traceparents } : {}),
  };
}
