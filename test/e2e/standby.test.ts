// Issue 36's standby on real pods: the same node (same mnemonic, same config but for the API's URL) as two OracleNodes in two namespaces,
// one with spec.redundancy.standbyDelayBlocks N; each side reaches the chain through its own recording proxy (its own
// provider URL in its own Secret) and calls its own API stand-in, so what each side's coordinator pods send and call
// is counted apart although both use the same sponsor wallets. anvil mines a block every 2 s. Three phases:
//   - primary alive: the primary serves every request, the standby sends nothing and makes no API call;
//   - primary killed mid-window (spec.coordinator.suspend, its running coordinator Jobs deleted): the standby serves
//     every request exactly once, never before N blocks after its confirmations and within a few blocks of N + 1;
//   - primary back (suspend off): the primary serves again, the standby is quiet.
// Wasted transactions (refused by the chain, or more than one per request) are counted in each phase (goal 0); the
// standby's are asserted: none while the primary works, one per request while it is down.

import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { expect } from 'chai';
import { type Anvil, type Deployment, deployProtocol, rpc, setBalance, startAnvil } from '../support/chain.js';
import { buildConfigJson, createSponsor, NODE_ADDRESS, requestEvents, requestPrice } from '../support/harness.js';
import { type RecordingProxy, startRecordingProxy } from '../support/rpc-proxy.js';
import {
  batch,
  core,
  createOnceAdmitted,
  installOperator,
  kc,
  logsOf,
  podsOf,
  type RealNode,
  realNode,
  recordCount,
  repoRoot,
  requireRealNode,
  sleep,
  uninstallOperator,
  useNamespace,
  waitFor,
} from './support.js';

const node = realNode();
const real = (): RealNode => requireRealNode(node);
/** Blocks every 2 s; N = 10 blocks (20 s) is longer than the primary takes to send, per-poll worker pods included. */
const BLOCK_SECONDS = 2;
const N = 10;
const PER_PHASE = 3;
const NAME = 'redundant';

type Side = {
  label: 'primary' | 'standby';
  namespace: () => string;
  proxy: RecordingProxy;
  api: Server;
  apiCalls: number;
  polls: number[];
};
type Log = { blockNumber: string };

