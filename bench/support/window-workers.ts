// A coordinator whose windows send their API calls to worker processes, as the operator's coordinator pod sends
// them to worker Jobs, without the pod start-up: each busy poll starts one `oracle-node worker --shard -` of the
// built package per shard (the shard's JSON on stdin, its output line on stdout, parsed by the contract), and the
// coordinator signs, simulates and sends (src/node/executor.ts, WorkerExecutor). Windows run back to back, as
// `oracle-node start --poll-interval` runs them, until SIGTERM; each logs "window finished" with its polls.
// With `stay` (a fifth argument), each window starts its own workers that stay for it, as the operator's coordinator
// pod starts the window's worker Job (src/node/window-workers.ts): `--stay-workers` built `oracle-node worker
// --coordinator` processes that take the shards over loopback HTTP; until the first asks, the per-shard processes.
//   node --import tsx bench/support/window-workers.ts <config.json> <secrets.env> <poll seconds> <window seconds>
//     [stay <workers>]
import { spawn } from 'node:child_process';
import { dirname } from 'node:path';
import { ProviderMemory } from '../../src/chain/provider-health.js';
import { sponsorWallets } from '../../src/chain/sponsor-wallets.js';
import { mapLimit } from '../../src/common/concurrency.js';
import { ENV } from '../../src/contract/pods.js';
import { parseShardOutput, WINDOW_COORDINATOR_URL_ENV, WINDOW_CREDENTIAL_ENV } from '../../src/contract/shard.js';
import { loadConfig } from '../../src/node/config-loader.js';
import { type ApiWorkers, WorkerExecutor } from '../../src/node/executor.js';
import { createNodeLogger } from '../../src/node/logger.js';
import { runWindow } from '../../src/node/window.js';
import { WindowWorkers } from '../../src/node/window-workers.js';
import { ourCli, repoRoot } from './nodes.js';

const [configPath, secretsPath, pollSeconds, windowSeconds, stay, stayWorkers] = process.argv.slice(2);
if (!configPath || !secretsPath || !pollSeconds || !windowSeconds)
  throw new Error('usage: window-workers.ts <config.json> <secrets.env> <poll seconds> <window seconds>');

const workerEnv = {
  ...process.env,
  PATH: `${dirname(process.execPath)}:${process.env['PATH'] ?? ''}`,
  [ENV.secretScope]: 'worker',
};

/** One built `oracle-node worker --shard -` process per shard, with the worker's secret scope. */
const perShard: ApiWorkers = {
  run: (shards, options) =>
    mapLimit(
      shards,
      options.concurrency,
      (shard) =>
        new Promise((resolve) => {
          const child = spawn(ourCli, ['worker', '--shard', '-', '-c', configPath, '-s', secretsPath], {
            cwd: repoRoot,
            stdio: 'pipe',
            env: workerEnv,
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
const providerMemory = new ProviderMemory();
const stopped = new AbortController();
process.once('SIGTERM', () => stopped.abort());
while (!stopped.signal.aborted) {
  // The window's workers, started at its start (their start-up overlaps its first cycle), told to exit at its end.
  const window = stay === 'stay' ? new WindowWorkers({ fallback: perShard, logger }) : undefined;
  await window?.start({
    host: '127.0.0.1',
    port: 0,
    launch: async (coordinatorUrl, credential) => {
      for (let i = 0; i < Number(stayWorkers ?? 2); i++)
        spawn(ourCli, ['worker', '--coordinator', '-c', configPath, '-s', secretsPath], {
          cwd: repoRoot,
          stdio: 'ignore',
          env: { ...workerEnv, [WINDOW_COORDINATOR_URL_ENV]: coordinatorUrl, [WINDOW_CREDENTIAL_ENV]: credential },
        });
    },
  });
  const executor = new WorkerExecutor({ config, wallets, logger }, window ?? perShard);
  await runWindow(
    config,
    { executor, logger, wallets, providerMemory },
    {
      windowMs: Number(windowSeconds) * 1000,
      pollIntervalMs: Number(pollSeconds) * 1000,
      signal: stopped.signal,
    },
  );
  if (window) logger.info({ runs: window.runs }, "the window's workers served");
  await window?.stop();
}
