// API workers as real `oracle-node worker --shard -` processes, one per shard, as in the operator's worker pods: the
// shard's JSON on stdin and the output line read back from stdout are all that crosses, parsed by the contract.
import { mapLimit } from '../../src/common/concurrency.js';
import { type ApiShardInput, parseShardOutput } from '../../src/contract/shard.js';
import type { ApiShardResult, ApiWorkers } from '../../src/node/executor.js';
import { spawnOracleNode } from './binary.js';

export class WorkerProcesses implements ApiWorkers {
  /** Every shard handed to a worker, in order. */
  readonly inputs: ApiShardInput[] = [];

  /**
   * @param args the worker's options after `--shard -` (its config and secrets)
   * @param env the worker's environment: added to this process's, or, with `only`, all it gets (and PATH)
   */
  constructor(
    private readonly args: string[],
    private readonly env: Record<string, string>,
    private readonly options: { only?: boolean } = {},
  ) {}

  run(shards: ApiShardInput[], options: { concurrency: number }): Promise<ApiShardResult[]> {
    this.inputs.push(...shards);
    return mapLimit(
      shards,
      options.concurrency,
      (shard) =>
        new Promise<ApiShardResult>((resolve) => {
          const env = this.options.only
            ? { PATH: process.env['PATH'] ?? '', ...this.env }
            : { ...process.env, ...this.env };
          const child = spawnOracleNode(['worker', '--shard', '-', ...this.args], { env });
          let stdout = '';
          let stderr = '';
          child.stdout!.on('data', (chunk) => {
            stdout += chunk;
          });
          child.stderr!.on('data', (chunk) => {
            stderr += chunk;
          });
          child.stdin!.end(JSON.stringify(shard));
          child.once('exit', (code) => {
            const output = code === 0 ? parseShardOutput(stdout) : undefined;
            resolve(output ? { ok: true, output } : { ok: false, error: `worker exited ${code}: ${stderr}` });
          });
        }),
    );
  }
}
