// Request-response cycle benchmark: N pending requests (default 1,000 from 50 sponsors) on anvil, served
// in one cycle by this node and, from the same chain snapshot and the same API, by the reference node
// (@api3/airnode-node 0.15.0 local handlers). Each node runs in its own child process; RPC calls are
// counted by a JSON-RPC proxy in front of anvil; wall time and peak RSS are measured in the child.
//   node --import tsx bench/cycle.bench.ts [--requests 1000] [--sponsors 50] [--runs 3] [--no-reference]
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { AbiCoder, Contract, NonceManager, Wallet, zeroPadValue } from 'ethers';
import { rpc, startTestChain, testProvider, waitForMined } from '../test/support/chain.js';
import {
  buildConfigJson,
  ENDPOINTS,
  encodeCoin,
  NODE_ADDRESS,
  startApiServer,
  wallets,
} from '../test/support/harness.js';

const repoRoot = resolve(import.meta.dirname, '..');
const { values: args } = parseArgs({
  options: {
    requests: { type: 'string', default: '1000' },
    sponsors: { type: 'string', default: '50' },
    runs: { type: 'string', default: '3' },
    'no-reference': { type: 'boolean', default: false },
    only: { type: 'string' },
    'reference-logs': { type: 'string' },
    child: { type: 'string' },
    config: { type: 'string' },
  },
});

type ChildResult = { wallMs: number; maxRssMb: number; heapPeakMb: number };

// ---------------------------------------------------------------------------------------------------
// Child mode: run exactly one cycle of one node and report timing and memory on stdout.
async function runChild(kind: string, configPath: string): Promise<void> {
  let heapPeak = 0;
  const sampler = setInterval(() => {
    heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
  }, 10);
  const { readFileSync } = await import('node:fs');
  const { config: configJson, secrets } = JSON.parse(readFileSync(configPath, 'utf8')) as {
    config: Record<string, unknown>;
    secrets: Record<string, string>;
  };
  let wallMs: number;
  if (kind === 'ours') {
    const { validateConfig } = await import('../src/config/index.js');
    const { runCycle } = await import('../src/node/cycle.js');
    const { InProcessExecutor } = await import('../src/node/executor.js');
    const { MemoryResponseCache } = await import('../src/node/cache.js');
    const { silentLogger } = await import('../src/node/logger.js');
    const { sponsorWallets } = await import('../src/chain/sponsor-wallets.js');
    const result = validateConfig(configJson, secrets);
    if (!result.config) throw new Error(JSON.stringify(result.errors));
    const config = result.config;
    const start = performance.now();
    const nodeWallets = sponsorWallets(config.nodeSettings.nodeWalletMnemonic);
    const executor = new InProcessExecutor({
      config,
      wallets: nodeWallets,
      logger: silentLogger,
      cache: new MemoryResponseCache(),
    });
    const summary = await runCycle(config, { executor, logger: silentLogger, wallets: nodeWallets });
    wallMs = performance.now() - start;
    const shardTimings = summary.results.flatMap((r) => (r.ok ? [r.output.timings] : []));
    const slowest = (key: 'apiMs' | 'planMs' | 'sendMs') => Math.max(0, ...shardTimings.map((t) => t[key]));
    process.stderr.write(
      `ours: ${JSON.stringify({ ...summary.transactions, ...summary.timings, slowestShard: { api: slowest('apiMs'), plan: slowest('planMs'), send: slowest('sendMs') } })}\n`,
    );
  } else {
    // The reference reads config.json from its own package directory; point it at ours instead.
    const require = createRequire(import.meta.url);
    const referenceConfig = toReferenceConfig(configJson, secrets);
    const referencePath = join(tmpdir(), `reference-config-${process.pid}.json`);
    writeFileSync(referencePath, JSON.stringify(referenceConfig));
    const configModule = require('@api3/airnode-node/dist/src/config') as {
      loadTrustedConfig: (path: string, secrets: Record<string, string | undefined>) => unknown;
    };
    const original = configModule.loadTrustedConfig;
    configModule.loadTrustedConfig = (_path, env) => original(referencePath, env);
    if (!process.env['REFERENCE_LOGS']) process.env['SILENCE_LOGGER'] = 'true';
    const local = require('@api3/airnode-node/dist/src/workers/local-handlers') as {
      startCoordinator: () => Promise<unknown>;
    };
    const start = performance.now();
    await local.startCoordinator();
    wallMs = performance.now() - start;
  }
  clearInterval(sampler);
  const result: ChildResult = {
    wallMs,
    maxRssMb: process.resourceUsage().maxRSS / 1024,
    heapPeakMb: heapPeak / 1024 / 1024,
  };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

/** Our canonical names back to the reference's (airnodeWalletMnemonic, AirnodeRrp), secrets inlined. */
function toReferenceConfig(config: Record<string, unknown>, secrets: Record<string, string>): Record<string, unknown> {
  let text = JSON.stringify(config);
  for (const [name, value] of Object.entries(secrets)) text = text.replaceAll(`\${${name}}`, value);
  const parsed = JSON.parse(text) as {
    nodeSettings: Record<string, unknown>;
    chains: { contracts: Record<string, string> }[];
  };
  const { nodeWalletMnemonic, ...settings } = parsed.nodeSettings;
  parsed.nodeSettings = {
    ...settings,
    airnodeWalletMnemonic: nodeWalletMnemonic,
    logLevel: process.env['REFERENCE_LOGS'] ? 'INFO' : 'ERROR',
  };
  for (const chain of parsed.chains) {
    chain.contracts = { AirnodeRrp: chain.contracts['NodeRrp']!, AirnodeRrpDryRun: chain.contracts['NodeRrpDryRun']! };
  }
  return parsed;
}

// ---------------------------------------------------------------------------------------------------
// Parent mode.

/** A JSON-RPC proxy in front of anvil that counts requests by method. */
async function countingProxy(target: string): Promise<{ url: string; counts: Map<string, number>; server: Server }> {
  const counts = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        const parsed = JSON.parse(body) as { method?: string } | { method?: string }[];
        for (const call of Array.isArray(parsed) ? parsed : [parsed]) {
          const method = call.method ?? '?';
          counts.set(method, (counts.get(method) ?? 0) + 1);
        }
      } catch {
        counts.set('<malformed>', (counts.get('<malformed>') ?? 0) + 1);
      }
      const upstream = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      res.setHeader('content-type', 'application/json');
      res.end(await upstream.text());
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, counts, server };
}

