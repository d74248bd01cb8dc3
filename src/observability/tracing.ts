// OpenTelemetry traces, off by default: spans exported as OTLP/HTTP JSON to OTEL_EXPORTER_OTLP_ENDPOINT (+ /v1/traces,
// or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as is), configured by the specification's standard variables (headers,
// resource attributes, service name, sampler, timeout, SDK off; docs/metrics.md, Traces). Hand-written rather than
// the @opentelemetry SDK: a cycle makes a few spans per request, and the SDK's packages would add to the start-up of
// every pod (docs/benchmarks.md, Tracing). Context crosses processes as a W3C traceparent, its sampled flag
// included. Every string attribute goes through the secret redactor, and the node sets no attribute that carries a
// URL, a parameter or an answer; the export headers (a collector's credentials) are registered as secrets.
import { randomBytes } from 'node:crypto';
import { redact, registerSecret } from './redaction.js';

/** A span's identity as it crosses processes; `sampled: false` when the trace is not recorded (flags 00). */
export type SpanContext = { traceId: string; spanId: string; sampled?: boolean };
export type AttributeValue = string | number | boolean;
export type Attributes = Record<string, AttributeValue | undefined>;
/** OTLP SpanKind: internal, server, client. */
export type SpanKind = 'internal' | 'server' | 'client';
const KIND_CODE: Record<SpanKind, number> = { internal: 1, server: 2, client: 3 };

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const MAX_ATTRIBUTE_LENGTH = 256;
/** Spans kept for export at most; beyond it new spans are dropped (and counted), never memory. */
export const MAX_BUFFERED_SPANS = 4096;
const EXPORT_BATCH = 512;
export const EXPORT_TIMEOUT_MS = 5000;

/** The W3C traceparent header of a span context. */
export function formatTraceparent(context: SpanContext): string {
  return `00-${context.traceId}-${context.spanId}-${context.sampled === false ? '00' : '01'}`;
}

/** A span context from a traceparent, or undefined when it is malformed or all zeros. */
export function parseTraceparent(value: unknown): SpanContext | undefined {
  if (typeof value !== 'string') return undefined;
  const match = TRACEPARENT.exec(value.trim().toLowerCase());
  if (!match || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return undefined;
  const sampled = (Number.parseInt(match[3]!, 16) & 1) === 1;
  return { traceId: match[1]!, spanId: match[2]!, ...(sampled ? {} : { sampled: false }) };
}

/** Whether a new span is recorded, from its parent's context (if any) and its trace id. */
export type Sampler = (parent: SpanContext | undefined, traceId: string) => boolean;

const alwaysOn: Sampler = () => true;
const alwaysOff: Sampler = () => false;
/** Samples a share of traces, decided by the trace id's last 8 bytes (random), so every process agrees. */
function traceIdRatio(ratio: number): Sampler {
  if (ratio >= 1) return alwaysOn;
  if (ratio <= 0) return alwaysOff;
  const bound = BigInt(Math.floor(ratio * 2 ** 53)) << 11n;
  return (_parent, traceId) => BigInt(`0x${traceId.slice(16)}`) < bound;
}
/** A child follows its parent's decision; a root span asks `root`. */
const parentBased =
  (root: Sampler): Sampler =>
  (parent, traceId) =>
    parent ? parent.sampled !== false : root(parent, traceId);

/** OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG; an unknown sampler or argument takes the specification's default. */
export function samplerFromEnvironment(env: Env): Sampler {
  const arg = Number.parseFloat(env['OTEL_TRACES_SAMPLER_ARG'] ?? '');
  const ratio = Number.isFinite(arg) && arg >= 0 && arg <= 1 ? arg : 1;
  switch (env['OTEL_TRACES_SAMPLER']?.trim().toLowerCase()) {
    case 'always_on':
      return alwaysOn;
    case 'always_off':
      return alwaysOff;
    case 'traceidratio':
      return traceIdRatio(ratio);
    case 'parentbased_always_off':
      return parentBased(alwaysOff);
    case 'parentbased_traceidratio':
      return parentBased(traceIdRatio(ratio));
    default:
      return parentBased(alwaysOn);
  }
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
  /** A span that is not sampled is made and propagated, never exported. */
  readonly sampled: boolean;
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
    sampled: boolean,
  ) {
    this.traceId = traceId;
    this.spanId = randomBytes(8).toString('hex');
    this.sampled = sampled;
  }

  get context(): SpanContext {
    return { traceId: this.traceId, spanId: this.spanId, ...(this.sampled ? {} : { sampled: false }) };
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
    if (!this.sampled) return;
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

  constructor(
    private readonly exporter?: TraceExporter,
    private readonly sampler: Sampler = parentBased(alwaysOn),
  ) {}

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
      this.sampler(options.parent, traceId),
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

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Control characters other than tab would make fetch refuse the header, or split it. */
const isHeaderValue = (value: string) =>
  [...value].every((char) => char === '\t' || (char >= ' ' && char !== '\u007f'));

/**
 * A `key1=value1,key2=value2` list of the specification (OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS):
 * keys and values trimmed, values percent-decoded. Undefined when any entry is malformed: the specification has the
 * whole variable discarded then, rather than half of it taken.
 */
export function parseKeyValueList(text: string | undefined): Map<string, string> | undefined {
  const entries = new Map<string, string>();
  if (text === undefined || text.trim() === '') return entries;
  for (const entry of text.split(',')) {
    if (entry.trim() === '') continue;
    const equals = entry.indexOf('=');
    if (equals <= 0) return undefined;
    const key = entry.slice(0, equals).trim();
    let value: string;
    try {
      value = decodeURIComponent(entry.slice(equals + 1).trim());
    } catch {
      return undefined;
    }
    if (key === '') return undefined;
    entries.set(key, value);
  }
  return entries;
}

/** The export headers: the traces variable's entries over the general one's (names are case-insensitive). */
export function exportHeaders(env: Env): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of ['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS']) {
    const entries = parseKeyValueList(env[name]);
    if (!entries) continue;
    const valid = [...entries].every(([key, value]) => HEADER_NAME.test(key) && isHeaderValue(value));
    if (!valid) continue;
    for (const [key, value] of entries) headers[key.toLowerCase()] = value;
  }
  return headers;
}

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