describe('e2e: a primary and a standby OracleNode of the same node on real pods', function () {
  this.timeout(900_000);
  let anvil: Anvil | undefined;
  let deployment: Deployment;
  const primaryNs = useNamespace('e2e-primary');
  const standbyNs = useNamespace('e2e-standby');
  const sides: Side[] = [];
  const side = (label: Side['label']) => sides.find((s) => s.label === label)!;

  before(async function () {
    if (typeof node === 'string') {
      console.log(`      skipped: ${node}`);
      this.skip();
    }
    this.timeout(180_000);
    const gw = real().gateway;
    anvil = await startAnvil({ host: gw, port: 20545 + Math.floor(Math.random() * 1000) });
    deployment = await deployProtocol(anvil.url);
    await setBalance(anvil.url, NODE_ADDRESS, 10n ** 20n);
    for (const [label, namespace] of [
      ['primary', () => primaryNs.name],
      ['standby', () => standbyNs.name],
    ] as const) {
      const proxy = await startRecordingProxy(anvil.url, { host: gw });
      const polls: number[] = [];
      proxy.setFault(({ method }) => {
        if (method === 'eth_blockNumber') polls.push(Date.now());
        return undefined;
      });
      const entry: Side = { label, namespace, proxy, api: createServer(), apiCalls: 0, polls };
      entry.api.on('request', (req, res) => {
        entry.apiCalls++;
        const url = new URL(req.url ?? '/', 'http://x');
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ price: url.searchParams.get('coin') === 'BTC' ? 65000.5 : 3000.25 }));
      });
      await new Promise<void>((r) => entry.api.listen(0, gw, r));
      sides.push(entry);
    }
    await installOperator();
  });

  after(async () => {
    for (const s of sides) {
      await s.proxy.close();
      s.api.closeAllConnections();
      s.api.close();
    }
    await anvil?.stop();
    await uninstallOperator();
  });

  const custom = () => kc().makeApiClient(CustomObjectsApi);
  const setSuspend = (namespace: string, suspend: boolean) =>
    custom().patchNamespacedCustomObject(
      {
        group: 'oracle-node.io',
        version: 'v1alpha1',
        namespace,
        plural: 'oraclenodes',
        name: NAME,
        body: { spec: { coordinator: { suspend } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  const head = async () => Number(await rpc<string>(deployment.url, 'eth_blockNumber'));
  /** The request's block and its fulfilment's block (FulfilledRequest or FailedRequest). */
  const blocksOf = async (requestId: string) => {
    const logs = await rpc<Log[]>(deployment.url, 'eth_getLogs', [
      { address: deployment.AirnodeRrpV0, fromBlock: '0x0', toBlock: 'latest', topics: [null, null, requestId] },
    ]);
    return { made: Number(logs[0]?.blockNumber), ended: Number(logs[logs.length - 1]?.blockNumber) };
  };
  /** Counts at one moment: transactions accepted and refused at each side's proxy, API calls. */
  const snapshot = () =>
    Object.fromEntries(
      sides.map((s) => {
        const sent = s.proxy.sent;
        const refused = sent.filter((tx) => tx.rejected).length;
        return [s.label, { accepted: sent.length - refused, refused, apiCalls: s.apiCalls }];
      }),
    ) as Record<Side['label'], { accepted: number; refused: number; apiCalls: number }>;
  const sponsors: Awaited<ReturnType<typeof createSponsor>>[] = [];

  /** Each side's coordinator pod logs, kept under .cache/e2e/ to find what sent a wasted transaction. */
  async function keepCoordinatorLogs(phaseName: string) {
    const dir = resolve(repoRoot, '.cache/e2e', `standby-${phaseName}-${Date.now()}`);
    await mkdir(dir, { recursive: true });
    for (const s of sides) {
      for (const pod of await podsOf(s.namespace(), 'app.kubernetes.io/component in (coordinator,worker)')) {
        const log = await logsOf(s.namespace(), pod).catch((error: unknown) => `no log: ${String(error)}`);
        await writeFile(resolve(dir, `${s.label}-${pod.metadata?.name ?? 'pod'}.log`), log);
      }
    }
    console.log(`      ${phaseName}: wasted transactions; the coordinator pods' logs are in ${dir}`);
  }

  /** PER_PHASE requests, one every few blocks; waits until each has ended and N + 2 more blocks were mined. */
  async function phase(name: string) {
    const before = snapshot();
    const sentBefore = Object.fromEntries(sides.map((s) => [s.label, s.proxy.sent.length]));
    const made: string[] = [];
    for (let i = 0; i < PER_PHASE; i++) {
      made.push(await requestPrice(deployment, sponsors[i % sponsors.length]!));
      await sleep(3 * BLOCK_SECONDS * 1000);
    }
    await waitFor(
      async () => {
        for (const id of made) {
          const events = await requestEvents(deployment, id);
          if (events.fulfilled.length + events.failed.length === 0) return false;
        }
        return true;
      },
      120_000,
      { description: `the ${name} requests fulfilled`, intervalMs: 500 },
    );
    const endedAt = await head();
    await waitFor(async () => (await head()) >= endedAt + N + 2, 60_000, {
      description: `${N + 2} blocks after the last fulfilment`,
      intervalMs: 500,
    });
    const blocks: number[] = [];
    for (const id of made) {
      const events = await requestEvents(deployment, id);
      expect(events.fulfilled, `${name}: ${id} fulfilled once`).to.have.length(1);
      expect(events.failed, `${name}: ${id} not failed`).to.have.length(0);
      const { made: at, ended } = await blocksOf(id);
      blocks.push(ended - at);
    }
    const after = snapshot();
    const delta = (label: Side['label']) => ({
      accepted: after[label].accepted - before[label].accepted,
      refused: after[label].refused - before[label].refused,
      apiCalls: after[label].apiCalls - before[label].apiCalls,
    });
    const primary = delta('primary');
    const standby = delta('standby');
    const wasted = primary.refused + standby.refused + Math.max(0, primary.accepted + standby.accepted - PER_PHASE);
    // Each transaction of the phase as the chain ended it: mined and successful, reverted (paid for nothing), or never
    // mined (replaced at its nonce, dropped).
    const transactions: string[] = [];
    for (const s of sides) {
      for (const tx of s.proxy.sent.slice(sentBefore[s.label])) {
        const receipt = await rpc<{ status: string; blockNumber: string } | null>(
          deployment.url,
          'eth_getTransactionReceipt',
          [tx.hash],
        );
        const outcome = tx.rejected
          ? `refused (${tx.rejected})`
          : receipt
            ? `${receipt.status === '0x1' ? 'ok' : 'REVERTED'} in ${Number(receipt.blockNumber)}`
            : 'never mined';
        transactions.push(`${s.label} ${tx.from.slice(0, 10)} nonce ${tx.nonce} at ${tx.at % 1_000_000}: ${outcome}`);
      }
    }
    console.log(
      `      ${name}: requests ${made.map((id) => id.slice(0, 10)).join(', ')}; transactions:\n        ${transactions.join('\n        ')}`,
    );
    if (wasted > 0) await keepCoordinatorLogs(name);
    recordCount(`standby_pods_${name}_wasted_transactions`, wasted);
    recordCount(`standby_pods_${name}_request_to_fulfilment_blocks_max`, Math.max(...blocks));
    return { primary, standby, blocks, wasted };
  }

  it('primary alive: the standby sends nothing and calls no API; primary killed mid-window: the standby serves each request once after N blocks; primary back: the standby is quiet', async () => {
    for (const i of [0, 1, 2]) sponsors.push(await createSponsor(deployment, `e2e-standby-${i}`));
    // From here the chain makes its blocks by itself, so "N blocks" is time passing as on a real chain.
    await rpc(deployment.url, 'evm_setAutomine', [false]);
    await rpc(deployment.url, 'evm_setIntervalMining', [BLOCK_SECONDS]);

    for (const s of sides) {
      const { config, secrets } = buildConfigJson({
        providers: { anvil: s.proxy.url },
        deployment,
        apiUrl: `http://${real().gateway}:${(s.api.address() as AddressInfo).port}`,
        maxConcurrency: 2,
      });
      (config['nodeSettings'] as Record<string, unknown>)['logLevel'] = 'INFO';
      await core().createNamespacedSecret({
        namespace: s.namespace(),
        body: { metadata: { name: `${NAME}-secrets` }, stringData: secrets },
      });
      await createOnceAdmitted(
        s.namespace(),
        {
          kind: 'OracleNode',
          name: NAME,
          spec: {
            config,
            secretRef: { name: `${NAME}-secrets` },
            image: real().image,
            imagePullPolicy: 'Never',
            ...(s.label === 'standby' ? { redundancy: { standbyDelayBlocks: N } } : {}),
          },
        },
        `the ${s.label} OracleNode`,
      );
    }
    const standbyArgs = await waitFor(
      async () =>
        (
          await batch().readNamespacedCronJob({ name: `${NAME}-test-coordinator`, namespace: standbyNs.name })
        ).spec?.jobTemplate.spec?.template.spec?.containers[0]?.args?.join(' '),
      60_000,
      { description: "the standby's coordinator CronJob", intervalMs: 1000 },
    );
    expect(standbyArgs).to.include(`--standby-delay-blocks ${N}`);
    // Both sides poll: their first windows run (the CronJobs' next minute).
    await waitFor(async () => sides.every((s) => s.polls.length > 0), 150_000, {
      description: 'both sides polling',
      intervalMs: 500,
    });

    // 1. Primary alive.
    const alive = await phase('primary_alive');
    expect(alive.standby, 'the standby while the primary works').to.deep.equal({
      accepted: 0,
      refused: 0,
      apiCalls: 0,
    });
    expect(alive.primary.accepted).to.equal(PER_PHASE);
    for (const b of alive.blocks) expect(b, 'served by the primary within the delay').to.be.at.most(N);

    // 2. Primary killed mid-window: no new runs, and the running ones (the window, a run waiting for the Lease, the
    // window's worker Job) deleted with their pods.
    await setSuspend(primaryNs.name, true);
    await batch().deleteCollectionNamespacedJob({
      namespace: primaryNs.name,
      labelSelector: 'app.kubernetes.io/component in (coordinator,worker)',
      propagationPolicy: 'Background',
      gracePeriodSeconds: 0,
    });
    const primaryPolls = side('primary').polls;
    await waitFor(
      async () => primaryPolls.length > 0 && Date.now() - primaryPolls[primaryPolls.length - 1]! > 5_000,
      60_000,
      {
        description: 'the primary silent (its pods gone)',
        intervalMs: 500,
      },
    );
    const killed = await phase('primary_killed');
    expect(killed.primary, 'the primary, killed').to.deep.equal({ accepted: 0, refused: 0, apiCalls: 0 });
    expect(killed.standby.accepted, 'one transaction per request, by the standby').to.equal(PER_PHASE);
    // minConfirmations 0: servable in its own block, kept by the standby at head >= block + N, mined after it.
    for (const b of killed.blocks) expect(b, 'never before the standby delay').to.be.at.least(N + 1);
    // Generous: N + 1 exactly when the standby's poll meets the block; a few blocks more on a loaded machine.
    for (const b of killed.blocks) expect(b, 'within a few blocks of N + 1').to.be.at.most(N + 1 + 5);
    recordCount('standby_pods_primary_killed_blocks_after_delay_max', Math.max(...killed.blocks) - N);

    // 3. Primary back: its next run takes the Lease (the killed holder's ran out) and serves within the delay.
    await setSuspend(primaryNs.name, false);
    const resumedAt = Date.now();
    await waitFor(async () => primaryPolls[primaryPolls.length - 1]! > resumedAt, 150_000, {
      description: 'the primary polling again (its CronJob resumed)',
      intervalMs: 500,
    });
    const back = await phase('primary_back');
    expect(back.standby, 'the standby once the primary is back').to.deep.equal({
      accepted: 0,
      refused: 0,
      apiCalls: 0,
    });
    // One transaction per request: a resumed primary's first requests go through a per-poll worker pod (its window's
    // workers are still starting), several blocks; its window once counted them in flight from the poll, not the
    // send, and replaced one (docs/chain-cycle.md, "Exactly once inside a window").
    expect(back.primary.accepted, 'one transaction per request, by the primary').to.equal(PER_PHASE);
    expect(back.wasted, 'wasted transactions after the failback').to.equal(0);
  });
});
