// OpenTelemetry traces end to end: a cycle on anvil (real AirnodeRrpV0) whose shards' API calls run in real
// `oracle-node worker` processes, as in the operator's worker pods (the shard JSON is all that crosses), exporting to
// a real OTLP/HTTP receiver (the Collector's pdata decoder, built from Go modules). One trace per request spans both
// processes.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Config } from '../../../src/config/index.js';
import { validateConfig } from '../../../src/config/index.js';
import { DEFAULT_PATH_KEY } from '../../../src/gateway/app.js';
import { startGatewayServer } from '../../../src/gateway/server.js';
import { runCycle } from '../../../src/node/cycle.js';
import { WorkerExecutor } from '../../../src/node/executor.js';
import { silentLogger } from '../../../src/node/logger.js';
import { formatTraceparent, tracerFromEnvironment } from '../../../src/observability/tracing.js';
import { startTestChain, TEST_MNEMONIC, waitForMined } from '../../support/chain.js';
import {
  type ApiServer,
  buildConfigJson,
  createSponsor,
  ENDPOINTS,
  encodeCoin,
  makeFullRequest,
  OIS_TITLE,
  requestEvents,
  requestPrice,
  startApiServer,
  wallets,
  writeNodeFiles,
} from '../../support/harness.js';
import {
  attributesOf,
  buildOtlpReceiver,
  type OtlpReceiver,
  type StoredSpan,
  startOtlpReceiver,
} from '../../support/otlp-receiver.js';
import { WorkerProcesses } from '../../support/worker-processes.js';
import {
  API_KEY as GATEWAY_API_KEY,
  ENDPOINTS as GATEWAY_ENDPOINTS,
  buildConfig as gatewayConfig,
  loadEngine,
  startLoopbackApi,
} from '../gateway/fixtures.js';

const API_KEY = 's3cr3t-api-key-0123456789';

