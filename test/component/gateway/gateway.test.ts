import { request as httpRequest } from 'node:http';
import { expect } from 'chai';
import { AbiCoder, getBytes, keccak256, solidityPackedKeccak256, verifyMessage } from 'ethers';
import fc from 'fast-check';
import {
  type CallEndpoint,
  DEFAULT_PATH_KEY,
  type GatewayServer,
  startGatewayServer,
} from '../../../src/gateway/server.js';
import { metricValue, silentLogger } from '../../../src/observability/index.js';
import { encodeParameters } from '../../../src/ois/abi.js';
import { configureWorkerPool, DEFAULT_WORKER_POOL_SETTINGS } from '../../../src/ois/worker-pool.js';
import { deriveTemplateIdV1 } from '../../../src/protocol/ids.js';
import { nodeWallet } from '../../../src/protocol/wallet.js';
import {
  buildConfig,
  type ConfigOverrides,
  ENDPOINTS,
  type LoopbackApi,
  loadEngine,
  MNEMONIC,
  NODE_ADDRESS,
  startLoopbackApi,
} from './fixtures.js';

const abi = AbiCoder.defaultAbiCoder();
const node = nodeWallet(MNEMONIC);

type Reply = { status: number; headers: Headers; body: unknown; text: string };

async function post(url: string, body: unknown, init: RequestInit = {}): Promise<Reply> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(init.headers as Record<string, string>) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...Object.fromEntries(Object.entries(init).filter(([key]) => key !== 'headers')),
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, body: parsed, text };
}