/** The most an export request may be given by OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT: a pod's final flush waits for it. */
export const MAX_EXPORT_TIMEOUT_MS = 30_000;

/** One export request's budget (ms): the traces variable, the general one, else EXPORT_TIMEOUT_MS. */
export function exportTimeoutMs(env: Env): number {
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', 'OTEL_EXPORTER_OTLP_TIMEOUT']) {
    const value = Number(env[name]?.trim() || Number.NaN);
    if (Number.isFinite(value) && value > 0) return Math.min(value, MAX_EXPORT_TIMEOUT_MS);
  }
  return EXPORT_TIMEOUT_MS;
}

/** The resource: OTEL_RESOURCE_ATTRIBUTES, then OTEL_SERVICE_NAME over its service.name, and the node's role. */
export function resourceAttributes(env: Env, role: string): Record<string, AttributeValue> {
  const resource: Record<string, AttributeValue> = Object.fromEntries(
    parseKeyValueList(env['OTEL_RESOURCE_ATTRIBUTES']) ?? [],
  );
  resource['service.name'] = env['OTEL_SERVICE_NAME']?.trim() || resource['service.name'] || 'oracle-node';
  resource['oracle_node.role'] = role;
  return resource;
}

/** The answers after which the specification has an OTLP/HTTP export tried again. */
const RETRYABLE_STATUSES = new Set([429, 502, 503, 504]);
/** Attempts of one batch at most, and the longest wait between two of them (ms). */
export const MAX_EXPORT_ATTEMPTS = 5;
const MAX_RETRY_WAIT_MS = 5_000;

export type ExportOptions = { headers?: Record<string, string>; timeoutMs?: number };

/** A Retry-After value (seconds or an HTTP date) in milliseconds; undefined when absent or unreadable. */
function retryAfterMs(value: string | null): number | undefined {
  if (value === null) return undefined;
  const seconds = Number(value);
  if (value.trim() !== '' && Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/**
 * An exporter that POSTs OTLP JSON, each request bounded by its timeout. A collector that answers 429, 502, 503 or
 * 504, or cannot be reached, is asked again after its Retry-After or an exponential back-off with jitter (at most
 * MAX_RETRY_WAIT_MS), up to MAX_EXPORT_ATTEMPTS; any other answer fails the batch at once.
 */
export function otlpHttpExporter(
  endpoint: string,
  resource: Record<string, AttributeValue>,
  options: ExportOptions = {},
): TraceExporter {
  const timeoutMs = options.timeoutMs ?? EXPORT_TIMEOUT_MS;
  const headers = { ...options.headers, 'content-type': 'application/json' };
  return async (spans) => {
    const body = JSON.stringify(otlpTraceRequest(spans, resource));
    for (let attempt = 1; ; attempt++) {
      let wait: number | undefined;
      let failure: Error;
      try {
        const response = await fetch(endpoint, {
          method: 'POST',
          headers,
          body,
          signal: AbortSignal.timeout(timeoutMs),
        });
        await response.body?.cancel();
        if (response.ok) return;
        failure = new Error(`OTLP export answered ${response.status}`);
        if (!RETRYABLE_STATUSES.has(response.status)) throw failure;
        wait = retryAfterMs(response.headers.get('retry-after'));
      } catch (error) {
        // A timeout is not tried again: the collector took the request's whole budget already.
        if (!(error instanceof TypeError)) throw error;
        failure = new Error('OTLP export: collector unreachable');
      }
      if (attempt >= MAX_EXPORT_ATTEMPTS) throw failure;
      const backoff = Math.min(MAX_RETRY_WAIT_MS, 250 * 2 ** (attempt - 1));
      await new Promise((resolve) =>
        setTimeout(resolve, Math.min(MAX_RETRY_WAIT_MS, wait ?? backoff * (0.5 + Math.random() / 2))),
      );
    }
  };
}

/**
 * The process's tracer from the standard variables: exporting when they name an OTLP endpoint (and neither
 * OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none turns it off), off otherwise.
 */
export function tracerFromEnvironment(env: Env, role: string): Tracer {
  const endpoint = tracesEndpoint(env);
  const disabled =
    env['OTEL_SDK_DISABLED']?.trim().toLowerCase() === 'true' ||
    env['OTEL_TRACES_EXPORTER']?.trim().toLowerCase() === 'none';
  if (!endpoint || disabled) return new Tracer();
  const headers = exportHeaders(env);
  for (const value of Object.values(headers)) registerSecret(value);
  return new Tracer(
    otlpHttpExporter(endpoint, resourceAttributes(env, role), { headers, timeoutMs: exportTimeoutMs(env) }),
    samplerFromEnvironment(env),
  );
}
