// The coordinator window (docs/chain-cycle.md, "The window"): the first cycle as the one-shot coordinator runs it,
// then, until the window ends, polls on a fixed cadence from the window's start. Each chain polls on its own: a poll
// asks each of the chain's providers for its head (one call each; a provider that hangs is waited for at most
// HEAD_GRACE_MS once another answered, and one whose read timed out is backed off for a growing number of polls);
// when no head moved it does nothing more. When one moved, the chain runs the same pipeline as a cycle (heads judged
// against each other, discovery, authorization, confirmations, shards through the executor) on the logs the window
// keeps (src/chain/log-store.ts), which reads only the new blocks. A request whose fulfilment this window sent is not
// planned again while it may still be mined (STUCK_AFTER_BLOCKS from the first head judged after the send); after that the shard's pending-transaction rule
// decides (src/chain/pending.ts), which is also what keeps the next window, in another pod, from sending it again.
// The wallet itself is not held up: its shard carries the nonces in flight, and the rule lets it go on at the next
// nonce. A chain's polls never overlap (a poll that overruns skips the ticks it covered), so the executor's
// concurrency (the chain's maxConcurrency) holds over the whole window; a chain never waits for another.
import { ChainLogStore } from '../chain/log-store.js';
import { fetchBlockNumber } from '../chain/logs.js';
import { STUCK_AFTER_BLOCKS } from '../chain/pending.js';
import { backoffPolls, HEAD_GRACE_MS, HEAD_TIMEOUT_MS } from '../chain/provider-health.js';
import { RpcClient, withTimeout } from '../chain/rpc.js';
import { type ChainConfig, DEFAULT_MIN_CONFIRMATIONS } from '../chain/types.js';
import { settleWithGrace, sleepUnlessAborted } from '../common/concurrency.js';
import { monotonicNow } from '../common/time.js';
import type { Config } from '../config/index.js';
import { runCycle } from './cycle.js';
import type { CycleDeps, CycleWindow } from './cycle-context.js';
import { type CycleSummary, emptySummary, mergeSummaries } from './cycle-summary.js';
import { settleBy, type WorkDeadline } from './deadline.js';
import { type LatencySamples, RequestLatency } from './latency.js';

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
  /**
   * Called with each cycle's own summary as soon as it is done (the first, then each poll's), so that what it did is
   * known before the window ends: a local run's request log. Awaited; it must not throw.
   */
  afterCycle?: (cycle: CycleSummary) => Promise<void>;
};

export type WindowSummary = CycleSummary & {
  /**
   * Polls after the first cycle (ticks of the cadence at which a chain polled), and how many of them found no new
   * block on any chain (one call per provider each).
   */
  window: { polls: number; idlePolls: number };
  /** Seconds from each answered request's block to its submission and to its inclusion (src/node/latency.ts). */
  latency: LatencySamples;
};

/**
 * A fulfilment the window sent: its wallet and nonce, and the head from which it counts as in flight: the first head a
 * cycle judged after the send (undefined until then). Not the head of the poll that sent it: a shard may take several
 * blocks (a worker pod starting, a slow API), and counted from there its transaction would look stuck, and be
 * replaced, a block after it was sent.
 */
type InFlight = { sentAt?: number; nonce: number; sponsorWallet: string };

/** Whether a fulfilment is still in flight at `head` (stamping it with `head` the first time it is asked about). */
function inFlightAt(sent: InFlight, head: number): boolean {
  sent.sentAt ??= head;
  return head - sent.sentAt < STUCK_AFTER_BLOCKS;
}

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

  /** What a cycle gets of the window; in a poll, the heads the poll read for the chain it runs. */
  cycleWindow(poll?: { chainId: string; heads: ReadonlyMap<string, number> }): CycleWindow {
    return {
      logsOf: (chainId) => {
        const store = this.stores.get(chainId);
        if (!store) return undefined;
        return poll?.chainId === chainId ? { store, heads: poll.heads } : { store };
      },
      holds: (chainId, requestId, head) => {
        const sent = this.inFlight.get(chainId)?.get(requestId);
        return sent !== undefined && inFlightAt(sent, head);
      },
      inFlightNonces: (chainId, sponsorWallet, head) =>
        [...(this.inFlight.get(chainId)?.values() ?? [])]
          .filter((sent) => sent.sponsorWallet === sponsorWallet && inFlightAt(sent, head))
          .map((sent) => sent.nonce),
    };
  }

  /**
   * Whether any provider of the chain is past the last block the window read. Only a cycle reads logs, and it judges
   * the heads against each other first: a head ahead of the others makes a poll run a cycle, never moves the store.
   */
  moved(chainId: string, heads: ReadonlyMap<string, number>): boolean {
    const read = this.stores.get(chainId)?.head;
    return [...heads.values()].some((head) => read === undefined || head > read);
  }

  /** The transactions a cycle sent: in flight from the first head a later cycle judges. */
  record(summary: CycleSummary): void {
    for (const result of summary.results) {
      if (!result.ok) continue;
      const inFlight = this.inFlight.get(result.output.chainId);
      if (!inFlight) continue;
      const { sponsorWallet } = result.output;
      for (const outcome of result.output.outcomes)
        if (outcome.kind === 'api' && outcome.txHash !== undefined && outcome.nonce !== undefined)
          inFlight.set(outcome.id, { nonce: outcome.nonce, sponsorWallet });
    }
  }
}

