// The APIs' rate budgets in a feed (src/ois/budget.ts, src/feed/engine.ts) with a loopback API: a fetch over the
// budget, or while the API's own 429 pause lasts, is skipped to the next interval and never reaches the API.
import { expect } from 'chai';
import { parseRate } from '../../../src/common/rate-limit.js';
import { startFeed } from '../../../src/feed/engine.js';
import { feedSigner } from '../../../src/feed/signing.js';
import { validateFeedConfig } from '../../../src/feed/validate.js';
import { createMetricsRegistry, metricValue, silentLogger } from '../../../src/observability/index.js';
import { setApiBudgets } from '../../../src/ois/index.js';
import { TEST_MNEMONIC } from '../../support/chain.js';
import { buildFeedConfig, FEED_OIS_TITLE } from '../../support/feed.js';
import { waitFor } from '../../support/wait.js';
import { ApiServer } from '../ois/api-server.js';

const API_KEY = 'budget-api-key-0123';

describe('feed: the APIs rate budgets', function () {
  this.timeout(60_000);
  let api: ApiServer;
  let signedApi: ApiServer;

  async function run(check: (registry: ReturnType<typeof createMetricsRegistry>) => Promise<void>) {
    signedApi = await new ApiServer().start();
    const result = await validateFeedConfig(
      buildFeedConfig({
        apiUrl: api.url,
        assets: ['BTC', 'ETH'],
        fetchInterval: 0.2,
        signedApis: [{ name: 'stand-in', url: signedApi.url, authToken: 'the-auth-token-42' }],
      }),
      { WALLET_MNEMONIC: TEST_MNEMONIC, API_KEY },
    );
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    const registry = createMetricsRegistry();
    const engine = startFeed({
      config: result.config,
      signer: feedSigner(TEST_MNEMONIC),
      logger: silentLogger(),
      registry,
      jitter: 0,
    });
    try {
      await check(registry);
    } finally {
      await engine.stop();
      await api.stop();
      await signedApi.stop();
    }
  }
  const apiCalls = () => api.requests.filter((request) => request.url.startsWith('/prices')).length;
  const deferred = async (registry: ReturnType<typeof createMetricsRegistry>) =>
    (await metricValue(registry, 'oracle_node_feed_template_updates_total', { outcome: 'api_deferred' })) ?? 0;

  afterEach(() => setApiBudgets([]));

  it('skips the fetches over the budget: the API sees no more than it', async () => {
    api = await new ApiServer()
      .route('/prices', (_request, _body, response) => {
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"prices":{"BTC":1,"ETH":2}}');
      })
      .start();
    setApiBudgets([{ ois: FEED_OIS_TITLE, rate: parseRate('3/m')! }]);
    await run(async (registry) => {
      // Two updates every 0.2 s: after the first three calls every fetch is skipped.
      await waitFor(async () => (await deferred(registry)) >= 6, 20_000, 'fetches skipped over the budget');
      expect(apiCalls()).to.equal(3);
      expect(
        await metricValue(registry, 'oracle_node_feed_api_calls_total', { ois: FEED_OIS_TITLE, outcome: 'deferred' }),
      ).to.be.at.least(3);
    });
  });

  it("pauses the fetches for the Retry-After of the API's own 429", async () => {
    let answered = 0;
    api = await new ApiServer()
      .route('/prices', (_request, _body, response) => {
        if (answered++ >= 1) {
          response.writeHead(429, { 'content-type': 'application/json', 'retry-after': '60' }).end('{}');
          return;
        }
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"prices":{"BTC":1,"ETH":2}}');
      })
      .start();
    await run(async (registry) => {
      await waitFor(async () => (await deferred(registry)) >= 6, 20_000, 'fetches skipped while paused');
      // One answer, one 429; the engine's second attempt after the 429 is not sent, nor any later fetch.
      expect(apiCalls()).to.equal(2);
    });
  });
});
