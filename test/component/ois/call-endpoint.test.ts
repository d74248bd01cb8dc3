import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { AbiCoder } from 'ethers';
import { callEndpoint, type EndpointCall, type EndpointPhase, type RequestMetadata } from '../../../src/ois/index.js';
import type { Endpoint, Ois, SecurityScheme } from '../../../src/ois/types.js';
import { referenceAdapter } from '../../unit/ois/reference.js';
import { ApiServer } from './api-server.js';

const metadata: RequestMetadata = {
  chainId: '31337',
  chainType: 'evm',
  requesterAddress: '0x1111111111111111111111111111111111111111',
  sponsorAddress: '0x2222222222222222222222222222222222222222',
  sponsorWalletAddress: '0x3333333333333333333333333333333333333333',
  requestId: `0x${'44'.repeat(32)}`,
};

type ExampleConfig = { ois: Ois[]; apiCredentials: EndpointCall['apiCredentials'] };

/** An example config with its API pointed at the loopback server (and `\${` interpolation escapes resolved). */
function example(name: string, serverUrl: string): ExampleConfig {
  const text = readFileSync(
    new URL(`../../fixtures/airnode/examples/${name}/config.example.json`, import.meta.url),
    'utf8',
  ).replaceAll('\\\\${', '${');
  const config = JSON.parse(text) as ExampleConfig;
  for (const ois of config.ois) ois.apiSpecifications.servers[0]!.url = serverUrl;
  return config;
}

function simpleOis(serverUrl: string, schemes: Record<string, SecurityScheme>, endpoint: Partial<Endpoint> = {}): Ois {
  return {
    title: 'Loopback',
    apiSpecifications: {
      servers: [{ url: serverUrl }],
      paths: { '/price': { get: { parameters: [{ name: 'symbol', in: 'query' }] } } },
      components: { securitySchemes: schemes },
      security: Object.fromEntries(Object.keys(schemes).map((name) => [name, []])),
    },
    endpoints: [
      {
        name: 'price',
        operation: { path: '/price', method: 'get' },
        fixedOperationParameters: [],
        reservedParameters: [
          { name: '_type', default: 'int256' },
          { name: '_path', default: 'price' },
          { name: '_times' },
        ],
        parameters: [{ name: 'symbol', default: 'ETH', operationParameter: { name: 'symbol', in: 'query' } }],
        ...endpoint,
      },
    ],
  };
}

