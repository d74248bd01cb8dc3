// Issue 36's real-pods figures for the coordinator hand-over: an OracleNode with the operator's defaults (a CronJob
// every minute, 1 s polls, windows of 70 s with concurrencyPolicy Allow, the Lease `<node>-coordinator`) runs for three
// minutes on the real node, so its windows hand over at least twice, while requests are made at random moments
// (seeded). Measured from outside the pods: every head read (eth_blockNumber: one per poll) at a recording proxy in
// front of anvil, by the pod that made it, and each request's fulfilment as a watcher on anvil sees it. Asserted is
// only what is stable: every request fulfilled exactly once by one transaction, polls from at least three coordinator
// pods one after the other, and no time between two polls over twice the bound (2 x 3 s).
// The figures go to .cache/e2e/timings.txt and docs/benchmarks.md ("Hand-over on real pods").

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { id } from 'ethers';
import { type Anvil, type Deployment, deployProtocol, rpc, setBalance, startAnvil } from '../support/chain.js';
import { buildConfigJson, createSponsor, NODE_ADDRESS, requestEvents, requestPrice } from '../support/harness.js';
import { seededRandom } from '../support/random.js';
import { type RecordingProxy, startRecordingProxy } from '../support/rpc-proxy.js';
import {
  batch,
  core,
  createOnceAdmitted,
  installOperator,
  kubectl,
  type RealNode,
  realNode,
  recordCount,
  recordTiming,
  requireRealNode,
  sleep,
  uninstallOperator,
  useNamespace,
  waitFor,
} from './support.js';

const node = realNode();
const real = (): RealNode => requireRealNode(node);
/** How long the node is watched, from its first poll: three windows, so at least two hand-overs. */
const SPAN_MS = 180_000;
const REQUESTS = 12;
const SEED = 36;
/**
 * The bound is about twice the poll interval plus 1 s (3 s); asserted with room for a loaded 2-core machine,
 * twice that, still far from the 15-20 s each minute had without a poll before the hand-over.
 */
const LONGEST_POLL_GAP_BOUND_MS = 2 * (2 * 1_000 + 1_000);
/** FulfilledRequest(address indexed airnode, bytes32 indexed requestId, bytes data) of AirnodeRrpV0. */
const FULFILLED_TOPIC = id('FulfilledRequest(address,bytes32,bytes)');

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
};

type Poll = { at: number; from: string };
type Log = { topics: string[]; blockNumber: string };

