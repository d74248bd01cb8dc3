// Gateway benchmark: our HTTP gateway and signed-data gateway beside the reference's local gateway server
// (@api3/airnode-node 0.15.0 workers/local-gateways) and beside the loopback API called directly, all in the same
// run: interleaved rounds (ours and the reference alternate which goes first), medians over the rounds, the raw
// signing rate of one core measured in each round, the machine's core count and load average printed.
//
// Five processes so that the load generator, the gateways and the API do not share an event loop: this one runs
// autocannon; it forks itself as the API (`--role api`) and the reference's gateway (`--role reference`, its
// published dist/), and runs our gateway from our built dist/ and a minimal proxy (the ceiling of any one-hop Node
// gateway here), both in plain Node (bench/support/gateway-children.mjs). Needs `make build` (`make bench` builds).
//   node --import tsx bench/gateway.bench.ts [--rounds 3] [--duration 5] [--connections 32] [--only <regexp>]
// "same" scenarios send one request body from every connection (identical calls in flight: our gateway coalesces
// them); "distinct" scenarios draw each body from 100,000 different parameters (no coalescing).
// The results replace the "## Gateways" section of docs/benchmarks.md (not with --only, which prints them).
// GATEWAY_BENCH_PROFILE=dir writes a V8 CPU profile of each child into dir.
import { fork, type Serializable } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { AbiCoder, getBytes, keccak256 } from 'ethers';
import { DEFAULT_PATH_KEY } from '../src/gateway/server.js';
import { encodeParameters } from '../src/ois/abi.js';
import { deriveEndpointId } from '../src/protocol/ids.js';
import { fastMessageSigner } from '../src/protocol/message-signer.js';
import { nodeWallet } from '../src/protocol/wallet.js';
import {
  API_KEY,
  type ConfigOverrides,
  configJson,
  ENDPOINTS,
  MNEMONIC,
  OIS_TITLE,
  SECRETS,
  startLoopbackApi,
} from '../test/component/gateway/fixtures.js';
import { loadAverage, machine, median, table, writeSection } from './report.js';

const STUB_VALUE = AbiCoder.defaultAbiCoder().encode(['int256'], [123456n]);

const { values } = parseArgs({
  options: {
    role: { type: 'string' },
    api: { type: 'string' },
    port: { type: 'string' },
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '32' },
    only: { type: 'string' },
  },
  allowPositionals: true,
});

// SIGINT ends a child with exit(0) so that --cpu-prof can write its profile.
process.on('SIGINT', () => process.exit(0));

async function serveApi(): Promise<void> {
  const api = await startLoopbackApi();
  process.send!({ port: api.port });
}

const WIDE = { enabled: true as const, maxConcurrency: 10_000, corsOrigins: [] };

/** An endpoint with a small post-processing snippet, as many real configs have: the price endpoint's call, rounded. */
const PROCESSED = 'processed';
const PROCESSED_ID = deriveEndpointId(OIS_TITLE, PROCESSED);
const POST_PROCESSING =
  '({ response }) => ({ response: { ...response, price: Math.round(response.price * 100) / 100 } })';

/** The test fixtures' config plus the post-processed endpoint (HTTP and signed-data triggers), for both gateways. */
function benchConfig(apiUrl: string, overrides: ConfigOverrides) {
  const config = configJson(apiUrl, overrides);
  const ois = config.ois[0]!;
  const price = ois.endpoints.find((endpoint) => endpoint.name === 'price')!;
  const processed = {
    ...structuredClone(price),
    name: PROCESSED,
    postProcessingSpecificationV2: { environment: 'Node', value: POST_PROCESSING, timeoutMs: 5000 },
  };
  const trigger = { endpointId: PROCESSED_ID, oisTitle: OIS_TITLE, endpointName: PROCESSED };
  return {
    ...config,
    ois: [{ ...ois, endpoints: [...ois.endpoints, processed] }],
    triggers: {
      ...config.triggers,
      http: [...config.triggers.http, trigger],
      httpSignedData: [...config.triggers.httpSignedData, trigger],
    },
  };
}

