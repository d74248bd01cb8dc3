// OpenTelemetry traces, off by default: spans exported as OTLP/HTTP JSON to OTEL_EXPORTER_OTLP_ENDPOINT (+ /v1/traces,
// or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as is). Hand-written rather than the @opentelemetry SDK: a cycle makes a few
// spans per request, and the SDK's packages would add to the start-up of every pod (docs/benchmarks.md, Tracing).
// Context crosses processes as a W3C traceparent. Every string attribute goes through the secret redactor, and the
// node sets no attribute that carries a URL, a parameter or an answer (docs/metrics.md, Traces).
import { randomBytes } from 'node:crypto';
import { redact } from './redaction.js';

export type SpanContext = { traceId: string; spanId: string };
export type AttributeValue = string | number | boolean;
export type Attributes = Record<string, AttributeValue | undefined>;
/** OTLP SpanKind: internal, server, client. */
export type SpanKind = 'internal' | 'server' | 'client';
const KIND_CODE: Record<SpanKind, number> = { internal: 1, server: 2, client: 3 };

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;
const MAX_ATTRIBUTE_LENGTH = 256;
/** Spans kept for export at most; beyond it new spans are dropped (and counted), never memory. */
export const MAX_BUFFERED_SPANS = 4096;
const EXPORT_BATCH = 512;
export const EXPORT_TIMEOUT_MS = 5000;

/** The W3C traceparent header of a span context (sampled). */
export function formatTraceparent(context: SpanContext): string {
  return `00-${context.traceId}-${context.spanId}-01`;
}

/** A span context from a traceparent, or undefined when it is malformed or all zeros. */
export function parseTraceparent(value: unknown): SpanContext | undefined {
  if (typeof value !== 'string') return undefined;
  const match = TRACEPARENT.exec(value.trim().toLowerCase());
  if (!match || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return undefined;
  return { traceId: match[1]!, spanId: match[2]! };
}

const nowNs = () => BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000)) * 1000n;
/** Epoch milliseconds (Date.now() or performance.timeOrigin + performance.now()) as nanoseconds. */
export const msToNs = (ms: number) => BigInt(Math.round(ms * 1000)) * 1000n;

export type FinishedSpan = {
  name: string;
  kind: SpanKind;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, AttributeValue>;
  error?: string;
};

export class Span {
  readonly traceId: string;
  readonly spanId: string;
  private readonly attributes: Record<string, AttributeValue> = {};
  private error: string | undefined;
  private ended = false;

  constructor(
    private readonly tracer: Tracer,
    readonly name: string,
    private readonly kind: SpanKind,
    private readonly parentSpanId: string | undefined,
    traceId: string,
    private readonly startNs: bigint,
  ) {
    this.traceId = traceId;
    this.spanId = randomBytes(8).toString('hex');
  }

  get context(): SpanContext {
    return { traceId: this.traceId, spanId: this.spanId };
  }

  setAttributes(attributes: Attributes): this {
    for (const [key, value] of Object.entries(attributes)) {
      if (value === undefined) continue;
      this.attributes[key] =
        typeof value === 'string' ? redact(value).slice(0, MAX_ATTRIBUTE_LENGTH) : (value as AttributeValue);
    }
    return this;
  }

  /** Marks the span as failed (status ERROR) with a redacted message. */
  fail(message: string): this {
    this.error = redact(message).slice(0, MAX_ATTRIBUTE_LENGTH);
    return this;
  }

  end(endMs?: number): void {
    if (this.ended) return;
    this.ended = true;
    this.tracer.record({
      name: this.name,
      kind: this.kind,
      traceId: this.traceId,
      spanId: this.spanId,
      ...(this.parentSpanId ? { parentSpanId: this.parentSpanId } : {}),
      startNs: this.startNs,
      endNs: endMs === undefined ? nowNs() : msToNs(endMs),
      attributes: this.attributes,
      ...(this.error === undefined ? {} : { error: this.error }),
    });
  }
}

export type SpanOptions = {
  parent?: SpanContext | undefined;
  kind?: SpanKind;
  attributes?: Attributes;
  /** Epoch milliseconds; default now. */
  startMs?: number;
};

export type TraceExporter = (spans: FinishedSpan[]) => Promise<void>;

/**
 * Makes spans and hands the finished ones to an exporter in batches on flush(). Without an exporter (tracing off)
 * spans are still made, so callers need no branch, and nothing is kept.
 */