describe('OpenTelemetry traces of a cycle across the coordinator and worker processes (anvil, OTLP receiver)', () => {
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  let api: ApiServer;
  let receiver: OtlpReceiver;
  let dir: string;
  let config: Config;
  let configArgs: string[];

  before(async function () {
    // Cold, the receiver's build downloads and compiles its Go modules (docs/development.md).
    this.timeout(900_000);
    const binary = await buildOtlpReceiver();
    if (!binary) {
      // Written reason: the receiver is built from Go modules; without Go there is no real receiver to test against.
      this.skip();
    }
    receiver = await startOtlpReceiver(binary!);
    chain = await startTestChain();
    api = await startApiServer();
    dir = mkdtempSync(join(tmpdir(), 'tracing-'));
    const built = buildConfigJson({
      providers: { main: chain.anvil.url },
      deployment: chain.deployment,
      apiUrl: api.url,
    });
    // An API key in the query: any attribute that carried the API's URL would carry it.
    const ois = (built.config['ois'] as Record<string, Record<string, unknown>>[])[0]!;
    ois['apiSpecifications'] = {
      ...(ois['apiSpecifications'] as object),
      components: { securitySchemes: { key: { type: 'apiKey', in: 'query', name: 'key' } } },
      security: { key: [] },
    };
    // A post-processing snippet on the price endpoint: processing and encoding are spans of their own.
    const price = (ois['endpoints'] as unknown as Record<string, unknown>[]).find(
      (endpoint) => endpoint['name'] === 'price',
    )!;
    price['postProcessingSpecificationV2'] = {
      environment: 'Node',
      value: '({ response }) => ({ response })',
      timeoutMs: 5000,
    };
    built.config['apiCredentials'] = [
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a ${NAME} placeholder of config.json, not a template
      { oisTitle: OIS_TITLE, securitySchemeName: 'key', securitySchemeValue: '${API_KEY}' },
    ];
    const secrets = { ...built.secrets, API_KEY };
    configArgs = writeNodeFiles(dir, { config: built.config, secrets }).args;
    const validated = validateConfig(built.config, secrets);
    if (!validated.ok || !validated.config) throw new Error(JSON.stringify(validated.errors));
    config = validated.config;
  });
  after(async () => {
    await receiver?.stop();
    await api?.close();
    await chain?.anvil.stop();
  });

  const byTrace = (spans: StoredSpan[], traceId: string) => spans.filter((s) => s.traceId === traceId);
  const named = (spans: StoredSpan[], name: string) => {
    const found = spans.filter((s) => s.name === name);
    expect(found, `spans named ${name}`).to.have.length(1);
    return found[0]!;
  };

  it('makes one trace per request: discovery, authorization, signing and submission in the coordinator, the API call in the worker', async () => {
    const sponsor = await createSponsor(chain.deployment, 'tracing');
    const good = await requestPrice(chain.deployment, sponsor);
    const broken = await makeFullRequest(chain.deployment, {
      endpointId: ENDPOINTS.broken,
      sponsor: sponsor.address,
      sponsorWallet: sponsor.sponsorWallet,
      parameters: encodeCoin('ETH'),
    });
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint };
    const tracer = tracerFromEnvironment(otel, 'coordinator');
    await runCycle(config, {
      executor: new WorkerExecutor(
        { config, wallets, logger: silentLogger, tracer },
        new WorkerProcesses(configArgs, otel),
      ),
      logger: silentLogger,
      wallets,
      tracer,
    });
    await tracer.flush();
    await waitForMined(chain.anvil.url);
    const fulfilment = (await requestEvents(chain.deployment, good)).fulfilled;
    expect(fulfilment).to.have.length(1);

    const spans = receiver.spans();
    const roots = spans.filter((s) => s.name === 'oracle-node request' && attributesOf(s)['requestId'] === good);
    expect(roots).to.have.length(1);
    const root = roots[0]!;
    expect(root.parentSpanId ?? '').to.equal('');
    expect(root.resource['oracle_node.role']).to.equal('coordinator');
    expect(attributesOf(root)).to.include({
      requestId: good,
      chainId: String(chain.deployment.chainId),
      endpointId: ENDPOINTS.price,
      'oracle_node.outcome': 'fulfilled',
    });

    const trace = byTrace(spans, root.traceId);
    expect(trace.map((s) => s.name).sort()).to.deep.equal(
      [
        'api call',
        'authorization',
        'discovery',
        'encoding',
        'oracle-node request',
        'post-processing',
        'sign response',
        'submission',
      ].sort(),
    );
    // Every span of the trace is a child of the request's root, whichever process made it, but the phases of the
    // API call, which are children of the call.
    const phases = ['post-processing', 'encoding'];
    for (const span of trace.filter((s) => s !== root && !phases.includes(s.name)))
      expect(span.parentSpanId, span.name).to.equal(root.spanId);
    for (const name of ['discovery', 'authorization', 'sign response', 'submission'])
      expect(named(trace, name).resource['oracle_node.role'], name).to.equal('coordinator');
    expect(named(trace, 'api call').resource['oracle_node.role']).to.equal('worker');

    const apiCall = named(trace, 'api call');
    expect(apiCall.kind).to.equal(3); // client
    expect(attributesOf(apiCall)).to.deep.include({
      requestId: good,
      chainId: String(chain.deployment.chainId),
      endpointId: ENDPOINTS.price,
      'http.request.method': 'GET',
      'oracle_node.api.outcome': '2xx',
    });
    for (const name of phases) {
      const phase = named(trace, name);
      expect(phase.parentSpanId, name).to.equal(apiCall.spanId);
      expect(phase.resource['oracle_node.role'], name).to.equal('worker');
      expect(phase.status?.code ?? 0, name).to.not.equal(2);
      expect(attributesOf(phase), name).to.include({ requestId: good, endpointId: ENDPOINTS.price });
      expect(BigInt(phase.startTimeUnixNano) >= BigInt(apiCall.startTimeUnixNano), name).to.equal(true);
      expect(BigInt(phase.endTimeUnixNano) <= BigInt(apiCall.endTimeUnixNano), name).to.equal(true);
    }
    expect(attributesOf(named(trace, 'authorization'))).to.include({ 'oracle_node.authorized': true });
    expect(attributesOf(named(trace, 'discovery'))).to.include({
      'rpc.system': 'jsonrpc',
      'rpc.method': 'eth_getLogs',
    });
    const submission = attributesOf(named(trace, 'submission'));
    expect(submission).to.include({
      'rpc.system': 'jsonrpc',
      'rpc.method': 'eth_sendRawTransaction',
      'oracle_node.outcome': 'fulfilled',
      'oracle_node.provider': 'main',
    });
    const receipt = await fetch(chain.anvil.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'eth_getTransactionByHash',
        params: [submission['oracle_node.transaction_hash']],
      }),
    });
    expect(((await receipt.json()) as { result: { to: string } }).result.to.toLowerCase()).to.equal(
      chain.deployment.AirnodeRrpV0.toLowerCase(),
    );

    // The request whose API answers 500: its API call span fails with the status code, and it is a trace of its own.
    const brokenRoot = spans.find((s) => s.name === 'oracle-node request' && attributesOf(s)['requestId'] === broken)!;
    expect(brokenRoot.traceId).to.not.equal(root.traceId);
    const brokenCall = named(byTrace(spans, brokenRoot.traceId), 'api call');
    expect(brokenCall.status?.code).to.equal(2);
    expect(attributesOf(brokenCall)).to.include({ 'http.response.status_code': 500, 'oracle_node.api.outcome': '5xx' });
    // Nothing was encoded for it: no phase spans after a failed HTTP call.
    expect(byTrace(spans, brokenRoot.traceId).map((s) => s.name)).to.not.include('encoding');
  });

  it("makes a gateway request a trace: a server span under the caller's traceparent, with the HTTP attributes", async () => {
    const loopback = await startLoopbackApi();
    const tracer = tracerFromEnvironment({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint }, 'gateway');
    const server = await startGatewayServer(gatewayConfig(loopback.url), {
      host: '127.0.0.1',
      port: 0,
      callEndpoint: (await loadEngine()).callEndpoint,
      tracer,
    });
    const caller = { traceId: 'ab'.repeat(16), spanId: 'cd'.repeat(8) };
    try {
      const base = `http://127.0.0.1:${server.port}/http-data/${DEFAULT_PATH_KEY}`;
      const answer = await fetch(`${base}/${GATEWAY_ENDPOINTS.price}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', traceparent: formatTraceparent(caller) },
        body: JSON.stringify({ parameters: { coin: 'btc' } }),
      });
      expect(answer.status).to.equal(200);
      await (await fetch(`http://127.0.0.1:${server.port}/healthz`)).text();
    } finally {
      await server.close();
      await loopback.close();
    }
    await tracer.flush();
    const spans = receiver.spans().filter((s) => s.resource['oracle_node.role'] === 'gateway');
    // One span: the health check is no gateway request.
    expect(spans).to.have.length(1);
    const span = spans[0]!;
    expect(span.name).to.equal('gateway request');
    expect(span.kind).to.equal(2); // server
    expect(span.traceId).to.equal(caller.traceId);
    expect(span.parentSpanId).to.equal(caller.spanId);
    expect(attributesOf(span)).to.deep.equal({
      'http.request.method': 'POST',
      'http.route': '/http-data/{pathKey}/{endpointId}',
      'http.response.status_code': 200,
      'oracle_node.gateway': 'httpGateway',
      endpointId: GATEWAY_ENDPOINTS.price,
    });
  });

  it('exports to an authenticated, busy collector with the standard variables: headers, resource, service name, retries', async () => {
    // A second receiver of the same build: one that refuses exports without its token, and answers the first two 503.
    const token = 'Bearer collector-token-0123456789';
    const guarded = await startOtlpReceiver((await buildOtlpReceiver())!, {
      requireHeader: `Authorization: ${token}`,
      unavailable: 2,
    });
    const loopback = await startLoopbackApi();
    const environment = {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${guarded.endpoint}/v1/traces`,
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,k8s.namespace.name=team-a',
      OTEL_SERVICE_NAME: 'price-node',
    };
    const withoutToken = tracerFromEnvironment(environment, 'gateway');
    const withToken = tracerFromEnvironment(
      { ...environment, OTEL_EXPORTER_OTLP_HEADERS: `Authorization=${encodeURIComponent(token)}` },
      'gateway',
    );
    try {
      for (const tracer of [withoutToken, withToken]) {
        const server = await startGatewayServer(gatewayConfig(loopback.url), {
          host: '127.0.0.1',
          port: 0,
          callEndpoint: (await loadEngine()).callEndpoint,
          tracer,
        });
        try {
          const answer = await fetch(
            `http://127.0.0.1:${server.port}/http-data/${DEFAULT_PATH_KEY}/${GATEWAY_ENDPOINTS.price}`,
            {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ parameters: { coin: 'btc' } }),
            },
          );
          expect(answer.status).to.equal(200);
        } finally {
          await server.close();
        }
        await tracer.flush();
      }
      // Refused with 401 (no token): lost at once, never tried again and never counted as a busy answer.
      expect(withoutToken.dropped).to.equal(1);
      // With the token: two 503s, then taken.
      expect(withToken.dropped).to.equal(0);
      expect(guarded.refused()).to.equal(2);
      const spans = guarded.spans();
      expect(spans).to.have.length(1);
      expect(spans[0]!.resource).to.deep.equal({
        'deployment.environment': 'prod',
        'k8s.namespace.name': 'team-a',
        'service.name': 'price-node',
        'oracle_node.role': 'gateway',
      });
    } finally {
      await loopback.close();
      await guarded.stop();
    }
  });

  it('never puts a secret, the API URL or the API answer into what the receiver stored', () => {
    const stored = readFileSync(receiver.file, 'utf8');
    expect(stored.length).to.be.above(0);
    for (const secret of [API_KEY, GATEWAY_API_KEY, TEST_MNEMONIC, chain.anvil.url, api.url, '3000.25', '1234.5678'])
      expect(stored, secret).to.not.include(secret);
  });
});
