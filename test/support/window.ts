// A coordinator window on the test's clock (src/node/window.ts): before poll i the test plays steps[i] on the chain,
// and only then does the window's clock move by a poll interval, so nothing depends on wall time.
import { ProviderMemory } from '../../src/chain/provider-health.js';
import type { Config } from '../../src/config/index.js';
import type { CycleDeps } from '../../src/node/cycle-context.js';
import { InProcessExecutor } from '../../src/node/executor.js';
import { type Logger, silentLogger } from '../../src/node/logger.js';
import type { ShardContext } from '../../src/node/shard.js';
import { runWindow, type WindowSummary } from '../../src/node/window.js';
import { wallets } from './harness.js';

export const POLL_MS = 1000;

export type TestWindowOptions = {
  /** What the shards get beyond the config, wallets and logger (their API calls, retries, ceilings...). */
  context?: Partial<ShardContext>;
  logger?: Logger;
  /** What the cycles get beyond the executor (a standby's delay, the retries of API failures...). */
  deps?: Partial<CycleDeps>;
  /** Told of each move of the window's clock (ms since its start): another clock can follow it. */
  onTick?: (now: number) => void;
};

/**
 * A window of `steps.length` polls; before poll i the test plays steps[i] (the window's own clock never runs, and
 * the providers' memory keeps the same clock).
 */
export async function runTestWindow(
  config: Config,
  steps: (() => Promise<void>)[],
  options: TestWindowOptions = {},
): Promise<WindowSummary> {
  let now = 0;
  let step = 0;
  return runWindow(
    config,
    {
      executor: new InProcessExecutor({ config, wallets, logger: silentLogger, ...options.context }),
      logger: options.logger ?? silentLogger,
      wallets,
      providerMemory: new ProviderMemory(() => now),
      ...options.deps,
    },
    {
      windowMs: steps.length * POLL_MS,
      pollIntervalMs: POLL_MS,
      now: () => now,
      sleep: async (ms) => {
        await steps[step++]?.();
        now += ms;
        options.onTick?.(now);
      },
    },
  );
}
