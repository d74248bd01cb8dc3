// What a cycle's steps read: the cycle's dependencies (CycleDeps), what a coordinator window lends each of its
// cycles (CycleWindow), the node's role, and the context every step of a chain's plan shares (PlanContext).
import type { ChainLogStore } from '../chain/log-store.js';
import type { PendingSightings } from '../chain/pending.js';
import type { ProviderMemory } from '../chain/provider-health.js';
import type { RpcClient } from '../chain/rpc.js';
import type { SponsorWallets } from '../chain/sponsor-wallets.js';
import type { ChainConfig } from '../chain/types.js';
import type { Config } from '../config/index.js';
import type { NodeRole } from '../contract/request-log.js';
import type { Tracer } from '../observability/tracing.js';
import type { ApiRetries } from './api-retries.js';
import type { ShardExecutor } from './executor.js';
import type { Logger } from './logger.js';

/** Budget of each of a provider's discovery steps, its head and its requests (the reference's initializeProvider). */
export const PROVIDER_DISCOVERY_TIMEOUT_MS = 20_000;

export type CycleDeps = {
  executor: ShardExecutor;
  logger: Logger;
  wallets?: SponsorWallets;
  rpcClient?: (url: string) => RpcClient;
  /** Called with every client created, e.g. to count RPC calls. */
  discoveryTimeoutMs?: number;
  maxLogRange?: number;
  /** Chain ids and heads of providers seen in earlier cycles (default: this process's). */
  providerMemory?: ProviderMemory;
  /** One trace per request: discovery and authorization here, the shard's spans as children (shard.traceparents). */
  tracer?: Tracer;
  /** Inside a coordinator window (src/node/window.ts): the logs kept between polls and the requests in flight. */
  window?: CycleWindow;
  /**
   * A standby node (`--standby-delay-blocks`, spec.redundancy.standbyDelayBlocks): serves a request only once it has
   * been servable for this many blocks and is still open (docs/chain-cycle.md, "Standby"); 0 or absent: a primary.
   */
  standbyDelayBlocks?: number;
  /** What this process has seen of the wallets' pending transactions: the shards' (default: the process's). */
  pendingSightings?: PendingSightings;
  /** Requests whose API failed for now, and when to call it again (absent: a transient failure fails at once). */
  apiRetries?: ApiRetries;
};

/** A node with a standby delay is a standby (docs/chain-cycle.md, "Standby"). */
export const roleOf = (standbyDelayBlocks: number | undefined): NodeRole =>
  (standbyDelayBlocks ?? 0) > 0 ? 'standby' : 'primary';

/** What a coordinator window lends each of its cycles. */
export type CycleWindow = {
  /**
   * The chain's log store, and in a poll the head each provider answered (a provider without one is left out of
   * the poll; the heads are judged against each other before any is used); undefined: the chain is read as in a
   * one-shot cycle.
   */
  logsOf(chainId: string): { store: ChainLogStore; heads?: ReadonlyMap<string, number> } | undefined;
  /** Whether the request's fulfilment was sent in this window and is not stuck yet at `head`: not planned again. */
  holds(chainId: string, requestId: string, head: number): boolean;
  /** The nonces of the wallet's transactions the window holds at `head` (see `holds`). */
  inFlightNonces(chainId: string, sponsorWallet: string, head: number): number[];
};

/** What every step of a chain's plan reads. */
export type PlanContext = {
  config: Config;
  chain: ChainConfig;
  deps: CycleDeps & { wallets: SponsorWallets };
  makeClient: (url: string) => RpcClient;
  memory: ProviderMemory;
  windowLogs: ReturnType<CycleWindow['logsOf']>;
};
