// Gateway benchmark: throughput and p50/p99 latency through the HTTP gateway and the signed-data gateway to
// a loopback API, beside the same load sent straight to that API in the same run, plus raw ethers
// signMessage/s beside signed-data requests/s.
//
// Three processes so that the load generator, the gateway and the API do not share an event loop:
// this one runs autocannon; it forks itself as the API (`--role api`) and as the gateway (`--role gateway`).
//   node --import tsx bench/gateway.bench.ts [--duration 8] [--connections 32]
import { fork } from 'node:child_process';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { AbiCoder, getBytes, keccak256 } from 'ethers';
import { type CallEndpoint, DEFAULT_PATH_KEY, startGatewayServer } from '../src/gateway/server.js';
import { silentLogger } from '../src/observability/index.js';
import { encodeParameters } from '../src/ois/abi.js';
import { nodeWallet } from '../src/protocol/wallet.js';
import {
  API_KEY,
  buildConfig,
  ENDPOINTS,
  loadEngine,
  MNEMONIC,
  startLoopbackApi,
} from '../test/component/gateway/fixtures.js';

const STUB_VALUE = AbiCoder.defaultAbiCoder().encode(['int256'], [123456n]);

const { values } = parseArgs({
  options: {
    role: { type: 'string' },
    api: { type: 'string' },
    duration: { type: 'string', default: '8' },
    connections: { type: 'string', default: '32' },
  },
  allowPositionals: true,
});

// SIGINT ends a child with exit(0) so that --cpu-prof can write its profile.
process.on('SIGINT', () => process.exit(0));

async function serveApi(): Promise<void> {
  const api = await startLoopbackApi();
  process.send!({ port: api.port });
}

async function serveGateway(apiUrl: string): Promise<void> {
  const wide = { enabled: true as const, maxConcurrency: 10_000, corsOrigins: [] };
  const config = buildConfig(apiUrl, { httpGateway: wide, httpSignedDataGateway: wide, oevGateway: wide });
  const { callEndpoint } = await loadEngine();
  const server = await startGatewayServer(config, { host: '127.0.0.1', port: 0, callEndpoint, logger: silentLogger() });
  // The same gateway with an engine that answers at once: the cost of express, validation, metrics and signing
  // alone, without the API call.
  const stub: CallEndpoint = async () => ({
    success: true,
    rawValue: { price: 1234.5678 },
    encodedValue: STUB_VALUE,
    values: ['123456'],
  });
  const stubbed = await startGatewayServer(config, {
    host: '127.0.0.1',
    port: 0,
    callEndpoint: stub,
    logger: silentLogger(),
  });
  process.send!({ port: server.port, stubPort: stubbed.port });
}

type Child = { port: number; stubPort?: number; stop(): void };

function spawnRole(role: string, extra: string[] = []): Promise<Child> {
  // GATEWAY_BENCH_PROFILE=dir writes a V8 CPU profile of each child into dir, to look for hot spots.
  const profile = process.env.GATEWAY_BENCH_PROFILE;
  const execArgv = ['--import', 'tsx', ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : [])];
  const child = fork(fileURLToPath(import.meta.url), ['--role', role, ...extra], { execArgv });
  return new Promise((resolve, reject) => {
    child.once('message', (message: { port: number; stubPort?: number }) =>
      resolve({ ...message, stop: () => child.kill('SIGINT') }),
    );
    child.once('exit', (code) => reject(new Error(`${role} exited with ${code}`)));
  });
}

type Scenario = { name: string; requestsPerSecond: number; p50: number; p99: number; non2xx: number; errors: number };

async function load(name: string, options: autocannon.Options): Promise<Scenario> {
  const result = await autocannon({
    connections: Number(values.connections),
    duration: Number(values.duration),
    ...options,
  });
  const scenario = {
    name,
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
  process.stderr.write(`${JSON.stringify(scenario)}\n`);
  return scenario;
}

function signaturesPerSecond(seconds: number): number {
  const wallet = nodeWallet(MNEMONIC);
  const message = getBytes(keccak256('0x1234'));
  let count = 0;
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) {
    for (let i = 0; i < 50; i++) wallet.signMessageSync(message);
    count += 50;
  }
  return count / seconds;
}

