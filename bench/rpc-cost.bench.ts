// RPC cost of a cycle: the JSON-RPC calls (what providers bill) and HTTP round trips our node and the reference node
// (@api3/airnode-node 0.15.0) send for the same N requests from M sponsors (default 100 from 10), and for an idle
// cycle (nothing pending). Same chain snapshot, same API, same config (the reference's example gas price oracle:
// latest-block percentile, provider recommended, EIP-1559, constant), `fulfillmentGasLimit` set. Each cycle runs in
// its own process from its built package, as in bench/cycle.bench.ts; a recording proxy in front of anvil counts
// calls by method and exchanges. Our idle cycle is also measured as the second cycle of one long-running process
// (`oracle-node start`), where what a process remembers (provider chain ids) costs nothing. Writes the "RPC cost"
// section of docs/benchmarks.md. Needs `make build`.
//   node --import tsx bench/rpc-cost.bench.ts [--requests 100] [--sponsors 10] [--no-write]
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ProviderMemory } from '../src/chain/provider-health.js';
import { loadConfig } from '../src/node/config-loader.js';
import { runCycle } from '../src/node/cycle.js';
import { InProcessExecutor } from '../src/node/executor.js';
import { silentLogger } from '../src/node/logger.js';
import { rpc, startTestChain, waitForMined } from '../test/support/chain.js';
import { buildConfigJson, startApiServer, wallets } from '../test/support/harness.js';
import { startRecordingProxy } from '../test/support/rpc-proxy.js';
import { machine, table, writeSection } from './report.js';
import { answeredCount, makeRequestBurst, ourCli, runNodeCycle, writeCycleFiles } from './support/nodes.js';

const { values: args } = parseArgs({
  options: {
    requests: { type: 'string', default: '100' },
    sponsors: { type: 'string', default: '10' },
    'no-write': { type: 'boolean', default: false },
  },
});

/** The gas price oracle of the reference's example config (config.example.json of @api3/airnode-node 0.15). */
const EXAMPLE_GAS_PRICE_ORACLE = [
  {
    gasPriceStrategy: 'latestBlockPercentileGasPrice',
    percentile: 60,
    minTransactionCount: 20,
    pastToCompareInBlocks: 20,
    maxDeviationMultiplier: 2,
  },
  { gasPriceStrategy: 'providerRecommendedGasPrice', recommendedGasPriceMultiplier: 1.2 },
  {
    gasPriceStrategy: 'providerRecommendedEip1559GasPrice',
    baseFeeMultiplier: 2,
    priorityFee: { value: 3.12, unit: 'gwei' },
  },
  { gasPriceStrategy: 'constantGasPrice', gasPrice: { value: 10, unit: 'gwei' } },
];

type Calls = { calls: number; exchanges: number; byMethod: Record<string, number> };
type Side = {
  kind: 'ours' | 'reference';
  cycles: number;
  loaded: Calls;
  fulfilled: number;
  failed: number;
  idle: Calls;
};

