// Shared by the gateway component tests and the gateway benchmark: a loopback API, a config that points
// at it (validated by the real config model) and the real engine (src/ois).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Rate, SlidingWindowLimiter } from '../../../src/common/rate-limit.js';
import { type Config, validateConfig } from '../../../src/config/index.js';
import type { CallEndpoint } from '../../../src/gateway/server.js';
import { deriveEndpointId } from '../../../src/protocol/ids.js';

export const MNEMONIC = 'test test test test test test test test test test test junk';
export const NODE_ADDRESS = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';
export const API_KEY = 'loopback-api-key-7f3a9c';
export const OIS_TITLE = 'Loopback API';

/** A secrets.env reference (dollar, braces, name), interpolated by the config loader. */
const secretRef = (name: string) => '$' + `{${name}}`;

export const ENDPOINTS = {
  price: deriveEndpointId(OIS_TITLE, 'price'),
  status: deriveEndpointId(OIS_TITLE, 'status'),
  text: deriveEndpointId(OIS_TITLE, 'text'),
  object: deriveEndpointId(OIS_TITLE, 'object'),
  slow: deriveEndpointId(OIS_TITLE, 'slow'),
  stamped: deriveEndpointId(OIS_TITLE, 'stamped'),
  crashing: deriveEndpointId(OIS_TITLE, 'crashing'),
};

export type LoopbackApi = {
  url: string;
  port: number;
  requests: number;
  /** Requests answered 429 for being over the quota. */
  rateLimited: number;
  close(): Promise<void>;
};

/** A provider's quota: above `rate` (a sliding window), 429 with these headers (e.g. Retry-After). */
/** Calls over `rate` are refused with `status` (429 by default; 503 as an API in maintenance answers) and `headers`. */
export type LoopbackQuota = { rate: Rate; headers: Record<string, string>; status?: number };

