// The state of one shard's run, shared by its halves (shard.ts): what the chain half needs (ChainContext), and both
// halves in one process (ShardContext), the items still to settle, the API answers as the chain half awaits them, and
// the run itself.
import type { ApiResponse, PlannedTransaction } from '../chain/fulfillment.js';
import type { StrategyFailure } from '../chain/gas-price.js';
import type { PendingSightings } from '../chain/pending.js';
import type { RpcClient } from '../chain/rpc.js';
import type { SponsorWallets } from '../chain/sponsor-wallets.js';
import type { ChainConfig } from '../chain/types.js';
import type { PlannedWithdrawal } from '../chain/withdrawals.js';
import type { Config } from '../config/index.js';
import type { NodeRole } from '../contract/request-log.js';
import { Tracer } from '../observability/tracing.js';
import type { ApiCallContext, ApiRecord } from './api-call.js';
import type { ApiRetries, Deferral } from './api-retries.js';
import type { ResponseCache } from './cache.js';
import type { WorkDeadline } from './deadline.js';
import type { Logger } from './logger.js';
import type { ShardApiCall, ShardInput, ShardOutcome } from './shard-types.js';

/** What the chain half needs: the node key (signing), the providers (sending) and the response cache. */
export type ChainContext = {
  config: Config;
  wallets: SponsorWallets;
  logger: Logger;
  cache?: ResponseCache;
  rpcClient?: (url: string) => RpcClient;
  /** Spans of the shard's requests, children of the traces named in the shard input. */
  tracer?: Tracer;
  /** What this process has seen of the wallets' pending transactions (the process's own when not given). */
  pendingSightings?: PendingSightings;
  /**
   * Per chain id, the most per gas (wei: the gas price, or the max fee per gas) this node pays: a transaction priced
   * above it is not sent, and its request waits for the price to fall (`--max-gas-price`, spec.chainLimits).
   */
  gasPriceCeilings?: ReadonlyMap<string, bigint>;
  /** The run's hard end or SIGTERM: after it nothing is sent; the requests stay open (src/node/deadline.ts). */
  deadline?: WorkDeadline;
  /**
   * Requests whose API failed for now: left open and retried until their window is over (absent: a transient failure
   * fails its request at once, as the reference does).
   */
  apiRetries?: ApiRetries;
  /** The node's side of a redundant deployment, written into the response cache's entries (absent: primary). */
  role?: NodeRole;
};

/** Both halves in one process (InProcessExecutor): the chain half's context and the API calls'. */
export type ShardContext = ChainContext & {
  callEndpoint?: ApiCallContext['callEndpoint'];
  /** Concurrent API calls inside one shard. */
  apiConcurrency?: number;
};

export const NO_TRACER = new Tracer();

/** A transaction whose answer was lost, and the outcome it counts as once a provider knows its hash. */
export type LostSend = { id: string; txHash: string; outcome: ShardOutcome };

export type WorkItem =
  | { kind: 'api'; call: ShardApiCall; response: Promise<ApiResponse> }
  | { kind: 'withdrawal'; withdrawal: ShardInput['withdrawals'][number] };

export type Plan = PlannedTransaction | PlannedWithdrawal;
export type SendablePlan = Exclude<Plan, { kind: 'skip' }>;

/** The state of one shard's run, shared by its phases. */
export type ShardRun = {
  shard: ShardInput;
  context: ChainContext;
  chain: ChainConfig;
  logger: Logger;
  wallet: ReturnType<SponsorWallets['walletOf']>;
  rrpAddress: string;
  dryRunAddress: string | undefined;
  outcomes: ShardOutcome[];
  /** What is still to be settled, in the shard's order. */
  pending: WorkItem[];
  /** Transactions sent whose answer was lost (the provider may have taken them), by item id. */
  lost: Map<string, LostSend>;
  rpcCalls: number;
  timings: { planMs: number; sendMs: number };
  gasPriceWei: string | undefined;
  gasPriceStrategyFailures: StrategyFailure[];
  /** When the first provider was asked (the submission spans start there). */
  submissionStartMs: number;
  /** A provider could not answer a fulfilment check (never a revert): what no provider took stays open. */
  checkFailed: boolean;
  /** Requests left open after a failed API call this run, by id: outcome `deferred`, not `skipped`. */
  deferrals: Map<string, Deferral>;
};

/**
 * The API answers of a shard as the chain half awaits them: each request's answer is a promise of its own, so a
 * request is planned as soon as its answer is in.
 */
export type ShardAnswers = {
  /** Every API call's answer, signed, by request id. */
  responses: Map<string, Promise<ApiResponse>>;
  /** Settles when every answer is in. */
  answered: Promise<unknown>;
  /** The first API call that threw (not an API failure: those are answers), which fails the shard. */
  failure: { error: unknown } | undefined;
  cacheHits: number;
  records: Map<string, ApiRecord>;
  apiMs: number;
};

export function itemId(item: WorkItem): string {
  return item.kind === 'api' ? item.call.id : item.withdrawal.id;
}
