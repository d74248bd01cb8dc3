// A shard as the coordinator plans and settles it: the requests and withdrawals of one sponsor wallet on one chain in
// one cycle, and their outcomes. It stays in the coordinator's process (the chain half runs there); a worker gets
// only what its API calls need (the coordinator <-> worker contract, src/contract/shard.ts).
import type { GasTargetJson } from '../chain/gas-price.js';
import type { DiscoveredApiCall } from '../chain/requests.js';
import type { WithdrawalRequest } from '../chain/types.js';
import type { ApiOutcome } from '../contract/request-log.js';
import type { Deferral } from './api-retries.js';

/** A request that survived discovery; `errorMessage` set: it is failed on chain without calling the API. */
export type ShardApiCall = DiscoveredApiCall;

export type ShardInput = {
  chainId: string;
  sponsor: string;
  sponsorWallet: string;
  /** Provider names of the chain, most preferred first (healthy in discovery). */
  providers: string[];
  /** The lowest head among the healthy providers: every provider the shard may use knows this block. */
  currentBlock: number;
  /** The chain's gas price in this cycle, read once by the coordinator for all shards; absent: the shard reads it. */
  gasTarget?: GasTargetJson;
  apiCalls: ShardApiCall[];
  withdrawals: WithdrawalRequest[];
  /**
   * Nonces of this wallet's transactions that the coordinator's window sent and still awaits (not stuck): when they
   * are all that is pending, the shard sends at the next nonce instead of waiting (src/chain/pending.ts).
   */
  inFlightNonces?: number[];
  /** W3C traceparent of each request's trace, by request id (only when the coordinator traces). */
  traceparents?: Record<string, string>;
};

export type ShardOutcome = {
  id: string;
  kind: 'api' | 'withdrawal';
  outcome: 'fulfilled' | 'failed' | 'withdrawn' | 'skipped' | 'deferred' | 'error';
  /** A deferred request: its OIS, the failure's class and when it is retried (src/node/api-retries.ts). */
  deferral?: Deferral;
  txHash?: string;
  nonce?: number;
  provider?: string;
  reason?: string;
  /**
   * The transaction replaces a stuck one at the same nonce (src/chain/pending.ts), sent for the same request in an
   * earlier cycle: counted as `replaced`, not as a second fulfilment.
   */
  replacement?: true;
  /** The request's API call: its status class (never the answer) and how long it took. */
  api?: { outcome: ApiOutcome; durationMs: number };
  /** When the provider's answer said it took the transaction (ms since the epoch): the submission's latency ends here. */
  acceptedAtMs?: number;
};

export type ShardOutput = {
  chainId: string;
  sponsorWallet: string;
  outcomes: ShardOutcome[];
  apiCalls: number;
  cacheHits: number;
  rpcCalls: number;
  /** Milliseconds spent calling APIs, planning (static calls, estimates) and sending. */
  timings: { apiMs: number; planMs: number; sendMs: number };
  /** The gas price (legacy) or max fee per gas (EIP-1559) the transactions were priced at (wei, decimal). */
  gasPriceWei?: string;
  /** Gas price strategies that failed (each also logged at WARN), in the order they were tried. */
  gasPriceStrategyFailures?: { strategy: string; reason: string }[];
};