/** The reference's local gateway server on the same config: its names, secrets inlined, logs at ERROR. */
function serveReference(apiUrl: string, port: number): void {
  let text = JSON.stringify(
    benchConfig(apiUrl, { httpGateway: WIDE, httpSignedDataGateway: WIDE, oevGateway: WIDE, gatewayServerPort: port }),
  );
  for (const [name, value] of Object.entries(SECRETS)) text = text.replaceAll(`\${${name}}`, value);
  const config = JSON.parse(text) as { nodeSettings: Record<string, unknown> };
  const { nodeWalletMnemonic, ...settings } = config.nodeSettings;
  config.nodeSettings = { ...settings, airnodeWalletMnemonic: nodeWalletMnemonic };
  // Its signed-data handler reads the key the way its deployer hands it over.
  process.env['AIRNODE_WALLET_PRIVATE_KEY'] = nodeWallet(MNEMONIC).privateKey;
  const require = createRequire(import.meta.url);
  const reference = require('@api3/airnode-node/dist/src/workers/local-gateways/server') as {
    startGatewayServer(config: unknown, gateways: string[]): void;
  };
  reference.startGatewayServer(config, ['httpGateway', 'httpSignedDataGateway']);
  // It listens without telling when: wait until the port accepts a connection.
  const probe = () =>
    fetch(`http://127.0.0.1:${port}/`).then(
      () => process.send!({ port }),
      () => setTimeout(probe, 50),
    );
  probe();
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** send: a message to the child, answered once it has acted on it. */
type Child = { port: number; stubPort?: number; pid: number; stop(): void; send(message: Serializable): Promise<void> };

/** A child process that answers its port(s) in its first IPC message; `input`, if given, is sent to it first. */
function spawnChild(role: string, modulePath: string, args: string[], execArgv: string[], input?: Serializable) {
  const profile = process.env.GATEWAY_BENCH_PROFILE;
  const child = fork(modulePath, args, {
    execArgv: [...execArgv, ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : [])],
  });
  if (input !== undefined) child.send(input);
  return new Promise<Child>((resolve, reject) => {
    child.once('message', (message: { port: number; stubPort?: number }) =>
      resolve({
        ...message,
        pid: child.pid!,
        stop: () => child.kill('SIGINT'),
        send: (next) =>
          new Promise<void>((done) => {
            child.once('message', () => done());
            child.send(next);
          }),
      }),
    );
    child.once('exit', (code) => reject(new Error(`${role} exited with ${code}`)));
  });
}

/** This file again as the API or the reference (their code needs no build of ours). */
function spawnRole(role: string, extra: string[] = []): Promise<Child> {
  return spawnChild(role, fileURLToPath(import.meta.url), ['--role', role, ...extra], ['--import', 'tsx']);
}

/**
 * Our gateway, and the minimal proxy, from built JavaScript in plain Node (no tsx): our gateway as `oracle-node
 * gateway` runs it, from dist/ (`make bench` builds first), as the reference runs from its published dist/.
 */
const BUILT_CHILDREN = fileURLToPath(new URL('./support/gateway-children.mjs', import.meta.url));
const spawnBuilt = (role: 'gateway' | 'minimal-proxy', input: Serializable) =>
  spawnChild(role, BUILT_CHILDREN, [role], [], input);

type Sample = {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  /** CPU time (user + system) per answered request, in µs: the gateway under test, the API, autocannon. */
  cpu: { gateway: number; api: number; loadGenerator: number };
};

/** User + system CPU time of a process so far, in µs (Linux /proc; 0 elsewhere). */
function cpuMicros(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100;
  } catch {
    return 0;
  }
}

/** Runs autocannon; `pids` are the gateway under test (if any) and the API, whose CPU time is measured. */
async function load(
  name: string,
  options: autocannon.Options,
  pids: { gateway?: number; api: number },
): Promise<Sample> {
  const before = { gateway: pids.gateway ? cpuMicros(pids.gateway) : 0, api: cpuMicros(pids.api) };
  const ownBefore = process.cpuUsage();
  const result = await autocannon({
    connections: Number(values.connections),
    duration: Number(values.duration),
    ...options,
  });
  const own = process.cpuUsage(ownBefore);
  const answered = Math.max(1, result.requests.total);
  const sample: Sample = {
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    cpu: {
      gateway: pids.gateway ? Math.round((cpuMicros(pids.gateway) - before.gateway) / answered) : 0,
      api: Math.round((cpuMicros(pids.api) - before.api) / answered),
      loadGenerator: Math.round((own.user + own.system) / answered),
    },
  };
  process.stderr.write(`${name}: ${JSON.stringify(sample)}\n`);
  return sample;
}