export class Tracer {
  private buffer: FinishedSpan[] = [];
  dropped = 0;

  constructor(private readonly exporter?: TraceExporter) {}

  get enabled(): boolean {
    return this.exporter !== undefined;
  }

  startSpan(name: string, options: SpanOptions = {}): Span {
    const traceId = options.parent?.traceId ?? randomBytes(16).toString('hex');
    const span = new Span(
      this,
      name,
      options.kind ?? 'internal',
      options.parent?.spanId,
      traceId,
      options.startMs === undefined ? nowNs() : msToNs(options.startMs),
    );
    if (options.attributes) span.setAttributes(options.attributes);
    return span;
  }

  record(span: FinishedSpan): void {
    if (!this.exporter) return;
    if (this.buffer.length >= MAX_BUFFERED_SPANS) this.dropped++;
    else this.buffer.push(span);
  }

  /** For long-running servers: flushes every `intervalMs` without keeping the process alive; returns the stop. */
  flushEvery(intervalMs: number): () => Promise<void> {
    if (!this.exporter) return async () => undefined;
    const timer = setInterval(() => void this.flush(), intervalMs);
    timer.unref();
    return async () => {
      clearInterval(timer);
      await this.flush();
    };
  }

  /** Exports what was recorded; never throws (a receiver that is down loses the spans, not the cycle). */
  async flush(): Promise<void> {
    if (!this.exporter) return;
    while (this.buffer.length > 0) {
      const batch = this.buffer.splice(0, EXPORT_BATCH);
      try {
        await this.exporter(batch);
      } catch {
        this.dropped += batch.length;
      }
    }
  }
}

function attributeList(attributes: Record<string, AttributeValue>) {
  return Object.entries(attributes).map(([key, value]) => ({
    key,
    value:
      typeof value === 'string'
        ? { stringValue: value }
        : typeof value === 'boolean'
          ? { boolValue: value }
          : Number.isInteger(value)
            ? { intValue: String(value) }
            : { doubleValue: value },
  }));
}

/** The OTLP/HTTP JSON body of an export request (opentelemetry-proto ExportTraceServiceRequest). */
export function otlpTraceRequest(spans: FinishedSpan[], resource: Record<string, AttributeValue>) {
  return {
    resourceSpans: [
      {
        resource: { attributes: attributeList(resource) },
        scopeSpans: [
          {
            scope: { name: 'oracle-node' },
            spans: spans.map((span) => ({
              traceId: span.traceId,
              spanId: span.spanId,
              ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
              name: span.name,
              kind: KIND_CODE[span.kind],
              startTimeUnixNano: String(span.startNs),
              endTimeUnixNano: String(span.endNs),
              attributes: attributeList(span.attributes),
              status: span.error === undefined ? { code: 1 } : { code: 2, message: span.error },
            })),
          },
        ],
      },
    ],
  };
}

type Env = Record<string, string | undefined>;

/** Where traces go, from the standard variables; undefined (tracing off) when neither is set or it is not http(s). */
export function tracesEndpoint(env: Env): string | undefined {
  const traces = env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']?.trim();
  const base = env['OTEL_EXPORTER_OTLP_ENDPOINT']?.trim();
  const endpoint = traces || (base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined);
  if (!endpoint) return undefined;
  try {
    const url = new URL(endpoint);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.toString() : undefined;
  } catch {
    return undefined;
  }
}

/** An exporter that POSTs OTLP JSON, each request bounded by EXPORT_TIMEOUT_MS. */
export function otlpHttpExporter(endpoint: string, resource: Record<string, AttributeValue>): TraceExporter {
  return async (spans) => {
    const response = await fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(otlpTraceRequest(spans, resource)),
      signal: AbortSignal.timeout(EXPORT_TIMEOUT_MS),
    });
    await response.body?.cancel();
    if (!response.ok) throw new Error(`OTLP export answered ${response.status}`);
  };
}

/** The process's tracer: exporting when the environment names an OTLP endpoint, off otherwise. */
export function tracerFromEnvironment(env: Env, role: string): Tracer {
  const endpoint = tracesEndpoint(env);
  if (!endpoint) return new Tracer();
  const service = env['OTEL_SERVICE_NAME']?.trim() || 'oracle-node';
  return new Tracer(otlpHttpExporter(endpoint, { 'service.name': service, 'oracle_node.role': role }));
}