describe('e2e: the coordinator hand-over on real pods', function () {
  this.timeout(720_000);
  let anvil: Anvil | undefined;
  let api: Server | undefined;
  let proxy: RecordingProxy | undefined;
  let deployment: Deployment;
  let apiUrl = '';
  const polls: Poll[] = [];

  before(async function () {
    if (typeof node === 'string') {
      console.log(`      skipped: ${node}`);
      this.skip();
    }
    this.timeout(180_000);
    const gw = real().gateway;
    anvil = await startAnvil({ host: gw, port: 19545 + Math.floor(Math.random() * 1000) });
    deployment = await deployProtocol(anvil.url);
    await setBalance(anvil.url, NODE_ADDRESS, 10n ** 20n);
    api = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ price: url.searchParams.get('coin') === 'BTC' ? 65000.5 : 3000.25 }));
    });
    await new Promise<void>((r) => api?.listen(0, gw, r));
    apiUrl = `http://${gw}:${(api.address() as AddressInfo).port}`;
    // The pods' provider: every call passes through; a head read is a poll, recorded with the pod it came from.
    proxy = await startRecordingProxy(anvil.url, { host: gw });
    proxy.setFault(({ method, from }) => {
      if (method === 'eth_blockNumber') polls.push({ at: Date.now(), from });
      return undefined;
    });
    await installOperator();
  });

  after(async () => {
    await proxy?.close();
    await anvil?.stop();
    api?.closeAllConnections();
    api?.close();
    await uninstallOperator();
  });

  const ns = useNamespace('e2e-handover');

  it('three minutes of 1 s polls across hand-overs: no long time without a poll (under 6 s), every request at a random moment fulfilled once', async () => {
    const sponsors = [];
    for (const i of [0, 1, 2]) sponsors.push(await createSponsor(deployment, `e2e-handover-${i}`));
    const { config, secrets } = buildConfigJson({
      providers: { anvil: proxy!.url },
      deployment,
      apiUrl,
      maxConcurrency: 2,
    });
    (config['nodeSettings'] as Record<string, unknown>)['logLevel'] = 'INFO';
    await core().createNamespacedSecret({
      namespace: ns.name,
      body: { metadata: { name: 'handover-secrets' }, stringData: secrets },
    });
    // The operator's defaults: no spec.coordinator (every minute, pollInterval 1). Right after the install the API
    // server may not reach the webhook yet (docs/real-pods.md, "What does not work" 6): the create is repeated.
    await createOnceAdmitted(ns.name, {
      kind: 'OracleNode',
      name: 'handover',
      spec: { config, secretRef: { name: 'handover-secrets' }, image: real().image, imagePullPolicy: 'Never' },
    });
    const cron = await waitFor(
      () => batch().readNamespacedCronJob({ name: 'handover-test-coordinator', namespace: ns.name }),
      60_000,
      { description: 'the coordinator CronJob', intervalMs: 1000 },
    );
    expect(cron.spec?.concurrencyPolicy).to.equal('Allow');
    expect(cron.spec?.schedule).to.equal('* * * * *');
    const args = cron.spec?.jobTemplate.spec?.template.spec?.containers[0]?.args ?? [];
    expect(args.join(' ')).to.include('--window 70').and.include('--poll-interval 1');
    expect(args.join(' ')).to.include('--handover-lease handover-coordinator');

    await waitFor(async () => polls.length > 0, 150_000, {
      description: "the first window's first poll (the CronJob's next minute)",
      intervalMs: 200,
    });
    const t0 = polls[0]!.at;

    // The fulfilments as a watcher on anvil sees them (every 100 ms), by request id.
    const fulfilledSeenAt = new Map<string, number>();
    let watching = true;
    const watcher = (async () => {
      let from = Number(await rpc<string>(deployment.url, 'eth_blockNumber'));
      while (watching) {
        const head = Number(await rpc<string>(deployment.url, 'eth_blockNumber'));
        if (head >= from) {
          const logs = await rpc<Log[]>(deployment.url, 'eth_getLogs', [
            {
              address: deployment.AirnodeRrpV0,
              fromBlock: `0x${from.toString(16)}`,
              toBlock: `0x${head.toString(16)}`,
              topics: [FULFILLED_TOPIC],
            },
          ]);
          const now = Date.now();
          for (const log of logs) if (!fulfilledSeenAt.has(log.topics[2]!)) fulfilledSeenAt.set(log.topics[2]!, now);
          from = head + 1;
        }
        await sleep(100);
      }
    })();

    // Requests at random moments over the three minutes (seeded), from three sponsors in turn.
    const rand = seededRandom(SEED);
    const moments = Array.from({ length: REQUESTS }, () => 1_000 + rand() * (SPAN_MS - 2_000)).sort((a, b) => a - b);
    const requests: { id: string; madeAt: number }[] = [];
    try {
      for (const [i, moment] of moments.entries()) {
        await sleep(Math.max(0, t0 + moment - Date.now()));
        const made = await requestPrice(deployment, sponsors[i % sponsors.length]!);
        requests.push({ id: made, madeAt: Date.now() });
      }
      await sleep(Math.max(0, t0 + SPAN_MS - Date.now()));
      await waitFor(async () => requests.every((r) => fulfilledSeenAt.has(r.id)), 90_000, {
        description: 'every request fulfilled',
        intervalMs: 500,
      });
    } finally {
      watching = false;
      await watcher;
    }

    // Exactly once: one fulfilment each, no failure, one transaction each (none refused by the chain).
    for (const r of requests) {
      const events = await requestEvents(deployment, r.id);
      expect(events.fulfilled, r.id).to.have.length(1);
      expect(events.failed, r.id).to.have.length(0);
    }
    const sent = proxy!.sent;
    const refused = sent.filter((tx) => tx.rejected);
    expect(sent.length - refused.length, 'fulfilment transactions accepted').to.equal(REQUESTS);
    recordCount('handover_pods_transactions_refused', refused.length);

    // Polls over the three minutes: the longest time between two, and at each hand-over (the last poll of one pod
    // to the first of the next).
    const span = polls.filter((p) => p.at <= t0 + SPAN_MS);
    let longest = 0;
    const handovers: number[] = [];
    for (let i = 1; i < span.length; i++) {
      const gap = span[i]!.at - span[i - 1]!.at;
      longest = Math.max(longest, gap);
      if (span[i]!.from !== span[i - 1]!.from) handovers.push(gap);
    }
    const pods = new Set(span.map((p) => p.from));
    for (const from of pods) {
      expect(from, 'a pod on the bridge').to.match(/^(::ffff:)?10\.244\.0\.\d+$/);
      expect(from).to.not.match(new RegExp(`${real().gateway.replaceAll('.', '\\.')}$`));
    }
    // One pod after the other, never back: each hand-over passes the Lease on to the next run.
    expect(handovers.length, 'hand-overs in three minutes').to.be.at.least(2);
    expect(handovers.length, 'each pod polls in one stretch').to.equal(pods.size - 1);
    const lease = await kubectl('-n', ns.name, 'get', 'lease', 'handover-coordinator', '-o', 'name');
    expect(lease.trim()).to.equal('lease.coordination.k8s.io/handover-coordinator');

    // Request block -> fulfilment block, by their timestamps (instant mining: each transaction its block).
    const blockTime = async (blockNumber: string) =>
      Number(
        (await rpc<{ timestamp: string }>(deployment.url, 'eth_getBlockByNumber', [blockNumber, false])).timestamp,
      );
    const blockSeconds: number[] = [];
    for (const r of requests) {
      const logs = await rpc<Log[]>(deployment.url, 'eth_getLogs', [
        { address: deployment.AirnodeRrpV0, fromBlock: '0x0', toBlock: 'latest', topics: [null, null, r.id] },
      ]);
      const blocks = logs.map((l) => l.blockNumber);
      blockSeconds.push((await blockTime(blocks[blocks.length - 1]!)) - (await blockTime(blocks[0]!)));
    }
    const wall = requests.map((r) => fulfilledSeenAt.get(r.id)! - r.madeAt);
    recordCount('handover_pods_polls', span.length);
    recordCount('handover_pods_handovers', handovers.length);
    recordTiming('handover_pods_longest_time_between_polls_ms', longest);
    recordTiming('handover_pods_no_poll_at_handover_p50_ms', percentile(handovers, 50));
    recordTiming('handover_pods_no_poll_at_handover_max_ms', Math.max(...handovers));
    recordTiming('handover_pods_request_mined_to_fulfilment_seen_p50_ms', percentile(wall, 50));
    recordTiming('handover_pods_request_mined_to_fulfilment_seen_max_ms', Math.max(...wall));
    recordTiming('handover_pods_request_block_to_fulfilment_block_p50_ms', percentile(blockSeconds, 50) * 1000);
    recordTiming('handover_pods_request_block_to_fulfilment_block_max_ms', Math.max(...blockSeconds) * 1000);
    expect(longest, 'longest time between two polls (ms)').to.be.below(LONGEST_POLL_GAP_BOUND_MS);
  });
});
