// `oracle-node worker --shard <file|-> -c config.json -s secrets.env`: runs one shard (the transactions
// of one sponsor wallet) and prints its JSON output. The shard file carries no secrets; the worker reads
// the mnemonic and provider URLs from its own config.

import { readFile } from 'node:fs/promises';
import { sponsorWallets } from '../chain/sponsor-wallets.js';
import { errorMessage } from '../common/errors.js';
import { parseShardInput, type ShardInput } from '../contract/shard.js';
import { FileResponseCache } from '../node/cache.js';
import { workerKubernetesCache } from '../node/kubernetes/index.js';
import { createNodeLogger } from '../node/logger.js';
import { runShard } from '../node/shard.js';
import { tracerFromEnvironment } from '../observability/tracing.js';
import { parseCommandArgs } from './args.js';
import { engineEnvironment, loadCommandConfig } from './command-config.js';
import { DEFAULT_CACHE_DIR } from './coordinator.js';
import type { Subcommand } from './subcommand.js';

const HELP = `Usage: oracle-node worker --shard <file|-> -c config.json [-s secrets.env] [--cache-dir DIR]

Without -s, the \${NAME} values of the config come from the environment.

Runs one shard produced by the coordinator and prints its outcome as JSON.
`;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export const command: Subcommand = {
  async run(argv) {
    const parsed = parseCommandArgs(
      argv,
      {
        shard: { type: 'string' },
        config: { type: 'string', short: 'c' },
        secrets: { type: 'string', short: 's' },
        'cache-dir': { type: 'string' },
      },
      HELP,
    );
    if ('exitCode' in parsed) return parsed.exitCode;
    const { values } = parsed;
    const pod = engineEnvironment();
    const configPath = values.config ?? pod.configPath;
    if (!values.shard || !configPath) {
      process.stderr.write(`Missing --shard or -c\n\n${HELP}`);
      return 2;
    }
    let shard: ShardInput;
    try {
      const text = values.shard === '-' ? await readStdin() : await readFile(values.shard, 'utf8');
      const parsed = parseShardInput(text);
      if ('error' in parsed) {
        process.stderr.write(`Not a shard: ${parsed.error}\n`);
        return 2;
      }
      shard = parsed.shard;
    } catch (error) {
      process.stderr.write(`Cannot read the shard: ${errorMessage(error)}\n`);
      return 2;
    }
    const config = await loadCommandConfig(configPath, values.secrets, 'worker');
    if (typeof config === 'number') return config;
    const logger = createNodeLogger(config.nodeSettings, pod);
    // Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set; the shard names each request's trace.
    const tracer = tracerFromEnvironment(process.env, 'worker');
    try {
      const output = await runShard(shard, {
        tracer,
        config,
        wallets: sponsorWallets(config.nodeSettings.nodeWalletMnemonic),
        logger,
        cache: (await workerKubernetesCache()) ?? new FileResponseCache(values['cache-dir'] ?? DEFAULT_CACHE_DIR),
      });
      process.stdout.write(`${JSON.stringify(output)}\n`);
      return 0;
    } catch (error) {
      process.stderr.write(`Shard failed: ${errorMessage(error)}\n`);
      return 1;
    } finally {
      await tracer.flush();
    }
  },
};
