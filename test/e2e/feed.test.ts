// Issue 37 on real pods: an AirnodeFeed reconciled by the operator installed from manifests/install.yaml runs
// `oracle-node feed` in a real pod, which calls the API stand-in and pushes to the real @api3/signed-api (both on the
// host's bridge address), and writes its report with its own ServiceAccount's token through the in-cluster
// configuration: status.signedApis shows the push, and the Signed API serves the values signed by the node key.
// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} strings are secret references
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { expect } from 'chai';
import { feedSigner } from '../../src/feed/signing.js';
import { TEST_MNEMONIC } from '../support/chain.js';
import { buildFeedConfig, type ReferenceProcess, served, startSignedApi } from '../support/feed.js';
import {
  core,
  createOnceAdmitted,
  installOperator,
  kc,
  type RealNode,
  realNode,
  recordTiming,
  requireRealNode,
  uninstallOperator,
  useNamespace,
  waitFor,
} from './support.js';

const node = realNode();
const real = (): RealNode => requireRealNode(node);
const API_KEY = 'e2e-feed-api-key-0123';
const TOKEN = 'e2e-feed-signed-api-token-0123';
const PRICES = { BTC: 65000.5, ETH: 3000.25 };

type SignedApiPush = { name: string; lastPushOutcome?: string; pushesOk?: number; lastError?: string };
type FeedObject = {
  status?: {
    conditions?: { type: string; status: string }[];
    signedApis?: SignedApiPush[];
  };
};

describe('e2e: an AirnodeFeed on real pods', function () {
  this.timeout(600_000);
  const ns = useNamespace('e2e-feed');
  let priceApi: Server;
  let signedApi: ReferenceProcess;
  let apiCalls = 0;
  let keyRefused = 0;
  const airnode = feedSigner(TEST_MNEMONIC).address;

  before(async function () {
    if (typeof node === 'string') {
      console.log(`      skipped: ${node}`);
      this.skip();
    }
    priceApi = createServer((request, response) => {
      apiCalls++;
      if (request.headers['x-api-key'] !== API_KEY) {
        keyRefused++;
        response.writeHead(401).end('{}');
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ prices: PRICES }));
    });
    await new Promise<void>((resolve) => priceApi.listen(0, real().gateway, resolve));
    signedApi = await startSignedApi(airnode, TOKEN);
    await installOperator();
  });

  after(async () => {
    priceApi?.closeAllConnections();
    priceApi?.close();
    await signedApi?.stop();
    await uninstallOperator();
  });

  it('the feed pod pushes to the real Signed API and its report reaches status.signedApis through its own token', async () => {
    const gw = real().gateway;
    const signedApiPort = new URL(signedApi.url).port;
    const config = buildFeedConfig({
      apiUrl: `http://${gw}:${(priceApi.address() as AddressInfo).port}`,
      assets: Object.keys(PRICES),
      fetchInterval: 2,
      signedApis: [{ name: 'main', url: `http://${gw}:${signedApiPort}`, authToken: '${SIGNED_API_TOKEN}' }],
    });
    await core().createNamespacedSecret({
      namespace: ns.name,
      body: {
        metadata: { name: 'prices-secrets' },
        stringData: { WALLET_MNEMONIC: TEST_MNEMONIC, API_KEY, SIGNED_API_TOKEN: TOKEN },
      },
    });
    const custom = kc().makeApiClient(CustomObjectsApi);
    const group = { group: 'oracle-node.io', version: 'v1alpha1', namespace: ns.name, plural: 'airnodefeeds' };
    const t0 = Date.now();
    await createOnceAdmitted(ns.name, {
      kind: 'AirnodeFeed',
      name: 'prices',
      spec: { config, secretRef: { name: 'prices-secrets' }, image: real().image, imagePullPolicy: 'Never' },
    });
    const values = await waitFor(
      async () => {
        const data = Object.values(await served(signedApi.url, '/delayed', airnode).catch(() => ({})));
        return data.length === Object.keys(PRICES).length ? data : undefined;
      },
      240_000,
      { description: 'both values served by the Signed API', intervalMs: 500 },
    );
    recordTiming('feed_pods_apply_to_values_served_ms', Date.now() - t0);
    for (const value of values) expect((value as { airnode: string }).airnode).to.equal(airnode);
    const feed = await waitFor(
      async () => {
        const current = (await custom.getNamespacedCustomObject({ ...group, name: 'prices' })) as FeedObject;
        const main = current.status?.signedApis?.find((api) => api.name === 'main');
        const ready = current.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
        return main?.lastPushOutcome === 'ok' && ready ? current : undefined;
      },
      120_000,
      { description: 'the feed Ready, and its push to main ok in status.signedApis', intervalMs: 500 },
    );
    recordTiming('feed_pods_apply_to_push_in_status_ms', Date.now() - t0);
    expect(feed.status!.signedApis!.find((api) => api.name === 'main')!.pushesOk).to.be.greaterThan(0);
    const status = JSON.stringify(feed.status);
    for (const secret of [TEST_MNEMONIC, API_KEY, TOKEN]) expect(status).to.not.include(secret);
    expect(apiCalls, 'the API stand-in was called by the pod').to.be.greaterThan(0);
    expect(keyRefused, 'every call carried the API key from the Secret').to.equal(0);
  });
});
