// A standby in another cluster, as two engine processes of the same node (same mnemonic, same config but for the
// API's URL, so each process's API calls are counted apart) on anvil with the real AirnodeRrpV0, each through its own
// recording proxy: the primary (`start`) and the standby (`start --standby-delay-blocks N`), each a long window.
// The test makes the blocks (anvil_mine) and waits for the standby's poll of each, so every block count is exact.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { Contract, zeroPadValue } from 'ethers';
import { parseRequestLog, type RequestRecord } from '../../../src/contract/request-log.js';
import { spawnOracleNode } from '../../support/binary.js';
import { mineBlocks, protocolArtifacts, rpc, startTestChain } from '../../support/chain.js';
import {
  type ApiServer,
  buildConfigJson,
  createSponsor,
  ENDPOINTS,
  makeFullRequest,
  NODE_ADDRESS,
  type NodeFiles,
  requestPrice,
  startApiServer,
  writeNodeFiles,
} from '../../support/harness.js';
import { type RecordingProxy, startRecordingProxy } from '../../support/rpc-proxy.js';

/** The standby delay: more blocks than the primary's own requests and fulfilments add while it serves a phase. */
const N = 8;

type Side = {
  name: 'primary' | 'standby';
  api: ApiServer;
  proxy: RecordingProxy;
  files: NodeFiles;
  cacheDir: string;
  child?: ChildProcess;
  stderr: string;
};