/**
 * The heads of one chain's providers, poll after poll. A provider is asked once per poll (one eth_blockNumber); the
 * poll waits for the others at most HEAD_GRACE_MS (half the poll interval at most) once one answered, so a provider
 * that hangs sits the poll out while its read goes on (it is not asked again while that read is in flight). A read
 * that fails or takes HEAD_TIMEOUT_MS backs the provider off: it sits out the next backoffPolls(failures in a row)
 * polls, then is asked again.
 */
class ChainHeads {
  private readonly providers: { name: string; url: string; reading: boolean; failures: number; sitOut: number }[];
  /** Calls of the head reads that ended (a read still in flight is counted when it ends). */
  rpcCalls = 0;

  constructor(
    chain: ChainConfig,
    private readonly makeClient: (url: string) => RpcClient,
    /** How long the poll waits for the others once one answered: within the poll interval, so the cadence holds. */
    private readonly graceMs: number,
  ) {
    this.providers = Object.entries(chain.providers).map(([name, { url }]) => ({
      name,
      url,
      reading: false,
      failures: 0,
      sitOut: 0,
    }));
  }

  async read(): Promise<Map<string, number>> {
    const asked = this.providers.filter((provider) => {
      if (provider.reading) return false;
      if (provider.sitOut > 0) {
        provider.sitOut--;
        return false;
      }
      return true;
    });
    const reads = asked.map(async (provider) => {
      provider.reading = true;
      const client = this.makeClient(provider.url);
      try {
        const head = await withTimeout(fetchBlockNumber(client), HEAD_TIMEOUT_MS, `head of ${provider.name}`);
        provider.failures = 0;
        return head;
      } catch (error) {
        provider.failures++;
        provider.sitOut = backoffPolls(provider.failures);
        throw error;
      } finally {
        provider.reading = false;
        this.rpcCalls += client.calls;
      }
    });
    const outcomes = await settleWithGrace(reads, this.graceMs);
    const heads = new Map<string, number>();
    outcomes.forEach((outcome, index) => {
      // No head this poll (no answer in time, or an error): the provider sits the poll out.
      if (outcome?.status === 'fulfilled') heads.set(asked[index]!.name, outcome.value);
    });
    return heads;
  }
}

export async function runWindow(config: Config, deps: CycleDeps, options: WindowOptions): Promise<WindowSummary> {
  // The cadence and the window's end are durations: on the monotonic clock, never moved by a wall-clock step.
  const now = options.now ?? monotonicNow;
  const signal = options.signal ?? options.deadline?.signal;
  const sleep = options.sleep ?? ((ms: number) => sleepUnlessAborted(ms, signal));
  const start = now();
  const end = start + options.windowMs;
  const state = new WindowState(config);
  const makeClient = deps.rpcClient ?? ((url: string) => new RpcClient(url));
  // Latency is against block timestamps: the wall clock, not the window's (a test's clock may be its own).
  const latency = new RequestLatency(config, deps);
  let summary = await settleBy(runCycle(config, { ...deps, window: state.cycleWindow() }), options.deadline, () =>
    emptySummary(),
  );
  state.record(summary);
  summary.rpcCalls += await latency.afterCycle(summary, state.stores);
  await options.afterCycle?.(summary);
  const stopped = () => signal?.aborted === true || options.deadline?.stopped === true;
  // Per tick of the cadence: whether a chain polled at it, and whether one found a new block.
  const ticks = new Map<number, { moved: boolean }>();
  const pollChain = async (chain: ChainConfig) => {
    const heads = new ChainHeads(chain, makeClient, Math.min(HEAD_GRACE_MS, options.pollIntervalMs / 2));
    let tick = 0;
    while (!stopped()) {
      // The next tick of the cadence from the window's start: a poll that overran skips the ticks it covered.
      tick = Math.max(tick + 1, Math.floor((now() - start) / options.pollIntervalMs) + 1);
      const at = start + tick * options.pollIntervalMs;
      if (at > end) break;
      await sleep(Math.max(0, at - now()));
      if (stopped()) break;
      const polled = ticks.get(tick) ?? { moved: false };
      ticks.set(tick, polled);
      const chainHeads = await heads.read();
      // A new block, or a request whose API failed for now due for its retry (src/node/api-retries.ts).
      if (!state.moved(chain.id, chainHeads) && deps.apiRetries?.dueOn(chain.id) !== true) continue;
      polled.moved = true;
      const cycle = await settleBy(
        runCycle(config, { ...deps, window: state.cycleWindow({ chainId: chain.id, heads: chainHeads }) }, [chain]),
        options.deadline,
        () => undefined,
      );
      // Not settled by the deadline: what it did is not in the report; it sends nothing more.
      if (!cycle) break;
      state.record(cycle);
      cycle.rpcCalls += await latency.afterCycle(cycle, state.stores);
      await options.afterCycle?.(cycle);
      summary = mergeSummaries(summary, cycle);
    }
    summary.rpcCalls += heads.rpcCalls;
  };
  await Promise.all(config.chains.map(pollChain));
  const window = { polls: ticks.size, idlePolls: [...ticks.values()].filter((t) => !t.moved).length };
  deps.logger.info({ ...window, transactions: summary.transactions }, 'window finished');
  return { ...summary, window, latency: latency.samples };
}