/** One connection, one request at a time: the median wall time of a request, in ms (sub-millisecond resolution). */
async function medianLatencyMs(url: string, init: { method: string; headers: Record<string, string>; body?: string }) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const once = () =>
    new Promise<number>((resolve, reject) => {
      const start = process.hrtime.bigint();
      const request = httpRequest(url, { ...init, agent }, (response) => {
        response.resume();
        response.on('end', () => resolve(Number(process.hrtime.bigint() - start) / 1e6));
      });
      request.on('error', reject);
      request.end(init.body);
    });
  const times: number[] = [];
  const end = Date.now() + Number(values.duration) * 1000;
  while (Date.now() < end) times.push(await once());
  agent.destroy();
  const result = median(times);
  process.stderr.write(`one connection ${url}: p50 ${result.toFixed(3)} ms over ${times.length}\n`);
  return result;
}

/** EIP-191 signatures of a 32-byte message per second on one core: ethers 6's wallet, or the gateway's signer. */
function signaturesPerSecond(seconds: number, signer: 'ethers' | 'libsecp256k1'): number {
  const wallet = signer === 'ethers' ? nodeWallet(MNEMONIC) : fastMessageSigner(nodeWallet(MNEMONIC));
  const message = getBytes(keccak256('0x1234'));
  let count = 0;
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) {
    for (let i = 0; i < 50; i++) wallet.signMessageSync(message);
    count += 50;
  }
  return count / seconds;
}

const MINIMAL_PROXY = 'Bare proxy (node:http, keep-alive agent, no framework, no engine), distinct parameters';
const BUDGETED = 'HTTP gateway with an API rate budget (never refusing), distinct parameters';
/** What `--api-rate-limit 'Loopback API=1000000/m'` sets: far above the rates here, so it never refuses. */
const NEVER_REFUSING_BUDGET = [{ ois: OIS_TITLE, rate: { calls: 1_000_000, windowMs: 60_000 } }];
const PROCESSED_ROW = 'Signed-data gateway with post-processing, distinct parameters';
const JSON_HEADERS = { 'content-type': 'application/json' };
const DISTINCT = 100_000;
const coin = (index: number) => `c${index}`;
const httpBody = (value: string) => JSON.stringify({ parameters: { coin: value } });
const signedBody = (value: string) =>
  JSON.stringify({ encodedParameters: encodeParameters([{ type: 'string', name: 'coin', value }]) });

/** A POST whose body is one fixed value, or drawn at random from DISTINCT different ones. */
function post(url: string, body: (value: string) => string, distinct: boolean): autocannon.Options {
  if (!distinct) return { url, method: 'POST', headers: JSON_HEADERS, body: body('eth') };
  const bodies = Array.from({ length: DISTINCT }, (_, index) => body(coin(index)));
  return {
    url,
    requests: [
      {
        method: 'POST',
        headers: JSON_HEADERS,
        setupRequest: (request) => ({ ...request, body: bodies[Math.floor(Math.random() * DISTINCT)]! }),
      },
    ],
  };
}

