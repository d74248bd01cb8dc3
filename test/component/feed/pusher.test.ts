// The feed's pushes to a Signed API stand-in on loopback (a real HTTP server that answers as the test says): the
// auth token header and body of the reference, bounded retries with backoff, the newest value per template, answers
// bounded in size, and an API that is slow or too large bounded in time and size.
import { expect } from 'chai';
import { startFeed } from '../../../src/feed/engine.js';
import { feedSigner, type SignedTemplateData } from '../../../src/feed/signing.js';
import { validateFeedConfig } from '../../../src/feed/validate.js';
import { createMetricsRegistry, metricValue, silentLogger } from '../../../src/observability/index.js';
import { TEST_MNEMONIC } from '../../support/chain.js';
import { buildFeedConfig } from '../../support/feed.js';
import { waitFor } from '../../support/wait.js';
import { ApiServer } from '../ois/api-server.js';

const API_KEY = 'pusher-api-key-0123';
const airnode = feedSigner(TEST_MNEMONIC).address;

type Batch = { airnode: string; signedData: SignedTemplateData[] };

async function setUp(options: { assets?: string[]; apiDelayMs?: number; apiBytes?: number } = {}) {
  const api = await new ApiServer()
    .route('/prices', (_request, _body, response) => {
      const answer = () => {
        if (options.apiBytes) {
          response.writeHead(200, { 'content-type': 'application/json' });
          response.end(`{"prices":{"BTC":1},"pad":"${'x'.repeat(options.apiBytes)}"}`);
          return;
        }
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"prices":{"BTC":1,"ETH":2}}');
      };
      if (options.apiDelayMs) setTimeout(answer, options.apiDelayMs);
      else answer();
    })
    .start();
  const signedApi = await new ApiServer().start();
  return { api, signedApi };
}

async function config(apiUrl: string, signedApiUrl: string, assets = ['BTC', 'ETH']) {
  const result = await validateFeedConfig(
    buildFeedConfig({
      apiUrl,
      assets,
      fetchInterval: 0.2,
      signedApis: [{ name: 'stand-in', url: signedApiUrl, authToken: 'the-auth-token-42' }],
    }),
    { WALLET_MNEMONIC: TEST_MNEMONIC, API_KEY },
  );
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.config;
}