/** A JSON API on 127.0.0.1 that checks its API key like a real one would, and its quota when it has one. */
export async function startLoopbackApi(options: { quota?: LoopbackQuota } = {}): Promise<LoopbackApi> {
  const state = { requests: 0, rateLimited: 0 };
  const quota = options.quota && new SlidingWindowLimiter(options.quota.rate);
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    state.requests++;
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      const text = JSON.stringify(body);
      res.writeHead(status, {
        ...headers,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
    };
    if (req.headers['x-api-key'] !== API_KEY) return json(401, { error: 'bad key' });
    if (quota && !quota.tryAcquire().ok) {
      state.rateLimited++;
      return json(options.quota?.status ?? 429, { error: 'over quota' }, options.quota?.headers);
    }
    if (url.pathname === '/price') return json(200, { coin: url.searchParams.get('coin'), price: 1234.5678 });
    if (url.pathname.startsWith('/status/')) return json(Number(url.pathname.slice(8)) || 500, { error: 'status' });
    if (url.pathname === '/text') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('not json');
      return;
    }
    if (url.pathname === '/object') return json(200, { name: 'no number here' });
    if (url.pathname === '/slow') {
      setTimeout(() => json(200, { price: 1 }), Number(url.searchParams.get('ms') ?? 100));
      return;
    }
    json(404, { error: 'not found' });
  };
  const server: Server = createServer(handle);
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    get requests() {
      return state.requests;
    },
    get rateLimited() {
      return state.rateLimited;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

type GatewaySettings = { enabled: true; maxConcurrency: number; corsOrigins: string[] } | { enabled: false };

export type ConfigOverrides = {
  httpGateway?: GatewaySettings;
  httpSignedDataGateway?: GatewaySettings;
  oevGateway?: GatewaySettings;
  heartbeat?: { enabled: true; url: string; apiKey: string } | { enabled: false };
  gatewayServerPort?: number;
  logLevel?: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
};

const reserved = (path: string) => [
  { name: '_type', fixed: 'int256' },
  { name: '_path', default: path },
  { name: '_times', default: '100' },
];

export function configJson(apiUrl: string, overrides: ConfigOverrides = {}) {
  const endpoint = (name: string, path: string, parameters: unknown[], valuePath = 'price', extra = {}) => ({
    name,
    operation: { method: 'get', path },
    fixedOperationParameters: [],
    reservedParameters: reserved(valuePath),
    parameters,
    ...extra,
  });
  const postProcessing = (value: string) => ({
    fixedOperationParameters: [{ operationParameter: { in: 'query', name: 'coin' }, value: 'eth' }],
    postProcessingSpecificationV2: { environment: 'Node', value, timeoutMs: 5000 },
  });
  const trigger = (endpointName: keyof typeof ENDPOINTS) => ({
    endpointId: ENDPOINTS[endpointName],
    oisTitle: OIS_TITLE,
    endpointName,
  });
  return {
    chains: [],
    nodeSettings: {
      cloudProvider: {
        type: 'local',
        ...(overrides.gatewayServerPort ? { gatewayServerPort: overrides.gatewayServerPort } : {}),
      },
      nodeWalletMnemonic: secretRef('NODE_WALLET_MNEMONIC'),
      heartbeat: overrides.heartbeat ?? { enabled: false },
      httpGateway: overrides.httpGateway ?? { enabled: true, maxConcurrency: 64, corsOrigins: ['https://app.example'] },
      httpSignedDataGateway: overrides.httpSignedDataGateway ?? {
        enabled: true,
        maxConcurrency: 64,
        corsOrigins: ['*'],
      },
      oevGateway: overrides.oevGateway ?? { enabled: true, maxConcurrency: 64, corsOrigins: [] },
      logFormat: 'json',
      logLevel: overrides.logLevel ?? 'ERROR',
      nodeVersion: '0.15.0',
      stage: 'test',
    },
    triggers: {
      rrp: [],
      http: [
        trigger('price'),
        trigger('status'),
        trigger('text'),
        trigger('object'),
        trigger('slow'),
        trigger('stamped'),
        trigger('crashing'),
      ],
      httpSignedData: [trigger('price'), trigger('status'), trigger('slow'), trigger('stamped'), trigger('crashing')],
    },
    templates: [],
    ois: [
      {
        oisFormat: '2.3.2',
        title: OIS_TITLE,
        version: '1.0.0',
        apiSpecifications: {
          servers: [{ url: apiUrl }],
          paths: {
            '/price': { get: { parameters: [{ in: 'query', name: 'coin' }] } },
            '/status/{code}': { get: { parameters: [{ in: 'path', name: 'code' }] } },
            '/text': { get: { parameters: [] } },
            '/object': { get: { parameters: [] } },
            '/slow': { get: { parameters: [{ in: 'query', name: 'ms' }] } },
          },
          components: { securitySchemes: { key: { type: 'apiKey', in: 'header', name: 'x-api-key' } } },
          security: { key: [] },
        },
        endpoints: [
          endpoint('price', '/price', [
            { name: 'coin', operationParameter: { in: 'query', name: 'coin' }, default: 'eth' },
          ]),
          endpoint('status', '/status/{code}', [
            { name: 'code', operationParameter: { in: 'path', name: 'code' }, required: true },
          ]),
          endpoint('text', '/text', []),
          endpoint('object', '/object', [], 'name'),
          endpoint('slow', '/slow', [{ name: 'ms', operationParameter: { in: 'query', name: 'ms' }, default: '100' }]),
          endpoint(
            'stamped',
            '/price',
            [],
            'value',
            postProcessing('({ response }) => ({ response: { value: response.price * 2 }, timestamp: 1700000000 })'),
          ),
          endpoint(
            'crashing',
            '/price',
            [],
            'price',
            postProcessing('() => { throw new Error("post-processing broke"); }'),
          ),
        ],
      },
    ],
    apiCredentials: [{ oisTitle: OIS_TITLE, securitySchemeName: 'key', securitySchemeValue: secretRef('API_KEY') }],
  };
}

export const SECRETS = { NODE_WALLET_MNEMONIC: MNEMONIC, API_KEY };

export function buildConfig(apiUrl: string, overrides: ConfigOverrides = {}): Config {
  const result = validateConfig(configJson(apiUrl, overrides), SECRETS);
  if (!result.ok || !result.config) throw new Error(`test config invalid: ${JSON.stringify(result.errors)}`);
  return result.config;
}

/** The real engine (src/ois). */
export async function loadEngine(): Promise<{ callEndpoint: CallEndpoint; real: boolean }> {
  const engine = await import('../../../src/ois/index.js');
  return { callEndpoint: engine.callEndpoint, real: true };
}