async function main(): Promise<void> {
  const api = await spawnRole('api');
  const apiUrl = `http://127.0.0.1:${api.port}`;
  const gateway = await spawnRole('gateway', ['--api', apiUrl]);
  const gatewayUrl = `http://127.0.0.1:${gateway.port}`;
  try {
    const json = { 'content-type': 'application/json' };
    // Warm-up: JIT, connection pools and the engine's first call.
    await load('warm-up', {
      url: `${gatewayUrl}/http-data/${DEFAULT_PATH_KEY}/${ENDPOINTS.price}`,
      method: 'POST',
      headers: json,
      body: JSON.stringify({ parameters: { coin: 'eth' } }),
      duration: 2,
    });
    const direct = await load('API directly', {
      url: `${apiUrl}/price?coin=eth`,
      headers: { 'x-api-key': API_KEY },
    });
    const http = await load('HTTP gateway', {
      url: `${gatewayUrl}/http-data/${DEFAULT_PATH_KEY}/${ENDPOINTS.price}`,
      method: 'POST',
      headers: json,
      body: JSON.stringify({ parameters: { coin: 'eth' } }),
    });
    const encodedParameters = encodeParameters([{ type: 'string', name: 'coin', value: 'eth' }]);
    const signed = await load('Signed-data gateway', {
      url: `${gatewayUrl}/http-signed-data/${DEFAULT_PATH_KEY}/${ENDPOINTS.price}`,
      method: 'POST',
      headers: json,
      body: JSON.stringify({ encodedParameters }),
    });
    const stubUrl = `http://127.0.0.1:${gateway.stubPort}`;
    const httpStub = await load('HTTP gateway, stub engine (no API call)', {
      url: `${stubUrl}/http-data/${DEFAULT_PATH_KEY}/${ENDPOINTS.price}`,
      method: 'POST',
      headers: json,
      body: JSON.stringify({ parameters: { coin: 'eth' } }),
    });
    const signedStub = await load('Signed-data gateway, stub engine (no API call)', {
      url: `${stubUrl}/http-signed-data/${DEFAULT_PATH_KEY}/${ENDPOINTS.price}`,
      method: 'POST',
      headers: json,
      body: JSON.stringify({ encodedParameters }),
    });
    const directAgain = await load('API directly (again)', {
      url: `${apiUrl}/price?coin=eth`,
      headers: { 'x-api-key': API_KEY },
    });
    const signing = signaturesPerSecond(3);

    const rows = [direct, http, signed, httpStub, signedStub, directAgain].map(
      (s) => `| ${s.name} | ${s.requestsPerSecond.toFixed(0)} | ${s.p50} | ${s.p99} | ${s.non2xx} | ${s.errors} |`,
    );
    const apiBaseline = (direct.requestsPerSecond + directAgain.requestsPerSecond) / 2;
    process.stdout.write(
      [
        `CPU: ${cpus().length} × ${cpus()[0]?.model ?? 'unknown'}; node ${process.version}`,
        `connections ${values.connections}, ${values.duration} s per scenario`,
        '',
        '| scenario | req/s | p50 ms | p99 ms | non-2xx | errors |',
        '|---|---|---|---|---|---|',
        ...rows,
        '',
        `HTTP gateway overhead ratio (API req/s ÷ gateway req/s): ${(apiBaseline / http.requestsPerSecond).toFixed(2)}`,
        `Signed-data overhead ratio: ${(apiBaseline / signed.requestsPerSecond).toFixed(2)}`,
        `p50 added by the HTTP gateway: ${(http.p50 - direct.p50).toFixed(2)} ms; by the signed-data gateway: ${(signed.p50 - direct.p50).toFixed(2)} ms`,
        `Raw ethers signMessageSync (one core): ${signing.toFixed(0)}/s; signed-data gateway: ${signed.requestsPerSecond.toFixed(0)} req/s`,
        '',
      ].join('\n'),
    );
  } finally {
    gateway.stop();
    api.stop();
  }
}

if (values.role === 'api') await serveApi();
else if (values.role === 'gateway') await serveGateway(values.api!);
else await main();
