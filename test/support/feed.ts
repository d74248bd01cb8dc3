// Airnode feed test support: a feed config.json over a loopback price API, the real @api3/signed-api 3.3.0 and the
// real @api3/airnode-feed 3.3.0 as child processes on loopback (each reads ./config/ of its working directory).
// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} strings are secret references
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeParameters } from '../../src/ois/abi.js';
import { deriveEndpointId, deriveTemplateIdV1 } from '../../src/protocol/ids.js';
import { repoRoot } from './binary.js';
import { freePort } from './net.js';
import { waitFor } from './wait.js';

export const FEED_OIS_TITLE = 'Feed API';
export const FEED_ENDPOINT = 'prices';
export const FEED_ENDPOINT_ID = deriveEndpointId(FEED_OIS_TITLE, FEED_ENDPOINT);
export const SIGNED_API_VERSION = '3.3.0';

/** A feed template: `_path` picks the asset's price out of the API's one answer for all assets. */
export function feedTemplate(asset: string) {
  const parameters = [
    { type: 'string32', name: '_type', value: 'int256' },
    { type: 'string32', name: '_path', value: `prices.${asset}` },
    { type: 'string32', name: '_times', value: '1000000000000000000' },
  ];
  const encoded = encodeParameters(parameters.map((p) => ({ ...p, type: p.type as 'string32' })));
  return {
    templateId: deriveTemplateIdV1(FEED_ENDPOINT_ID, encoded),
    template: { endpointId: FEED_ENDPOINT_ID, parameters },
  };
}

export type FeedConfigOptions = {
  apiUrl: string;
  /** Asset names; each update of `perUpdate` of them (default 1) shares one API call (the reference requires that
   * they pre-process to the same parameters, reserved ones included). */
  assets: string[];
  perUpdate?: number;
  fetchInterval: number;
  signedApis: { name: string; url: string; authToken: string | null }[];
};

/** config.json of @api3/airnode-feed 3.3.0 (the mnemonic and the API key as ${NAME} from secrets.env). */
export function buildFeedConfig(options: FeedConfigOptions): Record<string, unknown> {
  const templates: Record<string, unknown> = {};
  const ids: string[] = [];
  for (const asset of options.assets) {
    const { templateId, template } = feedTemplate(asset);
    templates[templateId] = template;
    ids.push(templateId);
  }
  const perUpdate = options.perUpdate ?? 1;
  const signedApiUpdates = [];
  for (let i = 0; i < ids.length; i += perUpdate) {
    signedApiUpdates.push({ templateIds: ids.slice(i, i + perUpdate), fetchInterval: options.fetchInterval });
  }
  return {
    apiCredentials: [{ oisTitle: FEED_OIS_TITLE, securitySchemeName: 'apiKey', securitySchemeValue: '${API_KEY}' }],
    endpoints: { [FEED_ENDPOINT_ID]: { oisTitle: FEED_OIS_TITLE, endpointName: FEED_ENDPOINT } },
    nodeSettings: { nodeVersion: '3.3.0', airnodeWalletMnemonic: '${WALLET_MNEMONIC}', stage: 'test' },
    ois: [
      {
        oisFormat: '2.3.0',
        title: FEED_OIS_TITLE,
        version: '1.0.0',
        apiSpecifications: {
          servers: [{ url: options.apiUrl }],
          paths: { '/prices': { get: { parameters: [] } } },
          components: { securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' } } },
          security: { apiKey: [] },
        },
        endpoints: [
          {
            name: FEED_ENDPOINT,
            operation: { method: 'get', path: '/prices' },
            fixedOperationParameters: [],
            reservedParameters: [{ name: '_type' }, { name: '_path' }, { name: '_times' }],
            parameters: [],
          },
        ],
      },
    ],
    signedApis: options.signedApis,
    templates,
    triggers: { signedApiUpdates },
  };
}

export function feedSecrets(mnemonic: string, apiKey: string): string {
  return `WALLET_MNEMONIC=${mnemonic}\nAPI_KEY=${apiKey}\n`;
}

/** A process of a reference package started in its own temporary directory, with its output kept. */
export type ReferenceProcess = {
  url: string;
  dir: string;
  child: ChildProcess;
  output: string[];
  stop(): Promise<void>;
};

function startReference(
  entry: string,
  files: Record<string, string>,
  env: Record<string, string>,
  url: string,
): ReferenceProcess {
  const dir = mkdtempSync(join(tmpdir(), 'feed-ref-'));
  mkdirSync(join(dir, 'config'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, 'config', name), text);
  const child = spawn(process.execPath, [join(repoRoot, entry)], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info', LOG_FORMAT: 'json', LOG_COLORIZE: 'false', ...env },
    stdio: 'pipe',
  });
  const output: string[] = [];
  child.stdout?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  return {
    url,
    dir,
    child,
    output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The real Signed API on loopback: endpoints /delayed (0 s) and /oev, the node allowed with `authToken`. */
export async function startSignedApi(airnode: string, authToken: string): Promise<ReferenceProcess> {
  const port = await freePort();
  const config = {
    endpoints: [
      { urlPath: '/delayed', authTokens: null, delaySeconds: 0, hideSignatures: false, isOev: false },
      { urlPath: '/oev', authTokens: null, delaySeconds: 0, hideSignatures: false, isOev: true },
    ],
    allowedAirnodes: [{ address: airnode, authTokens: [authToken], isCertified: true }],
    stage: 'test',
    version: SIGNED_API_VERSION,
  };
  const url = `http://127.0.0.1:${port}`;
  const api = startReference(
    'node_modules/@api3/signed-api/dist/src/index.js',
    { 'signed-api.json': JSON.stringify(config), 'secrets.env': '' },
    { CONFIG_SOURCE: 'local', SERVER_PORT: String(port) },
    url,
  );
  await waitFor(async () => (await fetch(`${url}/`)).ok, 30_000, {
    description: () => `the Signed API on ${url}: ${api.output.join('')}`,
  });
  return api;
}

/** The reference Airnode feed on a config.json and secrets.env. */
export function startReferenceFeed(config: unknown, secrets: string): ReferenceProcess {
  return startReference(
    'node_modules/@api3/airnode-feed/dist/src/index.js',
    { 'airnode-feed.json': JSON.stringify(config), 'secrets.env': secrets },
    { LOG_HEARTBEAT: 'false' },
    '',
  );
}

export type ServedBeacon = {
  airnode: string;
  templateId: string;
  beaconId: string;
  timestamp: string;
  encodedValue: string;
  signature: string;
  isOevBeacon?: boolean;
};

/** What a Signed API endpoint serves for the node: beacon id -> signed data. */
export async function served(
  signedApiUrl: string,
  path: string,
  airnode: string,
): Promise<Record<string, ServedBeacon>> {
  const response = await fetch(`${signedApiUrl}${path}/${airnode}`);
  if (!response.ok) return {};
  return ((await response.json()) as { data: Record<string, ServedBeacon> }).data;
}
