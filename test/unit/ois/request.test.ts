import { expect } from 'chai';
import fc from 'fast-check';
import { buildRequest, type RequestMetadata, serializeQuery } from '../../../src/ois/request.js';
import type { ApiCredential, Endpoint, Ois, SecurityScheme } from '../../../src/ois/types.js';
import { readExample, referenceAdapter, referenceAxios } from './reference.js';

const metadata: RequestMetadata = {
  chainId: '31337',
  chainType: 'evm',
  requesterAddress: '0x1111111111111111111111111111111111111111',
  sponsorAddress: '0x2222222222222222222222222222222222222222',
  sponsorWalletAddress: '0x3333333333333333333333333333333333333333',
  requestId: `0x${'44'.repeat(32)}`,
};

function oisWith(endpoint: Partial<Endpoint>, extra: Partial<Ois['apiSpecifications']> = {}): Ois {
  return {
    title: 'Test',
    apiSpecifications: {
      servers: [{ url: 'http://127.0.0.1:1/v1' }],
      paths: {
        '/items/{id}': {
          get: {
            parameters: [
              { name: 'id', in: 'path' },
              { name: 'q', in: 'query' },
              { name: 'X-Trace', in: 'header' },
              { name: 'session', in: 'cookie' },
            ],
          },
          post: {
            parameters: [
              { name: 'id', in: 'path' },
              { name: 'amount', in: 'query' },
              { name: 'to', in: 'query' },
            ],
          },
        },
      },
      components: { securitySchemes: {} },
      security: {},
      ...extra,
    },
    endpoints: [
      {
        name: 'e',
        operation: { path: '/items/{id}', method: 'get' },
        fixedOperationParameters: [],
        reservedParameters: [{ name: '_type' }],
        parameters: [
          { name: 'id', operationParameter: { name: 'id', in: 'path' } },
          { name: 'q', operationParameter: { name: 'q', in: 'query' } },
          { name: 'trace', operationParameter: { name: 'X-Trace', in: 'header' } },
          { name: 'session', operationParameter: { name: 'session', in: 'cookie' } },
          { name: 'amount', operationParameter: { name: 'amount', in: 'query' } },
          { name: 'to', operationParameter: { name: 'to', in: 'query' } },
        ],
        ...endpoint,
      },
    ],
  };
}