describe('feed: pushes to a Signed API', function () {
  this.timeout(60_000);

  it('POSTs {airnode, signedData} to /{airnode} with the auth token; retries a failing Signed API with backoff', async () => {
    const { api, signedApi } = await setUp();
    let failuresLeft = 3;
    const accepted: Batch[] = [];
    signedApi.route(`/${airnode}`, (request, body, response) => {
      expect(request.headers.authorization).to.equal('Bearer the-auth-token-42');
      if (failuresLeft-- > 0) {
        response.writeHead(503).end('{"message":"down"}');
        return;
      }
      const batch = JSON.parse(body) as Batch;
      accepted.push(batch);
      response.writeHead(201, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ count: batch.signedData.length, skipped: 0 }));
    });
    const registry = createMetricsRegistry();
    const engine = startFeed({
      config: await config(api.url, signedApi.url),
      signer: feedSigner(TEST_MNEMONIC),
      logger: silentLogger(),
      registry,
      jitter: 0,
      push: { backoff: { baseMs: 20, maxMs: 50 } },
    });
    try {
      await waitFor(() => accepted.length > 0, 20_000, 'a batch accepted after the failures');
      expect(accepted[0]!.airnode).to.equal(airnode);
      expect(Object.keys(accepted[0]!.signedData[0]!).sort()).to.deep.equal(
        ['encodedValue', 'oevSignature', 'signature', 'templateId', 'timestamp'].sort(),
      );
      // Every value pending at the time is in the batch, each template once (its newest value).
      const ids = accepted[0]!.signedData.map((entry) => entry.templateId);
      expect(new Set(ids).size).to.equal(ids.length);
      expect(ids.length).to.equal(2);
      expect(
        await metricValue(registry, 'oracle_node_feed_pushes_total', { signed_api: 'stand-in', outcome: 'failure' }),
      ).to.equal(3);
      expect(await metricValue(registry, 'oracle_node_feed_pushed_values_total', { outcome: 'dropped' })).to.equal(
        undefined,
      );
    } finally {
      await engine.stop();
      await api.stop();
      await signedApi.stop();
    }
  });

  it('values signed in the same turn of the event loop go in one POST', async () => {
    // The API holds its answers until both updates have called, then answers both at once: the feed reads both in one
    // turn (the updates of one grid slot do the same), and their values share a POST.
    const held: (() => void)[] = [];
    const api = await new ApiServer()
      .route('/prices', (_request, _body, response) => {
        held.push(() => {
          response.writeHead(200, { 'content-type': 'application/json' }).end('{"prices":{"BTC":1,"ETH":2}}');
        });
        if (held.length === 2) for (const answer of held.splice(0)) answer();
      })
      .start();
    const signedApi = await new ApiServer().start();
    const batches: Batch[] = [];
    signedApi.route(`/${airnode}`, (_request, body, response) => {
      const batch = JSON.parse(body) as Batch;
      batches.push(batch);
      response.writeHead(201, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ count: batch.signedData.length, skipped: 0 }));
    });
    const feedConfig = await config(api.url, signedApi.url);
    for (const update of feedConfig.triggers.signedApiUpdates) update.fetchInterval = 3600;
    expect(feedConfig.triggers.signedApiUpdates).to.have.length(2);
    const engine = startFeed({
      config: feedConfig,
      signer: feedSigner(TEST_MNEMONIC),
      logger: silentLogger(),
      registry: createMetricsRegistry(),
      jitter: 0,
    });
    try {
      await waitFor(() => batches.length > 0, 20_000, 'a POST');
      expect(batches[0]!.signedData).to.have.length(2);
    } finally {
      await engine.stop();
      await api.stop();
      await signedApi.stop();
    }
    expect(batches).to.have.length(1);
  });

  it('drops a batch after maxAttempts failures, and keeps pushing newer values', async () => {
    const { api, signedApi } = await setUp();
    let posts = 0;
    signedApi.route(`/${airnode}`, (_request, _body, response) => {
      posts++;
      response.writeHead(500).end('{}');
    });
    const registry = createMetricsRegistry();
    const engine = startFeed({
      config: await config(api.url, signedApi.url, ['BTC']),
      signer: feedSigner(TEST_MNEMONIC),
      logger: silentLogger(),
      registry,
      jitter: 0,
      push: { maxAttempts: 2, backoff: { baseMs: 10, maxMs: 20 } },
    });
    try {
      await waitFor(
        async () =>
          ((await metricValue(registry, 'oracle_node_feed_pushed_values_total', { outcome: 'dropped' })) ?? 0) > 0,
        20_000,
        'a dropped value',
      );
      const postsThen = posts;
      await waitFor(() => posts > postsThen + 2, 20_000, 'more POSTs of newer values');
    } finally {
      await engine.stop();
      await api.stop();
      await signedApi.stop();
    }
  });

  it('a Signed API answer larger than the bound is a failure, not memory', async () => {
    const { api, signedApi } = await setUp();
    signedApi.route(`/${airnode}`, (_request, _body, response) => {
      response.writeHead(201, { 'content-type': 'application/json' });
      response.end(`{"count":1,"skipped":0,"pad":"${'x'.repeat(200_000)}"}`);
    });
    const registry = createMetricsRegistry();
    const engine = startFeed({
      config: await config(api.url, signedApi.url, ['BTC']),
      signer: feedSigner(TEST_MNEMONIC),
      logger: silentLogger(),
      registry,
      jitter: 0,
      push: { backoff: { baseMs: 10, maxMs: 20 } },
    });
    try {
      await waitFor(
        async () => ((await metricValue(registry, 'oracle_node_feed_pushes_total', { outcome: 'failure' })) ?? 0) > 0,
        20_000,
        'a failed push',
      );
      expect(engine.signedApis()[0]!.lastFailure).to.match(/larger than 65536 bytes/);
      expect(await metricValue(registry, 'oracle_node_feed_pushes_total', { outcome: 'success' })).to.equal(undefined);
    } finally {
      await engine.stop();
      await api.stop();
      await signedApi.stop();
    }
  });

  it('an API answer too slow or too large is an API failure (bounded in time and size)', async () => {
    for (const [options, bound] of [
      [{ apiDelayMs: 2_000 }, { apiTimeoutMs: 300 }],
      [{ apiBytes: 50_000 }, { maxResponseBytes: 10_000 }],
    ] as const) {
      const { api, signedApi } = await setUp(options);
      const registry = createMetricsRegistry();
      const engine = startFeed({
        config: await config(api.url, signedApi.url, ['BTC']),
        signer: feedSigner(TEST_MNEMONIC),
        logger: silentLogger(),
        registry,
        jitter: 0,
        ...bound,
      });
      try {
        await waitFor(
          async () =>
            ((await metricValue(registry, 'oracle_node_feed_api_calls_total', { outcome: 'failure' })) ?? 0) > 0,
          20_000,
          `an API failure with ${JSON.stringify(bound)}`,
        );
        expect(await metricValue(registry, 'oracle_node_feed_api_calls_total', { outcome: 'success' })).to.equal(
          undefined,
        );
        expect(signedApi.requests).to.have.length(0);
      } finally {
        await engine.stop();
        await api.stop();
        await signedApi.stop();
      }
    }
  });
});
