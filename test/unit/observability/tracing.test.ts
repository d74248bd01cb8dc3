import { expect } from 'chai';
import { clearSecrets, registerSecret } from '../../../src/observability/index.js';
import {
  type FinishedSpan,
  formatTraceparent,
  MAX_BUFFERED_SPANS,
  otlpTraceRequest,
  parseTraceparent,
  Tracer,
  tracesEndpoint,
} from '../../../src/observability/tracing.js';

describe('tracing', () => {
  afterEach(() => clearSecrets());

  it('carries a span context as a W3C traceparent and refuses malformed or all-zero ones', () => {
    const context = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' };
    expect(formatTraceparent(context)).to.equal('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    expect(parseTraceparent(formatTraceparent(context))).to.deep.equal(context);
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
});
