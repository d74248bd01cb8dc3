// The usage metrics of a real cycle (anvil, the real AirnodeRrpV0, an API on loopback): API calls per OIS, endpoint
// and outcome, and fulfilments per sponsor with the sponsors beyond the top N counted as `other`.
import { expect } from 'chai';
import { runCycle } from '../../../src/node/cycle.js';
import { InProcessExecutor } from '../../../src/node/executor.js';
import { silentLogger } from '../../../src/node/logger.js';
import { cycleMetrics } from '../../../src/node/metrics.js';
import { createMetricsRegistry } from '../../../src/observability/index.js';
import { setBalance, startTestChain, waitForMined } from '../../support/chain.js';
import {
  type ApiServer,
  buildConfig,
  createSponsor,
  ENDPOINTS,
  encodeCoin,
  makeFullRequest,
  NODE_ADDRESS,
  requestEvents,
  requestPrice,
  startApiServer,
  wallets,
} from '../../support/harness.js';

describe('usage metrics of a cycle (anvil)', () => {
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  let api: ApiServer;

  before(async () => {
    chain = await startTestChain();
    api = await startApiServer();
    await setBalance(chain.anvil.url, NODE_ADDRESS, 10n ** 20n);
  });
  after(async () => {
    await api?.close();
    await chain?.anvil.stop();
  });

  it('counts API calls by OIS, endpoint and outcome, and fulfilments of the top sponsors, the rest as other', async () => {
    const big = await createSponsor(chain.deployment, 'usage-big');
    const middle = await createSponsor(chain.deployment, 'usage-middle');
    const small = await createSponsor(chain.deployment, 'usage-small');
    // One after the other: the requests come from one deployer account.
    const fulfilled: string[] = [];
    for (const sponsor of [big, big, big, big, middle, middle, middle])
      fulfilled.push(await requestPrice(chain.deployment, sponsor));
    // The API answers 200, but `_times` is no number: encoding fails, the request is failed on chain at once.
    const unencodable = await requestPrice(chain.deployment, small, 'ETH', [
      { name: '_times', type: 'string', value: 'many' },
    ]);
    // The API answers 500.
    await makeFullRequest(chain.deployment, {
      endpointId: ENDPOINTS.broken,
      sponsor: small.address,
      sponsorWallet: small.sponsorWallet,
      parameters: encodeCoin('ETH'),
    });

    const config = buildConfig({
      providers: { anvil: chain.anvil.url },
      deployment: chain.deployment,
      apiUrl: api.url,
    });
    const executor = new InProcessExecutor({ config, wallets, logger: silentLogger });
    const summary = await runCycle(config, { executor, logger: silentLogger, wallets });
    await waitForMined(chain.anvil.url);
    for (const id of fulfilled) expect((await requestEvents(chain.deployment, id)).fulfilled, id).to.have.length(1);
    expect((await requestEvents(chain.deployment, unencodable)).failed).to.have.length(1);

    const registry = createMetricsRegistry();
    cycleMetrics(registry, { topSponsors: 2 }).observe(summary, 1);
    const text = await registry.metrics();
    const series = (name: string, labels: string) => new RegExp(`^${name}\\{${labels}\\} (\\d+)$`, 'm').exec(text)?.[1];

    expect(series('node_api_calls_total', 'ois="Test API",endpoint="price",outcome="2xx"')).to.equal('7');
    expect(series('node_api_calls_total', 'ois="Test API",endpoint="price",outcome="failed"')).to.equal('1');
    expect(series('node_api_calls_total', 'ois="Test API",endpoint="broken",outcome="5xx"')).to.equal('1');
    expect(text).not.to.match(/node_api_calls_total\{[^}]*outcome="(cached|not called|not_called)"/);

    const sponsor = (address: string, outcome: string) =>
      series('node_sponsor_fulfilments_total', `chain_id="31337",sponsor="${address}",outcome="${outcome}"`);
    expect(sponsor(big.address.toLowerCase(), 'fulfilled')).to.equal('4');
    expect(sponsor(middle.address.toLowerCase(), 'fulfilled')).to.equal('3');
    // The third sponsor (at most 2 requests answered) found no free label: its failures are `other`'s, and no series names it.
    expect(sponsor('other', 'failed')).to.equal(String(summary.transactions.failed));
    expect(summary.transactions.failed).to.be.at.least(1);
    expect(text).not.to.include(small.address.toLowerCase());
  });
});
