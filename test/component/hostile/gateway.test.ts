// Hostile gateway callers and a hostile API against the real gateway server, engine and worker pool on
// loopback: slow bodies and headers, busy snippets, heavy OEV bodies, deep and malformed parameters, dot
// segments, an API that echoes its key or answers absurdly deep JSON, and a separate metrics port.
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { expect } from 'chai';
import { Wallet } from 'ethers';
import fc from 'fast-check';
import { type Config, validateConfig } from '../../../src/config/index.js';
import { DEFAULT_PATH_KEY, type GatewayServer, startGatewayServer } from '../../../src/gateway/server.js';
import { clearSecrets, registerSecrets } from '../../../src/observability/index.js';
import { encodeParameters } from '../../../src/ois/abi.js';
import { deriveEndpointId } from '../../../src/protocol/ids.js';
import { API_KEY, configJson, MNEMONIC, OIS_TITLE, SECRETS } from '../gateway/fixtures.js';

const ID = {
  echo: deriveEndpointId(OIS_TITLE, 'echo'),
  coin: deriveEndpointId(OIS_TITLE, 'coin'),
  deep: deriveEndpointId(OIS_TITLE, 'deep'),
  busy: deriveEndpointId(OIS_TITLE, 'busy'),
  price: deriveEndpointId(OIS_TITLE, 'price'),
};

type HostileApi = { url: string; paths: string[]; close(): Promise<void> };

