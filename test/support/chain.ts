// A real EVM chain for tests, the demo and the benchmark: anvil on 127.0.0.1 with the real protocol
// contracts of @api3/airnode-protocol@0.15.0 (bytecode as published) and our test requester compiled with solc.
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type BaseContract,
  ContractFactory,
  type InterfaceAbi,
  JsonRpcProvider,
  NonceManager,
  type TransactionReceipt,
  type TransactionResponse,
  Wallet,
} from 'ethers';
import { waitFor } from './wait.js';

const require = createRequire(import.meta.url);
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cacheDir = join(repoRoot, '.cache', 'test-chain');
/** Where scripts/test-chain.ts (make local-chain) writes its addresses for scripts/local-request.ts. */
export const LOCAL_CHAIN_FILE = join(repoRoot, '.cache', 'local-chain.json');

export const ANVIL_BINARY = join(repoRoot, 'node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil');
export const CHAIN_ID = 31337;
/** anvil's first default account (public, well-known test key); deploys everything. */
export const DEPLOYER_PRIVATE_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
/** The usual test mnemonic of the Airnode docs; never holds real funds. */
export const TEST_MNEMONIC = 'achieve climb couple wait accident symbol spy blouse reduce foil echo label';
/** Where deployProtocol puts AirnodeRrpV0 on a fresh chain (the deployer's nonce 0), as the example configs expect. */
export const EXAMPLE_AIRNODE_RRP = '0x5FbDB2315678afecb367f032d93F642f64180aa3';

type Artifact = { abi: InterfaceAbi; bytecode: string };

/** A contract's ABI and bytecode as published in a protocol package's typechain factories. */
function packageArtifact(pkg: string, factoryPath: string, name: string): Artifact {
  const module = require(`${pkg}/dist/src/contracts/factories/${factoryPath}`) as Record<
    string,
    { abi: InterfaceAbi; bytecode: string }
  >;
  const factory = module[`${name}__factory`];
  if (!factory) throw new Error(`No factory ${name} in ${pkg}`);
  return { abi: factory.abi, bytecode: factory.bytecode };
}

const protocolArtifact = (factoryPath: string, name: string) =>
  packageArtifact('@api3/airnode-protocol', factoryPath, name);

export const protocolArtifacts = {
  AccessControlRegistry: () =>
    protocolArtifact('access-control-registry/AccessControlRegistry__factory.js', 'AccessControlRegistry'),
  RequesterAuthorizerWithAirnode: () =>
    protocolArtifact('authorizers/RequesterAuthorizerWithAirnode__factory.js', 'RequesterAuthorizerWithAirnode'),
  AirnodeRrpV0: () => protocolArtifact('rrp/AirnodeRrpV0__factory.js', 'AirnodeRrpV0'),
  AirnodeRrpV0DryRun: () => protocolArtifact('rrp/AirnodeRrpV0DryRun__factory.js', 'AirnodeRrpV0DryRun'),
};

const protocolV1Artifact = (factoryPath: string, name: string) =>
  packageArtifact('@api3/airnode-protocol-v1', factoryPath, name);

/** Contracts of @api3/airnode-protocol-v1@3.4.0 (bytecode as published), home of the ERC721 authorizer. */
export const protocolV1Artifacts = {
  AccessControlRegistry: () =>
    protocolV1Artifact('access-control-registry/AccessControlRegistry__factory.js', 'AccessControlRegistry'),
  RequesterAuthorizerWithErc721: () =>
    protocolV1Artifact('authorizers/RequesterAuthorizerWithErc721__factory.js', 'RequesterAuthorizerWithErc721'),
  MockErc721: () => protocolV1Artifact('authorizers/mock/MockErc721__factory.js', 'MockErc721'),
};

