// End-to-end harness for the request-response cycle: an API stand-in (a real HTTP server on 127.0.0.1),
// a node config pointing at the test chain, sponsors, requests, and event counting on chain.
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  AbiCoder,
  Contract,
  keccak256,
  id as keccakId,
  type TransactionResponse,
  toUtf8Bytes,
  Wallet,
  zeroPadValue,
} from 'ethers';
import { sponsorWallets } from '../../src/chain/sponsor-wallets.js';
import { type Config, validateConfig } from '../../src/config/index.js';
import { encodeParameters } from '../../src/ois/abi.js';
import { deriveEndpointId, deriveTemplateIdV0 } from '../../src/protocol/ids.js';
import {
  compileRequester,
  type Deployment,
  deployer,
  minedReceipt,
  protocolArtifacts,
  rpc,
  setBalance,
  TEST_MNEMONIC,
  testProvider,
} from './chain.js';

export const OIS_TITLE = 'Test API';
export const ENDPOINTS = {
  price: deriveEndpointId(OIS_TITLE, 'price'),
  broken: deriveEndpointId(OIS_TITLE, 'broken'),
  counter: deriveEndpointId(OIS_TITLE, 'counter'),
  dynamic: deriveEndpointId(OIS_TITLE, 'dynamic'),
} as const;
export const wallets = sponsorWallets(TEST_MNEMONIC);
export const NODE_ADDRESS = wallets.nodeAddress;

export type ApiServer = { url: string; calls: { path: string }[]; server: Server; close: () => Promise<void> };

/**
 * GET /price?coin=X -> {price}; GET /broken -> 500; GET /counter -> a value that changes on every call.
 * `delayMs` delays a coin's answer; `hold` returns a promise that the answer waits for (a gate the test opens).
 */
