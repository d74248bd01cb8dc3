// The coordinator window (docs/chain-cycle.md, "The window"): the first cycle as the one-shot coordinator runs it,
// then, until the window ends, a poll every interval. A poll asks each provider for its head (one call each); when
// no head moved it does nothing more. When one moved, the chain runs the same pipeline as a cycle (discovery,
// authorization, confirmations, shards through the executor) on the logs the window keeps (src/chain/log-store.ts),
// which reads only the new blocks. A request whose fulfilment this window sent is not planned again while it may
// still be mined (STUCK_AFTER_BLOCKS); after that the shard's pending-transaction rule decides (src/chain/pending.ts),
// which is also what keeps the next window, in another pod, from sending it again. The wallet itself is not held
// up: its shard carries the nonces in flight, and the rule lets it go on at the next nonce. Polls never overlap,
// so the executor's concurrency (the chain's maxConcurrency) holds over the whole window.
import { ChainLogStore } from '../chain/log-store.js';
import { fetchBlockNumber } from '../chain/logs.js';
import { STUCK_AFTER_BLOCKS } from '../chain/pending.js';
import { RpcClient, withTimeout } from '../chain/rpc.js';
import { DEFAULT_MIN_CONFIRMATIONS } from '../chain/types.js';
import type { Config } from '../config/index.js';
import { type CycleDeps, type CycleSummary, type CycleWindow, runCycle } from './cycle.js';
import { settleBy, type WorkDeadline } from './deadline.js';
import { type LatencySamples, RequestLatency } from './latency.js';

/** A head read that takes longer than this counts as no answer for the poll. */
export const HEAD_TIMEOUT_MS = 5_000;

export type WindowOptions = {
  /** How long the window lasts from its start; no poll starts after its end. */
  windowMs: number;
  pollIntervalMs: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** Ends the window early (SIGTERM): the summary so far is returned. */
  signal?: AbortSignal;
  /**
   * The run's hard end and SIGTERM (src/node/deadline.ts), which the executor's shards read too: no poll starts
   * after it, and a cycle in flight then is not waited for beyond SETTLE_AFTER_STOP_MS (it sends nothing new).
   */
  deadline?: WorkDeadline;
};

export type WindowSummary = CycleSummary & {
  /** Polls after the first cycle, and how many of them found no new block (one call per provider each). */
  window: { polls: number; idlePolls: number };
  /** Seconds from each answered request's block to its submission and to its inclusion (src/node/latency.ts). */
  latency: LatencySamples;
};

type Heads = Map<string, ReadonlyMap<string, number>>;
type InFlight = { sentAt: number; nonce: number; sponsorWallet: string };

/** What the window keeps between its cycles, per chain: the logs read so far and the fulfilments in flight. */
class WindowState {
  readonly stores = new Map<string, ChainLogStore>();
  /** Request id -> its transaction (wallet, nonce) and the head at which it was sent, per chain. */
  private readonly inFlight = new Map<string, Map<string, InFlight>>();

  constructor(config: Config) {
    for (const chain of config.chains) {
      this.stores.set(chain.id, new ChainLogStore(chain.minConfirmations ?? DEFAULT_MIN_CONFIRMATIONS));
      this.inFlight.set(chain.id, new Map());
    }
  }

  cycleWindow(heads?: Heads): CycleWindow {
    return {
      logsOf: (chainId) => {
        const store = this.stores.get(chainId);
        if (!store) return undefined;
        const chainHeads = heads?.get(chainId);
        return chainHeads ? { store, heads: chainHeads } : { store };
      },
      holds: (chainId, requestId, head) => {
        const sent = this.inFlight.get(chainId)?.get(requestId);
        return sent !== undefined && head - sent.sentAt < STUCK_AFTER_BLOCKS;
      },
      inFlightNonces: (chainId, sponsorWallet, head) =>
        [...(this.inFlight.get(chainId)?.values() ?? [])]
          .filter((sent) => sent.sponsorWallet === sponsorWallet && head - sent.sentAt < STUCK_AFTER_BLOCKS)
          .map((sent) => sent.nonce),
    };
  }

  /** Whether any provider of the chain is past the last block the window read. */
  moved(chainId: string, heads: ReadonlyMap<string, number>): boolean {
    const read = this.stores.get(chainId)?.head;
    return [...heads.values()].some((head) => read === undefined || head > read);
  }

  /** The transactions a cycle sent, in flight from the head it read. */
  record(summary: CycleSummary): void {
    for (const result of summary.results) {
      if (!result.ok) continue;
      const sentAt = this.stores.get(result.output.chainId)?.head;
      const inFlight = this.inFlight.get(result.output.chainId);
      if (sentAt === undefined || !inFlight) continue;
      const { sponsorWallet } = result.output;
      for (const outcome of result.output.outcomes)
        if (outcome.kind === 'api' && outcome.txHash !== undefined && outcome.nonce !== undefined)
          inFlight.set(outcome.id, { sentAt, nonce: outcome.nonce, sponsorWallet });
    }
  }
}

