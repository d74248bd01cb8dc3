import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { clearSecrets, redact, registerSecret } from '../../../src/observability/index.js';
import {
  EXPORT_TIMEOUT_MS,
  exportHeaders,
  exportTimeoutMs,
  type FinishedSpan,
  formatTraceparent,
  MAX_BUFFERED_SPANS,
  MAX_EXPORT_ATTEMPTS,
  MAX_EXPORT_TIMEOUT_MS,
  otlpHttpExporter,
  otlpTraceRequest,
  parseKeyValueList,
  parseTraceparent,
  resourceAttributes,
  samplerFromEnvironment,
  Tracer,
  tracerFromEnvironment,
  tracesEndpoint,
} from '../../../src/observability/tracing.js';

describe('tracing', () => {
  afterEach(() => clearSecrets());

  it('carries a span context as a W3C traceparent and refuses malformed or all-zero ones', () => {
    const context = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' };
    expect(formatTraceparent(context)).to.equal('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    expect(parseTraceparent(formatTraceparent(context))).to.deep.equal(context);
    // The sampled flag travels: a caller that does not record its trace passes flags 00, and so do we.
    const unsampled = parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00');
    expect(unsampled).to.deep.equal({ ...context, sampled: false });
    expect(formatTraceparent(unsampled!)).to.equal('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00');
    expect(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03')).to.deep.equal(context);
    for (const bad of [
      undefined,
      42,
      '',
      '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01',
      `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`,
      `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01`,
    ])
      expect(parseTraceparent(bad), String(bad)).to.equal(undefined);
  });

  it('is off without an endpoint, and takes the traces endpoint as is or /v1/traces under the base one', () => {
    expect(tracesEndpoint({})).to.equal(undefined);
    expect(tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).to.equal(undefined);
    expect(tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://collector:4318' })).to.equal(undefined);
    expect(tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).to.equal(
      'http://collector:4318/v1/traces',
    );
    expect(
      tracesEndpoint({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/otlp',
      }),
    ).to.equal('https://traces.example/otlp');
    const off = new Tracer();
    off.startSpan('x').end();
    expect(off.enabled).to.equal(false);
  });

  it('makes child spans in the parent trace and never keeps a registered secret in an attribute or a status', async () => {
    registerSecret('https://rpc.example/v3/secret-key-123');
    const exported: FinishedSpan[] = [];
    const tracer = new Tracer(async (spans) => {
      exported.push(...spans);
    });
    const root = tracer.startSpan('root', {
      attributes: { requestId: '0x01', count: 3, ok: true, skipped: undefined },
    });
    const child = tracer.startSpan('child', { parent: root.context, kind: 'client' });
    child.setAttributes({ 'oracle_node.reason': 'connect to https://rpc.example/v3/secret-key-123 failed' });
    child.fail('fetch https://rpc.example/v3/secret-key-123: ECONNREFUSED');
    child.end();
    root.end();
    await tracer.flush();
    expect(exported.map((s) => s.name)).to.deep.equal(['child', 'root']);
    expect(exported[0]!.traceId).to.equal(root.traceId);
    expect(exported[0]!.parentSpanId).to.equal(root.spanId);
    expect(exported[1]!.attributes).to.deep.equal({ requestId: '0x01', count: 3, ok: true });
    expect(JSON.stringify(otlpTraceRequest(exported, { 'service.name': 'oracle-node' }))).to.not.include(
      'secret-key-123',
    );
  });

  it('encodes spans as an OTLP JSON export request (hex ids, nanoseconds as strings, typed values, status)', () => {
    const span: FinishedSpan = {
      name: 'api call',
      kind: 'client',
      traceId: 'a'.repeat(32),
      spanId: 'b'.repeat(16),
      parentSpanId: 'c'.repeat(16),
      startNs: 1_000_000_000n,
      endNs: 2_000_000_000n,
      attributes: { 'http.request.method': 'GET', 'http.response.status_code': 500, authorized: false, ratio: 0.5 },
      error: 'API 5xx',
    };
    const request = otlpTraceRequest([span], { 'service.name': 'oracle-node' });
    expect(request.resourceSpans[0]!.scopeSpans[0]!.spans[0]).to.deep.equal({
      traceId: 'a'.repeat(32),
      spanId: 'b'.repeat(16),
      parentSpanId: 'c'.repeat(16),
      name: 'api call',
      kind: 3,
      startTimeUnixNano: '1000000000',
      endTimeUnixNano: '2000000000',
      attributes: [
        { key: 'http.request.method', value: { stringValue: 'GET' } },
        { key: 'http.response.status_code', value: { intValue: '500' } },
        { key: 'authorized', value: { boolValue: false } },
        { key: 'ratio', value: { doubleValue: 0.5 } },
      ],
      status: { code: 2, message: 'API 5xx' },
    });
  });

  it('keeps at most MAX_BUFFERED_SPANS until a flush, and a failing receiver loses spans, not the caller', async () => {
    let calls = 0;
    const tracer = new Tracer(async () => {
      calls++;
      throw new Error('receiver down');
    });
    for (let i = 0; i < MAX_BUFFERED_SPANS + 10; i++) tracer.startSpan('s').end();
    expect(tracer.dropped).to.equal(10);
    await tracer.flush();
    expect(calls).to.be.above(0);
    expect(tracer.dropped).to.equal(MAX_BUFFERED_SPANS + 10);
  });

  describe('the standard OTEL_* variables', () => {
    it('reads key=value lists as the specification does: trimmed, percent-decoded, and discarded whole when malformed', () => {
      expect([...parseKeyValueList(' a = 1 ,b=x%20y,, c=%E2%9C%93 ')!]).to.deep.equal([
        ['a', '1'],
        ['b', 'x y'],
        ['c', '\u2713'],
      ]);
      expect(parseKeyValueList(undefined)!.size).to.equal(0);
      for (const bad of ['a=1,b', 'a=1,=2', 'a=%E2%9C']) expect(parseKeyValueList(bad), bad).to.equal(undefined);
    });

    it('sends the traces headers over the general ones, refuses a list with a bad name or value, and redacts them', () => {
      const env = {
        OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Basic%20general,x-tenant=team-a',
        OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'authorization=Bearer%20traces-token-123',
      };
      expect(exportHeaders(env)).to.deep.equal({ authorization: 'Bearer traces-token-123', 'x-tenant': 'team-a' });
      expect(exportHeaders({ OTEL_EXPORTER_OTLP_HEADERS: 'bad name=1,ok=2' })).to.deep.equal({});
      expect(exportHeaders({ OTEL_EXPORTER_OTLP_HEADERS: 'split=a%0D%0AInjected: 1' })).to.deep.equal({});
      tracerFromEnvironment({ ...env, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1' }, 'gateway');
      expect(redact('header Bearer traces-token-123')).to.not.include('traces-token-123');
    });

    it('names the resource from OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME over its service.name, and the role last', () => {
      expect(
        resourceAttributes(
          { OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attributes,deployment.environment=prod,oracle_node.role=x' },
          'coordinator',
        ),
      ).to.deep.equal({
        'service.name': 'from-attributes',
        'deployment.environment': 'prod',
        'oracle_node.role': 'coordinator',
      });
      expect(
        resourceAttributes({ OTEL_RESOURCE_ATTRIBUTES: 'service.name=a', OTEL_SERVICE_NAME: 'my-node' }, 'worker'),
      ).to.deep.equal({ 'service.name': 'my-node', 'oracle_node.role': 'worker' });
      expect(resourceAttributes({ OTEL_RESOURCE_ATTRIBUTES: 'broken' }, 'worker')).to.deep.equal({
        'service.name': 'oracle-node',
        'oracle_node.role': 'worker',
      });
    });

    it('is off with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, and bounds the export timeout', () => {
      const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1' };
      expect(tracerFromEnvironment(endpoint, 'gateway').enabled).to.equal(true);
      expect(tracerFromEnvironment({ ...endpoint, OTEL_SDK_DISABLED: 'TRUE' }, 'gateway').enabled).to.equal(false);
      expect(tracerFromEnvironment({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' }, 'gateway').enabled).to.equal(false);
      expect(exportTimeoutMs({})).to.equal(EXPORT_TIMEOUT_MS);
      expect(exportTimeoutMs({ OTEL_EXPORTER_OTLP_TIMEOUT: '2000' })).to.equal(2000);
      expect(
        exportTimeoutMs({ OTEL_EXPORTER_OTLP_TIMEOUT: '2000', OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '700' }),
      ).to.equal(700);
      expect(exportTimeoutMs({ OTEL_EXPORTER_OTLP_TIMEOUT: '3600000' })).to.equal(MAX_EXPORT_TIMEOUT_MS);
      expect(exportTimeoutMs({ OTEL_EXPORTER_OTLP_TIMEOUT: 'soon' })).to.equal(EXPORT_TIMEOUT_MS);
    });

    it('samples as OTEL_TRACES_SAMPLER says: parent-based by default, ratios by trace id, always on and off', () => {
      const low = `${'f'.repeat(16)}${'0'.repeat(15)}1`;
      const high = `${'0'.repeat(16)}${'f'.repeat(16)}`;
      const unsampledParent = { traceId: high, spanId: '1'.repeat(16), sampled: false };
      const sampledParent = { traceId: high, spanId: '1'.repeat(16) };
      const sampler = (env: Record<string, string>) => samplerFromEnvironment(env);
      expect(sampler({})(undefined, high)).to.equal(true);
      expect(sampler({})(unsampledParent, high)).to.equal(false);
      expect(sampler({ OTEL_TRACES_SAMPLER: 'always_on' })(unsampledParent, high)).to.equal(true);
      expect(sampler({ OTEL_TRACES_SAMPLER: 'always_off' })(sampledParent, low)).to.equal(false);
      const ratio = sampler({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' });
      expect([ratio(undefined, low), ratio(undefined, high)]).to.deep.equal([true, false]);
      const parentRatio = sampler({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' });
      expect([parentRatio(sampledParent, high), parentRatio(undefined, high)]).to.deep.equal([true, false]);
      expect(sampler({ OTEL_TRACES_SAMPLER: 'parentbased_always_off' })(undefined, low)).to.equal(false);
      expect(sampler({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '7' })(undefined, high)).to.equal(
        true,
      );
      // A quarter of many random traces, within a wide margin.
      const tracer = new Tracer(async () => undefined, ratio);
      const sampled = Array.from({ length: 4000 }, () => tracer.startSpan('s').sampled).filter(Boolean).length;
      expect(sampled).to.be.within(800, 1200);
    });

    it('exports no span of an unsampled trace, and its children carry the decision', async () => {
      const exported: FinishedSpan[] = [];
      const tracer = new Tracer(async (spans) => {
        exported.push(...spans);
      }, samplerFromEnvironment({}));
      const caller = parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00');
      const root = tracer.startSpan('server', { parent: caller });
      const child = tracer.startSpan('child', { parent: root.context });
      expect(formatTraceparent(child.context)).to.match(/-00$/);
      child.end();
      root.end();
      tracer.startSpan('recorded').end();
      await tracer.flush();
      expect(exported.map((s) => s.name)).to.deep.equal(['recorded']);
    });
  });

  describe('the OTLP/HTTP exporter against a collector on loopback', () => {
    let server: Server;
    let endpoint: string;
    let answers: { status: number; retryAfter?: string }[];
    let received: IncomingHttpHeaders[];

    beforeEach(async () => {
      answers = [];
      received = [];
      server = createServer((req, res) => {
        req.resume();
        req.on('end', () => {
          received.push(req.headers);
          const answer = answers.shift() ?? { status: 200 };
          res.writeHead(answer.status, answer.retryAfter === undefined ? {} : { 'retry-after': answer.retryAfter });
          res.end('{}');
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`;
    });
    afterEach(() => new Promise((resolve) => server.close(resolve)));

    const oneSpan = (): FinishedSpan[] => {
      const spans: FinishedSpan[] = [];
      new Tracer(async (s) => {
        spans.push(...s);
      })
        .startSpan('s')
        .end();
      return spans;
    };

    it('tries again after 429, 502, 503 and 504 (Retry-After taken), with the headers each time', async () => {
      answers = [{ status: 503, retryAfter: '0' }, { status: 429, retryAfter: '0' }, { status: 502 }, { status: 504 }];
      const exporter = otlpHttpExporter(endpoint, { 'service.name': 'n' }, { headers: { authorization: 'Bearer t' } });
      const spans = oneSpan();
      await exporter(spans);
      expect(received).to.have.length(5);
      for (const headers of received) {
        expect(headers['authorization']).to.equal('Bearer t');
        expect(headers['content-type']).to.equal('application/json');
      }
    });

    it(`gives up after ${MAX_EXPORT_ATTEMPTS} attempts, and at once on an answer that will not change`, async () => {
      answers = Array.from({ length: MAX_EXPORT_ATTEMPTS + 2 }, () => ({ status: 503, retryAfter: '0' }));
      const exporter = otlpHttpExporter(endpoint, {});
      let error: unknown;
      await exporter(oneSpan()).catch((e: unknown) => {
        error = e;
      });
      expect(String(error)).to.include('503');
      expect(received).to.have.length(MAX_EXPORT_ATTEMPTS);
      answers = [{ status: 401 }];
      received = [];
      error = undefined;
      await exporter(oneSpan()).catch((e: unknown) => {
        error = e;
      });
      expect(String(error)).to.include('401');
      expect(received).to.have.length(1);
    });
  });
});