export async function startApiServer(
  options: {
    delayMs?: (coin: string) => number;
    hold?: (coin: string) => Promise<void> | undefined;
    /** A fixed port (the local walk-through's); a free one when absent. */
    port?: number;
    /** An answer other than the price for this call of /price (a 429 with its Retry-After, a 503...); none: the price. */
    refuse?: (coin: string) => { status: number; headers?: Record<string, string> } | undefined;
  } = {},
): Promise<ApiServer> {
  const calls: { path: string }[] = [];
  let counter = 0;
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    calls.push({ path: url.pathname });
    res.setHeader('content-type', 'application/json');
    if (url.pathname === '/price') {
      const coin = url.searchParams.get('coin') ?? 'ETH';
      const delay = options.delayMs?.(coin) ?? 0;
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
      await options.hold?.(coin);
      const refusal = options.refuse?.(coin);
      if (refusal) {
        res.writeHead(refusal.status, refusal.headers ?? {});
        res.end(JSON.stringify({ error: `refused with ${refusal.status}` }));
        return;
      }
      res.end(JSON.stringify({ price: coin === 'BTC' ? 65000.5 : 3000.25 }));
    } else if (url.pathname === '/counter') {
      counter++;
      res.end(JSON.stringify({ value: counter }));
    } else {
      res.statusCode = 500;
      res.end(JSON.stringify({ error: 'broken on purpose' }));
    }
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const reserved = [
  { name: '_type', fixed: 'int256' },
  { name: '_path', fixed: 'price' },
  { name: '_times', default: '1000000' },
  { name: '_gasPrice' },
  { name: '_minConfirmations' },
];

export type ConfigOptions = {
  providers: Record<string, string>;
  deployment: Deployment;
  apiUrl: string;
  fulfillmentGasLimit?: number;
  authorizers?: string[];
  /** Other authorizer lists of the chain (raw config shape, see chainAuthorizersSchema); each defaults to []. */
  chainAuthorizers?: {
    crossChainRequesterAuthorizers?: unknown[];
    requesterAuthorizersWithErc721?: unknown[];
    crossChainRequesterAuthorizersWithErc721?: unknown[];
  };
  authorizations?: Record<string, string[]>;
  templates?: { templateId: string; endpointId: string; encodedParameters: string }[];
  minConfirmations?: number;
  maxConcurrency?: number;
  withdrawalRemainder?: { value: number; unit: 'wei' | 'gwei' | 'ether' };
  gasPriceOracle?: unknown[];
  blockHistoryLimit?: number;
};

/** A node config (our canonical names) for the test chain; providers given as secrets interpolation. */
export function buildConfigJson(options: ConfigOptions): {
  config: Record<string, unknown>;
  secrets: Record<string, string>;
} {
  const secrets: Record<string, string> = { NODE_MNEMONIC: TEST_MNEMONIC };
  const providers: Record<string, { url: string }> = {};
  Object.entries(options.providers).forEach(([name, url], i) => {
    secrets[`PROVIDER_URL_${i}`] = url;
    providers[name] = { url: `\${PROVIDER_URL_${i}}` };
  });
  const config = {
    chains: [
      {
        id: String(options.deployment.chainId),
        type: 'evm',
        providers,
        contracts: { NodeRrp: options.deployment.AirnodeRrpV0, NodeRrpDryRun: options.deployment.AirnodeRrpV0DryRun },
        authorizers: {
          requesterEndpointAuthorizers: options.authorizers ?? [],
          crossChainRequesterAuthorizers: [],
          requesterAuthorizersWithErc721: [],
          crossChainRequesterAuthorizersWithErc721: [],
          ...options.chainAuthorizers,
        },
        authorizations: { requesterEndpointAuthorizations: options.authorizations ?? {} },
        options: {
          ...(options.fulfillmentGasLimit ? { fulfillmentGasLimit: options.fulfillmentGasLimit } : {}),
          ...(options.withdrawalRemainder ? { withdrawalRemainder: options.withdrawalRemainder } : {}),
          gasPriceOracle: options.gasPriceOracle ?? [
            { gasPriceStrategy: 'providerRecommendedGasPrice', recommendedGasPriceMultiplier: 1.1 },
            { gasPriceStrategy: 'constantGasPrice', gasPrice: { value: 10, unit: 'gwei' } },
          ],
        },
        maxConcurrency: options.maxConcurrency ?? 100,
        blockHistoryLimit: options.blockHistoryLimit ?? 300,
        minConfirmations: options.minConfirmations ?? 0,
      },
    ],
    nodeSettings: {
      cloudProvider: { type: 'local' },
      nodeWalletMnemonic: `\${NODE_MNEMONIC}`,
      heartbeat: { enabled: false },
      httpGateway: { enabled: false },
      httpSignedDataGateway: { enabled: false },
      oevGateway: { enabled: false },
      logFormat: 'json',
      logLevel: 'ERROR',
      nodeVersion: '0.15.0',
      stage: 'test',
    },
    triggers: {
      rrp: [
        { endpointId: ENDPOINTS.price, oisTitle: OIS_TITLE, endpointName: 'price', cacheResponses: false },
        { endpointId: ENDPOINTS.broken, oisTitle: OIS_TITLE, endpointName: 'broken', cacheResponses: false },
        { endpointId: ENDPOINTS.counter, oisTitle: OIS_TITLE, endpointName: 'counter', cacheResponses: true },
        { endpointId: ENDPOINTS.dynamic, oisTitle: OIS_TITLE, endpointName: 'dynamic', cacheResponses: false },
      ],
      http: [],
      httpSignedData: [],
    },
    templates: options.templates ?? [],
    ois: [
      {
        oisFormat: '2.3.2',
        title: OIS_TITLE,
        version: '1.0.0',
        apiSpecifications: {
          servers: [{ url: options.apiUrl }],
          paths: {
            '/price': { get: { parameters: [{ in: 'query', name: 'coin' }] } },
            '/broken': { get: { parameters: [] } },
            '/counter': { get: { parameters: [] } },
          },
          components: { securitySchemes: {} },
          security: {},
        },
        endpoints: [
          {
            name: 'price',
            operation: { method: 'get', path: '/price' },
            fixedOperationParameters: [],
            reservedParameters: reserved,
            parameters: [{ name: 'coin', operationParameter: { in: 'query', name: 'coin' } }],
          },
          {
            name: 'broken',
            operation: { method: 'get', path: '/broken' },
            fixedOperationParameters: [],
            reservedParameters: reserved,
            parameters: [],
          },
          {
            name: 'counter',
            operation: { method: 'get', path: '/counter' },
            fixedOperationParameters: [],
            reservedParameters: [
              { name: '_type', fixed: 'uint256' },
              { name: '_path', fixed: 'value' },
            ],
            parameters: [],
          },
          {
            // _type and _path chosen by the requester
            name: 'dynamic',
            operation: { method: 'get', path: '/price' },
            fixedOperationParameters: [],
            reservedParameters: [{ name: '_type' }, { name: '_path' }, { name: '_times' }],
            parameters: [{ name: 'coin', operationParameter: { in: 'query', name: 'coin' } }],
          },
        ],
      },
    ],
    apiCredentials: [],
  };
  return { config, secrets };
}

/** A node's files as the CLI reads them: config.json and secrets.env (one NAME="value" line each). */
export type NodeFiles = { config: string; secrets: string /** `-c CONFIG -s SECRETS` */; args: string[] };

/** Writes `config` and `secrets` into `dir` as `<prefix>config.json` and `<prefix>secrets.env`. */
export function writeNodeFiles(
  dir: string,
  { config, secrets }: { config: unknown; secrets: Record<string, string> },
  prefix = '',
): NodeFiles {
  const files = { config: join(dir, `${prefix}config.json`), secrets: join(dir, `${prefix}secrets.env`) };
  writeFileSync(files.config, JSON.stringify(config, null, 2));
  writeFileSync(
    files.secrets,
    Object.entries(secrets)
      .map(([name, value]) => `${name}="${value}"`)
      .join('\n'),
  );
  return { ...files, args: ['-c', files.config, '-s', files.secrets] };
}

export function buildConfig(options: ConfigOptions): Config {
  const { config, secrets } = buildConfigJson(options);
  const result = validateConfig(config, secrets);
  if (!result.ok || !result.config) throw new Error(`test config invalid: ${JSON.stringify(result.errors)}`);
  return result.config;
}

export function encodeCoin(coin: string, extra: { name: string; type: 'string' | 'uint256'; value: string }[] = []) {
  return encodeParameters([{ type: 'string', name: 'coin', value: coin }, ...extra]);
}

const requesterAbi = () => compileRequester().abi;
const rrpAbi = () => protocolArtifacts.AirnodeRrpV0().abi;

/** A sponsor: a funded EOA that sponsors the requester; its sponsor wallet is funded too. */
export async function createSponsor(
  deployment: Deployment,
  seed: string,
  requesters: string[] = [deployment.Requester],
) {
  const wallet = new Wallet(keccak256(toUtf8Bytes(`sponsor:${seed}`)), testProvider(deployment.url));
  await setBalance(deployment.url, wallet.address, 10n ** 20n);
  const sponsorWallet = wallets.addressOf(wallet.address);
  await setBalance(deployment.url, sponsorWallet, 10n ** 19n);
  const rrp = new Contract(deployment.AirnodeRrpV0, rrpAbi(), wallet);
  let nonce = await wallet.getNonce();
  for (const requester of requesters) {
    const tx = await rrp.getFunction('setSponsorshipStatus')(requester, true, { nonce: nonce++ });
    await minedReceipt(tx);
  }
  return { wallet, address: wallet.address, sponsorWallet };
}

function requestIdFrom(receipt: { logs: readonly { topics: readonly string[] }[] } | null): string {
  const topic = keccakId('RequestMade(bytes32)');
  const log = receipt?.logs.find((l) => l.topics[0] === topic);
  if (!log?.topics[1]) throw new Error('no RequestMade event');
  return log.topics[1];
}

export async function makeFullRequest(
  deployment: Deployment,
  input: {
    requester?: string;
    endpointId: string;
    sponsor: string;
    sponsorWallet: string;
    parameters: string;
    /** The node asked; the test mnemonic's when absent. */
    node?: string;
  },
): Promise<string> {
  const requester = new Contract(input.requester ?? deployment.Requester, requesterAbi(), deployer(deployment.url));
  const tx = await requester.getFunction('makeFull')(
    input.node ?? NODE_ADDRESS,
    input.endpointId,
    input.sponsor,
    input.sponsorWallet,
    input.parameters,
  );
  return requestIdFrom(await minedReceipt(tx));
}

/** A full request of the test API's price endpoint for `coin` (with any extra parameters), from the sponsor's wallet. */
export function requestPrice(
  deployment: Deployment,
  sponsor: { address: string; sponsorWallet: string },
  coin = 'ETH',
  extra: Parameters<typeof encodeCoin>[1] = [],
): Promise<string> {
  return makeFullRequest(deployment, {
    endpointId: ENDPOINTS.price,
    sponsor: sponsor.address,
    sponsorWallet: sponsor.sponsorWallet,
    parameters: encodeCoin(coin, extra),
  });
}

export async function makeTemplateRequest(
  deployment: Deployment,
  input: { requester?: string; templateId: string; sponsor: string; sponsorWallet: string; parameters: string },
): Promise<string> {
  const requester = new Contract(input.requester ?? deployment.Requester, requesterAbi(), deployer(deployment.url));
  const tx = await requester.getFunction('makeTemplate')(
    input.templateId,
    input.sponsor,
    input.sponsorWallet,
    input.parameters,
  );
  return requestIdFrom(await minedReceipt(tx));
}

export async function createOnChainTemplate(
  deployment: Deployment,
  endpointId: string,
  parameters: string,
): Promise<string> {
  const rrp = new Contract(deployment.AirnodeRrpV0, rrpAbi(), deployer(deployment.url));
  const tx = await rrp.getFunction('createTemplate')(NODE_ADDRESS, endpointId, parameters);
  await minedReceipt(tx);
  return deriveTemplateIdV0(NODE_ADDRESS, endpointId, parameters);
}

export async function requesterCall<T>(
  deployment: Deployment,
  fn: string,
  args: unknown[],
  requester?: string,
): Promise<T> {
  const contract = new Contract(requester ?? deployment.Requester, requesterAbi(), deployer(deployment.url));
  const result = await contract.getFunction(fn)(...args);
  if (result && typeof result === 'object' && 'wait' in result) await minedReceipt(result as TransactionResponse);
  return result as T;
}

export type RequestEvents = { fulfilled: { data: string }[]; failed: { message: string }[] };

/** FulfilledRequest / FailedRequest events of a request to the test mnemonic's node on chain. */
export async function requestEvents(deployment: Deployment, requestId: string): Promise<RequestEvents> {
  const events = await requestEventsOf(deployment, NODE_ADDRESS, requestId);
  return {
    fulfilled: events.fulfilled.map(({ data }) => ({ data })),
    failed: events.failed.map(({ message }) => ({ message })),
  };
}

/** FulfilledRequest / FailedRequest events of a request to `node` on chain. */
export async function requestEventsOf(
  deployment: Deployment,
  node: string,
  requestId: string,
): Promise<{
  fulfilled: { data: string; transactionHash: string }[];
  failed: { message: string; transactionHash: string }[];
}> {
  const rrp = new Contract(deployment.AirnodeRrpV0, rrpAbi(), testProvider(deployment.url, deployment.chainId));
  const logs = await rpc<{ topics: string[]; data: string; transactionHash: string }[]>(deployment.url, 'eth_getLogs', [
    {
      address: deployment.AirnodeRrpV0,
      fromBlock: '0x0',
      toBlock: 'latest',
      topics: [null, zeroPadValue(node, 32), requestId],
    },
  ]);
  const events: Awaited<ReturnType<typeof requestEventsOf>> = { fulfilled: [], failed: [] };
  for (const log of logs) {
    const parsed = rrp.interface.parseLog(log);
    const { transactionHash } = log;
    if (parsed?.name === 'FulfilledRequest')
      events.fulfilled.push({ data: String(parsed.args.getValue('data')), transactionHash });
    if (parsed?.name === 'FailedRequest')
      events.failed.push({ message: String(parsed.args.getValue('errorMessage')), transactionHash });
  }
  return events;
}

export function int256(value: bigint): string {
  return AbiCoder.defaultAbiCoder().encode(['int256'], [value]);
}
