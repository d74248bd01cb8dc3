// The Airnode feed engine: for each triggers.signedApiUpdates entry, call its API on fetchInterval through the OIS
// engine (one call for the entry's templates, then post-processing and encoding per template, as the reference),
// sign each value with the node key (base and OEV signature) and hand it to one pusher per Signed API. A pusher keeps
// the newest value per template and posts batches, one request at a time, with bounded retries and backoff: a slow
// or down Signed API delays only its own pusher, never another one or the fetches.
import type { Agent, ClientRequest, RequestOptions } from 'node:http';
import { errorMessage } from '../common/errors.js';
import { nodeHttp, nodeHttps } from '../common/node-http.js';
import type { Logger, Registry } from '../observability/index.js';
import { counter, gauge, histogram, secondsSince } from '../observability/index.js';
import { fetchEndpointResponse, processEndpointResponse } from '../ois/index.js';
import type { Endpoint, Ois } from '../ois/types.js';
import type { MessageSigner } from '../protocol/message-signer.js';
import { type FeedConfig, oisEndpointOf, parameterRecord, type SignedApi, type SignedApiUpdate } from './config.js';
import type { PushEvent } from './report.js';
import { deriveOevTemplateId, type SignedTemplateData, signTemplateData } from './signing.js';

export type PushOptions = {
  /** One POST's time budget, answer included (the reference's executeRequest: 10 s). */
  timeoutMs: number;
  /** Entries per POST; the rest go in the next one. */
  maxBatch: number;
  /** Attempts of one batch before its entries are dropped (newer values of the same templates are kept). */
  maxAttempts: number;
  /** Backoff after a failed POST: baseMs, doubled per failure, at most maxMs. */
  backoff: { baseMs: number; maxMs: number };
  /** The Signed API's answer is read up to this many bytes. */
  maxAnswerBytes: number;
};

export const DEFAULT_PUSH_OPTIONS: PushOptions = {
  timeoutMs: 10_000,
  maxBatch: 1000,
  maxAttempts: 5,
  backoff: { baseMs: 500, maxMs: 30_000 },
  maxAnswerBytes: 64 * 1024,
};

export type FeedEngineOptions = {
  config: FeedConfig;
  signer: MessageSigner;
  logger: Logger;
  registry: Registry;
  /** The API call's single attempt (the next fetch is the retry); the reference's is 10 s. */
  apiTimeoutMs?: number;
  maxResponseBytes?: number;
  push?: Partial<PushOptions>;
  /** Random extra delay per interval as a fraction of it, as the reference (0.1); tests set 0. */
  jitter?: number;
  /** Told each push's outcome (the pod's report, src/feed/report.ts); must not throw or wait. */
  onPush?: (event: PushEvent) => void;
};

export type SignedApiState = { name: string; lastSuccessMs?: number; lastFailure?: string; pending: number };

export type FeedEngine = {
  readonly airnode: string;
  signedApis(): SignedApiState[];
  /** Stops the fetch loops, waits for fetches in flight and gives each pusher one last try within its timeout. */
  stop(): Promise<void>;
};

type Metrics = ReturnType<typeof feedMetrics>;

/**
 * The grid of the fetch times. Each wake-up of an idle process costs about 0.17 ms of CPU here (the scheduler, the
 * timer, libuv's and V8's turn: bench/wake-up.bench.ts), and an update that runs alone wakes it three times (its timer,
 * the API's answer, the Signed API's), a third of its cost. Updates due in one slot share those wake-ups, and their
 * values one POST. 30 s at 100 templates: 1,131 ms of CPU without it, 780 ms with it (docs/benchmarks.md).
 */
export const FETCH_GRID_MS = 250;

export type FetchTiming = {
  nowMs: number;
  /** When this update's last fetch started. */
  startedMs: number;
  intervalMs: number;
  /** The random extra's range as a fraction of the interval (the reference's 0.1). */
  jitter: number;
  gridMs: number;
  random: () => number;
};

/**
 * In how many ms the next fetch of an update starts: one interval after the last one started (at once if it overran),
 * plus a random extra within `jitter` of the interval so that the updates drift apart, as the reference's. The extra is
 * drawn on a grid of the clock, so the updates due within one slot start together; the grid is at most the extra's
 * range, so the fetch stays within the reference's bounds.
 */
