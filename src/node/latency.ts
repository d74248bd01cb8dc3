// How long a request waits for its answer, measured by the coordinator window (docs/metrics.md,
// node_request_latency_seconds): from the timestamp of the request's block to the fulfilment's submission (when the
// provider's answer to the send said it took the transaction; else the end of the cycle) and to its inclusion (the
// timestamp of the block that holds the FulfilledRequest or FailedRequest log, when a later poll of the same window
// reads it). A fulfilment mined after its window ended has its submission counted, not its inclusion: the next
// window, another process, does not know when it was sent. Block timestamps cost one eth_getBlockByNumber per
// block, only for blocks that hold a request the window answered or its answer: nothing on an idle poll.
import { topics } from '../chain/contracts.js';
import type { ChainLogStore } from '../chain/log-store.js';
import { fetchBlockTimestamp } from '../chain/logs.js';
import { asQuantity, RpcClient, withTimeout } from '../chain/rpc.js';
import type { Config } from '../config/index.js';
import { MAX_REPORTED_LATENCIES } from '../contract/pods.js';
import type { CycleDeps, CycleSummary } from './cycle.js';

/** A block timestamp read that takes longer than this is left out: its latencies are not counted. */
export const BLOCK_TIME_TIMEOUT_MS = 5_000;
/** At most this many block timestamps are read after one cycle (the rest of its requests go uncounted). */
export const MAX_BLOCK_READS_PER_CYCLE = 50;

/** Seconds, per stage, as the cycle report and the metrics carry them. */
export type LatencySamples = { submission: number[]; inclusion: number[] };

type Awaiting = { requestTs: number };

export class RequestLatency {
  readonly samples: LatencySamples = { submission: [], inclusion: [] };
  /** Request id (per chain) -> its block's timestamp, for the requests whose answer is not seen mined yet. */
  private readonly awaiting = new Map<string, Awaiting>();
  /** Block timestamps read so far (chain + block -> seconds). */
  private readonly blockTimes = new Map<string, number>();

  constructor(
    private readonly config: Config,
    private readonly deps: Pick<CycleDeps, 'rpcClient'>,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * After a cycle: the submission latency of each request it answered with a transaction (a replacement is not a
   * new submission), and the inclusion latency of each awaited answer now in the chain's stored logs. Returns the
   * RPC calls it made.
   */
  async afterCycle(cycle: CycleSummary, stores: ReadonlyMap<string, ChainLogStore>): Promise<number> {
    const learnedAt = this.now() / 1000;
    const blockOf = new Map((cycle.seen ?? []).map((r) => [`${r.chainId}\n${r.id}`, r.blockNumber]));
    const sent: { chainId: string; id: string; block: number; acceptedAt: number }[] = [];
    for (const result of cycle.results) {
      if (!result.ok) continue;
      const { chainId } = result.output;
      for (const outcome of result.output.outcomes) {
        if (outcome.kind !== 'api' || outcome.txHash === undefined || outcome.replacement) continue;
        if (outcome.outcome !== 'fulfilled' && outcome.outcome !== 'failed') continue;
        const block = blockOf.get(`${chainId}\n${outcome.id}`);
        const acceptedAt = outcome.acceptedAtMs === undefined ? learnedAt : outcome.acceptedAtMs / 1000;
        if (block !== undefined) sent.push({ chainId, id: outcome.id, block, acceptedAt });
      }
    }
    const answered: { chainId: string; id: string; block: number; requestTs: number }[] = [];
    for (const [chainId, store] of stores) {
      for (const log of store.stored()) {
        if (log.topics[0] !== topics.FulfilledRequest && log.topics[0] !== topics.FailedRequest) continue;
        const id = log.topics[2]?.toLowerCase();
        const waiting = id === undefined ? undefined : this.awaiting.get(`${chainId}\n${id}`);
        if (!id || !waiting) continue;
        answered.push({
          chainId,
          id,
          block: Number(asQuantity(log.blockNumber, 'log.blockNumber')),
          requestTs: waiting.requestTs,
        });
      }
    }
    const blocks = [...sent, ...answered].map((r) => ({ chainId: r.chainId, block: r.block }));
    const rpcCalls = await this.readBlockTimes(blocks, cycle.providers);
    for (const request of sent) {
      const requestTs = this.blockTimes.get(`${request.chainId}\n${request.block}`);
      if (requestTs === undefined) continue;
      push(this.samples.submission, Math.max(0, request.acceptedAt - requestTs));
      this.awaiting.set(`${request.chainId}\n${request.id.toLowerCase()}`, { requestTs });
    }
    for (const request of answered) {
      const answeredTs = this.blockTimes.get(`${request.chainId}\n${request.block}`);
      if (answeredTs === undefined) continue;
      push(this.samples.inclusion, Math.max(0, answeredTs - request.requestTs));
      this.awaiting.delete(`${request.chainId}\n${request.id}`);
    }
    return rpcCalls;
  }

  /**
   * Timestamps of the blocks not read yet, from the chain's first provider the cycle found fit (its first provider
   * when the cycle used none): one that hangs or lies is not asked. A block that fails is left out.
   */
  private async readBlockTimes(
    blocks: { chainId: string; block: number }[],
    providers: CycleSummary['providers'],
  ): Promise<number> {
    const wanted = new Map<string, { chainId: string; block: number }>();
    for (const b of blocks) {
      const key = `${b.chainId}\n${b.block}`;
      if (!this.blockTimes.has(key) && wanted.size < MAX_BLOCK_READS_PER_CYCLE) wanted.set(key, b);
    }
    if (wanted.size === 0) return 0;
    const makeClient = this.deps.rpcClient ?? ((url: string) => new RpcClient(url));
    const clients = new Map<string, RpcClient>();
    for (const chain of this.config.chains) {
      const fit = providers.find((p) => p.chainId === chain.id && p.ok)?.provider;
      const provider = (fit === undefined ? undefined : chain.providers[fit]) ?? Object.values(chain.providers)[0];
      if (provider) clients.set(chain.id, makeClient(provider.url));
    }
    await Promise.all(
      [...wanted].map(async ([key, { chainId, block }]) => {
        const client = clients.get(chainId);
        if (!client) return;
        try {
          this.blockTimes.set(
            key,
            await withTimeout(fetchBlockTimestamp(client, block), BLOCK_TIME_TIMEOUT_MS, `block ${block}`),
          );
        } catch {
          // No timestamp: this block's requests are not counted.
        }
      }),
    );
    return [...clients.values()].reduce((n, client) => n + client.calls, 0);
  }
}

/** Seconds rounded to milliseconds; at most MAX_REPORTED_LATENCIES per stage (the rest go uncounted). */
function push(samples: number[], seconds: number): void {
  if (samples.length < MAX_REPORTED_LATENCIES) samples.push(Math.round(seconds * 1000) / 1000);
}