describe('a standby node (anvil, real AirnodeRrpV0, two engine processes)', function () {
  this.timeout(300_000);
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  let dir: string;
  let primary: Side;
  let standby: Side;
  const children: ChildProcess[] = [];

  const makeSide = async (name: Side['name']): Promise<Side> => {
    const api = await startApiServer();
    const proxy = await startRecordingProxy(chain.anvil.url);
    const { config, secrets } = buildConfigJson({
      providers: { anvil: proxy.url },
      deployment: chain.deployment,
      apiUrl: api.url,
    });
    (config['nodeSettings'] as { logLevel: string }).logLevel = 'INFO';
    return {
      name,
      api,
      proxy,
      files: writeNodeFiles(dir, { config, secrets }, `${name}-`),
      cacheDir: join(dir, `${name}-cache`),
      stderr: '',
    };
  };

  /** `start` as one long window polling every 0.1 s; resolves once its first cycle finished. */
  const startSide = async (side: Side, extra: string[] = []) => {
    side.stderr = '';
    const child = spawnOracleNode([
      'start',
      ...side.files.args,
      '--interval-ms',
      '600000',
      '--poll-interval',
      '0.1',
      '--no-gateway',
      '--cache-dir',
      side.cacheDir,
      ...extra,
    ]);
    child.stderr?.on('data', (chunk) => {
      side.stderr += chunk;
    });
    side.child = child;
    children.push(child);
    await until(async () => cycles(side) >= 1, `the first cycle of the ${side.name}`);
  };
  const stopSide = async (side: Side, signal: NodeJS.Signals) => {
    const child = side.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    await exited;
  };
  /** The cycles (a window's first cycle and each poll that saw a new head) the side has finished. */
  const cycles = (side: Side) => side.stderr.match(/"cycle finished"/g)?.length ?? 0;
  const sentBy = (side: Side) => side.proxy.sent.filter((tx) => tx.rejected === undefined);

  /** Polls the condition for at most 60 s of wall time (not a number of tries: a try reads the chain, slow under load). */
  async function until(condition: () => Promise<boolean>, what: string): Promise<void> {
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (await condition()) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  /** Mines one block and waits until the standby's window has run its cycle at it (or a later head). */
  const mineAndWaitForStandby = async () => {
    const before = cycles(standby);
    await mineBlocks(chain.anvil.url, 1);
    await until(async () => cycles(standby) > before, "the standby's poll of the new block");
  };

  /** The block a request was made in and the blocks of its FulfilledRequest events. */
  const requestBlocks = async (requestId: string) => {
    const rrp = new Contract(chain.deployment.AirnodeRrpV0, protocolArtifacts.AirnodeRrpV0().abi);
    const logs = await rpc<{ topics: string[]; data: string; blockNumber: string }[]>(chain.anvil.url, 'eth_getLogs', [
      {
        address: chain.deployment.AirnodeRrpV0,
        fromBlock: '0x0',
        toBlock: 'latest',
        topics: [null, zeroPadValue(NODE_ADDRESS, 32), requestId],
      },
    ]);
    const named = logs.map((log) => ({ name: rrp.interface.parseLog(log)?.name, block: Number(log.blockNumber) }));
    return {
      made: named.find((log) => log.name === 'MadeFullRequest')!.block,
      fulfilled: named.filter((log) => log.name === 'FulfilledRequest').map((log) => log.block),
      failed: named.filter((log) => log.name === 'FailedRequest').length,
    };
  };
  const fulfilledOnce = async (ids: string[]) => {
    for (const id of ids) {
      const blocks = await requestBlocks(id);
      if (blocks.fulfilled.length !== 1 || blocks.failed !== 0) return false;
    }
    return true;
  };
  const requestLog = (side: Side): RequestRecord[] =>
    parseRequestLog(readFileSync(join(side.cacheDir, 'requests.json'), 'utf8'));

  let sponsors: Awaited<ReturnType<typeof createSponsor>>[];
  /** Two requests of one sponsor (one nonce sequence) and one of another, of an endpoint whose answers are cached. */
  const makeRequests = async () => [
    await requestPrice(chain.deployment, sponsors[0]!),
    await requestPrice(chain.deployment, sponsors[0]!),
    await makeFullRequest(chain.deployment, {
      endpointId: ENDPOINTS.counter,
      sponsor: sponsors[1]!.address,
      sponsorWallet: sponsors[1]!.sponsorWallet,
      parameters: '0x',
    }),
  ];
  /** Which side the response cache says called the API of a cached request. */
  const cachedBy = (side: Side, requestId: string) =>
    (
      JSON.parse(readFileSync(join(side.cacheDir, `requestId-${requestId.toLowerCase()}`), 'utf8')) as {
        servedBy?: string;
      }
    ).servedBy;

  before(async () => {
    chain = await startTestChain();
    dir = mkdtempSync(join(tmpdir(), 'standby-'));
    primary = await makeSide('primary');
    standby = await makeSide('standby');
    sponsors = [await createSponsor(chain.deployment, 'standby-a'), await createSponsor(chain.deployment, 'standby-b')];
    await startSide(primary);
    await startSide(standby, ['--standby-delay-blocks', String(N)]);
  });

  after(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await primary?.api.close();
    await standby?.api.close();
    await primary?.proxy.close();
    await standby?.proxy.close();
    await chain?.anvil.stop();
  });

  let servedByPrimary: string[] = [];
  let servedByStandby: string[] = [];

  it('primary alive: the primary serves each request once; the standby makes no API call and sends nothing', async () => {
    const ids = await makeRequests();
    await until(() => fulfilledOnce(ids), 'the fulfilments');
    // The standby polls well past its delay for every request: each is already fulfilled when it would serve it.
    for (let i = 0; i < N + 2; i++) await mineAndWaitForStandby();
    expect(await fulfilledOnce(ids)).to.equal(true);
    expect(standby.api.calls).to.deep.equal([]);
    expect(sentBy(standby)).to.deep.equal([]);
    // Wasted transactions: none (one sent per request, none refused).
    expect(sentBy(primary)).to.have.length(ids.length);
    expect(primary.proxy.sent.filter((tx) => tx.rejected !== undefined)).to.deep.equal([]);
    expect(cachedBy(primary, ids[2]!)).to.equal('primary');
    servedByPrimary = ids;
  });

  it('primary killed mid-window: the standby serves every request once, N + 1 blocks after its confirmations', async () => {
    await stopSide(primary, 'SIGKILL');
    const primarySent = primary.proxy.sent.length;
    const logFrom = standby.stderr.length;
    const ids = await makeRequests();
    // Every request seen (waiting) by the standby before the blocks are made one by one, each polled.
    await until(
      async () => /"discovered":3/.test(standby.stderr.slice(logFrom)),
      'the standby to see the three requests',
    );
    await rpc(chain.anvil.url, 'evm_setAutomine', [false]);
    try {
      for (let i = 0; i < 2 * N + 4 && !(await fulfilledOnce(ids)); i++) await mineAndWaitForStandby();
    } finally {
      await rpc(chain.anvil.url, 'evm_setAutomine', [true]);
    }
    // minConfirmations is 0: each request is servable in the block it was made in.
    for (const id of ids) {
      const blocks = await requestBlocks(id);
      expect(blocks.failed).to.equal(0);
      expect(blocks.fulfilled).to.have.length(1);
      expect(blocks.fulfilled[0]! - blocks.made, `blocks from ${id}'s confirmations to its fulfilment`).to.equal(N + 1);
    }
    expect(standby.api.calls).to.have.length(ids.length);
    expect(sentBy(standby)).to.have.length(ids.length);
    expect(standby.proxy.sent.filter((tx) => tx.rejected !== undefined)).to.deep.equal([]);
    expect(primary.proxy.sent.length).to.equal(primarySent);
    expect(cachedBy(standby, ids[2]!)).to.equal('standby');
    servedByStandby = ids;
  });

  it('primary back: the standby goes quiet again', async () => {
    const standbyApiCalls = standby.api.calls.length;
    const standbySent = standby.proxy.sent.length;
    primary.proxy.reset();
    await startSide(primary);
    const ids = await makeRequests();
    await until(() => fulfilledOnce(ids), 'the fulfilments');
    for (let i = 0; i < N + 2; i++) await mineAndWaitForStandby();
    expect(await fulfilledOnce(ids)).to.equal(true);
    expect(standby.api.calls.length).to.equal(standbyApiCalls);
    expect(standby.proxy.sent.length).to.equal(standbySent);
    expect(sentBy(primary)).to.have.length(ids.length);
    expect(primary.proxy.sent.filter((tx) => tx.rejected !== undefined)).to.deep.equal([]);
    servedByPrimary = [...servedByPrimary, ...ids];
  });

  it("the request logs say which side served each request; the standby's log the ones it left to the primary", async () => {
    await stopSide(standby, 'SIGTERM');
    await stopSide(primary, 'SIGTERM');
    const standbyLog = new Map(requestLog(standby).map((record) => [record.requestId, record]));
    for (const id of servedByStandby) {
      const record = standbyLog.get(id.toLowerCase());
      expect(record?.state, id).to.equal('fulfilled');
      expect(record?.servedBy, id).to.equal('standby');
    }
    const primaryLog = new Map(requestLog(primary).map((record) => [record.requestId, record]));
    // The primary's first process was killed before it wrote its log: the restarted one's requests are in it.
    for (const id of servedByPrimary.slice(-3))
      expect(primaryLog.get(id.toLowerCase())?.servedBy, id).to.equal('primary');
  });

  it("a primary's fulfilment pending in the standby's provider is left alone until the standby has seen it stuck", async () => {
    // The primary is gone; its fulfilment sits in the pool of the standby's provider (the proxy shows the wallet one
    // transaction more at 'pending' than mined). The pending-transaction rule applies whoever sent it: the standby
    // waits STUCK_AFTER_BLOCKS (3) blocks of its own sightings after its delay, making no API call, then replaces it
    // (same nonce).
    const wallet = sponsors[0]!.sponsorWallet.toLowerCase();
    standby.proxy.setFault(({ method, params }) =>
      method === 'eth_getTransactionCount' && String(params[0]).toLowerCase() === wallet && params[1] === 'pending'
        ? { result: (upstream) => `0x${(Number(upstream) + 1).toString(16)}` }
        : undefined,
    );
    // Only the standby runs (whatever the tests before left running).
    await stopSide(primary, 'SIGKILL');
    await stopSide(standby, 'SIGTERM');
    await startSide(standby, ['--standby-delay-blocks', String(N)]);
    const standbySent = standby.proxy.sent.length;
    const standbyApiCalls = standby.api.calls.length;
    const id = await requestPrice(chain.deployment, sponsors[0]!);
    const { made } = await requestBlocks(id);
    await rpc(chain.anvil.url, 'evm_setAutomine', [false]);
    try {
      const sentAt = new Map<number, { sent: number; apiCalls: number }>();
      for (let head = made + 1; head <= made + N + 4 && !(await fulfilledOnce([id])); head++) {
        await mineAndWaitForStandby();
        sentAt.set(head, {
          sent: standby.proxy.sent.length - standbySent,
          apiCalls: standby.api.calls.length - standbyApiCalls,
        });
      }
      // Servable for the standby at made + N; seen pending there and for the two blocks after: left alone, without
      // an API call (the standby reads the wallet's counts before its shards).
      for (let head = made + 1; head <= made + N + 2; head++)
        expect(sentAt.get(head), `head ${head}`).to.deep.equal({ sent: 0, apiCalls: 0 });
      expect(sentAt.get(made + N + 3), 'replaced once seen stuck').to.deep.equal({ sent: 1, apiCalls: 1 });
      const blocks = await requestBlocks(id);
      expect(blocks.fulfilled).to.deep.equal([made + N + 4]);
      expect(blocks.failed).to.equal(0);
      expect(standby.proxy.sent.slice(standbySent).filter((tx) => tx.rejected !== undefined)).to.deep.equal([]);
    } finally {
      standby.proxy.setFault(undefined);
      await rpc(chain.anvil.url, 'evm_setAutomine', [true]);
      await stopSide(standby, 'SIGTERM');
    }
  });
});