async function startHostileApi(): Promise<HostileApi> {
  const paths: string[] = [];
  const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    paths.push(url.pathname);
    res.setHeader('content-type', 'application/json');
    if (req.headers['x-api-key'] !== API_KEY) return void res.writeHead(401).end('{}');
    if (url.pathname === '/deep') return void res.end(deep);
    // Every other answer echoes the key, as some APIs do.
    res.end(JSON.stringify({ price: 1234.5, echo: req.headers['x-api-key'] }));
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    paths,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function hostileConfig(apiUrl: string): Config {
  const raw = configJson(apiUrl, {
    httpGateway: { enabled: true, maxConcurrency: 5, corsOrigins: [] },
    oevGateway: { enabled: true, maxConcurrency: 20, corsOrigins: [] },
  });
  const ois = raw.ois[0]!;
  const paths = ois.apiSpecifications.paths as Record<string, unknown>;
  paths['/coins/{id}/{sub}'] = {
    get: {
      parameters: [
        { in: 'path', name: 'id' },
        { in: 'path', name: 'sub' },
      ],
    },
  };
  paths['/deep'] = { get: { parameters: [] } };
  const reserved = (path: string, type = 'int256') => [
    { name: '_type', fixed: type },
    { name: '_path', fixed: path },
    ...(type === 'int256' ? [{ name: '_times', fixed: '100' }] : []),
  ];
  const endpoints = ois.endpoints as unknown[];
  endpoints.push(
    {
      name: 'echo',
      operation: { method: 'get', path: '/price' },
      fixedOperationParameters: [],
      reservedParameters: reserved('echo', 'string'),
      parameters: [{ name: 'coin', operationParameter: { in: 'query', name: 'coin' } }],
    },
    {
      name: 'coin',
      operation: { method: 'get', path: '/coins/{id}/{sub}' },
      fixedOperationParameters: [],
      reservedParameters: reserved('price'),
      parameters: [
        { name: 'id', operationParameter: { in: 'path', name: 'id' } },
        { name: 'sub', operationParameter: { in: 'path', name: 'sub' } },
      ],
    },
    {
      name: 'deep',
      operation: { method: 'get', path: '/deep' },
      fixedOperationParameters: [],
      reservedParameters: reserved('0'),
      parameters: [],
    },
    {
      name: 'busy',
      operation: { method: 'get', path: '/price' },
      fixedOperationParameters: [{ operationParameter: { in: 'query', name: 'coin' }, value: 'eth' }],
      reservedParameters: reserved('price'),
      parameters: [],
      postProcessingSpecificationV2: { environment: 'Node', timeoutMs: 3000, value: '() => { while (true) {} }' },
    },
  );
  const trigger = (endpointName: keyof typeof ID) => ({
    endpointId: ID[endpointName],
    oisTitle: OIS_TITLE,
    endpointName,
  });
  (raw.triggers.http as unknown[]).push(trigger('echo'), trigger('coin'), trigger('deep'), trigger('busy'));
  (raw.triggers.httpSignedData as unknown[]).push(trigger('coin'));
  const result = validateConfig(raw, SECRETS);
  if (!result.ok || !result.config) throw new Error(JSON.stringify(result.errors));
  return result.config;
}

describe('hostile input: gateway callers and upstream APIs', function () {
  this.timeout(120_000);
  let api: HostileApi;
  let gw: GatewayServer;
  let base: string;
  const http = (id: string) => `${base}/http-data/${DEFAULT_PATH_KEY}/${id}`;
  const signed = (id: string) => `${base}/http-signed-data/${DEFAULT_PATH_KEY}/${id}`;

  before(async () => {
    api = await startHostileApi();
    registerSecrets(SECRETS);
    gw = await startGatewayServer(hostileConfig(api.url), {
      port: 0,
      host: '127.0.0.1',
      bodyTimeoutMs: 500,
      headersTimeoutMs: 1_000,
    });
    base = `http://127.0.0.1:${gw.port}`;
  });
  after(async () => {
    await gw?.close();
    await api?.close();
    clearSecrets();
  });

  async function post(url: string, body: unknown, raw = false) {
    const reply = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: raw ? (body as string) : JSON.stringify(body),
    });
    const text = await reply.text();
    return { status: reply.status, text, type: reply.headers.get('content-type') ?? '' };
  }

  /** Sends raw bytes on a fresh connection; resolves with everything the server wrote before closing. */
  function rawExchange(bytes: string, keepOpen = false): { socket: Socket; answer: Promise<string> } {
    const socket = connect(gw.port, '127.0.0.1');
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => {
      answer += chunk;
    });
    socket.write(bytes);
    if (!keepOpen) socket.end();
    return {
      socket,
      answer: new Promise((resolve) => {
        socket.on('close', () => resolve(answer));
        socket.on('error', () => resolve(answer));
      }),
    };
  }

  it('redacts a secret that the API echoes from the answer body', async () => {
    const reply = await post(http(ID.echo), { parameters: { coin: 'eth' } });
    expect(reply.status).to.equal(200);
    expect(reply.text).not.to.contain(API_KEY);
    expect(reply.text).to.contain('[REDACTED]');
  });

  it('counts a request only once its body is read, and answers a stalled body with a JSON 408', async () => {
    const stalled = Array.from({ length: 20 }, () =>
      rawExchange(
        `POST /http-data/${DEFAULT_PATH_KEY}/${ID.price} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`,
        true,
      ),
    );
    // maxConcurrency is 5: with 20 stalled bodies counted, this would be a 429.
    const served = await post(http(ID.price), { parameters: {} });
    expect(served.status).to.equal(200);
    const answers = await Promise.all(stalled.map((exchange) => exchange.answer));
    for (const answer of answers) {
      expect(answer).to.match(/^HTTP\/1\.1 408 /);
      expect(answer).to.contain('application/json');
      expect(answer).to.contain('"message":"Request body not received in time"');
    }
  });

  it("answers slow headers, malformed requests and oversized headers with Node's status as JSON", async () => {
    const slow = rawExchange(`POST /http-data/${DEFAULT_PATH_KEY}/${ID.price} HTTP/1.1\r\nHost: x\r\n`, true);
    expect(await slow.answer).to.match(/^HTTP\/1\.1 408 [\s\S]*\r\n\r\n\{"message":"Request not received in time"\}$/);
    const malformed = await rawExchange('NOT AN HTTP REQUEST\r\n\r\n').answer;
    expect(malformed).to.match(/^HTTP\/1\.1 400 [\s\S]*application\/json[\s\S]*\{"message":"Invalid request"\}$/);
    const huge = await rawExchange(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`).answer;
    expect(huge).to.match(/^HTTP\/1\.1 431 [\s\S]*\{"message":"Request headers too large"\}$/);
  });

  it('keeps /healthz answering while five snippets spin until their deadline', async () => {
    let busyDone = 0;
    const busy = Array.from({ length: 5 }, () =>
      post(http(ID.busy), { parameters: {} }).then((reply) => {
        busyDone++;
        return reply;
      }),
    );
    const before = api.paths.length;
    while (api.paths.length < before + 5) await new Promise((resolve) => setTimeout(resolve, 5));
    // Twenty health round-trips, one after the other, while the snippets hold their worker threads.
    let answered = 0;
    for (let i = 0; i < 20; i++) {
      const health = await fetch(`${base}/healthz`);
      expect(health.status).to.equal(200);
      if (busyDone === 0) answered++;
    }
    expect(answered, 'health answers before any busy snippet ended').to.equal(20);
    const replies = await Promise.all(busy);
    for (const reply of replies) {
      expect(reply.status).to.equal(500);
      expect(JSON.parse(reply.text).message).to.equal('Error: Full timeout exceeded');
    }
  });

  it('refuses deep and malformed parameters with 400, and a too-deep API answer with 502', async () => {
    const deep = `${'{"a":'.repeat(8_000)}"x"${'}'.repeat(8_000)}`;
    const nested = await post(http(ID.echo), `{"parameters":{"coin":${deep}}}`, true);
    expect(nested.status).to.equal(400);
    expect(JSON.parse(nested.text).message).to.match(/nested deeper than/);
    const surrogate = await post(http(ID.echo), '{"parameters":{"coin":"\\ud800"}}', true);
    expect(surrogate.status).to.equal(400);
    expect(JSON.parse(surrogate.text).message).to.match(/not valid Unicode/);
    const upstream = await post(http(ID.deep), { parameters: {} });
    expect(upstream.status).to.equal(502);
    expect(JSON.parse(upstream.text).message).to.match(/^Error: API call failed with a response nested deeper/);
  });

  it('never lets a path parameter ".." change the path the credentials go to', async () => {
    const before = api.paths.length;
    for (const [id, sub] of [
      ['..', '..'],
      ['bitcoin', '..'],
      ['.', 'x'],
    ]) {
      const reply = await post(http(ID.coin), { parameters: { id, sub } });
      expect(reply.status, reply.text).to.equal(400);
    }
    expect(api.paths.slice(before)).to.deep.equal([]);
    const fine = await post(http(ID.coin), { parameters: { id: '..%2F', sub: 'a/../b' } });
    expect(fine.status).to.equal(200);
    expect(api.paths.at(-1)).to.equal('/coins/..%252F/a%2F..%2Fb');
  });

  it('caps OEV beacons and answers heavy OEV bodies without stalling health', async () => {
    const node = Wallet.fromPhrase(MNEMONIC);
    const now = Math.floor(Date.now() / 1000);
    const stranger = Wallet.createRandom();
    const beacon = async (wallet: { address: string; signMessage(m: Uint8Array): Promise<string> }) => ({
      airnodeAddress: wallet.address,
      templateId: `0x${'11'.repeat(32)}`,
      signedData: {
        timestamp: String(now),
        encodedValue: `0x${'00'.repeat(31)}01`,
        signature: await wallet.signMessage(new Uint8Array(32)),
      },
    });
    const body = (beacons: unknown[]) => ({
      chainId: 1,
      api3ServerV1: `0x${'22'.repeat(20)}`,
      oevProxyAddress: `0x${'33'.repeat(20)}`,
      updateId: `0x${'44'.repeat(32)}`,
      bidderAddress: `0x${'55'.repeat(20)}`,
      bidAmount: '1',
      beacons,
    });
    const strangerBeacon = await beacon(stranger);
    const tooMany = await post(`${base}/sign-oev/${DEFAULT_PATH_KEY}`, body(Array(150).fill(strangerBeacon)));
    expect(tooMany.status).to.equal(400);
    expect(JSON.parse(tooMany.text).message).to.match(/^Too many beacons/);
    // 64 beacons with signatures to recover (the node's own one is badly signed), ten at once.
    const badOwn = { ...(await beacon(node)), signedData: strangerBeacon.signedData };
    const heavy = body([badOwn, ...Array(63).fill(strangerBeacon)]);
    const replies = Promise.all(Array.from({ length: 10 }, () => post(`${base}/sign-oev/${DEFAULT_PATH_KEY}`, heavy)));
    expect((await fetch(`${base}/healthz`)).status).to.equal(200);
    for (const reply of await replies) {
      expect(reply.status).to.equal(400);
      expect(JSON.parse(reply.text).message).to.equal('Not enough beacons with valid data to proceed');
    }
  });

  it('fuzz: hostile gateway parameters are answered 200 or 4xx JSON, never 5xx', async () => {
    const hostileValue = fc.oneof(
      fc.constantFrom('.', '..', '../..', '%2e%2e', '\ud800', 'a\udfffb', '__proto__', ''),
      fc.string({ unit: 'binary', maxLength: 30 }),
      fc.integer().map(String),
      fc.nat(3000).map((depth) => {
        let value: unknown = 'leaf';
        for (let i = 0; i < depth; i++) value = [value];
        return value;
      }),
    );
    await fc.assert(
      fc.asyncProperty(hostileValue, hostileValue, async (id, sub) => {
        const reply = await post(http(ID.coin), { parameters: { id, sub, ['__proto__']: { polluted: true } } });
        expect(reply.type).to.match(/^application\/json/);
        expect(reply.status, reply.text.slice(0, 200)).to.be.oneOf([200, 400]);
      }),
      { numRuns: 150 },
    );
    expect(({} as { polluted?: boolean }).polluted).to.equal(undefined);
  });

  it('fuzz: on-chain style encoded parameters (signed-data gateway) are answered 200 or 4xx JSON', async () => {
    const encoded = fc.oneof(
      fc.uint8Array({ maxLength: 400 }).map((bytes) => `0x${Buffer.from(bytes).toString('hex')}`),
      fc
        .tuple(fc.constantFrom('.', '..', 'bitcoin', '%2e%2e', '\ufffd', ''), fc.string({ maxLength: 20 }))
        .map(([id, sub]) =>
          encodeParameters([
            { type: 'string', name: 'id', value: id || 'x' },
            { type: 'string', name: 'sub', value: sub || 'y' },
          ]),
        ),
    );
    await fc.assert(
      fc.asyncProperty(encoded, async (encodedParameters) => {
        const reply = await post(signed(ID.coin), { encodedParameters });
        expect(reply.type).to.match(/^application\/json/);
        expect(reply.status, reply.text.slice(0, 200)).to.be.oneOf([200, 400]);
      }),
      { numRuns: 150 },
    );
  });
});

describe('hostile input: metrics and health on a port of their own', () => {
  it('the caller-facing port does not serve /metrics, /healthz or /readyz; the metrics port does', async () => {
    const api = await startHostileApi();
    const gw = await startGatewayServer(hostileConfig(api.url), { port: 0, host: '127.0.0.1', metricsPort: 0 });
    try {
      for (const path of ['/metrics', '/healthz', '/readyz']) {
        expect((await fetch(`http://127.0.0.1:${gw.port}${path}`)).status, path).to.equal(404);
        expect((await fetch(`http://127.0.0.1:${gw.metricsPort}${path}`)).status, path).to.equal(200);
      }
      expect(await (await fetch(`http://127.0.0.1:${gw.metricsPort}/metrics`)).text()).to.contain(
        'gateway_in_flight_requests',
      );
    } finally {
      await gw.close();
      await api.close();
    }
  });
});