describe('gateway server (component)', function () {
  this.timeout(60_000);
  let api: LoopbackApi;
  let engine: CallEndpoint;
  const servers: GatewayServer[] = [];

  async function start(overrides: ConfigOverrides = {}, options: Parameters<typeof startGatewayServer>[1] = {}) {
    const config = buildConfig(api.url, overrides);
    const server = await startGatewayServer(config, {
      host: '127.0.0.1',
      port: 0,
      callEndpoint: engine,
      logger: silentLogger(),
      ...options,
    });
    servers.push(server);
    const base = `http://127.0.0.1:${server.port}`;
    return {
      server,
      config,
      base,
      http: (id: string) => `${base}/http-data/${DEFAULT_PATH_KEY}/${id}`,
      signed: (id: string) => `${base}/http-signed-data/${DEFAULT_PATH_KEY}/${id}`,
      oev: `${base}/sign-oev/${DEFAULT_PATH_KEY}`,
    };
  }

  before(async () => {
    api = await startLoopbackApi();
    engine = (await loadEngine()).callEndpoint;
  });
  after(async () => {
    for (const server of servers) await server.close();
    await api.close();
  });

  describe('HTTP gateway', () => {
    let gw: Awaited<ReturnType<typeof start>>;
    before(async () => {
      gw = await start();
    });

    it('calls the API and answers {rawValue, encodedValue, values}', async () => {
      const reply = await post(gw.http(ENDPOINTS.price), { parameters: { coin: 'btc' }, extra: 'ignored' });
      expect(reply.status).to.equal(200);
      expect(reply.body).to.deep.equal({
        rawValue: { coin: 'btc', price: 1234.5678 },
        encodedValue: abi.encode(['int256'], [123456n]),
        values: ['123456'],
      });
    });

    it('answers 200 with only {rawValue} when extraction fails after a successful API call', async () => {
      const reply = await post(gw.http(ENDPOINTS.object), { parameters: {} });
      expect(reply.status).to.equal(200);
      expect(reply.body).to.deep.equal({ rawValue: { name: 'no number here' } });
    });

    it('answers 500 {"message":"Error: API call failed with status code N"} when the API fails', async () => {
      const reply = await post(gw.http(ENDPOINTS.status), { parameters: { code: '503' } });
      expect(reply.status).to.equal(500);
      expect(reply.body).to.deep.equal({ message: 'Error: API call failed with status code 503' });
    });

    it('answers 500 with an "Error: " message for a non-JSON API answer', async () => {
      const reply = await post(gw.http(ENDPOINTS.text), { parameters: {} });
      expect(reply.status).to.equal(500);
      expect((reply.body as { message: string }).message).to.match(/^Error: /);
    });

    for (const [name, body] of [
      ['no parameters', {}],
      ['parameters as a string', { parameters: 'coin=btc' }],
      ['parameters as an array', { parameters: ['btc'] }],
      ['parameters null', { parameters: null }],
      ['an array body', [{ parameters: {} }]],
    ] as const) {
      it(`answers 400 "Invalid request body" for ${name}`, async () => {
        const reply = await post(gw.http(ENDPOINTS.price), body);
        expect(reply.status).to.equal(400);
        expect(reply.body).to.deep.equal({ message: 'Invalid request body' });
      });
    }

    it('answers 400 for an unknown endpointId', async () => {
      const id = keccak256('0x99');
      const reply = await post(gw.http(id), { parameters: {} });
      expect(reply.status).to.equal(400);
      expect(reply.body).to.deep.equal({ message: `Unable to find endpoint with ID:'${id}'` });
    });

    it('answers 400 JSON for malformed JSON, 413 JSON for a too large body, 415 for a bad charset', async () => {
      const malformed = await post(gw.http(ENDPOINTS.price), '{"parameters": {');
      expect(malformed.status).to.equal(400);
      expect(malformed.body).to.deep.equal({ message: 'Invalid request body' });
      const large = await post(gw.http(ENDPOINTS.price), { parameters: { coin: 'x'.repeat(70 * 1024) } });
      expect(large.status).to.equal(413);
      expect(large.body).to.deep.equal({ message: 'Request body too large' });
      const charset = await post(gw.http(ENDPOINTS.price), '{}', {
        headers: { 'content-type': 'application/json; charset=latin-9' },
      });
      expect(charset.status).to.equal(415);
      expect(charset.headers.get('content-type')).to.match(/application\/json/);
    });

    it('answers 400 when the body is not declared as JSON', async () => {
      const reply = await post(gw.http(ENDPOINTS.price), '{"parameters":{}}', {
        headers: { 'content-type': 'text/plain' },
      });
      expect(reply.status).to.equal(400);
      expect(reply.body).to.deep.equal({ message: 'Invalid request body' });
    });

    it('answers unknown routes with 404 JSON and other methods with 405 JSON', async () => {
      const missing = await post(`${gw.base}/nothing/here`, {});
      expect(missing.status).to.equal(404);
      expect(missing.body).to.deep.equal({ message: 'Not found' });
      const wrongKey = await post(`${gw.base}/http-data/wrong-key/${ENDPOINTS.price}`, { parameters: {} });
      expect(wrongKey.status).to.equal(404);
      const get = await fetch(gw.http(ENDPOINTS.price));
      expect(get.status).to.equal(405);
      expect(await get.json()).to.deep.equal({ message: 'Method not allowed' });
    });

    it("matches gateway paths by express' rules: any case, a trailing slash, a query, a percent-encoded id", async () => {
      const upper = `${gw.base}/HTTP-DATA/${DEFAULT_PATH_KEY.toUpperCase()}/${ENDPOINTS.price}`;
      const encodedId = `${gw.base}/http-data/${DEFAULT_PATH_KEY}/${ENDPOINTS.price.replace('0x', '%30x')}`;
      for (const url of [`${gw.http(ENDPOINTS.price)}/`, `${gw.http(ENDPOINTS.price)}?a=1`, upper, encodedId]) {
        const reply = await post(url, { parameters: { coin: 'btc' } });
        expect(reply.status, url).to.equal(200);
        expect(reply.body, url).to.have.property('encodedValue');
      }
      const extraSegment = await post(`${gw.http(ENDPOINTS.price)}/more`, { parameters: {} });
      expect(extraSegment.status).to.equal(404);
      expect(extraSegment.body).to.deep.equal({ message: 'Not found' });
      const badEscape = await post(gw.http('%E0%A4%A'), { parameters: {} });
      expect(badEscape.status).to.equal(400);
      expect(badEscape.body).to.deep.equal({ message: 'Invalid request' });
    });
  });

  describe('HTTP signed-data gateway', () => {
    let gw: Awaited<ReturnType<typeof start>>;
    before(async () => {
      gw = await start();
    });

    it('signs the encoded value with templateId V1 over the exact encodedParameters', async () => {
      const encodedParameters = encodeParameters([{ type: 'string', name: 'coin', value: 'btc' }]);
      const before = Math.floor(Date.now() / 1000);
      const reply = await post(gw.signed(ENDPOINTS.price), { encodedParameters });
      expect(reply.status, reply.text).to.equal(200);
      const body = reply.body as { timestamp: string; encodedValue: string; signature: string };
      expect(Object.keys(body)).to.deep.equal(['timestamp', 'encodedValue', 'signature']);
      expect(body.encodedValue).to.equal(abi.encode(['int256'], [123456n]));
      expect(Number(body.timestamp)).to.be.within(before, Math.ceil(Date.now() / 1000));
      const templateId = keccak256(`0x${ENDPOINTS.price.slice(2)}${encodedParameters.slice(2)}`);
      expect(templateId).to.equal(deriveTemplateIdV1(ENDPOINTS.price, encodedParameters));
      const hash = solidityPackedKeccak256(
        ['bytes32', 'uint256', 'bytes'],
        [templateId, body.timestamp, body.encodedValue],
      );
      expect(verifyMessage(getBytes(hash), body.signature)).to.equal(NODE_ADDRESS);
    });

    it('signs with the post-processing timestamp when post-processing returns one', async () => {
      const reply = await post(gw.signed(ENDPOINTS.stamped), { encodedParameters: '0x' });
      expect(reply.status, reply.text).to.equal(200);
      const body = reply.body as { timestamp: string; encodedValue: string; signature: string };
      expect(body.timestamp).to.equal('1700000000');
      expect(body.encodedValue).to.equal(abi.encode(['int256'], [246913n]));
      const templateId = deriveTemplateIdV1(ENDPOINTS.stamped, '0x');
      const hash = solidityPackedKeccak256(
        ['bytes32', 'uint256', 'bytes'],
        [templateId, 1700000000, body.encodedValue],
      );
      expect(verifyMessage(getBytes(hash), body.signature)).to.equal(NODE_ADDRESS);
    });

    it('answers 500 "Error: …" when post-processing fails, in both gateways', async () => {
      const signed = await post(gw.signed(ENDPOINTS.crashing), { encodedParameters: '0x' });
      expect(signed.status).to.equal(500);
      expect((signed.body as { message: string }).message).to.match(/^Error: .*post-processing broke/);
      const http = await post(gw.http(ENDPOINTS.crashing), { parameters: {} });
      expect(http.status).to.equal(500);
      expect((http.body as { message: string }).message).to.match(/^Error: .*post-processing broke/);
    });

    it('answers 400 for invalid encodedParameters, echoing them', async () => {
      const reply = await post(gw.signed(ENDPOINTS.price), { encodedParameters: '0x1234' });
      expect(reply.status).to.equal(400);
      expect(reply.body).to.deep.equal({ message: 'Request contains invalid encodedParameters: 0x1234' });
    });

    it('answers 400 "Invalid request body" without a string encodedParameters', async () => {
      for (const body of [{}, { encodedParameters: 12 }, { parameters: {} }]) {
        const reply = await post(gw.signed(ENDPOINTS.price), body);
        expect(reply.status).to.equal(400);
        expect(reply.body).to.deep.equal({ message: 'Invalid request body' });
      }
    });

    it('answers 400 for an endpoint that is only in the HTTP gateway trigger list', async () => {
      const reply = await post(gw.signed(ENDPOINTS.object), { encodedParameters: '0x' });
      expect(reply.status).to.equal(400);
      expect(reply.body).to.deep.equal({ message: `Unable to find endpoint with ID:'${ENDPOINTS.object}'` });
    });

    it('answers 500 "Error: …" when the API fails', async () => {
      const encodedParameters = encodeParameters([{ type: 'string', name: 'code', value: '500' }]);
      const reply = await post(gw.signed(ENDPOINTS.status), { encodedParameters });
      expect(reply.status).to.equal(500);
      expect(reply.body).to.deep.equal({ message: 'Error: API call failed with status code 500' });
    });
  });

  describe('request coalescing', () => {
    let gw: Awaited<ReturnType<typeof start>>;
    before(async () => {
      gw = await start();
    });
    const coalesced = async () => {
      const text = await (await fetch(`${gw.base}/metrics`)).text();
      return text
        .split('\n')
        .filter((line) => line.startsWith('gateway_coalesced_requests_total{'))
        .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
    };

    it('makes one API call for identical HTTP gateway requests in flight together, one per distinct parameters', async () => {
      const before = api.requests;
      const replies = await Promise.all([
        ...Array.from({ length: 8 }, () => post(gw.http(ENDPOINTS.slow), { parameters: { ms: '300' } })),
        post(gw.http(ENDPOINTS.slow), { parameters: { ms: '301' } }),
      ]);
      expect(replies.map((reply) => reply.status)).to.deep.equal(Array(9).fill(200));
      expect(new Set(replies.slice(0, 8).map((reply) => reply.text)).size).to.equal(1);
      expect(api.requests - before).to.equal(2);
      expect(await coalesced()).to.equal(7);
      // Nothing is kept once the call settled: the same request now calls the API again.
      expect((await post(gw.http(ENDPOINTS.slow), { parameters: { ms: '300' } })).status).to.equal(200);
      expect(api.requests - before).to.equal(3);
    });

    it('makes one API call for identical signed-data requests in flight together, each answer signed by the node', async () => {
      const encodedParameters = encodeParameters([{ type: 'string', name: 'ms', value: '250' }]);
      const before = api.requests;
      const replies = await Promise.all(
        Array.from({ length: 6 }, () => post(gw.signed(ENDPOINTS.slow), { encodedParameters })),
      );
      expect(api.requests - before).to.equal(1);
      const templateId = deriveTemplateIdV1(ENDPOINTS.slow, encodedParameters);
      for (const reply of replies) {
        expect(reply.status, reply.text).to.equal(200);
        const body = reply.body as { timestamp: string; encodedValue: string; signature: string };
        expect(body.encodedValue).to.equal(abi.encode(['int256'], [100n]));
        const hash = solidityPackedKeccak256(
          ['bytes32', 'uint256', 'bytes'],
          [templateId, body.timestamp, body.encodedValue],
        );
        expect(verifyMessage(getBytes(hash), body.signature)).to.equal(NODE_ADDRESS);
      }
    });

    it('calls the API once per request when the calls do not overlap', async () => {
      const before = api.requests;
      for (let i = 0; i < 3; i++) {
        expect((await post(gw.http(ENDPOINTS.price), { parameters: { coin: 'eth' } })).status).to.equal(200);
      }
      expect(api.requests - before).to.equal(3);
    });
  });

  describe('OEV gateway', () => {
    let gw: Awaited<ReturnType<typeof start>>;
    before(async () => {
      gw = await start();
    });

    function beacon(templateId: string, value: bigint) {
      const timestamp = String(Math.floor(Date.now() / 1000));
      const encodedValue = abi.encode(['int256'], [value]);
      const hash = solidityPackedKeccak256(['bytes32', 'uint256', 'bytes'], [templateId, timestamp, encodedValue]);
      return {
        airnodeAddress: node.address,
        templateId,
        signedData: { timestamp, encodedValue, signature: node.signMessageSync(getBytes(hash)) },
      };
    }

    const request = (beacons: unknown[]) => ({
      chainId: 31337,
      api3ServerV1: '0x709944a48cAf83535e43471680fDA4905FB3181a',
      oevProxyAddress: '0x709944a48cAf83535e43471680fDA4905FB3181a',
      updateId: keccak256('0x01'),
      bidderAddress: '0x709944a48cAf83535e43471680fDA4905FB3181a',
      bidAmount: '100',
      beacons,
    });

    it('answers an array with one signature per own beacon', async () => {
      const reply = await post(gw.oev, request([beacon(keccak256('0x01'), 100n), beacon(keccak256('0x02'), 100n)]));
      expect(reply.status, reply.text).to.equal(200);
      expect(reply.body).to.be.an('array').with.length(2);
    });

    it('answers 400 with the reference messages', async () => {
      const invalid = await post(gw.oev, { chainId: 0 });
      expect(invalid.status).to.equal(400);
      expect(invalid.body).to.deep.equal({ message: 'Invalid request body' });
      const stale = beacon(keccak256('0x01'), 100n);
      stale.signedData.timestamp = '1';
      const old = await post(gw.oev, request([stale]));
      expect(old.status).to.equal(400);
      expect(old.body).to.deep.equal({ message: 'Not enough beacons with valid data to proceed' });
      const none = await post(gw.oev, request([]));
      expect(none.body).to.deep.equal({ message: 'Not enough beacons with data to proceed' });
    });
  });

  describe('CORS', () => {
    let gw: Awaited<ReturnType<typeof start>>;
    before(async () => {
      gw = await start();
    });

    it('answers a pre-flight from an allowed origin with 204 and the three headers', async () => {
      const response = await fetch(gw.http(ENDPOINTS.price), {
        method: 'OPTIONS',
        headers: { origin: 'https://app.example' },
      });
      expect(response.status).to.equal(204);
      expect(response.headers.get('access-control-allow-origin')).to.equal('https://app.example');
      expect(response.headers.get('access-control-allow-methods')).to.equal('OPTIONS,POST');
      expect(response.headers.get('access-control-allow-headers')).to.equal('Content-Type');
    });

    it('answers a pre-flight from another origin with 400', async () => {
      const response = await fetch(gw.http(ENDPOINTS.price), {
        method: 'OPTIONS',
        headers: { origin: 'https://evil.example' },
      });
      expect(response.status).to.equal(400);
      expect(await response.json()).to.deep.equal({ message: 'CORS origin verification failed.' });
      const oev = await fetch(gw.oev, { method: 'OPTIONS', headers: { origin: 'https://app.example' } });
      expect(oev.status).to.equal(400); // corsOrigins: [] allows nobody
    });

    it('echoes "*" for a wildcard and sets the headers on POST; processes POST from other origins without them', async () => {
      const star = await fetch(gw.signed(ENDPOINTS.price), {
        method: 'OPTIONS',
        headers: { origin: 'https://any.example' },
      });
      expect(star.status).to.equal(204);
      expect(star.headers.get('access-control-allow-origin')).to.equal('*');
      const allowed = await post(
        gw.http(ENDPOINTS.price),
        { parameters: {} },
        { headers: { origin: 'https://app.example' } },
      );
      expect(allowed.status).to.equal(200);
      expect(allowed.headers.get('access-control-allow-origin')).to.equal('https://app.example');
      const other = await post(
        gw.http(ENDPOINTS.price),
        { parameters: {} },
        { headers: { origin: 'https://evil.example' } },
      );
      expect(other.status).to.equal(200);
      expect(other.headers.get('access-control-allow-origin')).to.equal(null);
    });
  });

  describe('limits, health, metrics, options', () => {
    it('answers 429 with Retry-After beyond maxConcurrency in-flight requests per gateway', async () => {
      const gw = await start({ httpGateway: { enabled: true, maxConcurrency: 2, corsOrigins: [] } });
      const replies = await Promise.all(
        // Slow enough that all six are in flight together even on a loaded machine.
        Array.from({ length: 6 }, () => post(gw.http(ENDPOINTS.slow), { parameters: { ms: '1500' } })),
      );
      const statuses = replies.map((reply) => reply.status).sort();
      expect(statuses).to.deep.equal([200, 200, 429, 429, 429, 429]);
      const limited = replies.find((reply) => reply.status === 429)!;
      expect(limited.headers.get('retry-after')).to.equal('1');
      expect(limited.body).to.deep.equal({ message: 'Too many requests' });
      // The limit is per gateway: the signed-data gateway is not affected, and capacity comes back.
      expect((await post(gw.http(ENDPOINTS.price), { parameters: {} })).status).to.equal(200);
      const registry = gw.server.gateway.registry;
      expect(
        await metricValue(registry, 'gateway_rejected_requests_total', {
          gateway: 'httpGateway',
          reason: 'concurrency',
        }),
      ).to.equal(4);
      // Every answer by status class, and the 429s on their own.
      expect(await metricValue(registry, 'gateway_too_many_requests_total', { gateway: 'httpGateway' })).to.equal(4);
      expect(
        await metricValue(registry, 'gateway_responses_total', { gateway: 'httpGateway', status_class: '4xx' }),
      ).to.equal(4);
      expect(
        await metricValue(registry, 'gateway_responses_total', { gateway: 'httpGateway', status_class: '2xx' }),
      ).to.equal(3);
    });

    it('with processing snippets and keepProcessingWarm, is ready only once the processing workers are warm', async () => {
      // A fresh pool: no worker of an earlier test is already warm.
      const pool = configureWorkerPool(DEFAULT_WORKER_POOL_SETTINGS);
      const gw = await start({}, { keepProcessingWarm: true });
      const first = await fetch(`${gw.base}/readyz`);
      expect(first.status).to.equal(503);
      expect(await first.json()).to.deep.equal({ status: 'not ready', reason: 'not ready' });
      while ((await fetch(`${gw.base}/readyz`)).status !== 200) await new Promise((resolve) => setTimeout(resolve, 50));
      // Warm before any request: the workers started for the warm-up serve the snippet.
      const started = pool.started;
      expect(started).to.equal(pool.settings.size);
      const reply = await post(gw.http(ENDPOINTS.stamped), { parameters: {} });
      expect(reply.status).to.equal(200);
      expect(pool.started).to.equal(started);
    });

    it('serves /healthz, /readyz and /metrics with request, latency and API call series', async () => {
      const gw = await start();
      await post(gw.http(ENDPOINTS.price), { parameters: {} });
      await post(gw.http(ENDPOINTS.status), { parameters: { code: '500' } });
      expect((await fetch(`${gw.base}/healthz`)).status).to.equal(200);
      expect(await (await fetch(`${gw.base}/readyz`)).json()).to.deep.equal({ status: 'ready' });
      const text = await (await fetch(`${gw.base}/metrics`)).text();
      expect(text).to.contain(
        `gateway_requests_total{gateway="httpGateway",endpoint="${ENDPOINTS.price}",status="200"} 1`,
      );
      expect(text).to.contain(
        `gateway_request_duration_seconds_bucket{le="0.005",gateway="httpGateway",endpoint="${ENDPOINTS.price}",status="200"}`,
      );
      expect(text).to.contain(
        `gateway_api_call_duration_seconds_count{gateway="httpGateway",endpoint="${ENDPOINTS.status}",outcome="failed"} 1`,
      );
      expect(text).to.contain(
        `gateway_processing_failures_total{gateway="httpGateway",endpoint="${ENDPOINTS.status}",stage="endpoint"} 1`,
      );
      expect(text).to.contain('process_cpu_seconds_total');
    });

    it('does not label metrics with unknown endpoint ids (bounded cardinality)', async () => {
      const gw = await start();
      await post(gw.http(keccak256('0x77')), { parameters: {} });
      const text = await (await fetch(`${gw.base}/metrics`)).text();
      expect(text).to.contain('gateway_requests_total{gateway="httpGateway",endpoint="-",status="400"} 1');
      expect(text).not.to.contain(keccak256('0x77'));
    });

    it('serves only the enabled gateways', async () => {
      const gw = await start({ httpGateway: { enabled: false }, oevGateway: { enabled: false } });
      expect((await post(gw.http(ENDPOINTS.price), { parameters: {} })).status).to.equal(404);
      expect((await post(gw.oev, {})).status).to.equal(404);
      expect((await post(gw.signed(ENDPOINTS.price), { encodedParameters: '0x' })).status).to.equal(200);
    });

    it('takes the path key from an option (e.g. a secret) instead of the public default', async () => {
      const gw = await start({}, { pathKey: 'c0ffee-secret-path-key' });
      expect((await post(gw.http(ENDPOINTS.price), { parameters: {} })).status).to.equal(404);
      const reply = await post(`${gw.base}/http-data/c0ffee-secret-path-key/${ENDPOINTS.price}`, { parameters: {} });
      expect(reply.status).to.equal(200);
    });

    it('drains in-flight requests on close, then refuses connections', async () => {
      const gw = await start();
      const slow = post(gw.http(ENDPOINTS.slow), { parameters: { ms: '600' } });
      while (gw.server.gateway.inFlight() === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      // close() resolves only once nothing is in flight, and the request it waited for is answered in full.
      const inFlightWhenClosed = await gw.server.close().then(() => gw.server.gateway.inFlight());
      expect(inFlightWhenClosed).to.equal(0);
      const reply = await slow;
      expect(reply.status).to.equal(200);
      let refused = false;
      try {
        await fetch(`${gw.base}/healthz`);
      } catch {
        refused = true;
      }
      expect(refused).to.equal(true);
    });
  });

  describe('JSON bodies: the lean reader answers as body-parser', () => {
    // The same body sent with a Content-Length (read by the gateway's lean reader) and chunked (left to
    // body-parser): the status and the answer must be the same.
    const echo: CallEndpoint = async (call) => ({
      success: true,
      rawValue: call.parameters,
      encodedValue: '0x',
      values: [],
    });
    let url: string;
    before(async () => {
      url = (await start({}, { callEndpoint: echo })).http(ENDPOINTS.price);
    });

    const send = (body: string, contentType: string, chunked: boolean) =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        const bytes = Buffer.from(body, 'utf8');
        const request = httpRequest(url, {
          method: 'POST',
          headers: { 'content-type': contentType, ...(chunked ? {} : { 'content-length': String(bytes.length) }) },
        });
        request.on('response', (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            text += chunk;
          });
          response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
        });
        request.on('error', reject);
        if (chunked) {
          request.write(bytes);
          request.end();
        } else request.end(bytes);
      });

    const same = async (body: string, contentType = 'application/json') => {
      const lean = await send(body, contentType, false);
      const bodyParser = await send(body, contentType, true);
      expect(lean, JSON.stringify(body)).to.deep.equal(bodyParser);
      return lean;
    };

    it('gives the same answer for valid, empty, non-object, malformed and BOM-prefixed bodies', async () => {
      const bodies = [
        '{"parameters":{"coin":"btc"}}',
        ' \n\t{"parameters":{"coin":"é€😀"}}',
        '\uFEFF{"parameters":{"coin":"btc"}}',
        '',
        '   ',
        '"text"',
        '5',
        'null',
        'true',
        '[1,2]',
        '{bad json',
        '{"parameters": 5}',
        '{"parameters":{}} trailing',
        '\u0000',
      ];
      for (const body of bodies) await same(body);
      expect((await same('{"parameters":{"coin":"btc"}}', 'application/json; charset=UTF-8')).status).to.equal(200);
      expect((await same('{"parameters":{"coin":"btc"}}')).status).to.equal(200);
      expect((await same('{bad json')).text).to.equal('{"message":"Invalid request body"}');
    });

    it('fuzz: any text body gets the same answer from both readers', async () => {
      const jsonish = fc.oneof(
        fc.string({ unit: fc.constantFrom('{', '}', '[', ']', '"', ':', ',', ' ', '\n', 'a', '1', '\uFEFF', 'é') }),
        fc.json().map((text) => `{"parameters":${text}}`),
        fc.string(),
      );
      await fc.assert(
        fc.asyncProperty(jsonish, async (body) => {
          await same(body);
        }),
        { numRuns: 60 },
      );
    });
  });

  describe('fuzz: hostile requests', () => {
    it('always answers 4xx JSON {message} and keeps serving', async () => {
      const gw = await start({
        httpGateway: { enabled: true, maxConcurrency: 1000, corsOrigins: [] },
        httpSignedDataGateway: { enabled: true, maxConcurrency: 1000, corsOrigins: [] },
        oevGateway: { enabled: true, maxConcurrency: 1000, corsOrigins: [] },
      });
      const json = fc.jsonValue({ maxDepth: 3 });
      const bodyArb = fc.oneof(
        fc.string({ maxLength: 200 }).map((text) => ({ raw: text })), // mostly malformed JSON
        fc
          .constantFrom('{', '{"parameters":', 'null', '"x"', '12', 'true', '[]', '\u0000', '{"a":1}}')
          .map((raw) => ({ raw })),
        json.map((value) => ({ raw: JSON.stringify(value) })),
        fc
          .record({ parameters: fc.oneof(json, fc.constant(undefined)) })
          .map((value) => ({ raw: JSON.stringify(value) })),
        fc
          .record({
            encodedParameters: fc.oneof(
              fc.string(),
              fc.integer(),
              fc.string({ unit: fc.constantFrom(...'0123456789abcdef') }).map((h) => `0x${h}`),
            ),
          })
          .map((value) => ({ raw: JSON.stringify(value) })),
        fc
          .record({ chainId: fc.oneof(fc.integer(), fc.string()), beacons: fc.array(json, { maxLength: 3 }) })
          .map((value) => ({ raw: JSON.stringify(value) })),
        fc
          .integer({ min: 65 * 1024, max: 200 * 1024 })
          .map((size) => ({ raw: JSON.stringify({ parameters: { x: 'y'.repeat(size) } }) })),
        // Hostile parameters: deep nesting, lone surrogates, prototype keys, dot segments, too many OEV beacons.
        fc
          .integer({ min: 33, max: 5_000 })
          .map((depth) => ({ raw: `{"parameters":{"code":${'['.repeat(depth)}1${']'.repeat(depth)}}}` })),
        fc
          .constantFrom('\\ud800', 'a\\udfff', '..', '.', '%2e%2e')
          .map((value) => ({ raw: `{"parameters":{"code":"${value}","${value}":1}}` })),
        fc.constant({ raw: '{"parameters":{"__proto__":{"code":"500"},"constructor":{"prototype":{"x":1}}}}' }),
        fc.integer({ min: 65, max: 300 }).map((count) => ({
          raw: JSON.stringify({ chainId: 1, beacons: Array(count).fill({ airnodeAddress: '0x', templateId: '0x' }) }),
        })),
      );
      const targetArb = fc.oneof(
        fc.constant('http-unknown'),
        fc.constant('signed-not-in-list'),
        fc.constant('http'),
        fc.constant('signed'),
        fc.constant('oev'),
        fc.string({ minLength: 1, maxLength: 40 }).map((s) => `path:${encodeURIComponent(s)}`),
      );
      const contentTypeArb = fc.constantFrom(
        'application/json',
        'application/json; charset=utf-8',
        'text/plain',
        'application/x-www-form-urlencoded',
        'application/json; charset=utf-16',
      );
      let count = 0;
      await fc.assert(
        fc.asyncProperty(bodyArb, targetArb, contentTypeArb, async (body, target, contentType) => {
          const url =
            target === 'http-unknown'
              ? gw.http(keccak256('0x1234'))
              : target === 'signed-not-in-list'
                ? gw.signed(ENDPOINTS.object)
                : target === 'http'
                  ? gw.http(ENDPOINTS.status)
                  : target === 'signed'
                    ? gw.signed(ENDPOINTS.price)
                    : target === 'oev'
                      ? gw.oev
                      : `${gw.base}/http-data/${DEFAULT_PATH_KEY}/${target.slice(5)}`;
          const reply = await post(url, body.raw, { headers: { 'content-type': contentType } });
          count++;
          // A valid request may slip through the generator (e.g. {"parameters":{}} to the status endpoint, whose
          // API call then fails with 5xx from the API): only a caller mistake must never be a 5xx.
          const validByChance = reply.status === 200 || (reply.status === 500 && target === 'http');
          if (!validByChance) {
            expect(reply.status, `${url} ${body.raw.slice(0, 80)} -> ${reply.text.slice(0, 200)}`).to.be.within(
              400,
              499,
            );
          }
          expect(reply.headers.get('content-type')).to.match(/^application\/json/);
          if (reply.status >= 400) expect(reply.body).to.have.property('message').that.is.a('string');
        }),
        { numRuns: 300 },
      );
      expect(count).to.equal(300);
      expect((await fetch(`${gw.base}/healthz`)).status).to.equal(200);
      expect((await post(gw.http(ENDPOINTS.price), { parameters: {} })).status).to.equal(200);
    });
  });
});
