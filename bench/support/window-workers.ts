// A coordinator whose windows send their API calls to worker processes, as the operator's coordinator pod sends
// them to worker Jobs, without the pod start-up: each busy poll starts one `oracle-node worker --shard -` of the
// built package per shard (the shard's JSON on stdin, its output line on stdout, parsed by the contract), and the
// coordinator signs, simulates and sends (src/node/executor.ts, WorkerExecutor). Windows run back to back, as
// `oracle-node start --poll-interval` runs them, until SIGTERM; each logs "window finished" with its polls.
//   node --import tsx bench/support/window-workers.ts <config.json> <secrets.env> <poll seconds> <window seconds>
import { spawn } from 'node:child_process';
import { dirname } from 'node:path';
import { ProviderMemory } from '../../src/chain/provider-health.js';
import { sponsorWallets } from '../../src/chain/sponsor-wallets.js';
import { mapLimit } from '../../src/common/concurrency.js';
import { ENV } from '../../src/contract/pods.js';
import { parseShardOutput } from '../../src/contract/shard.js';
import { loadConfig } from '../../src/node/config-loader.js';
import { type ApiWorkers, WorkerExecutor } from '../../src/node/executor.js';
import { createNodeLogger } from '../../src/node/logger.js';
import { runWindow } from '../../src/node/window.js';
import { ourCli, repoRoot } from './nodes.js';

const [configPath, secretsPath, pollSeconds, windowSeconds] = process.argv.slice(2);
if (!configPath || !secretsPath || !pollSeconds || !windowSeconds)
  throw new Error('usage: window-workers.ts <config.json> <secrets.env> <poll seconds> <window seconds>');

/** One built `oracle-node worker --shard -` process per shard, with the worker's secret scope. */
const workers: ApiWorkers = {
  run: (shards, options) =>
    mapLimit(
      shards,
      options.concurrency,
      (shard) =>
        new Promise((resolve) => {
          const child = spawn(ourCli, ['worker', '--shard', '-', '-c', configPath, '-s', secretsPath], {
            cwd: repoRoot,
            stdio: 'pipe',
            env: {
              ...process.env,
              PATH: `${dirname(process.execPath)}:${process.env['PATH'] ?? ''}`,
              [ENV.secretScope]: 'worker',
            },
          });
          let stdout = '';
          let stderr = '';
          child.stdout.on('data', (chunk) => {
            stdout += chunk;
          });
          child.stderr.on('data', (chunk) => {
            stderr += chunk;
          });
          child.stdin.end(JSON.stringify(shard));
          child.once('exit', (code) => {
            const output = code === 0 ? parseShardOutput(stdout) : undefined;
            resolve(
              output ? { ok: true, output } : { ok: false, error: `worker exited ${code}: ${stderr.slice(-500)}` },
            );
          });
        }),
    ),
};

const config = await loadConfig(configPath, secretsPath);
const logger = createNodeLogger(config.nodeSettings);
const wallets = sponsorWallets(config.nodeSettings.nodeWalletMnemonic);
const executor = new WorkerExecutor({ config, wallets, logger }, workers);
const providerMemory = new ProviderMemory();
const stopped = new AbortController();
process.once('SIGTERM', () => stopped.abort());
while (!stopped.signal.aborted) {
  await runWindow(
    config,
    { executor, logger, wallets, providerMemory },
    {
      windowMs: Number(windowSeconds) * 1000,
      pollIntervalMs: Number(pollSeconds) * 1000,
      signal: stopped.signal,
    },
  );
}
