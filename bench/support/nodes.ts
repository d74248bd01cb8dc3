// What the benchmarks that run a whole cycle share: one cycle of our node (the built `oracle-node coordinator`
// binary) or of the reference node (@api3/airnode-node 0.15.0 `startCoordinator()` of its local handlers, from its
// published dist/) in its own process, each as a user runs it; the chain setup with N requests from M sponsors; and
// the on-chain count of answered requests.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { AbiCoder, Contract, NonceManager, Wallet, zeroPadValue } from 'ethers';
import {
  compileRequester,
  type Deployment,
  protocolArtifacts,
  rpc,
  testProvider,
  waitForMined,
} from '../../test/support/chain.js';
import { ENDPOINTS, encodeCoin, NODE_ADDRESS, wallets } from '../../test/support/harness.js';
import { USAGE_HOOK, usageReports } from './process-usage.js';

export const repoRoot = resolve(import.meta.dirname, '../..');
export const ourCli = join(repoRoot, 'dist/cli/index.js');
const require = createRequire(import.meta.url);
const referenceModule = (path: string) => require.resolve(`@api3/airnode-node/dist/src/${path}`);

/**
 * The reference's cycle as its local deployment runs it: startCoordinator() of its handlers, with its config
 * read from our file instead of its package directory (loadTrustedConfig patched), logs at ERROR.
 */
export function referenceRunner(referenceConfigPath: string): string {
  return [
    `const configModule = require(${JSON.stringify(referenceModule('config'))});`,
    'const original = configModule.loadTrustedConfig;',
    `configModule.loadTrustedConfig = (_path, env) => original(${JSON.stringify(referenceConfigPath)}, env);`,
    "if (!process.env.REFERENCE_LOGS) process.env.SILENCE_LOGGER = 'true';",
    // No exit on success: the process ends when the reference's work is drained, as in its own deployment.
    `require(${JSON.stringify(referenceModule('workers/local-handlers'))}).startCoordinator().catch((error) => {`,
    '  console.error(error);',
    '  process.exitCode = 1;',
    '});',
    '',
  ].join('\n');
}

/** Our canonical names back to the reference's (airnodeWalletMnemonic, AirnodeRrp), secrets inlined. */
export function toReferenceConfig(
  config: Record<string, unknown>,
  secrets: Record<string, string>,
  logLevel: 'INFO' | 'ERROR' = 'ERROR',
): Record<string, unknown> {
  let text = JSON.stringify(config);
  for (const [name, value] of Object.entries(secrets)) text = text.replaceAll(`\${${name}}`, value);
  const parsed = JSON.parse(text) as {
    nodeSettings: Record<string, unknown>;
    chains: { contracts: Record<string, string> }[];
  };
  const { nodeWalletMnemonic, ...settings } = parsed.nodeSettings;
  parsed.nodeSettings = { ...settings, airnodeWalletMnemonic: nodeWalletMnemonic, logLevel };
  for (const chain of parsed.chains) {
    chain.contracts = { AirnodeRrp: chain.contracts['NodeRrp']!, AirnodeRrpDryRun: chain.contracts['NodeRrpDryRun']! };
  }
  return parsed;
}

export type CycleFiles = { dir: string; config: string; secrets: string; referenceRunner: string; hook: string };

/** Writes our config and secrets, the reference's config and runner, and the RSS hook into `dir`. */
export function writeCycleFiles(
  dir: string,
  config: Record<string, unknown>,
  secrets: Record<string, string>,
  referenceLogLevel: 'INFO' | 'ERROR' = 'ERROR',
): CycleFiles {
  const files: CycleFiles = {
    dir,
    config: join(dir, 'config.json'),
    secrets: join(dir, 'secrets.env'),
    referenceRunner: join(dir, 'reference-cycle.cjs'),
    hook: join(dir, 'peak-rss.cjs'),
  };
  writeFileSync(files.config, JSON.stringify(config));
  writeFileSync(
    files.secrets,
    Object.entries(secrets)
      .map(([name, value]) => `${name}=${value}\n`)
      .join(''),
  );
  const referenceConfigPath = join(dir, 'reference-config.json');
  writeFileSync(referenceConfigPath, JSON.stringify(toReferenceConfig(config, secrets, referenceLogLevel)));
  writeFileSync(files.referenceRunner, referenceRunner(referenceConfigPath));
  writeFileSync(files.hook, USAGE_HOOK);
  return files;
}