async function runNode(kind: 'ours' | 'reference', configPath: string): Promise<ChildResult> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'bench/cycle.bench.ts', '--child', kind, '--config', configPath],
    {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...(args['reference-logs'] && kind === 'reference' ? { REFERENCE_LOGS: '1' } : {}) },
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => {
    stdout += c;
  });
  child.stderr.on('data', (c) => {
    stderr += c;
  });
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  if (args['reference-logs'] && kind === 'reference') writeFileSync(args['reference-logs'], stdout + stderr);
  const line = stdout.split('\n').find((l) => l.startsWith('RESULT '));
  if (code !== 0 || !line) throw new Error(`${kind} child failed (${code}): ${stderr.slice(-2000)}`);
  if (stderr.trim()) process.stderr.write(`${stderr.trim().split('\n').slice(-3).join('\n')}\n`);
  return JSON.parse(line.slice(7)) as ChildResult;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

async function answeredCount(
  url: string,
  rrp: string,
): Promise<{ fulfilled: number; failed: number; failures: Record<string, number> }> {
  const logs = await rpc<{ topics: string[]; data: string }[]>(url, 'eth_getLogs', [
    { address: rrp, fromBlock: '0x0', toBlock: 'latest', topics: [null, zeroPadValue(NODE_ADDRESS, 32)] },
  ]);
  const fulfilled = '0xc0977dab79883641ece94bb6a932ca83049f561ffff8d8daaeafdbc1acce9e0a';
  const failed = '0xc7143b2270cddda57e0087ca5e2a4325657dcab10d10f6b1f9d5ce6b41cb97fc';
  const failures: Record<string, number> = {};
  for (const log of logs.filter((l) => l.topics[0] === failed)) {
    const [message] = AbiCoder.defaultAbiCoder().decode(['string'], log.data);
    failures[String(message)] = (failures[String(message)] ?? 0) + 1;
  }
  return {
    fulfilled: logs.filter((l) => l.topics[0] === fulfilled).length,
    failed: logs.filter((l) => l.topics[0] === failed).length,
    failures,
  };
}