describe('ois/request: building the HTTP request', () => {
  it('places parameters in path, query, headers and one Cookie header', () => {
    const request = buildRequest({
      ois: oisWith({}),
      endpointName: 'e',
      parameters: { id: 'a b/c', q: 'x y:$,', trace: 't1', session: 'v=1;2', unknown: 'dropped', _type: 'int256' },
      apiCredentials: [],
    });
    expect(request).to.deep.equal({
      method: 'GET',
      url: 'http://127.0.0.1:1/v1/items/a%20b%2Fc?q=x+y:$,',
      headers: { 'X-Trace': 't1', Cookie: 'session=v%3D1%3B2;' },
    });
  });

  it('sends query-located values of a POST as a flat JSON body', () => {
    const ois = oisWith({ operation: { path: '/items/{id}', method: 'post' } });
    const request = buildRequest({
      ois,
      endpointName: 'e',
      parameters: { id: '7', amount: 5, to: 'x' },
      apiCredentials: [],
    });
    expect(request).to.deep.equal({
      method: 'POST',
      url: 'http://127.0.0.1:1/v1/items/7',
      headers: { 'Content-Type': 'application/json' },
      body: '{"amount":5,"to":"x"}',
    });
  });

  it('fixed operation parameters override user values and security overrides both', () => {
    const ois = oisWith(
      { fixedOperationParameters: [{ operationParameter: { name: 'q', in: 'query' }, value: 'fixed' }] },
      {
        components: { securitySchemes: { key: { type: 'apiKey', name: 'q', in: 'query' } } },
        security: { key: [] },
      },
    );
    const withoutKey = buildRequest({ ois, endpointName: 'e', parameters: { id: '1', q: 'user' }, apiCredentials: [] });
    expect(withoutKey.url).to.equal('http://127.0.0.1:1/v1/items/1?q=fixed');
    const withKey = buildRequest({
      ois,
      endpointName: 'e',
      parameters: { id: '1', q: 'user' },
      apiCredentials: [{ oisTitle: 'Test', securitySchemeName: 'key', securitySchemeValue: 'secret' }],
    });
    expect(withKey.url).to.equal('http://127.0.0.1:1/v1/items/1?q=secret');
  });

  it('applies every security scheme; relay schemes only with metadata', () => {
    const schemes: Record<string, SecurityScheme> = {
      qKey: { type: 'apiKey', name: 'api_key', in: 'query' },
      hKey: { type: 'apiKey', name: 'X-Api-Key', in: 'header' },
      cKey: { type: 'apiKey', name: 'token', in: 'cookie' },
      bearer: { type: 'http', scheme: 'bearer' },
      chain: { type: 'relayChainId', name: 'chainId', in: 'query' },
      chainType: { type: 'relayChainType', name: 'chainType', in: 'cookie' },
      requester: { type: 'relayRequesterAddress', name: 'X-Requester', in: 'header' },
      sponsor: { type: 'relaySponsorAddress', name: 'sponsor', in: 'query' },
      wallet: { type: 'relaySponsorWalletAddress', name: 'wallet', in: 'query' },
      requestId: { type: 'relayRequestId', name: 'X-Request-Id', in: 'header' },
    };
    const ois = oisWith(
      {},
      {
        components: { securitySchemes: schemes },
        security: Object.fromEntries(Object.keys(schemes).map((k) => [k, []])),
      },
    );
    const apiCredentials: ApiCredential[] = ['qKey', 'hKey', 'cKey', 'bearer'].map((name) => ({
      oisTitle: 'Test',
      securitySchemeName: name,
      securitySchemeValue: `${name}-secret`,
    }));
    const relayed = buildRequest({ ois, endpointName: 'e', parameters: { id: '1' }, apiCredentials, metadata });
    expect(relayed.url).to.equal(
      `http://127.0.0.1:1/v1/items/1?api_key=qKey-secret&chainId=31337&sponsor=${metadata.sponsorAddress}&wallet=${metadata.sponsorWalletAddress}`,
    );
    expect(relayed.headers).to.deep.equal({
      'X-Api-Key': 'hKey-secret',
      Authorization: 'Bearer bearer-secret',
      'X-Requester': metadata.requesterAddress,
      'X-Request-Id': metadata.requestId,
      Cookie: 'token=cKey-secret; chainType=evm;',
    });
    const gateway = buildRequest({ ois, endpointName: 'e', parameters: { id: '1' }, apiCredentials });
    expect(gateway.url).to.equal('http://127.0.0.1:1/v1/items/1?api_key=qKey-secret');
    expect(gateway.headers).to.deep.equal({
      'X-Api-Key': 'hKey-secret',
      Authorization: 'Bearer bearer-secret',
      Cookie: 'token=cKey-secret;',
    });
  });

  it('sends http basic credentials as configured (already base64), like the reference', () => {
    const ois = oisWith(
      {},
      { components: { securitySchemes: { basic: { type: 'http', scheme: 'basic' } } }, security: { basic: [] } },
    );
    const request = buildRequest({
      ois,
      endpointName: 'e',
      parameters: { id: '1' },
      apiCredentials: [{ oisTitle: 'Test', securitySchemeName: 'basic', securitySchemeValue: 'dXNlcjpwYXNz' }],
    });
    expect(request.headers.Authorization).to.equal('Basic dXNlcjpwYXNz');
  });

  it('security headers replace user headers whatever their case', () => {
    const ois = oisWith(
      {},
      {
        components: { securitySchemes: { key: { type: 'apiKey', name: 'x-trace', in: 'header' } } },
        security: { key: [] },
      },
    );
    const request = buildRequest({
      ois,
      endpointName: 'e',
      parameters: { id: '1', trace: 'user-value' },
      apiCredentials: [{ oisTitle: 'Test', securitySchemeName: 'key', securitySchemeValue: 'secret' }],
    });
    expect(request.headers).to.deep.equal({ 'X-Trace': 'secret' });
  });

  it('reports missing path parameters, required parameters and unknown endpoints', () => {
    expect(() => buildRequest({ ois: oisWith({}), endpointName: 'e', parameters: {}, apiCredentials: [] })).to.throw(
      "The following path parameters were expected but not provided: 'id'",
    );
    expect(() =>
      buildRequest({ ois: oisWith({}), endpointName: 'e', parameters: { id: '' }, apiCredentials: [] }),
    ).to.throw('path parameters were expected');
    expect(
      buildRequest({ ois: oisWith({}), endpointName: 'e', parameters: { id: 0 }, apiCredentials: [] }).url,
    ).to.equal('http://127.0.0.1:1/v1/items/0');
    const required = oisWith({
      parameters: [
        { name: 'id', operationParameter: { name: 'id', in: 'path' } },
        { name: 'q', required: true, operationParameter: { name: 'q', in: 'query' } },
      ],
    });
    expect(() =>
      buildRequest({ ois: required, endpointName: 'e', parameters: { id: '1' }, apiCredentials: [] }),
    ).to.throw("Missing required parameters: 'q'");
    expect(() => buildRequest({ ois: oisWith({}), endpointName: 'nope', parameters: {}, apiCredentials: [] })).to.throw(
      "Endpoint: 'nope' not found in the OIS.",
    );
  });

  it('serialises queries as axios does', () => {
    const query = { a: 'b c', d: [1, null, 'x'], n: null, o: { p: 1 }, t: true, e: '' };
    expect(serializeQuery(query)).to.equal('a=b+c&d%5B%5D=1&d%5B%5D=x&o=%7B%22p%22:1%7D&t=true&e=');
    expect(
      referenceAxios.getUri({ url: 'http://h/', params: { a: 'b c', d: [1, null, 'x'], t: true, e: '' } }),
    ).to.equal('http://h/?a=b+c&d%5B%5D=1&d%5B%5D=x&t=true&e=');
  });

  it('builds every OIS of the fixture configs as the reference does', () => {
    const sources: Ois[] = [readExample<Ois>('ois/ois-2.3.2.fixture.json')];
    for (const file of [
      'node/config.example.json',
      'node/test-fixture.config.valid.json',
      'validator/interpolated-config.valid.json',
      'deployer/config.example.json',
      ...[
        'coingecko',
        'coingecko-template',
        'coingecko-http-gateways',
        'coingecko-cross-chain-authorizer',
        'authenticated-coinmarketcap',
        'weather-multi-value',
        'relay-security-schemes',
        'failing-example',
      ].map((example) => `examples/${example}/config.example.json`),
    ]) {
      sources.push(...readExample<{ ois: Ois[] }>(file).ois);
    }
    let built = 0;
    for (const ois of sources) {
      for (const endpoint of ois.endpoints) {
        if (!endpoint.operation) continue;
        const parameters = Object.fromEntries(endpoint.parameters.map((p) => [p.name, `v-${p.name}`]));
        const apiCredentials = Object.keys(ois.apiSpecifications.components.securitySchemes).map((name) => ({
          oisTitle: ois.title,
          securitySchemeName: name,
          securitySchemeValue: `secret-${name}`,
        }));
        const options = { ois, endpointName: endpoint.name, parameters, apiCredentials, metadata };
        const ours = buildRequest(options);
        const theirs = referenceAdapter.buildRequest(options);
        if (ours.method === 'GET') {
          expect(ours.url).to.equal(
            referenceAxios.getUri({ url: `${theirs.baseUrl}${theirs.path}`, params: theirs.data }),
          );
          expect(ours.headers).to.deep.equal(theirs.headers);
        } else {
          expect(ours.url).to.equal(`${theirs.baseUrl}${theirs.path}`);
          expect(JSON.parse(ours.body!)).to.deep.equal(theirs.data);
        }
        built++;
      }
    }
    expect(built).to.be.greaterThan(10);
  });

  describe('property: same request as @api3/airnode-adapter buildRequest', () => {
    const safe = fc.stringMatching(/^[A-Za-z0-9._~-]{1,12}$/);
    const anyText = fc.string({ maxLength: 16 });
    const queryNames = ['q1', 'q2', 'limit'];
    const headerNames = ['x-a', 'x-b'];
    const cookieNames = ['c1', 'c2'];
    const location = fc.constantFrom(
      ...queryNames.map((name) => ({ name, in: 'query' })),
      ...headerNames.map((name) => ({ name, in: 'header' })),
      ...cookieNames.map((name) => ({ name, in: 'cookie' })),
    );
    const scheme: fc.Arbitrary<SecurityScheme> = fc.oneof(
      location.map((l) => ({ type: 'apiKey', name: l.name, in: l.in })),
      fc.constantFrom('basic', 'bearer').map((s) => ({ type: 'http', scheme: s })),
      fc
        .tuple(
          fc.constantFrom(
            'relayChainId',
            'relayChainType',
            'relayRequesterAddress',
            'relaySponsorAddress',
            'relaySponsorWalletAddress',
            'relayRequestId',
          ),
          location,
        )
        .map(([type, l]) => ({ type, name: l.name, in: l.in })),
    );
    const caseArbitrary = fc.record({
      method: fc.constantFrom('get', 'post'),
      withPath: fc.boolean(),
      apiParameters: fc.uniqueArray(location, { selector: (l) => `${l.in}:${l.name}`, maxLength: 6 }),
      fixedMask: fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
      mappedMask: fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
      values: fc.array(
        fc.oneof(
          anyText,
          fc.integer().map((n) => n),
        ),
        { minLength: 6, maxLength: 6 },
      ),
      fixedValues: fc.array(anyText, { minLength: 6, maxLength: 6 }),
      // "." and ".." are refused on purpose (they would move the credentials to another path; docs/security.md).
      pathValue: safe.filter((value) => value !== '.' && value !== '..'),
      schemes: fc.array(scheme, { maxLength: 4 }),
      credentialMask: fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
      withMetadata: fc.boolean(),
    });

    it('agrees on URL, headers and body', () => {
      fc.assert(
        fc.property(caseArbitrary, (c) => {
          const path = c.withPath ? '/r/{id}' : '/r';
          const apiParameters = [...(c.withPath ? [{ name: 'id', in: 'path' }] : []), ...c.apiParameters];
          const endpointParameters: Endpoint['parameters'][number][] = c.withPath
            ? [{ name: 'id', operationParameter: { name: 'id', in: 'path' } }]
            : [];
          const fixed: Endpoint['fixedOperationParameters'][number][] = [];
          const parameters: Record<string, unknown> = c.withPath ? { id: c.pathValue } : {};
          c.apiParameters.forEach((api, i) => {
            if (c.fixedMask[i]) fixed.push({ operationParameter: api, value: c.fixedValues[i] });
            if (c.mappedMask[i] || !c.fixedMask[i]) {
              endpointParameters.push({ name: `p${i}`, operationParameter: api });
              parameters[`p${i}`] = c.values[i];
            }
          });
          parameters.notDeclared = 'x';
          const securitySchemes = Object.fromEntries(c.schemes.map((s, i) => [`s${i}`, s]));
          const ois: Ois = {
            title: 'T',
            apiSpecifications: {
              servers: [{ url: 'http://127.0.0.1:9/base' }],
              paths: { [path]: { [c.method]: { parameters: apiParameters } } },
              components: { securitySchemes },
              security: Object.fromEntries(Object.keys(securitySchemes).map((k) => [k, []])),
            },
            endpoints: [
              {
                name: 'e',
                operation: { path, method: c.method },
                fixedOperationParameters: fixed,
                reservedParameters: [{ name: '_type' }],
                parameters: endpointParameters,
              },
            ],
          };
          const apiCredentials = c.schemes
            .map((_, i) => ({ oisTitle: 'T', securitySchemeName: `s${i}`, securitySchemeValue: `secret${i}` }))
            .filter((_, i) => c.credentialMask[i]);
          const options = {
            ois,
            endpointName: 'e',
            parameters,
            apiCredentials,
            metadata: c.withMetadata ? metadata : undefined,
          };
          const ours = buildRequest(options);
          const theirs = referenceAdapter.buildRequest({ ...options, metadata: options.metadata ?? null });
          const theirHeaders = Object.fromEntries(Object.entries(theirs.headers).map(([k, v]) => [k, String(v)]));
          if (c.method === 'get') {
            const theirUrl = referenceAxios.getUri({ url: `${theirs.baseUrl}${theirs.path}`, params: theirs.data });
            expect(new URL(ours.url).href).to.equal(new URL(theirUrl).href);
            expect(ours.headers).to.deep.equal(theirHeaders);
            expect(ours.body).to.equal(undefined);
          } else {
            expect(ours.url).to.equal(`${theirs.baseUrl}${theirs.path}`);
            const { 'Content-Type': contentType, ...rest } = ours.headers;
            expect(contentType).to.equal('application/json');
            expect(rest).to.deep.equal(theirHeaders);
            expect(JSON.parse(ours.body!)).to.deep.equal(theirs.data);
          }
        }),
        { numRuns: 1000 },
      );
    });
  });
});