/** Compiles test/support/contracts/Requester.sol with solc-js 0.8.9; the output is cached by source hash. */
export function compileRequester(): Artifact {
  const sourcePath = join(repoRoot, 'test/support/contracts/Requester.sol');
  const source = readFileSync(sourcePath, 'utf8');
  const hash = createHash('sha256').update(source).digest('hex').slice(0, 16);
  const cached = join(cacheDir, `Requester-${hash}.json`);
  if (existsSync(cached)) return JSON.parse(readFileSync(cached, 'utf8')) as Artifact;

  const solc = require('solc') as { compile: (input: string, options: object) => string };
  const input = {
    language: 'Solidity',
    sources: { 'Requester.sol': { content: source } },
    settings: {
      optimizer: { enabled: true, runs: 1000 },
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
    },
  };
  const findImports = (path: string) => {
    try {
      return { contents: readFileSync(require.resolve(path), 'utf8') };
    } catch {
      return { error: `File not found: ${path}` };
    }
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImports })) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<string, Record<string, { abi: InterfaceAbi; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join('\n'));
  const contract = output.contracts['Requester.sol']?.['Requester'];
  if (!contract) throw new Error('solc produced no Requester contract');
  const artifact = { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` };
  mkdirSync(cacheDir, { recursive: true });
  writeFileSync(cached, JSON.stringify(artifact));
  return artifact;
}

export { freePort } from './net.js';

import { freePort } from './net.js';

export type Anvil = { url: string; port: number; process: ChildProcess; stop: () => Promise<void> };

/**
 * Starts anvil with instant mining and waits until it answers: on a free loopback port by default, or on `host`
 * (e.g. the host's address on the real node's pod bridge, so pods reach it too).
 */
export async function startAnvil(
  options: { host?: string; port?: number; accounts?: number; chainId?: number } = {},
): Promise<Anvil> {
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? (await freePort());
  const child = spawn(
    ANVIL_BINARY,
    [
      '--host',
      host,
      '--port',
      String(port),
      '--chain-id',
      String(options.chainId ?? CHAIN_ID),
      '--accounts',
      String(options.accounts ?? 10),
      '--gas-limit',
      '100000000',
      '--silent',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const url = `http://${host}:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`anvil exited with ${child.exitCode}: ${stderr}`);
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      });
      if (response.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`anvil did not start on ${url}: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const stop = async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  };
  return { url, port, process: child, stop };
}

export type Deployment = {
  chainId: number;
  url: string;
  AccessControlRegistry: string;
  RequesterAuthorizerWithAirnode: string;
  AirnodeRrpV0: string;
  AirnodeRrpV0DryRun: string;
  Requester: string;
};

export function testProvider(url: string, chainId: number = CHAIN_ID): JsonRpcProvider {
  return new JsonRpcProvider(url, chainId, { staticNetwork: true, batchMaxCount: 1, pollingInterval: 50 });
}

/**
 * The receipt of a sent transaction, asked for until it is there (at most `timeoutMs`), in place of ethers' `wait()`
 * and `waitForDeployment()`. Those check once, then wait for a block event; the provider answers that check from a
 * 250 ms cache and its block poller takes the head it first reads as already seen, so on an instant-mining anvil a
 * transaction mined in between has no block after it and the wait never ends. Seen under load: a 600 s hook timeout,
 * and the mocha process then kept alive by ethers' polling.
 */
export async function minedReceipt(
  tx: TransactionResponse | null | undefined,
  timeoutMs = 60_000,
): Promise<TransactionReceipt> {
  if (!tx) throw new Error('minedReceipt: no transaction (a contract not deployed by this signer?)');
  const receipt = await waitFor(() => tx.provider.getTransactionReceipt(tx.hash), timeoutMs, {
    intervalMs: 25,
    description: `transaction ${tx.hash} mined`,
  });
  if (receipt.status === 0) throw new Error(`transaction ${tx.hash} reverted`);
  return receipt;
}

/** A contract just deployed, once its deployment transaction is mined (see minedReceipt). */
export async function deployed<T extends BaseContract>(contract: T): Promise<T> {
  await minedReceipt(contract.deploymentTransaction());
  return contract;
}

export function deployer(url: string, chainId: number = CHAIN_ID): NonceManager {
  return new NonceManager(new Wallet(DEPLOYER_PRIVATE_KEY, testProvider(url, chainId)));
}

/** A deploy function for the deployer account of the chain at `url`: artifact + constructor args -> address. */
function deployerOf(url: string, chainId: number) {
  const signer = deployer(url, chainId);
  return async (artifact: Artifact, ...args: unknown[]): Promise<string> => {
    const contract = await deployed(await new ContractFactory(artifact.abi, artifact.bytecode, signer).deploy(...args));
    return contract.getAddress();
  };
}

/** Deploys the protocol contracts and one requester; returns their addresses. */
export async function deployProtocol(url: string, chainId: number = CHAIN_ID): Promise<Deployment> {
  const deploy = deployerOf(url, chainId);
  // AirnodeRrpV0 first: the deployer's first contract is at EXAMPLE_AIRNODE_RRP, the address of the reference's
  // example configs, manifests/samples/ and examples/local/, so they run against this chain unchanged.
  const rrp = await deploy(protocolArtifacts.AirnodeRrpV0());
  const accessControlRegistry = await deploy(protocolArtifacts.AccessControlRegistry());
  const requesterAuthorizer = await deploy(
    protocolArtifacts.RequesterAuthorizerWithAirnode(),
    accessControlRegistry,
    'RequesterAuthorizerWithAirnode admin',
  );
  const dryRun = await deploy(protocolArtifacts.AirnodeRrpV0DryRun());
  const requester = await deploy(compileRequester(), rrp);
  return {
    chainId,
    url,
    AccessControlRegistry: accessControlRegistry,
    RequesterAuthorizerWithAirnode: requesterAuthorizer,
    AirnodeRrpV0: rrp,
    AirnodeRrpV0DryRun: dryRun,
    Requester: requester,
  };
}

/** Deploys one more requester contract (e.g. an unauthorized one). */
export async function deployRequester(url: string, rrp: string): Promise<string> {
  return deployerOf(url, CHAIN_ID)(compileRequester(), rrp);
}

/** Starts anvil and deploys everything: the one call tests need. */
export async function startTestChain(
  options: { host?: string; port?: number; accounts?: number; chainId?: number } = {},
) {
  const anvil = await startAnvil(options);
  try {
    const deployment = await deployProtocol(anvil.url, options.chainId);
    return { anvil, deployment };
  } catch (error) {
    await anvil.stop();
    throw error;
  }
}

export type Erc721Deployment = {
  AccessControlRegistry: string;
  RequesterAuthorizerWithErc721: string;
  /** MockErc721: tokens 0..9 belong to the deployer. */
  MockErc721: string;
};

/** Deploys the v1 AccessControlRegistry, a RequesterAuthorizerWithErc721 on it, and a MockErc721. */
export async function deployErc721Authorizer(url: string, chainId: number = CHAIN_ID): Promise<Erc721Deployment> {
  const deploy = deployerOf(url, chainId);
  const accessControlRegistry = await deploy(protocolV1Artifacts.AccessControlRegistry());
  const authorizer = await deploy(
    protocolV1Artifacts.RequesterAuthorizerWithErc721(),
    accessControlRegistry,
    'RequesterAuthorizerWithErc721 admin',
  );
  const token = await deploy(protocolV1Artifacts.MockErc721());
  return { AccessControlRegistry: accessControlRegistry, RequesterAuthorizerWithErc721: authorizer, MockErc721: token };
}

export async function rpc<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await response.json()) as { result?: T; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result as T;
}

export async function mineBlocks(url: string, count: number): Promise<void> {
  await rpc(url, 'anvil_mine', [`0x${count.toString(16)}`]);
}

export async function setBalance(url: string, address: string, wei: bigint): Promise<void> {
  await rpc(url, 'anvil_setBalance', [address, `0x${wei.toString(16)}`]);
}

/** Waits until anvil's pool holds at least `count` pending transactions (one sent without waiting has arrived). */
export function waitForPending(url: string, count: number, timeoutMs = 30_000): Promise<void> {
  return waitForPool(url, (pending) => pending >= count, `at least ${count} transactions pending`, timeoutMs);
}

/** Waits until anvil's pool is empty: automine mines each transaction, but not before answering. */
export function waitForMined(url: string, timeoutMs = 30_000): Promise<void> {
  return waitForPool(url, (pending) => pending === 0, 'no transaction pending', timeoutMs);
}

/** Polls anvil's pool (`txpool_status`) through waitFor until its pending count passes `test`. */
async function waitForPool(
  url: string,
  test: (pending: number) => boolean,
  description: string,
  timeoutMs: number,
): Promise<void> {
  let last: { pending: string; queued: string } | undefined;
  await waitFor(
    async () => {
      last = await rpc<{ pending: string; queued: string }>(url, 'txpool_status');
      return test(Number(last.pending));
    },
    timeoutMs,
    { intervalMs: 20, description: () => `${description} (pool: ${JSON.stringify(last)})` },
  );
}