describe('ois/callEndpoint against loopback APIs', function () {
  this.timeout(30_000);
  let api: ApiServer;
  const options = { apiTimeoutsMs: [2_000, 2_000] };

  beforeEach(async () => {
    api = await new ApiServer().start();
  });
  afterEach(() => api.stop());

  it('runs the coingecko example end to end, byte-equal to the reference extraction', async () => {
    const body = { id: 'bitcoin', market_data: { current_price: { usd: 43210.123456789 } } };
    api.json('/coins/bitcoin', body);
    const config = example('coingecko', api.url);
    const result = await callEndpoint({
      ois: config.ois[0]!,
      endpointName: 'coinMarketData',
      parameters: { coinId: 'bitcoin' },
      apiCredentials: [],
      options,
    });
    const theirs = referenceAdapter.extractAndEncodeResponse(body, {
      _type: 'int256',
      _path: 'market_data.current_price.usd',
      _times: '1000000',
    });
    expect(result).to.deep.equal({
      success: true,
      rawValue: body,
      encodedValue: theirs.encodedValue,
      values: ['43210123456'],
    });
    expect(api.requests[0]!.url).to.equal(
      '/coins/bitcoin?localization=false&tickers=false&market_data=true&community_data=false&developer_data=false&sparkline=false',
    );
  });

  it('runs the pre- and post-processing examples', async () => {
    api.json('/coins/ethereum/history', { market_data: { current_price: { usd: 3000.5 } } });
    const pre = example('coingecko-pre-processing', api.url);
    const preResult = await callEndpoint({
      ois: pre.ois[0]!,
      endpointName: 'coinHistoryData',
      parameters: { coinId: 'ethereum', unixTimestamp: '1650000000' },
      apiCredentials: [],
      options,
    });
    expect(preResult).to.deep.include({ success: true, values: ['3000500000'] });
    expect(api.requests[0]!.url).to.equal('/coins/ethereum/history?date=15-04-2022&localization=false');

    const markets = [
      { current_price: 100, price_change_percentage_30d_in_currency: 10 },
      { current_price: 300, price_change_percentage_30d_in_currency: -20 },
    ];
    api.json('/coins/markets', markets);
    const post = example('coingecko-post-processing', api.url);
    const postResult = await callEndpoint({
      ois: post.ois[0]!,
      endpointName: 'coinsMarketData',
      parameters: { coinIds: 'a,b', vsCurrency: 'usd' },
      apiCredentials: [],
      options,
    });
    expect(postResult).to.deep.include({
      success: true,
      rawValue: [20000000000, -500000000],
      values: ['20000000000', '-500000000'],
    });
  });

  it('runs the weather multi-value example with a timestamp and an apiKey in the query', async () => {
    api.json('/onecall/timemachine', { current: { sunset: 1650000000, temp: 12.345, weather: [{ main: 'Clouds' }] } });
    const config = example('weather-multi-value', api.url);
    const result = await callEndpoint({
      ois: config.ois[0]!,
      endpointName: 'histLatLonData',
      parameters: { lat: '1.5', lon: '2.5', dt: '1650000000' },
      apiCredentials: [
        { oisTitle: config.ois[0]!.title, securitySchemeName: 'openWeatherSecurityScheme', securitySchemeValue: 'KEY' },
      ],
      options,
    });
    expect(result.success).to.equal(true);
    if (!result.success) return;
    expect(result.values.slice(0, 3)).to.deep.equal(['1650000000', '1234', 'Clouds']);
    const decoded = AbiCoder.defaultAbiCoder().decode(['uint256', 'int256', 'string', 'uint256'], result.encodedValue);
    expect(Number(decoded[3])).to.be.closeTo(Date.now() / 1000, 5);
    expect(api.requests[0]!.url).to.equal('/onecall/timemachine?lat=1.5&lon=2.5&dt=1650000000&appid=KEY');
  });

  it('relays request metadata to the API only when given (never for gateways)', async () => {
    api.route('/get', (request, _body, response) => {
      const url = new URL(request.url!, 'http://x');
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          args: Object.fromEntries(url.searchParams),
          headers: { Requesteraddress: request.headers.requesteraddress, Cookie: request.headers.cookie },
        }),
      );
    });
    const config = example('relay-security-schemes', api.url);
    const call = {
      ois: config.ois[0]!,
      endpointName: 'httpbinRelaySecuritySchemes',
      parameters: {},
      apiCredentials: [],
      options,
    };
    const relayed = await callEndpoint({ ...call, metadata });
    expect(relayed.success, JSON.stringify(relayed)).to.equal(true);
    if (!relayed.success) return;
    expect(relayed.values.slice(0, 4)).to.deep.equal([
      metadata.requesterAddress,
      metadata.sponsorAddress,
      metadata.sponsorWalletAddress,
      '31337',
    ]);
    expect(api.requests[0]!.headers.cookie).to.equal('chainType=evm;');
    const gateway = await callEndpoint(call);
    expect(gateway).to.deep.include({ success: false });
    expect(api.requests[1]!.url).to.equal('/get');
    expect(api.requests[1]!.headers.requesteraddress).to.equal(undefined);
  });

  it('sends each credential scheme the server checks', async () => {
    const cases: { scheme: SecurityScheme; value: string; check: (r: (typeof api.requests)[number]) => boolean }[] = [
      {
        scheme: { type: 'apiKey', name: 'key', in: 'query' },
        value: 'q-secret',
        check: (r) => r.url.includes('key=q-secret'),
      },
      {
        scheme: { type: 'apiKey', name: 'X-Api-Key', in: 'header' },
        value: 'h-secret',
        check: (r) => r.headers['x-api-key'] === 'h-secret',
      },
      {
        scheme: { type: 'apiKey', name: 'token', in: 'cookie' },
        value: 'c secret',
        check: (r) => r.headers.cookie === 'token=c%20secret;',
      },
      {
        scheme: { type: 'http', scheme: 'bearer' },
        value: 'b-token',
        check: (r) => r.headers.authorization === 'Bearer b-token',
      },
      {
        scheme: { type: 'http', scheme: 'basic' },
        value: Buffer.from('user:pass').toString('base64'),
        check: (r) => r.headers.authorization === `Basic ${Buffer.from('user:pass').toString('base64')}`,
      },
    ];
    for (const { scheme, value, check } of cases) {
      api.route('/price', (request, _body, response) => {
        const ok = check({ method: request.method!, url: request.url!, headers: request.headers, body: '' });
        response.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' }).end(JSON.stringify({ price: 7 }));
      });
      const ois = simpleOis(api.url, { scheme });
      const result = await callEndpoint({
        ois,
        endpointName: 'price',
        parameters: {},
        apiCredentials: [{ oisTitle: 'Loopback', securitySchemeName: 'scheme', securitySchemeValue: value }],
        options,
      });
      expect(result, JSON.stringify(scheme)).to.deep.include({ success: true, values: ['7'] });
      // Credentials of another OIS with the same scheme name are not used.
      const foreign = await callEndpoint({
        ois,
        endpointName: 'price',
        parameters: {},
        apiCredentials: [{ oisTitle: 'Other', securitySchemeName: 'scheme', securitySchemeValue: value }],
        options: { apiTimeoutsMs: [1_000] },
      });
      expect(foreign).to.deep.equal({ success: false, errorMessage: 'API call failed with status code 401' });
    }
  });

  it('returns rawValue when the API answered but extraction failed', async () => {
    api.json('/price', { other: 1 });
    const result = await callEndpoint({
      ois: simpleOis(api.url, {}),
      endpointName: 'price',
      parameters: {},
      apiCredentials: [],
      options,
    });
    expect(result).to.deep.equal({
      success: false,
      errorMessage: "Unable to find value at path: 'price'",
      rawValue: { other: 1 },
    });
  });

  it('reports API failures with the reference messages and never leaks credentials', async () => {
    api.json('/price', { error: 'x' }, 503);
    const ois = simpleOis(api.url, { key: { type: 'apiKey', name: 'apikey', in: 'query' } });
    const call = {
      ois,
      endpointName: 'price',
      parameters: {},
      apiCredentials: [{ oisTitle: 'Loopback', securitySchemeName: 'key', securitySchemeValue: 'TOPSECRET' }],
      options,
    };
    const failed = await callEndpoint(call);
    expect(failed).to.deep.equal({ success: false, errorMessage: 'API call failed with status code 503' });
    await api.stop();
    const noResponse = await callEndpoint({ ...call, options: { apiTimeoutsMs: [300, 300] } });
    expect(noResponse).to.deep.equal({ success: false, errorMessage: 'API call failed with no response' });
    expect(JSON.stringify([failed, noResponse])).to.not.include('TOPSECRET');
    api = await new ApiServer().start();
  });

  it('merges defaults after pre-processing and never sends reserved parameters', async () => {
    api.json('/price', { price: '1.5' });
    const ois = simpleOis(
      api.url,
      {},
      {
        preProcessingSpecificationV2: {
          environment: 'Node',
          timeoutMs: 5000,
          value:
            '({ endpointParameters }) => ({ endpointParameters: { ...endpointParameters, seen: Object.keys(endpointParameters).join() } })',
        },
      },
    );
    const result = await callEndpoint({
      ois,
      endpointName: 'price',
      parameters: { _times: '100', _path: 'price' },
      apiCredentials: [],
      options,
    });
    expect(result).to.deep.include({ success: true, values: ['150'] });
    expect(api.requests[0]!.url).to.equal('/price?symbol=ETH');
  });

  it('uses the processed parameters as the response when there is no operation', async () => {
    const ois = simpleOis(
      api.url,
      {},
      {
        operation: undefined,
        reservedParameters: [
          { name: '_type', fixed: 'uint256,string' },
          { name: '_path', fixed: 'sum,_type' },
        ],
        parameters: [{ name: 'a' }, { name: 'b' }],
        preProcessingSpecificationV2: {
          environment: 'Node',
          timeoutMs: 5000,
          value: '({ endpointParameters: p }) => ({ endpointParameters: { sum: Number(p.a) + Number(p.b) } })',
        },
      },
    );
    const result = await callEndpoint({
      ois,
      endpointName: 'price',
      parameters: { a: '2', b: '3', _type: 'ignored' },
      apiCredentials: [],
      options,
    });
    expect(result).to.deep.include({ success: true, values: ['5', 'ignored'] });
    expect(api.requests).to.have.length(0);
  });

  it('passes the V2 post-processing timestamp through', async () => {
    api.json('/price', { price: 3 });
    const ois = simpleOis(
      api.url,
      {},
      {
        postProcessingSpecificationV2: {
          environment: 'Node',
          timeoutMs: 5000,
          value: '({ response }) => ({ response, timestamp: 1700000000 })',
        },
      },
    );
    const result = await callEndpoint({ ois, endpointName: 'price', parameters: {}, apiCredentials: [], options });
    expect(result).to.deep.include({ success: true, timestamp: 1700000000, values: ['3'] });
  });

  it('tells onPhase of the processing it declares and of the encoding, in order and within the call, a failing one as failed', async () => {
    api.json('/price', { price: 3 });
    const phases: EndpointPhase[] = [];
    const onPhase = (phase: EndpointPhase) => phases.push(phase);
    const processed = simpleOis(
      api.url,
      {},
      {
        postProcessingSpecificationV2: {
          environment: 'Node',
          timeoutMs: 5000,
          value: '({ response }) => ({ response })',
        },
      },
    );
    const before = performance.timeOrigin + performance.now();
    const ok = await callEndpoint({
      ois: processed,
      endpointName: 'price',
      parameters: {},
      apiCredentials: [],
      options,
      onPhase,
    });
    const after = performance.timeOrigin + performance.now();
    expect(ok).to.deep.include({ success: true });
    expect(phases.map((phase) => [phase.name, phase.failed])).to.deep.equal([
      ['post-processing', false],
      ['encoding', false],
    ]);
    expect(phases[0]!.startMs).to.be.at.least(before);
    expect(phases[0]!.endMs).to.be.at.most(phases[1]!.startMs);
    expect(phases[1]!.endMs).to.be.at.most(after);

    // No processing declared: only the encoding; an answer that cannot be encoded: a failed encoding phase.
    phases.length = 0;
    api.json('/price', { price: 'not a number' });
    const failed = await callEndpoint({
      ois: simpleOis(api.url, {}),
      endpointName: 'price',
      parameters: {},
      apiCredentials: [],
      options,
      onPhase,
    });
    expect(failed).to.deep.include({ success: false });
    expect(phases.map((phase) => [phase.name, phase.failed])).to.deep.equal([['encoding', true]]);
  });

  it('reports processing failures and keeps serving', async () => {
    api.json('/price', { price: 3 });
    const ois = simpleOis(
      api.url,
      {},
      {
        postProcessingSpecificationV2: { environment: 'Node', timeoutMs: 100, value: '() => { while (true) {} }' },
      },
    );
    const result = await callEndpoint({ ois, endpointName: 'price', parameters: {}, apiCredentials: [], options });
    expect(result).to.deep.equal({ success: false, errorMessage: 'Full timeout exceeded' });
    const ok = await callEndpoint({
      ois: simpleOis(api.url, {}),
      endpointName: 'price',
      parameters: {},
      apiCredentials: [],
      options,
    });
    expect(ok).to.deep.include({ success: true });
  });

  it('never throws for bad input', async () => {
    const bad: unknown[] = [
      null,
      {},
      { ois: null, endpointName: 'x', parameters: {}, apiCredentials: [] },
      { ois: simpleOis(api.url, {}), endpointName: 'missing', parameters: {}, apiCredentials: [] },
      { ois: simpleOis(api.url, {}), endpointName: 'price', parameters: 'nope', apiCredentials: [] },
      { ois: { ...simpleOis(api.url, {}), apiSpecifications: { servers: [] } }, endpointName: 'price', parameters: {} },
    ];
    for (const call of bad) {
      const result = await callEndpoint(call as EndpointCall);
      expect(result.success, JSON.stringify(call)).to.equal(false);
      if (!result.success) expect(result.errorMessage).to.be.a('string').and.not.equal('');
    }
  });
});