async function main(): Promise<void> {
  const requests = Number(args.requests);
  const sponsorCount = Number(args.sponsors);
  const { anvil, deployment } = await startTestChain({ accounts: 10 });
  const api = await startApiServer();
  const proxy = await startRecordingProxy(anvil.url);
  const taken = (): Calls => ({
    calls: [...proxy.counts.values()].reduce((a, b) => a + b, 0),
    exchanges: proxy.exchanges,
    byMethod: Object.fromEntries([...proxy.counts].sort((a, b) => b[1] - a[1])),
  });
  try {
    await makeRequestBurst(anvil.url, deployment, requests, sponsorCount);
    const { config, secrets } = buildConfigJson({
      providers: { local: proxy.url },
      deployment,
      apiUrl: api.url,
      fulfillmentGasLimit: 500_000,
      maxConcurrency: Math.max(requests, 100),
      gasPriceOracle: EXAMPLE_GAS_PRICE_ORACLE,
    });
    const files = writeCycleFiles(mkdtempSync(join(tmpdir(), 'rpc-cost-bench-')), config, secrets);

    const measure = async (kind: 'ours' | 'reference'): Promise<Side> => {
      const snapshot = await rpc<string>(anvil.url, 'evm_snapshot');
      proxy.reset();
      let cycles = 0;
      let answered = { fulfilled: 0, failed: 0 };
      // Cycles until every request is answered on chain (at most 5).
      // One cache directory for all of a node's runs, as CronJob runs share the cycle ConfigMap.
      const cacheDir = mkdtempSync(join(files.dir, `cache-${kind}-`));
      while (cycles < 5 && answered.fulfilled + answered.failed < requests) {
        await runNodeCycle(kind, files, { cacheDir });
        cycles++;
        await waitForMined(anvil.url, 120_000);
        answered = await answeredCount(anvil.url, deployment.AirnodeRrpV0);
      }
      const loaded = taken();
      proxy.reset();
      await runNodeCycle(kind, files, { cacheDir });
      const idle = taken();
      await rpc(anvil.url, 'evm_revert', [snapshot]);
      process.stderr.write(
        `${kind}: ${answered.fulfilled} fulfilled, ${answered.failed} failed in ${cycles} cycle(s), ${loaded.calls} calls in ` +
          `${loaded.exchanges} round trips ${JSON.stringify(loaded.byMethod)}; idle ${idle.calls} calls ${JSON.stringify(idle.byMethod)}\n`,
      );
      return { kind, cycles, loaded, ...answered, idle };
    };

    /** Our idle cycle as the second cycle of one process (what `oracle-node start` pays every minute). */
    const longRunningIdle = async (): Promise<Calls> => {
      const snapshot = await rpc<string>(anvil.url, 'evm_snapshot');
      const parsed = { config: await loadConfig(files.config, files.secrets) };
      const memory = new ProviderMemory();
      const cycle = async () => {
        const executor = new InProcessExecutor({ config: parsed.config, wallets, logger: silentLogger });
        await runCycle(parsed.config, { executor, logger: silentLogger, wallets, providerMemory: memory });
        await waitForMined(anvil.url, 120_000);
      };
      await cycle();
      proxy.reset();
      await cycle();
      const idle = taken();
      await rpc(anvil.url, 'evm_revert', [snapshot]);
      return idle;
    };

    const ours = await measure('ours');
    const reference = await measure('reference');
    const oursLongRunning = await longRunningIdle();
    const result = { machine: machine(), requests, sponsors: sponsorCount, ours, reference, oursLongRunning };
    console.log(JSON.stringify(result, null, 2));
    if (args['no-write']) return;

    const methods = (calls: Calls) =>
      Object.entries(calls.byMethod)
        .map(([m, n]) => `\`${m}\` ${n}`)
        .join(', ');
    const perRequest = (side: Side) => (side.loaded.calls / requests).toFixed(2);
    const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
    writeSection('RPC cost', [
      `Machine: ${machine()}. ${new Date().toISOString().slice(0, 10)}.`,
      `Command: \`node --import tsx bench/rpc-cost.bench.ts --requests ${requests} --sponsors ${sponsorCount}\` (needs \`make build\`).`,
      '',
      `Setup: anvil with the published AirnodeRrpV0, ${requests} \`makeFullRequest\`s from ${sponsorCount} sponsors mined in a burst, ` +
        "`fulfillmentGasLimit` 500 000, the gas price oracle of the reference's example config (latest-block percentile, " +
        'provider recommended, EIP-1559, constant). Each node runs its cycles in their own process from its built package ' +
        '(as in "Request-response cycle") until every request is answered on chain, then one idle cycle; a recording proxy in ' +
        'front of anvil counts JSON-RPC calls (what providers bill; a batch counts each call in it) and HTTP round trips. ' +
        'Providers bill per call, so calls are the cost; round trips are latency.',
      '',
      ...table(
        ['', 'loaded: calls', 'round trips', 'calls per request', 'answered', 'idle cycle: calls'],
        [false, true, true, true, false, true],
        [
          [
            'ours',
            String(ours.loaded.calls),
            String(ours.loaded.exchanges),
            perRequest(ours),
            `${ours.fulfilled} fulfilled, ${ours.failed} failed, ${ours.cycles} cycle(s)`,
            `${ours.idle.calls} (own process), ${oursLongRunning.calls} (long-running)`,
          ],
          [
            'reference 0.15.0',
            String(reference.loaded.calls),
            String(reference.loaded.exchanges),
            perRequest(reference),
            `${reference.fulfilled} fulfilled, ${reference.failed} failed, ${reference.cycles} cycle(s)`,
            String(reference.idle.calls),
          ],
          [
            'ours / reference',
            ratio(ours.loaded.calls, reference.loaded.calls),
            ratio(ours.loaded.exchanges, reference.loaded.exchanges),
            '',
            '',
            `${ratio(ours.idle.calls, reference.idle.calls)} (own process), ${ratio(oursLongRunning.calls, reference.idle.calls)} (long-running)`,
          ],
        ],
      ),
      '',
      `Loaded, by method — ours: ${methods(ours.loaded)}. Reference: ${methods(reference.loaded)}.`,
      '',
      `Idle, by method — ours in its own process: ${methods(ours.idle)}; ours long-running: ${methods(oursLongRunning)}. Reference: ${methods(reference.idle)}.`,
      '',
      '**Where our calls go.** Per request: one `eth_call` (the static call of `fulfill` that keeps a reverting callback ' +
        'from becoming a reverted, paid transaction: it is answered with `fail` instead) and one `eth_sendRawTransaction`. ' +
        `Per sponsor wallet: two \`eth_getTransactionCount\` (\`latest\` and \`pending\`: the nonce to send from, and the pending ` +
        'transactions the pending-transaction rule leaves alone or replaces). Per chain and cycle: `eth_blockNumber` and ' +
        "`eth_getLogs` (discovery), the gas price oracle's reads (here: the latest block for the percentile strategy, which " +
        'fails on anvil for lack of transactions, then `eth_gasPrice`), read by the coordinator once and handed to every ' +
        'shard, and one `eth_call` for the balances of all the wallets that sent (init code run by `eth_call`, nothing ' +
        'deployed, `src/chain/balances.ts`). Per provider: one `eth_chainId` when it is first seen, then again at most once an ' +
        'hour or after it failed (a long-running node remembers it in memory; a coordinator that runs each cycle in a new ' +
        'process carries it to the next run in the cycle ConfigMap or its cache directory, keyed by an HMAC fingerprint of ' +
        'the provider URL, never the URL: `src/chain/verified-chain-ids.ts`). Before, the ' +
        "gas price oracle's reads and an `eth_getBalance` were made by every sponsor wallet (262 calls for the same cycle).",
      '',
      `**Against the goals** (loaded <= 0.45x, idle <= 0.5x the reference's calls). Loaded: ${ratio(ours.loaded.calls, reference.loaded.calls)}. ` +
        `Of our ${ours.loaded.calls} calls, ${2 * requests} are the two per request and ${ours.loaded.byMethod['eth_getTransactionCount'] ?? 0} the ` +
        'two transaction counts per wallet; what is left is per chain or per process. The goal needs ' +
        `${Math.ceil(ours.loaded.calls - 0.45 * reference.loaded.calls)} calls fewer: one of the two transaction counts per wallet ` +
        '(both feed the pending-transaction rule, see docs/chain-cycle.md), or the static calls batched (below). Idle: a long-running node (`oracle-node start`) sends ' +
        `${oursLongRunning.calls} calls per idle cycle (${ratio(oursLongRunning.calls, reference.idle.calls)}); a coordinator that runs each cycle ` +
        "in a new process (the Kubernetes CronJob, this benchmark's own-process column, its runs sharing one cache directory as " +
        `CronJob runs share the cycle ConfigMap) sends ${ours.idle.calls} (${ratio(ours.idle.calls, reference.idle.calls)}): the provider's chain id ` +
        'verified by the loaded run is carried over, not asked again.',
      '',
      '**One call per request: batched simulation.** The static calls are the other half of the per-request cost. One ' +
        "`eth_call` per wallet could simulate all of its cycle's fulfilments in order. `fulfill` requires `msg.sender` to " +
        'be the sponsor wallet (it is part of the hash the request stored), so a simulator contract cannot make the calls ' +
        "from its own address: it must run AT the sponsor wallet's address, which `eth_call`'s state override set allows " +
        '(third parameter: `{ [sponsorWallet]: { code: simulator } }`, then `eth_call` to the sponsor wallet itself). ' +
        'The simulator calls `fulfill` for each request with the gas the transaction would have for execution (its ' +
        'limit minus the intrinsic 21,000 and the calldata gas) and returns each `(success, returndata)`, or the revert ' +
        "data (`Invalid request fulfillment`: skip). The simulation is then sequential (fulfilment 2 runs on fulfilment 1's " +
        'state, as the chain will), where today each static call runs on the discovery block alone, and it needs all API ' +
        'answers before the call (today each request is planned as soon as its answer is in). Providers: the state ' +
        'override set of `eth_call` is taken by geth, Erigon, Nethermind, Besu and anvil and by the large hosted ' +
        "providers built on them, but not by every endpoint, so it needs a fallback to one call per request; the call's " +
        'gas cap (50M by default in geth) bounds a batch to ~100 fulfilments of 500,000 gas. `eth_simulateV1` (geth ' +
        '1.14+, not yet on every provider) does the same with per-call senders and gas without an override, and is the ' +
        'cleaner target where available. With it, our loaded figure here would be about ' +
        `${ours.loaded.calls - requests + sponsorCount} calls (${ratio(ours.loaded.calls - requests + sponsorCount, reference.loaded.calls)}), one simulation per wallet.`,
    ]);
  } finally {
    await proxy.close();
    await api.close();
    await anvil.stop();
  }
}

if (!existsSync(ourCli)) throw new Error(`${ourCli} is missing: run make build first`);
await main();