async function main(): Promise<void> {
  const requests = Number(args.requests);
  const sponsorCount = Number(args.sponsors);
  const runs = Number(args.runs);
  const { anvil, deployment } = await startTestChain({ accounts: 10 });
  const api = await startApiServer();
  const proxy = await countingProxy(anvil.url);
  try {
    // Sponsors, sponsorships and funded sponsor wallets.
    const requesterAbi = (await import('../test/support/chain.js')).compileRequester().abi;
    const rrpAbi = (await import('../test/support/chain.js')).protocolArtifacts.AirnodeRrpV0().abi;
    const sponsors: { address: string; sponsorWallet: string }[] = [];
    for (let i = 0; i < sponsorCount; i++) {
      const wallet = new Wallet(`0x${(i + 1).toString(16).padStart(64, 'a')}`, testProvider(anvil.url));
      await rpc(anvil.url, 'anvil_setBalance', [wallet.address, '0x56bc75e2d63100000']);
      const sponsorWallet = wallets.addressOf(wallet.address);
      await rpc(anvil.url, 'anvil_setBalance', [sponsorWallet, '0x56bc75e2d63100000']);
      const rrp = new Contract(deployment.AirnodeRrpV0, rrpAbi, wallet);
      await rrp.getFunction('setSponsorshipStatus')(deployment.Requester, true);
      sponsors.push({ address: wallet.address, sponsorWallet });
    }
    await waitForMined(anvil.url);
    // All requests land in a few blocks, as in a burst on a real chain.
    await rpc(anvil.url, 'evm_setAutomine', [false]);
    const requester = new Contract(
      deployment.Requester,
      requesterAbi,
      new NonceManager(
        new Wallet('0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80', testProvider(anvil.url)),
      ),
    );
    for (let i = 0; i < requests; i++) {
      const sponsor = sponsors[i % sponsorCount]!;
      await requester.getFunction('makeFull')(
        NODE_ADDRESS,
        ENDPOINTS.price,
        sponsor.address,
        sponsor.sponsorWallet,
        encodeCoin(i % 2 ? 'BTC' : 'ETH'),
        { gasLimit: 300_000 },
      );
    }
    for (let i = 0; i < 1000; i++) {
      const status = await rpc<{ pending: string }>(anvil.url, 'txpool_status');
      if (Number(status.pending) === 0) break;
      await rpc(anvil.url, 'evm_mine', []);
    }
    await rpc(anvil.url, 'evm_setAutomine', [true]);

    const dir = mkdtempSync(join(tmpdir(), 'cycle-bench-'));
    const configPath = join(dir, 'config.json');
    writeFileSync(
      configPath,
      JSON.stringify(
        buildConfigJson({
          providers: { local: proxy.url },
          deployment,
          apiUrl: api.url,
          fulfillmentGasLimit: 500_000,
          maxConcurrency: Math.max(requests, 100),
          gasPriceOracle: [{ gasPriceStrategy: 'constantGasPrice', gasPrice: { value: 10, unit: 'gwei' } }],
        }),
      ),
    );

    const measure = async (kind: 'ours' | 'reference') => {
      const results: (ChildResult & {
        rpcCalls: number;
        byMethod: Record<string, number>;
        fulfilled: number;
        failed: number;
        failures: Record<string, number>;
      })[] = [];
      for (let run = 0; run < runs; run++) {
        const snapshot = await rpc<string>(anvil.url, 'evm_snapshot');
        proxy.counts.clear();
        const result = await runNode(kind, configPath);
        await waitForMined(anvil.url);
        const answered = await answeredCount(anvil.url, deployment.AirnodeRrpV0);
        const byMethod = Object.fromEntries(proxy.counts);
        const rpcCalls = [...proxy.counts.values()].reduce((a, b) => a + b, 0);
        results.push({ ...result, rpcCalls, byMethod, ...answered });
        process.stderr.write(`${kind} run ${run + 1}: ${JSON.stringify({ ...result, rpcCalls, ...answered })}\n`);
        await rpc(anvil.url, 'evm_revert', [snapshot]);
      }
      return results;
    };

    const ours = args.only === 'reference' ? [] : await measure('ours');
    let reference: Awaited<ReturnType<typeof measure>> | undefined;
    let referenceError: string | undefined;
    if (!args['no-reference'] && args.only !== 'ours') {
      try {
        reference = await measure('reference');
      } catch (error) {
        referenceError = (error as Error).message;
      }
    }
    const summarize = (results: typeof ours) => ({
      wallMs: Math.round(median(results.map((r) => r.wallMs))),
      rpcCalls: median(results.map((r) => r.rpcCalls)),
      maxRssMb: Math.round(median(results.map((r) => r.maxRssMb))),
      heapPeakMb: Math.round(median(results.map((r) => r.heapPeakMb))),
      fulfilled: median(results.map((r) => r.fulfilled)),
      failed: median(results.map((r) => r.failed)),
      failuresPerRun: results.map((r) => r.failures),
      byMethod: results[0]?.byMethod,
    });
    const report = {
      machine: {
        cpus: cpus().length,
        cpu: cpus()[0]?.model,
        memoryGb: Math.round(totalmem() / 2 ** 30),
        node: process.version,
      },
      requests,
      sponsors: sponsorCount,
      runs,
      ours: summarize(ours),
      ...(reference ? { reference: summarize(reference) } : {}),
      ...(referenceError ? { referenceError } : {}),
    };
    if (reference && ours.length > 0) {
      const o = summarize(ours);
      const r = summarize(reference);
      Object.assign(report, {
        ratio: {
          wallTime: Number((r.wallMs / o.wallMs).toFixed(2)),
          rpcCalls: Number((r.rpcCalls / o.rpcCalls).toFixed(2)),
          maxRss: Number((r.maxRssMb / o.maxRssMb).toFixed(2)),
        },
      });
    }
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } finally {
    proxy.server.closeAllConnections();
    proxy.server.close();
    await api.close();
    await anvil.stop();
  }
}

if (args.child) await runChild(args.child, args.config ?? '');
else await main();