async function main(): Promise<void> {
  const api = await spawnRole('api');
  const apiUrl = `http://127.0.0.1:${api.port}`;
  const gateway = await spawnBuilt('gateway', {
    config: benchConfig(apiUrl, { httpGateway: WIDE, httpSignedDataGateway: WIDE, oevGateway: WIDE }),
    secrets: SECRETS,
    stubValue: STUB_VALUE,
  });
  const minimalProxy = await spawnBuilt('minimal-proxy', { apiUrl, apiKey: API_KEY });
  const reference = await spawnRole('reference', ['--api', apiUrl, '--port', String(await freePort())]);
  const only = values.only ? new RegExp(values.only) : undefined;
  const loadAtStart = loadAverage();
  try {
    const ours = `http://127.0.0.1:${gateway.port}`;
    const theirs = `http://127.0.0.1:${reference.port}`;
    const stub = `http://127.0.0.1:${gateway.stubPort}`;
    const proxy = `http://127.0.0.1:${minimalProxy.port}`;
    const httpPath = `/http-data/${DEFAULT_PATH_KEY}/${ENDPOINTS.price}`;
    const signedPath = `/http-signed-data/${DEFAULT_PATH_KEY}/${ENDPOINTS.price}`;
    const processedSignedPath = `/http-signed-data/${DEFAULT_PATH_KEY}/${PROCESSED_ID}`;
    const direct: autocannon.Options = { url: `${apiUrl}/price?coin=eth`, headers: { 'x-api-key': API_KEY } };
    const directPaths = Array.from({ length: DISTINCT }, (_, index) => `/price?coin=${coin(index)}`);
    const directDistinct: autocannon.Options = {
      url: apiUrl,
      requests: [
        {
          method: 'GET',
          headers: { 'x-api-key': API_KEY },
          setupRequest: (request) => ({ ...request, path: directPaths[Math.floor(Math.random() * DISTINCT)]! }),
        },
      ],
    };

    // Warm-up: JIT, connection pools and the engines' first calls, on both gateways.
    for (const [base, pid] of [
      [ours, gateway.pid],
      [theirs, reference.pid],
    ] as const) {
      const pids = { gateway: pid, api: api.pid };
      await load(`warm-up ${base}`, { ...post(`${base}${httpPath}`, httpBody, false), duration: 2 }, pids);
      await load(`warm-up ${base}`, { ...post(`${base}${signedPath}`, signedBody, false), duration: 2 }, pids);
      await load(`warm-up ${base}`, { ...post(`${base}${processedSignedPath}`, signedBody, true), duration: 2 }, pids);
    }
    await load(
      `warm-up ${proxy}`,
      { ...post(`${proxy}/`, httpBody, true), duration: 2 },
      { gateway: minimalProxy.pid, api: api.pid },
    );

    /** direct: no gateway in the path (the API alone). */
    /** process: the process whose CPU is measured when it is not our gateway. */
    type Pair = {
      name: string;
      ours: autocannon.Options;
      reference?: autocannon.Options;
      direct?: boolean;
      process?: number;
      /** Our gateway with the API's rate budget (one that never refuses) for this row, none for the others. */
      budget?: boolean;
    };
    const pairs: Pair[] = [
      { name: 'API directly', ours: direct, direct: true },
      // The same API call with a distinct query per request, drawn by the same per-request hook as the distinct
      // gateway rows: autocannon's hook costs it CPU on the same two cores, so this is the like-for-like baseline.
      { name: 'API directly, distinct parameters', ours: directDistinct, direct: true },
      {
        name: 'HTTP gateway, same parameters',
        ours: post(`${ours}${httpPath}`, httpBody, false),
        reference: post(`${theirs}${httpPath}`, httpBody, false),
      },
      {
        name: 'HTTP gateway, distinct parameters',
        ours: post(`${ours}${httpPath}`, httpBody, true),
        reference: post(`${theirs}${httpPath}`, httpBody, true),
      },
      // The same gateway process, its API given a rate budget that never refuses here for this row only.
      { name: BUDGETED, ours: post(`${ours}${httpPath}`, httpBody, true), budget: true },
      // Not a gateway of ours: the same distinct bodies through the least a Node.js one-hop proxy does (see
      // bench/support/gateway-children.mjs), measured right after the HTTP gateway rows as the ceiling here.
      {
        name: MINIMAL_PROXY,
        ours: post(`${proxy}/`, httpBody, true),
        process: minimalProxy.pid,
      },
      {
        name: 'Signed-data gateway, same parameters',
        ours: post(`${ours}${signedPath}`, signedBody, false),
        reference: post(`${theirs}${signedPath}`, signedBody, false),
      },
      {
        name: 'Signed-data gateway, distinct parameters',
        ours: post(`${ours}${signedPath}`, signedBody, true),
        reference: post(`${theirs}${signedPath}`, signedBody, true),
      },
      // The same call with the endpoint's post-processing snippet: ours in the QuickJS sandbox on the worker pool,
      // the reference in Node's vm (@api3/commons).
      {
        name: PROCESSED_ROW,
        ours: post(`${ours}${processedSignedPath}`, signedBody, true),
        reference: post(`${theirs}${processedSignedPath}`, signedBody, true),
      },
      { name: 'HTTP gateway, stub engine (no API call)', ours: post(`${stub}${httpPath}`, httpBody, true) },
      { name: 'Signed-data gateway, stub engine (no API call)', ours: post(`${stub}${signedPath}`, signedBody, true) },
    ].filter((pair) => !only || only.test(pair.name));

    const samples = new Map<string, Sample[]>();
    const signing: number[] = [];
    const fastSigning: number[] = [];
    const added = { ours: [] as number[], reference: [] as number[] };
    const gatewayCall = { method: 'POST', headers: JSON_HEADERS, body: httpBody('eth') };
    const record = (key: string, sample: Sample) => samples.set(key, [...(samples.get(key) ?? []), sample]);
    const rounds = Number(values.rounds);
    for (let round = 0; round < rounds; round++) {
      for (const pair of pairs) {
        // Alternate which of the two goes first, so that neither always gets the warmer or quieter slot.
        const order: ('ours' | 'reference')[] = round % 2 === 0 ? ['ours', 'reference'] : ['reference', 'ours'];
        for (const who of order) {
          const options = who === 'ours' ? pair.ours : pair.reference;
          if (!options) continue;
          const target = pair.direct ? undefined : who === 'reference' ? reference.pid : (pair.process ?? gateway.pid);
          const pids = { api: api.pid, ...(target ? { gateway: target } : {}) };
          if (pair.budget) await gateway.send({ apiLimits: NEVER_REFUSING_BUDGET });
          record(`${pair.name}|${who}`, await load(`round ${round + 1} ${pair.name} ${who}`, options, pids));
          if (pair.budget) await gateway.send({ apiLimits: [] });
        }
      }
      signing.push(signaturesPerSecond(2, 'ethers'));
      fastSigning.push(signaturesPerSecond(2, 'libsecp256k1'));
      if (!only) {
        // p50 added by a gateway at one connection: its p50 minus the API's, measured back to back.
        const apiAlone = await medianLatencyMs(`${apiUrl}/price?coin=eth`, {
          method: 'GET',
          headers: { 'x-api-key': API_KEY },
        });
        added.ours.push((await medianLatencyMs(`${ours}${httpPath}`, gatewayCall)) - apiAlone);
        added.reference.push((await medianLatencyMs(`${theirs}${httpPath}`, gatewayCall)) - apiAlone);
      }
    }
    const loadAtEnd = loadAverage();

    const med = (key: string, field: Exclude<keyof Sample, 'cpu'>) => {
      const list = samples.get(key);
      return list ? median(list.map((sample) => sample[field])) : Number.NaN;
    };
    const cpuMedian = (key: string, part: keyof Sample['cpu']) => {
      const list = samples.get(key);
      return list ? median(list.map((sample) => sample.cpu[part])) : Number.NaN;
    };
    const rate = (key: string) => med(key, 'requestsPerSecond');
    /** Median over the rounds of a ratio of two scenarios measured in the same round. */
    const paired = (top: string, bottom: string) => {
      const a = samples.get(top) ?? [];
      const b = samples.get(bottom) ?? [];
      if (a.length === 0 || b.length === 0) return Number.NaN;
      return median(a.map((sample, round) => sample.requestsPerSecond / b[round]!.requestsPerSecond));
    };
    const apiRate = rate('API directly|ours');
    /** A gateway's rate over a raw signing rate measured in the same round, median over the rounds. */
    const signedShare = (name: string, rates: number[]) => {
      const list = samples.get(`${name}|ours`) ?? [];
      if (list.length === 0) return '-';
      return `${(100 * median(list.map((sample, round) => sample.requestsPerSecond / rates[round]!))).toFixed(0)} %`;
    };
    /** Median over the rounds of the ratio of two scenarios' gateway CPU per request, same round. */
    const cpuRatio = (top: string, bottom: string) => {
      const a = samples.get(top) ?? [];
      const b = samples.get(bottom) ?? [];
      if (a.length === 0 || b.length === 0) return '-';
      return median(a.map((sample, round) => sample.cpu.gateway / b[round]!.cpu.gateway)).toFixed(2);
    };
    const percent = (top: string, bottom: string) => `${(100 * paired(top, bottom)).toFixed(0)} %`;
    const share = (name: string) => `${(100 * paired(`${name}|ours`, 'API directly|ours')).toFixed(0)} %`;
    const count = (value: number) => Math.round(value).toLocaleString('en-US');
    const failures = (key: string) =>
      samples.has(key) ? `${(samples.get(key) ?? []).reduce((n, s) => n + s.non2xx + s.errors, 0)}` : '-';
    /** "gateway ours, reference / API / autocannon" CPU µs per answered request. */
    const cpuColumn = (gatewayKey: string | undefined, referenceKey: string | undefined, sameRound: string) => {
      const part = (key: string | undefined, which: keyof Sample['cpu']) => (key ? count(cpuMedian(key, which)) : '-');
      const gateways = gatewayKey ? `${part(gatewayKey, 'gateway')}, ${part(referenceKey, 'gateway')}` : '-';
      return `${gateways} / ${part(sameRound, 'api')} / ${part(sameRound, 'loadGenerator')}`;
    };
    const rows = pairs.map((pair) => {
      const o = `${pair.name}|ours`;
      const r = `${pair.name}|reference`;
      return [
        pair.name,
        count(rate(o)),
        `${med(o, 'p50')} / ${med(o, 'p99')}`,
        pair.reference ? count(rate(r)) : '',
        pair.reference ? `${med(r, 'p50')} / ${med(r, 'p99')}` : '',
        pair.reference ? `**${paired(o, r).toFixed(2)}x**` : '',
        `${failures(o)}, ${failures(r)}`,
        cpuColumn(pair.direct ? undefined : o, pair.reference ? r : undefined, o),
      ];
    });
    const body = [
      `Machine: ${machine()}, shared with other engineers' tests (load average ${loadAtStart} at start, ${loadAtEnd} at end). ${new Date().toISOString().slice(0, 10)}.`,
      `Command: \`node --import tsx --expose-gc bench/gateway.bench.ts --rounds ${rounds} --duration ${values.duration} --connections ${values.connections}\` (run by \`make bench\`).`,
      '',
      'Five processes: autocannon, the loopback JSON API (API-key header checked), our gateway (`startGatewayServer`, the ' +
        'real engine `src/ois`, logs silent, `maxConcurrency` 10,000; built `dist/` in plain Node, as `oracle-node gateway` ' +
        "runs), the reference's local gateway server (`@api3/airnode-node` 0.15.0 `workers/local-gateways/server` from its " +
        'published `dist/`, the same config in its names, logs at ERROR) and a bare proxy (node:http server, the JSON ' +
        "body parsed, one GET per request through node:http's keep-alive agent, the API's answer relayed as it came; no " +
        'framework, no validation, no engine, no metrics; not a gateway of ours, the floor of a one-hop Node.js gateway, ' +
        'plain Node). The endpoint calls `GET /price?coin=<coin>` and encodes `price` as `int256` x 100; the ' +
        `post-processed endpoint makes the same call and runs \`${POST_PROCESSING}\` (V2) on the answer first. ` +
        'Each round runs every scenario ' +
        'against ours and the reference back to back (who goes first alternates by round), then raw ethers 6 ' +
        "`signMessageSync` on one core for 2 s and the gateway's own signer (`fastMessageSigner`, libsecp256k1) for 2 s, " +
        'then the p50 of single requests on one connection (API, ours, reference). ' +
        '"same parameters": every request has the same body (our gateway shares identical calls in flight, see ' +
        '[gateways.md](gateways.md#request-coalescing-and-the-signature-cache)); "distinct parameters": each body drawn ' +
        'from 100,000 different coins (one API call and, for signed data, one signature per request). "stub engine": a ' +
        'second gateway of ours whose engine answers at once (server, validation, metrics and signing alone). req/s, p50 ' +
        "and p99 are medians over the rounds; ratios are the median of each round's ratio. CPU µs per request: user + " +
        'system CPU time of each process during the run (/proc) over the requests answered, median over the rounds; ' +
        'it varies less with the load of other work on the machine than req/s does.',
      '',
      ...table(
        [
          `scenario (${values.connections} connections)`,
          'ours req/s',
          'p50 / p99 ms',
          'reference req/s',
          'p50 / p99 ms',
          'ours ÷ reference',
          'non-2xx + errors (ours, reference)',
          'CPU µs per request: gateway (ours, reference) / API / autocannon (ours)',
        ],
        [false, true, true, true, true, true, true, true],
        rows,
      ),
      '',
      `- HTTP gateway ÷ API directly (${count(apiRate)} req/s), same round: **${share('HTTP gateway, same parameters')}** with the same parameters, **${share('HTTP gateway, distinct parameters')}** with distinct ones.`,
      `- HTTP gateway with distinct parameters ÷ the API called directly with distinct parameters (${count(rate('API directly, distinct parameters|ours'))} req/s, the same per-request hook in autocannon), same round: ${(100 * paired('HTTP gateway, distinct parameters|ours', 'API directly, distinct parameters|ours')).toFixed(0)} %.`,
      `- p50 added by the HTTP gateway at one connection (its p50 minus the API's): **${added.ours.length ? median(added.ours).toFixed(2) : '-'} ms** ours, ${added.reference.length ? median(added.reference).toFixed(2) : '-'} ms reference.`,
      `- Raw \`signMessageSync\`, one core: ${count(median(signing))}/s (rounds ${signing.map(count).join(' / ')}). Signed-data gateway ÷ that, same round: **${signedShare('Signed-data gateway, same parameters', signing)}** with the same parameters (one signing per value and second), **${signedShare('Signed-data gateway, distinct parameters', signing)}** with distinct ones.`,
      `- Raw EIP-191 signing with the gateway's own signer (\`fastMessageSigner\`, libsecp256k1), one core: ${count(median(fastSigning))}/s (rounds ${fastSigning.map(count).join(' / ')}). Signed-data gateway ÷ that, same round: **${signedShare('Signed-data gateway, same parameters', fastSigning)}** with the same parameters, **${signedShare('Signed-data gateway, distinct parameters', fastSigning)}** with distinct ones.`,
      `- CPU per request, HTTP gateway with distinct parameters ÷ the bare proxy, same round: **${cpuRatio('HTTP gateway, distinct parameters|ours', `${MINIMAL_PROXY}|ours`)}x** (goal <= 1.3x). Signed-data gateway with post-processing ÷ the reference, same round: **${paired(`${PROCESSED_ROW}|ours`, `${PROCESSED_ROW}|reference`).toFixed(2)}x** (goal >= 7x); without post-processing ${paired('Signed-data gateway, distinct parameters|ours', 'Signed-data gateway, distinct parameters|reference').toFixed(2)}x.`,
      `- ${MINIMAL_PROXY} (not a gateway of ours; the same distinct bodies, one API call each), same round: **${percent(`${MINIMAL_PROXY}|ours`, 'API directly|ours')}** of the API directly, ${percent(`${MINIMAL_PROXY}|ours`, 'API directly, distinct parameters|ours')} of the API directly with distinct parameters. Our HTTP gateway with distinct parameters ÷ the bare proxy: **${percent('HTTP gateway, distinct parameters|ours', `${MINIMAL_PROXY}|ours`)}** (goal >= 85 %); the reference's ÷ the bare proxy: ${percent('HTTP gateway, distinct parameters|reference', `${MINIMAL_PROXY}|ours`)}.`,
      `- The APIs' rate budget (\`--api-rate-limit\`, one that never refuses: ${OIS_TITLE}=1000000/m, set in the same gateway process for its row only), same round: our HTTP gateway with distinct parameters ÷ the bare proxy **${percent(`${BUDGETED}|ours`, `${MINIMAL_PROXY}|ours`)}** with it, ${percent('HTTP gateway, distinct parameters|ours', `${MINIMAL_PROXY}|ours`)} without (goal: within 2 points); CPU per request with it ÷ without: ${cpuRatio(`${BUDGETED}|ours`, 'HTTP gateway, distinct parameters|ours')}x.`,
    ];
    if (only) process.stdout.write(`${body.join('\n')}\n`);
    else writeSection('Gateways', body);
  } finally {
    gateway.stop();
    minimalProxy.stop();
    reference.stop();
    api.stop();
  }
}

if (values.role === 'api') await serveApi();
else if (values.role === 'reference') serveReference(values.api!, Number(values.port));
else await main();