export function nextFetchDelayMs(timing: FetchTiming): number {
  const { nowMs, startedMs, intervalMs, jitter, random } = timing;
  const earliest = Math.max(nowMs, startedMs + intervalMs);
  const range = intervalMs * jitter;
  const gridMs = Math.min(timing.gridMs, range);
  if (gridMs <= 0) return earliest - nowMs + random() * range;
  const first = Math.ceil(earliest / gridMs) * gridMs;
  const slots = Math.floor((earliest + range - first) / gridMs) + 1;
  return first + Math.floor(random() * slots) * gridMs - nowMs;
}

function feedMetrics(registry: Registry, dataTimestamps: Map<string, number>) {
  return {
    apiCalls: counter(registry, {
      name: 'oracle_node_feed_api_calls_total',
      help: 'API calls of the feed by OIS endpoint and outcome (success, failure)',
      labelNames: ['ois', 'endpoint', 'outcome'] as const,
    }),
    apiCallSeconds: histogram(registry, {
      name: 'oracle_node_feed_api_call_duration_seconds',
      help: 'Duration of the feed API calls (pre-processing and the HTTP request)',
      labelNames: ['ois', 'endpoint'] as const,
    }),
    templateUpdates: counter(registry, {
      name: 'oracle_node_feed_template_updates_total',
      help: 'Template values by outcome: signed, or why none (api_error, processing_error, signing_error)',
      labelNames: ['outcome'] as const,
    }),
    pushes: counter(registry, {
      name: 'oracle_node_feed_pushes_total',
      help: 'POSTs of signed data by Signed API and outcome (success, failure)',
      labelNames: ['signed_api', 'outcome'] as const,
    }),
    pushSeconds: histogram(registry, {
      name: 'oracle_node_feed_push_duration_seconds',
      help: 'Duration of the POSTs of signed data by Signed API',
      labelNames: ['signed_api'] as const,
    }),
    pushedValues: counter(registry, {
      name: 'oracle_node_feed_pushed_values_total',
      help: 'Signed values by Signed API: accepted (count in its answer), skipped, dropped after the last retry',
      labelNames: ['signed_api', 'outcome'] as const,
    }),
    lastPush: gauge(registry, {
      name: 'oracle_node_feed_last_successful_push_timestamp_seconds',
      help: 'When the last POST to the Signed API succeeded (Unix seconds)',
      labelNames: ['signed_api'] as const,
    }),
    dataAge: gauge(registry, {
      name: 'oracle_node_feed_data_age_seconds',
      help: 'Age of the newest signed value of each template (now minus its timestamp)',
      labelNames: ['template_id'] as const,
      collect() {
        const now = Date.now() / 1000;
        for (const [templateId, timestamp] of dataTimestamps) this.set({ template_id: templateId }, now - timestamp);
      },
    }),
  };
}

/** How a pusher reaches its Signed API: node:http or node:https (by the URL's scheme), on one keep-alive agent. */
type Transport = { request: (url: URL, options: RequestOptions) => ClientRequest; agent: Agent };

function transportFor(url: URL): Transport {
  if (url.protocol === 'https:') {
    const https = nodeHttps();
    return { request: https.request, agent: new https.Agent({ keepAlive: true }) };
  }
  return { request: nodeHttp.request, agent: new nodeHttp.Agent({ keepAlive: true }) };
}

/**
 * One POST with node:http(s) on a keep-alive agent (a fraction of fetch's CPU per request): the status and the answer,
 * read up to maxBytes, within timeoutMs for the whole exchange. Rejects with a short reason.
 */