/** Each provider's head (one eth_blockNumber each); a provider that does not answer in time is left out. */
async function readHeads(config: Config, deps: CycleDeps): Promise<{ heads: Heads; rpcCalls: number }> {
  const makeClient = deps.rpcClient ?? ((url: string) => new RpcClient(url));
  let rpcCalls = 0;
  const heads: Heads = new Map();
  await Promise.all(
    config.chains.map(async (chain) => {
      const chainHeads = new Map<string, number>();
      await Promise.all(
        Object.entries(chain.providers).map(async ([name, provider]) => {
          const client = makeClient(provider.url);
          try {
            chainHeads.set(name, await withTimeout(fetchBlockNumber(client), HEAD_TIMEOUT_MS, `head of ${name}`));
          } catch {
            // No head this poll: the provider sits the poll out; the next poll asks again.
          } finally {
            rpcCalls += client.calls;
          }
        }),
      );
      heads.set(chain.id, chainHeads);
    }),
  );
  return { heads, rpcCalls };
}

export async function runWindow(config: Config, deps: CycleDeps, options: WindowOptions): Promise<WindowSummary> {
  const now = options.now ?? Date.now;
  const signal = options.signal ?? options.deadline?.signal;
  const sleep = options.sleep ?? ((ms: number) => abortableSleep(ms, signal));
  const end = now() + options.windowMs;
  const state = new WindowState(config);
  // Latency is against block timestamps: the wall clock, not the window's (a test's clock may be its own).
  const latency = new RequestLatency(config, deps);
  let summary = await settleBy(runCycle(config, { ...deps, window: state.cycleWindow() }), options.deadline, () =>
    emptySummary(),
  );
  state.record(summary);
  summary.rpcCalls += await latency.afterCycle(summary, state.stores);
  const window = { polls: 0, idlePolls: 0 };
  const stopped = () => signal?.aborted === true || options.deadline?.stopped === true;
  while (!stopped() && now() + options.pollIntervalMs <= end) {
    await sleep(options.pollIntervalMs);
    if (stopped()) break;
    window.polls++;
    const { heads, rpcCalls } = await readHeads(config, deps);
    summary.rpcCalls += rpcCalls;
    const moved = config.chains.filter((chain) => state.moved(chain.id, heads.get(chain.id) ?? new Map()));
    if (moved.length === 0) {
      window.idlePolls++;
      continue;
    }
    const cycle = await settleBy(
      runCycle({ ...config, chains: moved }, { ...deps, window: state.cycleWindow(heads) }),
      options.deadline,
      () => undefined,
    );
    // Not settled by the deadline: what it did is not in the report; it sends nothing more.
    if (!cycle) break;
    state.record(cycle);
    cycle.rpcCalls += await latency.afterCycle(cycle, state.stores);
    summary = mergeSummaries(summary, cycle);
  }
  deps.logger.info({ ...window, transactions: summary.transactions }, 'window finished');
  return { ...summary, window, latency: latency.samples };
}

function abortableSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** A cycle that did nothing (the first cycle, when the run stopped before it settled). */
export function emptySummary(): CycleSummary {
  return {
    providers: [],
    requests: { discovered: 0, servable: 0, waitingForConfirmations: 0, overChainLimit: 0 },
    shards: { total: 0, failed: 0 },
    transactions: { fulfilled: 0, failed: 0, withdrawn: 0, skipped: 0, errors: 0, replaced: 0 },
    apiCalls: 0,
    cacheHits: 0,
    rpcCalls: 0,
    timings: { discoveryMs: 0, shardsMs: 0 },
    sponsorWallets: [],
    gasPrices: [],
    gasPriceStrategyFailures: [],
    results: [],
    seen: [],
  };
}

const byKey = <T>(items: T[], key: (item: T) => string): T[] => [...new Map(items.map((i) => [key(i), i])).values()];

/** The report of a whole window: counts added up, the latest state of each provider, wallet and request. */
export function mergeSummaries(total: CycleSummary, cycle: CycleSummary): CycleSummary {
  const add = <K extends string>(a: Record<K, number>, b: Record<K, number>) =>
    Object.fromEntries(Object.keys(a).map((k) => [k, a[k as K] + b[k as K]])) as Record<K, number>;
  const gasPrices = new Map(total.gasPrices.map((g) => [g.chainId, BigInt(g.gasPriceWei)]));
  for (const g of cycle.gasPrices)
    if (BigInt(g.gasPriceWei) > (gasPrices.get(g.chainId) ?? -1n)) gasPrices.set(g.chainId, BigInt(g.gasPriceWei));
  const failures = total.gasPriceStrategyFailures.map((f) => ({ ...f }));
  for (const f of cycle.gasPriceStrategyFailures) {
    const counted = failures.find((t) => t.chainId === f.chainId && t.strategy === f.strategy);
    if (counted) counted.count += f.count;
    else failures.push({ ...f });
  }
  return {
    providers: byKey([...total.providers, ...cycle.providers], (p) => `${p.chainId}\n${p.provider}`),
    requests: add(total.requests, cycle.requests),
    shards: add(total.shards, cycle.shards),
    transactions: add(total.transactions, cycle.transactions),
    apiCalls: total.apiCalls + cycle.apiCalls,
    cacheHits: total.cacheHits + cycle.cacheHits,
    rpcCalls: total.rpcCalls + cycle.rpcCalls,
    timings: add(total.timings, cycle.timings),
    sponsorWallets: byKey(
      [...total.sponsorWallets, ...cycle.sponsorWallets],
      (w) => `${w.chainId}\n${w.sponsorWallet}`,
    ),
    gasPrices: [...gasPrices].map(([chainId, wei]) => ({ chainId, gasPriceWei: String(wei) })),
    gasPriceStrategyFailures: failures,
    results: [...total.results, ...cycle.results],
    seen: byKey([...(total.seen ?? []), ...(cycle.seen ?? [])], (r) => `${r.chainId}\n${r.id}`),
  };
}
