// The APIs' rate budgets at a gateway (src/ois/budget.ts, src/gateway/routes.ts) on a real gateway server over
// loopback, the real OIS engine and a loopback API with a quota: a caller over the budget gets 429 with Retry-After
// and the API never sees the excess; the API's own 429 with Retry-After pauses its OIS for the whole process.
import { expect } from 'chai';
import { parseRate } from '../../../src/common/rate-limit.js';
import type { GatewayServer } from '../../../src/gateway/server.js';
import { silentLogger } from '../../../src/observability/index.js';
import { buildConfig, ENDPOINTS, type LoopbackApi, loadEngine, OIS_TITLE, startLoopbackApi } from './fixtures.js';

describe('gateway: API rate budgets (component)', function () {
  this.timeout(60_000);
  let api: LoopbackApi;
  let server: GatewayServer;
  // The budgets are the process's: the server and the budgets come from the same module graph as the engine, which
  // the fixtures import dynamically (a static import of a test file would load a second copy under the test loader).
  let gateway: typeof import('../../../src/gateway/server.js');
  let setApiBudgets: typeof import('../../../src/ois/index.js').setApiBudgets;
  before(async () => {
    gateway = await import('../../../src/gateway/server.js');
    ({ setApiBudgets } = await import('../../../src/ois/index.js'));
  });

  async function start(quota?: Parameters<typeof startLoopbackApi>[0]) {
    api = await startLoopbackApi(quota);
    server = await gateway.startGatewayServer(buildConfig(api.url), {
      host: '127.0.0.1',
      port: 0,
      callEndpoint: (await loadEngine()).callEndpoint,
      logger: silentLogger(),
    });
  }
  // Distinct parameters: identical calls in flight would share one API call (coalescing).
  const price = (coin: string, endpoint: keyof typeof ENDPOINTS = 'price') =>
    fetch(`http://127.0.0.1:${server.port}/http-data/${gateway.DEFAULT_PATH_KEY}/${ENDPOINTS[endpoint]}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ parameters: { coin } }),
    });
  const metrics = async () =>
    (await fetch(`http://127.0.0.1:${server.port}/metrics`).then((response) => response.text()))
      .split('\n')
      .filter((line) => line.startsWith('api_') || line.startsWith('gateway_rejected'));

  afterEach(async () => {
    await server?.close();
    await api?.close();
    // The budgets are the process's: no pause or budget of one test may reach another.
    setApiBudgets([]);
  });

  it('answers 429 with Retry-After over the budget, and the API never sees the excess', async () => {
    // The API's own quota is the budget: with the budget kept, it never has to refuse.
    await start({ quota: { rate: parseRate('5/m')!, headers: { 'retry-after': '60' } } });
    setApiBudgets([{ ois: OIS_TITLE, rate: parseRate('5/m')! }]);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => price(`coin${i}`)));
    const statuses = answers.map((answer) => answer.status).sort();
    expect(statuses.filter((status) => status === 200)).to.have.length(5);
    expect(statuses.filter((status) => status === 429)).to.have.length(15);
    const refused = answers.find((answer) => answer.status === 429)!;
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).to.be.within(1, 60);
    expect(refused.headers.get('content-type')).to.match(/^application\/json/);
    expect((await refused.json()) as unknown).to.deep.equal({
      message: `Error: API call deferred: over the rate budget of ${OIS_TITLE}; retry after ${retryAfter} s`,
    });
    expect(api.requests).to.equal(5);
    expect(api.rateLimited).to.equal(0);
    const lines = await metrics();
    expect(lines).to.include(`api_budget_deferred_calls_total{ois="${OIS_TITLE}",reason="over_budget"} 15`);
    expect(lines).to.include('gateway_rejected_requests_total{gateway="httpGateway",reason="api_budget"} 15');
  });

  it("limits one endpoint by its own budget, the OIS's other endpoints not", async () => {
    await start();
    setApiBudgets([{ ois: OIS_TITLE, endpoint: 'price', rate: parseRate('2/m')! }]);
    const limited = await Promise.all(['a', 'b', 'c'].map((coin) => price(coin)));
    expect(limited.map((answer) => answer.status).sort()).to.deep.equal([200, 200, 429]);
    // An endpoint without processing (its value extraction fails, which the reference answers 200 with rawValue).
    const other = await Promise.all(['a', 'b', 'c'].map((coin) => price(coin, 'object')));
    expect(other.map((answer) => answer.status)).to.deep.equal([200, 200, 200]);
    expect(api.requests).to.equal(5);
  });

  it("pauses the OIS for the Retry-After of the API's own 429: later calls get 429 without reaching it", async () => {
    await start({ quota: { rate: parseRate('2/m')!, headers: { 'retry-after': '30' } } });
    // No budget at all: the pause comes from the API's answer alone.
    for (const coin of ['a', 'b']) expect((await price(coin)).status).to.equal(200);
    // The third call reaches the API, which answers 429 naming 30 s: the engine's second attempt is not sent.
    const first = await price('c');
    expect(first.status).to.equal(429);
    expect(Number(first.headers.get('retry-after'))).to.be.within(29, 30);
    expect(api.requests).to.equal(3);
    expect(api.rateLimited).to.equal(1);
    // Every endpoint of that OIS is paused in the process; the API sees none of them.
    for (const endpoint of ['price', 'stamped'] as const) {
      const later = await price('d', endpoint);
      expect(later.status).to.equal(429);
      expect(((await later.json()) as { message: string }).message).to.match(/answered 429 and is paused/);
    }
    expect(api.requests).to.equal(3);
    const lines = await metrics();
    expect(lines).to.include(`api_rate_limited_total{ois="${OIS_TITLE}"} 1`);
    expect(lines).to.include(`api_budget_deferred_calls_total{ois="${OIS_TITLE}",reason="paused"} 3`);
    expect(lines.find((line) => line.startsWith(`api_paused_seconds{ois="${OIS_TITLE}"}`))).to.match(
      / (29|30)(\.\d+)?$/,
    );
  });

  it("pauses the OIS for the Retry-After of the API's 503 as for a 429: the next call gets 503 without reaching it", async () => {
    await start({ quota: { rate: parseRate('1/m')!, headers: { 'retry-after': '20' }, status: 503 } });
    expect((await price('a')).status).to.equal(200);
    // The 503 names 20 s: the engine's second attempt is not sent, nor is the next call.
    await price('b');
    expect(api.requests).to.equal(2);
    const later = await price('c');
    expect(later.status).to.equal(503);
    expect(Number(later.headers.get('retry-after'))).to.be.within(1, 20);
    const message = ((await later.json()) as { message: string }).message;
    expect(message, message).to.match(/answered 503 and is paused; retry after/);
    expect(api.requests).to.equal(2);
  });
});