function post(
  url: URL,
  headers: Record<string, string>,
  body: string,
  transport: Transport,
  options: PushOptions,
  signal: AbortSignal,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const request = transport.request(url, {
      method: 'POST',
      headers: { ...headers, 'content-length': Buffer.byteLength(body) },
      agent: transport.agent,
      signal,
    });
    const timer = setTimeout(
      () => request.destroy(new Error(`no answer within ${options.timeoutMs} ms`)),
      options.timeoutMs,
    );
    request.once('close', () => clearTimeout(timer));
    request.once('error', (error) => reject(error));
    request.once('response', (response) => {
      const chunks: Buffer[] = [];
      let total = 0;
      response.on('data', (chunk: Buffer) => {
        total += chunk.length;
        if (total > options.maxAnswerBytes) {
          request.destroy(new Error(`the answer is larger than ${options.maxAnswerBytes} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      response.once('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
      response.once('error', (error) => reject(error));
    });
    request.end(body);
  });
}

/** POST /{airnode} of one batch; resolves to the Signed API's {count, skipped} or throws with a short reason. */
async function postBatch(
  signedApi: SignedApi,
  airnode: string,
  batch: SignedTemplateData[],
  transport: Transport,
  options: PushOptions,
  signal: AbortSignal,
): Promise<{ count: number; skipped: number }> {
  // As the reference: the address resolved against the Signed API's URL.
  const url = new URL(airnode, signedApi.url);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    ...(signedApi.authToken ? { authorization: `Bearer ${signedApi.authToken}` } : {}),
  };
  const { status, text } = await post(
    url,
    headers,
    JSON.stringify({ airnode, signedData: batch }),
    transport,
    options,
    signal,
  );
  if (status < 200 || status > 299) throw new Error(`HTTP ${status}: ${text.slice(0, 200)}`);
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    throw new Error('the answer is not JSON');
  }
  const { count, skipped } = (answer ?? {}) as { count?: unknown; skipped?: unknown };
  if (typeof count !== 'number' || typeof skipped !== 'number') throw new Error('the answer has no count and skipped');
  return { count, skipped };
}

/** One Signed API's queue: the newest value per template, posted in batches, one POST at a time. */
class SignedApiPusher {
  private readonly pending = new Map<string, SignedTemplateData>();
  private inFlight: Promise<void> | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private kickSoon: NodeJS.Immediate | undefined;
  private failures = 0;
  private stopped = false;
  private readonly abort = new AbortController();
  /** Connections kept open between POSTs, one Signed API each (as fetch's pool would). */
  private readonly transport: Transport;
  lastSuccessMs: number | undefined;
  lastFailure: string | undefined;

  constructor(
    readonly signedApi: SignedApi,
    private readonly airnode: string,
    private readonly options: PushOptions,
    private readonly metrics: Metrics,
    private readonly logger: Logger,
    private readonly onPush: ((event: PushEvent) => void) | undefined,
  ) {
    // The config's url parses (validate.ts); each POST goes to a path under it, so to the same scheme.
    this.transport = transportFor(new URL(signedApi.url));
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  offer(values: readonly SignedTemplateData[]): void {
    for (const value of values) this.keepNewest(value);
    // After the I/O callbacks of this turn of the event loop: the values of API answers read in the same turn (the
    // updates of one grid slot) go in one POST.
    this.kickSoon ??= setImmediate(() => {
      this.kickSoon = undefined;
      this.kick();
    });
  }

  private keepNewest(value: SignedTemplateData): void {
    const known = this.pending.get(value.templateId);
    if (!known || BigInt(known.timestamp) <= BigInt(value.timestamp)) this.pending.set(value.templateId, value);
  }

  private kick(): void {
    if (this.stopped || this.inFlight || this.retryTimer || this.pending.size === 0) return;
    this.inFlight = this.pushOnce().finally(() => {
      this.inFlight = undefined;
      this.kick();
    });
  }

  private takeBatch(): SignedTemplateData[] {
    const batch: SignedTemplateData[] = [];
    for (const [templateId, value] of this.pending) {
      if (batch.length >= this.options.maxBatch) break;
      batch.push(value);
      this.pending.delete(templateId);
    }
    return batch;
  }

  private async pushOnce(): Promise<void> {
    const batch = this.takeBatch();
    const name = this.signedApi.name;
    const start = process.hrtime.bigint();
    try {
      const { count, skipped } = await postBatch(
        this.signedApi,
        this.airnode,
        batch,
        this.transport,
        this.options,
        this.abort.signal,
      );
      this.metrics.pushSeconds.observe({ signed_api: name }, secondsSince(start));
      this.metrics.pushes.inc({ signed_api: name, outcome: 'success' });
      this.metrics.pushedValues.inc({ signed_api: name, outcome: 'accepted' }, count);
      if (skipped > 0) this.metrics.pushedValues.inc({ signed_api: name, outcome: 'skipped' }, skipped);
      this.metrics.lastPush.set({ signed_api: name }, Date.now() / 1000);
      this.failures = 0;
      this.lastSuccessMs = Date.now();
      this.onPush?.({ signedApi: name, ok: true, atMs: this.lastSuccessMs, accepted: count });
      this.logger.debug({ signedApi: name, count, skipped }, 'pushed signed data');
    } catch (error) {
      this.metrics.pushSeconds.observe({ signed_api: name }, secondsSince(start));
      this.metrics.pushes.inc({ signed_api: name, outcome: 'failure' });
      this.failures++;
      this.lastFailure = errorMessage(error);
      this.onPush?.({ signedApi: name, ok: false, atMs: Date.now(), error: this.lastFailure });
      if (this.failures < this.options.maxAttempts) {
        for (const value of batch) this.keepNewest(value);
      } else {
        // Newer values of the same templates, fetched meanwhile, are still pending and go in the next batch.
        const dropped = batch.filter((value) => !this.pending.has(value.templateId)).length;
        this.metrics.pushedValues.inc({ signed_api: name, outcome: 'dropped' }, dropped);
        this.failures = 0;
      }
      const delayMs = Math.min(this.options.backoff.maxMs, this.options.backoff.baseMs * 2 ** (this.failures || 1));
      this.logger.warn(
        { signedApi: name, error: this.lastFailure, values: batch.length, retryInMs: delayMs },
        'failed to push signed data to the Signed API',
      );
      if (!this.stopped) {
        this.retryTimer = setTimeout(() => {
          this.retryTimer = undefined;
          this.kick();
        }, delayMs);
      }
    }
  }

  /** One last POST of what is pending (no retry), then stop; aborts a POST still running after the timeout. */
  async stop(): Promise<void> {
    // Stopped first, so that the POST in flight, as it ends, neither starts another one nor schedules a retry.
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    clearImmediate(this.kickSoon);
    this.kickSoon = undefined;
    await this.inFlight;
    if (this.pending.size > 0) {
      this.inFlight = this.pushOnce();
      await this.inFlight;
    }
    this.abort.abort();
    clearTimeout(this.retryTimer);
    this.transport.agent.destroy();
  }
}

type UpdatePlan = {
  update: SignedApiUpdate;
  ois: Ois;
  endpoint: Endpoint;
  operationParameters: Record<string, string>;
  templates: { templateId: string; oevTemplateId: string; parameters: Record<string, string> }[];
};

function planUpdates(config: FeedConfig): UpdatePlan[] {
  return config.triggers.signedApiUpdates.map((update) => {
    // The schema checked the references and that the templates share one operation: the first one's parameters
    // make the API call, as in the reference.
    const first = config.templates[update.templateIds[0]!]!;
    const target = oisEndpointOf(config, first.endpointId)!;
    return {
      update,
      ois: target.ois as Ois,
      endpoint: target.endpoint as Endpoint,
      operationParameters: parameterRecord(first.parameters),
      templates: update.templateIds.map((templateId) => ({
        templateId,
        oevTemplateId: deriveOevTemplateId(templateId),
        parameters: parameterRecord(config.templates[templateId]!.parameters),
      })),
    };
  });
}

export function startFeed(options: FeedEngineOptions): FeedEngine {
  const { config, signer, logger } = options;
  const pushOptions: PushOptions = { ...DEFAULT_PUSH_OPTIONS, ...options.push };
  const dataTimestamps = new Map<string, number>();
  const metrics = feedMetrics(options.registry, dataTimestamps);
  const airnode = signer.address;
  const pushers = config.signedApis.map(
    (signedApi) => new SignedApiPusher(signedApi, airnode, pushOptions, metrics, logger, options.onPush),
  );
  const jitter = options.jitter ?? 0.1;
  const apiCredentials = config.apiCredentials;
  const timers = new Set<NodeJS.Timeout>();
  const fetches = new Set<Promise<void>>();
  let stopped = false;

  async function fetchAndSign(plan: UpdatePlan): Promise<SignedTemplateData[]> {
    const labels = { ois: plan.ois.title, endpoint: plan.endpoint.name };
    const start = process.hrtime.bigint();
    const fetched = await fetchEndpointResponse({
      ois: plan.ois,
      endpointName: plan.endpoint.name,
      parameters: plan.operationParameters,
      apiCredentials,
      options: {
        apiTimeoutsMs: [options.apiTimeoutMs ?? 10_000],
        ...(options.maxResponseBytes ? { maxResponseBytes: options.maxResponseBytes } : {}),
      },
    });
    metrics.apiCallSeconds.observe(labels, secondsSince(start));
    metrics.apiCalls.inc({
      ...labels,
      outcome: fetched.success ? 'success' : fetched.deferred ? 'deferred' : 'failure',
    });
    if (!fetched.success && fetched.deferred) {
      // Over the API's budget or paused by its 429: not called, and the next interval fetches again.
      metrics.templateUpdates.inc({ outcome: 'api_deferred' }, plan.templates.length);
      logger.info({ ...labels, reason: fetched.errorMessage }, 'API call deferred');
      return [];
    }
    if (!fetched.success) {
      metrics.templateUpdates.inc({ outcome: 'api_error' }, plan.templates.length);
      logger.warn({ ...labels, error: fetched.errorMessage }, 'failed to make the API call');
      return [];
    }
    const signed: SignedTemplateData[] = [];
    for (const template of plan.templates) {
      let result: Awaited<ReturnType<typeof processEndpointResponse>>;
      try {
        result = await processEndpointResponse(
          { parameters: template.parameters },
          fetched.endpoint,
          fetched.apiResponse,
        );
      } catch (error) {
        result = { success: false, errorMessage: errorMessage(error) };
      }
      if (!result.success) {
        metrics.templateUpdates.inc({ outcome: 'processing_error' });
        logger.warn(
          { templateId: template.templateId, error: result.errorMessage },
          'failed to process the API answer',
        );
        continue;
      }
      const timestamp = String(result.timestamp ?? Math.floor(Date.now() / 1000));
      try {
        signed.push(
          signTemplateData(signer, template.templateId, template.oevTemplateId, timestamp, result.encodedValue),
        );
        dataTimestamps.set(template.templateId, Number(timestamp));
        metrics.templateUpdates.inc({ outcome: 'signed' });
      } catch (error) {
        metrics.templateUpdates.inc({ outcome: 'signing_error' });
        logger.warn({ templateId: template.templateId, error: errorMessage(error) }, 'failed to sign a template value');
      }
    }
    return signed;
  }

  function schedule(plan: UpdatePlan, delayMs: number): void {
    if (stopped) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      const started = Date.now();
      const run = fetchAndSign(plan)
        .then((signed) => {
          if (signed.length > 0) for (const pusher of pushers) pusher.offer(signed);
        })
        .catch((error: unknown) => logger.error({ error: errorMessage(error) }, 'feed update failed'))
        .finally(() => {
          fetches.delete(run);
          schedule(
            plan,
            nextFetchDelayMs({
              nowMs: Date.now(),
              startedMs: started,
              intervalMs: plan.update.fetchInterval * 1000,
              jitter,
              gridMs: FETCH_GRID_MS,
              random: Math.random,
            }),
          );
        });
      fetches.add(run);
    }, delayMs);
    timers.add(timer);
  }

  for (const plan of planUpdates(config)) schedule(plan, 0);
  logger.info(
    { airnode, updates: config.triggers.signedApiUpdates.length, signedApis: config.signedApis.map((api) => api.name) },
    'feed started',
  );

  return {
    airnode,
    signedApis: () =>
      pushers.map((pusher) => ({
        name: pusher.signedApi.name,
        pending: pusher.pendingCount,
        ...(pusher.lastSuccessMs === undefined ? {} : { lastSuccessMs: pusher.lastSuccessMs }),
        ...(pusher.lastFailure === undefined ? {} : { lastFailure: pusher.lastFailure }),
      })),
    async stop() {
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await Promise.allSettled([...fetches]);
      await Promise.allSettled(pushers.map((pusher) => pusher.stop()));
    },
  };
}