export type NodeRun = { wallMs: number; maxRssMb: number; stdout: string; stderr: string };

let cycleSeq = 0;
/** One cycle of one node in its own process; wall time from spawn to exit. Throws when it fails. */
export async function runNodeCycle(
  kind: 'ours' | 'reference',
  files: CycleFiles,
  options: { nodeOptions?: string; referenceLogs?: boolean; cacheDir?: string } = {},
): Promise<NodeRun> {
  const command =
    kind === 'ours'
      ? [
          ourCli,
          'coordinator',
          '-c',
          files.config,
          '-s',
          files.secrets,
          '--cache-dir',
          options.cacheDir ?? join(files.dir, `cache-${cycleSeq++}`),
          '--details',
        ]
      : [process.execPath, files.referenceRunner];
  const start = performance.now();
  const child = spawn(command[0]!, command.slice(1), {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      // Our binary's #! line finds node on the PATH: this one.
      PATH: `${dirname(process.execPath)}:${process.env['PATH'] ?? ''}`,
      NODE_OPTIONS: `--require ${files.hook}${options.nodeOptions ? ` ${options.nodeOptions}` : ''}`,
      ...(options.referenceLogs && kind === 'reference' ? { REFERENCE_LOGS: '1' } : {}),
    },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => {
    stdout += c;
  });
  child.stderr.on('data', (c) => {
    stderr += c;
  });
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  const wallMs = performance.now() - start;
  const [usage] = usageReports(stderr);
  if (code !== 0 || !usage) throw new Error(`${kind} cycle failed (${code}): ${stderr.slice(-2000)}`);
  return { wallMs, maxRssMb: usage.peakRssMiB, stdout, stderr };
}

export type AnsweredCount = { fulfilled: number; failed: number; failures: Record<string, number> };

/** Fulfilled and failed events of the node on chain, failures by message. */
export async function answeredCount(url: string, rrp: string): Promise<AnsweredCount> {
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

/**
 * `sponsorCount` sponsors with sponsorships and funded sponsor wallets, then `requests` `makeFull` requests (round
 * robin over the sponsors) mined in a burst of a few blocks, as on a real chain. Automine is on again afterwards.
 */
export async function makeRequestBurst(
  url: string,
  deployment: Deployment,
  requests: number,
  sponsorCount: number,
): Promise<{ address: string; sponsorWallet: string }[]> {
  const requesterAbi = compileRequester().abi;
  const rrpAbi = protocolArtifacts.AirnodeRrpV0().abi;
  const sponsors: { address: string; sponsorWallet: string }[] = [];
  for (let i = 0; i < sponsorCount; i++) {
    const wallet = new Wallet(`0x${(i + 1).toString(16).padStart(64, 'a')}`, testProvider(url));
    await rpc(url, 'anvil_setBalance', [wallet.address, '0x56bc75e2d63100000']);
    const sponsorWallet = wallets.addressOf(wallet.address);
    await rpc(url, 'anvil_setBalance', [sponsorWallet, '0x56bc75e2d63100000']);
    const rrp = new Contract(deployment.AirnodeRrpV0, rrpAbi, wallet);
    await rrp.getFunction('setSponsorshipStatus')(deployment.Requester, true);
    sponsors.push({ address: wallet.address, sponsorWallet });
  }
  await waitForMined(url);
  await rpc(url, 'evm_setAutomine', [false]);
  const requester = new Contract(
    deployment.Requester,
    requesterAbi,
    new NonceManager(
      new Wallet('0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80', testProvider(url)),
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
    const status = await rpc<{ pending: string }>(url, 'txpool_status');
    if (Number(status.pending) === 0) break;
    await rpc(url, 'evm_mine', []);
  }
  await rpc(url, 'evm_setAutomine', [true]);
  return sponsors;
}
