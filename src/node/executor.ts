// Shard executors. The interface is deliberately small and JSON-only so that a Kubernetes-Jobs
// executor can run each shard as `oracle-node worker --shard <file>` in another pod.

import { mapLimit } from '../common/concurrency.js';
import { errorMessage } from '../common/errors.js';
import type { ShardInput, ShardOutput } from '../contract/shard.js';
import { runShard, type ShardContext } from './shard.js';

export type ShardResult =
  | { ok: true; output: ShardOutput }
  | { ok: false; chainId: string; sponsorWallet: string; error: string };

export interface ShardExecutor {
  /** Runs the shards with at most `concurrency` at a time; never rejects because of one shard. */
  run(shards: ShardInput[], options: { concurrency: number }): Promise<ShardResult[]>;
}

export class InProcessExecutor implements ShardExecutor {
  constructor(private readonly context: ShardContext) {}

  async run(shards: ShardInput[], options: { concurrency: number }): Promise<ShardResult[]> {
    return mapLimit(shards, options.concurrency, async (shard): Promise<ShardResult> => {
      try {
        return { ok: true, output: await runShard(shard, this.context) };
      } catch (error) {
        this.context.logger.error(
          { chainId: shard.chainId, sponsorWallet: shard.sponsorWallet, err: errorMessage(error) },
          'shard failed',
        );
        return {
          ok: false,
          chainId: shard.chainId,
          sponsorWallet: shard.sponsorWallet,
          error: errorMessage(error),
        };
      }
    });
  }
}
