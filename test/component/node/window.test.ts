// The coordinator window on anvil through the real AirnodeRrpV0: polls that read only new blocks, exactly one
// transaction per request inside a window and across windows, and the chain's maxConcurrency over the window.
// The window's clock is the test's: each "sleep" between polls is a step the test plays on the chain, so nothing
// depends on wall time. A transaction is kept pending by mining blocks too small to take it.

import { expect } from 'chai';
import { Registry } from 'prom-client';
import { STUCK_AFTER_BLOCKS } from '../../../src/chain/pending.js';
import { ProviderMemory } from '../../../src/chain/provider-health.js';
import { parseCycleReport } from '../../../src/contract/pods.js';
import { InProcessExecutor } from '../../../src/node/executor.js';
import { cycleReport } from '../../../src/node/kubernetes/cycle-report.js';
import { type Logger, silentLogger } from '../../../src/node/logger.js';
import { cycleMetrics } from '../../../src/node/metrics.js';
import { callEndpoint } from '../../../src/node/ois-adapter.js';
import type { ShardContext } from '../../../src/node/shard.js';
import { runWindow, type WindowSummary } from '../../../src/node/window.js';
import { createLogger, createMetricsRegistry } from '../../../src/observability/index.js';
import { deferralMessage } from '../../../src/ois/api-client.js';
import { OracleNodeMetrics } from '../../../src/operator/metrics.js';
import { mineBlocks, rpc, setBalance, startTestChain, waitForMined, waitForPending } from '../../support/chain.js';
import {
  type ApiServer,
  buildConfig,
  createSponsor,
  NODE_ADDRESS,
  requestEvents,
  requestPrice,
  startApiServer,
  wallets,
} from '../../support/harness.js';
import { type RecordingProxy, startRecordingProxy } from '../../support/rpc-proxy.js';
import { POLL_MS, runTestWindow } from '../../support/window.js';

describe('the coordinator window on anvil (real AirnodeRrpV0)', () => {
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  let api: ApiServer;
  let proxy: RecordingProxy;

  before(async () => {
    chain = await startTestChain();
    api = await startApiServer();
    proxy = await startRecordingProxy(chain.anvil.url);
    await setBalance(chain.anvil.url, NODE_ADDRESS, 10n ** 20n);
  });
  after(async () => {
    await proxy?.close();
    await api?.close();
    await chain?.anvil.stop();
  });
  afterEach(async () => {
    await rpc(chain.anvil.url, 'evm_setBlockGasLimit', ['0x1c9c380']);
    await rpc(chain.anvil.url, 'evm_setAutomine', [true]);
    await rpc(chain.anvil.url, 'evm_mine', []);
  });

  const request = async (name: string) => {
    const sponsor = await createSponsor(chain.deployment, name);
    const id = await requestPrice(chain.deployment, sponsor);
    return { sponsor, id };
  };
  /** A block too small for any fulfilment (30,000 gas): the pending transactions stay pending. */
  const mineWithoutPending = async () => {
    await rpc(chain.anvil.url, 'evm_setBlockGasLimit', ['0x7530']);
    await rpc(chain.anvil.url, 'evm_mine', []);
  };
  /** Mines what is pending, in a block of anvil's usual gas limit again. */
  const minePending = async () => {
    await rpc(chain.anvil.url, 'evm_setBlockGasLimit', ['0x1c9c380']);
    await rpc(chain.anvil.url, 'evm_mine', []);
  };
  const sendsFrom = (wallet: string) => proxy.sent.filter((tx) => tx.from.toLowerCase() === wallet.toLowerCase());
  const config = (
    options: {
      maxConcurrency?: number;
      fulfillmentGasLimit?: number;
      minConfirmations?: number;
      providers?: Record<string, string>;
    } = {},
  ) => buildConfig({ providers: { counted: proxy.url }, deployment: chain.deployment, apiUrl: api.url, ...options });

  async function window(
    cfg: ReturnType<typeof config>,
    steps: (() => Promise<void>)[],
    context: Partial<ShardContext> = {},
    logger: Logger = silentLogger,
    standby: { standbyDelayBlocks?: number } = {},
  ): Promise<WindowSummary> {
    return runTestWindow(cfg, steps, { context, logger, deps: standby });
  }

  it('serves a request made during the window at the next poll, and an idle poll costs one eth_blockNumber', async () => {
    let made: { id: string } | undefined;
    let idleCalls: Record<string, number> = {};
    const summary = await window(config(), [
      async () => {
        made = await request('window-new');
      },
      async () => {
        await waitForMined(chain.anvil.url);
        proxy.reset();
      },
      async () => {
        idleCalls = Object.fromEntries(proxy.counts);
      },
    ]);
    await waitForMined(chain.anvil.url);
    expect((await requestEvents(chain.deployment, made!.id)).fulfilled).to.have.length(1);
    expect(summary.transactions.fulfilled).to.equal(1);
    expect(summary.window).to.deep.equal({ polls: 3, idlePolls: 1 });
    // The poll after the fulfilment was mined read the new blocks' logs once; the one after it only the head.
    expect(idleCalls['eth_getLogs']).to.equal(1);
    const idle = Object.fromEntries(proxy.counts);
    for (const [method, count] of Object.entries(idleCalls)) idle[method] = (idle[method] ?? 0) - count;
    expect(Object.fromEntries(Object.entries(idle).filter(([, n]) => n > 0))).to.deep.equal({ eth_blockNumber: 1 });
  });

  it('does not send a pending fulfilment again, nor call its API again, at the next polls', async () => {
    const { id, sponsor } = await request('window-pending');
    proxy.reset();
    await rpc(chain.anvil.url, 'evm_setAutomine', [false]);
    const summary = await window(config(), [mineWithoutPending, mineWithoutPending]);
    expect(summary.window).to.deep.equal({ polls: 2, idlePolls: 0 });
    expect(sendsFrom(sponsor.sponsorWallet)).to.have.length(1);
    expect(summary.transactions).to.include({ fulfilled: 1, skipped: 0, replaced: 0 });
    expect(summary.apiCalls).to.equal(1);
    await minePending();
    expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
  });

  it('a shard that takes more blocks than STUCK_AFTER_BLOCKS (a slow API, a worker pod starting): its request is not planned again, nor its transaction replaced, a block after it was sent', async () => {
    // The API answers only once the chain has moved past STUCK_AFTER_BLOCKS blocks since the poll read its head.
    const slow = await startApiServer({
      hold: async () => {
        for (let i = 0; i <= STUCK_AFTER_BLOCKS; i++) await rpc(chain.anvil.url, 'evm_mine', []);
      },
    });
    try {
      const { id, sponsor } = await request('window-slow-shard');
      proxy.reset();
      await rpc(chain.anvil.url, 'evm_setAutomine', [false]);
      const cfg = buildConfig({ providers: { counted: proxy.url }, deployment: chain.deployment, apiUrl: slow.url });
      // Two polls, each after a block that leaves the fulfilment pending: it was sent one and two blocks before.
      const summary = await window(cfg, [mineWithoutPending, mineWithoutPending]);
      console.log(
        JSON.stringify(summary.transactions),
        summary.apiCalls,
        JSON.stringify(summary.window),
        proxy.sent.map((t) => t.nonce),
      );
      // Counted from the poll that sent it, it would be planned again (its API called again) and replaced.
      expect(summary.apiCalls).to.equal(1);
      expect(sendsFrom(sponsor.sponsorWallet)).to.have.length(1);
      expect(summary.transactions).to.include({ fulfilled: 1, replaced: 0, errors: 0 });
      await minePending();
      expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
    } finally {
      await slow.close();
    }
  });

  it("a wallet whose fulfilment is pending serves its sponsor's next request at the next nonce", async () => {
    const { id, sponsor } = await request('window-next-nonce');
    proxy.reset();
    await rpc(chain.anvil.url, 'evm_setAutomine', [false]);
    let next: Promise<string> | undefined;
    const summary = await window(config({ fulfillmentGasLimit: 500_000 }), [
      async () => {
        // A block with room for the request (its own gas) but not for the pending fulfilment (500,000 gas).
        next = requestPrice(chain.deployment, sponsor, 'BTC');
        // The pool then holds the pending fulfilment and the request: no block before the request is in it.
        await waitForPending(chain.anvil.url, 2);
        await rpc(chain.anvil.url, 'evm_setBlockGasLimit', [`0x${(400_000).toString(16)}`]);
        await rpc(chain.anvil.url, 'evm_mine', []);
        await next;
        // Back to anvil's usual limit, with no block mined: the fulfilment stays pending at the poll.
        await rpc(chain.anvil.url, 'evm_setBlockGasLimit', ['0x1c9c380']);
      },
    ]);
    const sends = sendsFrom(sponsor.sponsorWallet);
    expect(sends.map((tx) => tx.nonce)).to.deep.equal([0, 1]);
    expect(summary.transactions).to.include({ fulfilled: 2, skipped: 0, replaced: 0 });
    await minePending();
    expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
    expect((await requestEvents(chain.deployment, (await next)!)).fulfilled).to.have.length(1);
  });

  it('a window that ends while its transaction is pending: the next window does not send it again', async () => {
    const { id, sponsor } = await request('window-ends-pending');
    proxy.reset();
    await rpc(chain.anvil.url, 'evm_setAutomine', [false]);
    const first = await window(config(), []);
    expect(first.transactions.fulfilled).to.equal(1);
    await mineWithoutPending();
    // The next window is another pod: it knows nothing of the first one but what the chain says.
    const next = await window(config(), [mineWithoutPending]);
    expect(sendsFrom(sponsor.sponsorWallet)).to.have.length(1);
    expect(next.transactions).to.include({ fulfilled: 0, replaced: 0 });
    await minePending();
    expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
  });

  it('two windows back to back serve each request once', async () => {
    proxy.reset();
    const ids: string[] = [];
    const wallets: string[] = [];
    const make = (name: string) => async () => {
      const { id, sponsor } = await request(name);
      ids.push(id);
      wallets.push(sponsor.sponsorWallet);
    };
    const first = await window(config(), [make('window-first'), async () => waitForMined(chain.anvil.url)]);
    const second = await window(config(), [make('window-second'), async () => waitForMined(chain.anvil.url)]);
    await waitForMined(chain.anvil.url);
    expect(first.transactions.fulfilled + second.transactions.fulfilled).to.equal(2);
    for (const id of ids) expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
    for (const wallet of wallets) expect(sendsFrom(wallet)).to.have.length(1);
  });

  it('a call the rate budget did not let out is never failed on chain: the request stays open and the next window serves it', async () => {
    const { id } = await request('window-deferred');
    let calls = 0;
    // The first call is deferred as the OIS engine defers one over its budget (src/ois/api-client.ts); the next goes.
    const deferOnce: ShardContext['callEndpoint'] = async (call) =>
      ++calls === 1
        ? { success: false, errorMessage: deferralMessage('Test API', { reason: 'over budget', retryAfterMs: 1_000 }) }
        : callEndpoint(call);
    const settle = async () => waitForMined(chain.anvil.url);
    const first = await window(config(), [settle], { callEndpoint: deferOnce });
    await waitForMined(chain.anvil.url);
    expect(await requestEvents(chain.deployment, id), 'no fail() for a deferred call').to.deep.equal({
      fulfilled: [],
      failed: [],
    });
    expect(first.transactions.failed).to.equal(0);
    // The next window's first cycle reads the history again and finds the request still open.
    const second = await window(config(), [settle], { callEndpoint: deferOnce });
    await waitForMined(chain.anvil.url);
    expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
    expect(second.transactions.fulfilled).to.equal(1);
    expect(calls).to.equal(2);
  });

  it("holds the chain's maxConcurrency over the whole window: never more API calls at once", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await request(`window-limit-${i}`)).id);
    let active = 0;
    let most = 0;
    const counted: ShardContext['callEndpoint'] = async (call) => {
      most = Math.max(most, ++active);
      try {
        return await callEndpoint(call);
      } finally {
        active--;
      }
    };
    const settle = async () => waitForMined(chain.anvil.url);
    const summary = await window(config({ maxConcurrency: 2 }), [settle, settle, settle], { callEndpoint: counted });
    await waitForMined(chain.anvil.url);
    for (const id of ids) expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
    expect(summary.transactions.fulfilled).to.equal(5);
    expect(most).to.be.at.most(2);
  });
  // A reorg played with evm_snapshot/evm_revert: the request's block is replaced by empty ones, deeper than the
  // request's confirmations had reached. What holds the request back is the chain's minConfirmations, or its own
  // `_minConfirmations` above the chain's (0), or a standby's delay (docs/chain-cycle.md, "Standby"): either way the
  // poll after the reorg reads its block again.
  for (const held of ['chain minConfirmations', 'its own _minConfirmations', 'a standby delay'] as const) {
    it(`a request whose block vanished in a reorg is never served (held back by ${held})`, async () => {
      const sponsor = await createSponsor(chain.deployment, `window-reorg-${held.length}`);
      const extra =
        held === 'its own _minConfirmations'
          ? [{ name: '_minConfirmations', type: 'string' as const, value: '2' }]
          : [];
      let snapshot = '';
      let made = '';
      const callsBefore = api.calls.length;
      proxy.reset();
      const steps = [
        async () => {
          snapshot = await rpc<string>(chain.anvil.url, 'evm_snapshot', []);
          made = await requestPrice(chain.deployment, sponsor, 'ETH', extra);
        },
        async () => {
          expect(await rpc<boolean>(chain.anvil.url, 'evm_revert', [snapshot])).to.equal(true);
          for (let i = 0; i < 4; i++) await rpc(chain.anvil.url, 'evm_mine', []);
        },
        async () => {
          await rpc(chain.anvil.url, 'evm_mine', []);
        },
      ];
      const cfg = config({ minConfirmations: held === 'chain minConfirmations' ? 2 : 0 });
      const summary =
        held === 'a standby delay'
          ? await window(cfg, steps, {}, silentLogger, { standbyDelayBlocks: 2 })
          : await window(cfg, steps);
      expect(made).to.match(/^0x[0-9a-f]{64}$/);
      // Seen while it waited, then gone with its block: no API call, no transaction.
      expect(api.calls.length - callsBefore).to.equal(0);
      expect(sendsFrom(sponsor.sponsorWallet)).to.have.length(0);
      expect(summary.apiCalls).to.equal(0);
      expect((await requestEvents(chain.deployment, made)).fulfilled).to.have.length(0);
    });
  }

  describe('provider faults during a window', () => {
    let extra: RecordingProxy[] = [];
    afterEach(async () => {
      proxy.setFault(undefined);
      await Promise.all(extra.map((p) => p.close()));
      extra = [];
    });
    const another = async () => {
      const added = await startRecordingProxy(chain.anvil.url);
      extra.push(added);
      return added;
    };
    /** Log lines of the window, parsed. */
    const capture = () => {
      const lines: { level: string; msg: string; [key: string]: unknown }[] = [];
      const logger = createLogger({
        level: 'INFO',
        destination: {
          write: (line: string) =>
            void lines.push(
              ...line
                .trim()
                .split('\n')
                .map((l) => JSON.parse(l)),
            ),
        },
      });
      return { lines, logger };
    };

    it('a provider reporting a head 50 blocks ahead (first in the list) is left out, moves nothing, and once right again later polls still read new requests', async () => {
      // Heads far enough from genesis that a head 50 ahead is not a matter of a young chain.
      await mineBlocks(chain.anvil.url, 60);
      const liar = await another();
      liar.setFault((call) =>
        call.method === 'eth_blockNumber' ? { result: (head) => `0x${(Number(head) + 50).toString(16)}` } : undefined,
      );
      const ids: string[] = [];
      const summary = await window(
        config({ providers: { liar: liar.url, counted: proxy.url, direct: chain.anvil.url } }),
        [
          async () => {
            ids.push((await request('window-ahead-1')).id);
          },
          async () => {
            await waitForMined(chain.anvil.url);
            // The provider is right again.
            liar.setFault(undefined);
          },
          async () => {
            ids.push((await request('window-ahead-2')).id);
          },
          async () => waitForMined(chain.anvil.url),
        ],
      );
      await waitForMined(chain.anvil.url);
      for (const id of ids) {
        const events = await requestEvents(chain.deployment, id);
        expect(events.fulfilled, id).to.have.length(1);
        expect(events.failed, id).to.have.length(0);
      }
      expect(summary.transactions).to.include({ fulfilled: 2, failed: 0 });
    });

    /**
     * A provider that, while `lying()`, claims a head `ahead` blocks past the chain's and answers eth_getBlockByNumber
     * with another block (the chain's newest: its number is not the one asked); honest otherwise.
     */
    const liarAhead = async (ahead: number, lying: (call: { seen: number }) => boolean) => {
      const liar = await another();
      const otherBlock = await rpc<{ number: string }>(chain.anvil.url, 'eth_getBlockByNumber', ['latest', false]);
      liar.setFault((call) => {
        if (call.method === 'eth_blockNumber' && lying(call))
          return { result: (head) => `0x${(Number(head) + ahead).toString(16)}` };
        if (call.method === 'eth_getBlockByNumber' && Number((call.params as string[])[0]) > Number(otherBlock.number))
          return { result: () => otherBlock };
        return undefined;
      });
      return liar;
    };

    /** A request made before each of the first three polls: each served, once, none failed. */
    async function requestsDuringTheWindow(providers: Record<string, string>, name: string) {
      const ids: string[] = [];
      const summary = await window(config({ providers }), [
        async () => void ids.push((await request(`${name}-1`)).id),
        async () => {
          await waitForMined(chain.anvil.url);
          ids.push((await request(`${name}-2`)).id);
        },
        async () => {
          await waitForMined(chain.anvil.url);
          ids.push((await request(`${name}-3`)).id);
        },
        async () => waitForMined(chain.anvil.url),
        async () => waitForMined(chain.anvil.url),
      ]);
      await waitForMined(chain.anvil.url);
      for (const id of ids) {
        const events = await requestEvents(chain.deployment, id);
        expect(events.fulfilled, id).to.have.length(1);
        expect(events.failed, id).to.have.length(0);
      }
      expect(summary.transactions).to.include({ fulfilled: 3, failed: 0 });
      return summary;
    }

    it('a provider claiming a head 50 blocks ahead throughout, and answering the block at it with another block, is left out and moves nothing: every request made during the window is served', async () => {
      await mineBlocks(chain.anvil.url, 60);
      const liar = await liarAhead(50, () => true);
      const summary = await requestsDuringTheWindow({ liar: liar.url, counted: proxy.url }, 'window-liar-held');
      expect(summary.providers.find((p) => p.provider === 'liar')).to.include({ ok: false, fault: 'ahead' });
      expect(summary.providers.find((p) => p.provider === 'counted')).to.include({ ok: true });
      expect(liar.counts.get('eth_getLogs') ?? 0).to.equal(0);
    });

    it('a provider claiming a head 50 blocks ahead for one poll, answering the block at it with another block, moves nothing: every request made during the window is served', async () => {
      await mineBlocks(chain.anvil.url, 60);
      // Its second eth_blockNumber: the window's first poll.
      const liar = await liarAhead(50, (call) => call.seen === 1);
      await requestsDuringTheWindow({ liar: liar.url, counted: proxy.url }, 'window-liar-once');
      expect(liar.counts.get('eth_blockNumber')).to.be.above(2);
    });

    it('a provider claiming a head a few blocks ahead (within the lag threshold) throughout moves the read position no further than the other provider: every request made during the window is served', async () => {
      const liar = await liarAhead(5, () => true);
      await requestsDuringTheWindow({ liar: liar.url, counted: proxy.url }, 'window-liar-near');
    });

    it('a provider that sees each new block one poll later than the other is never reported stalled, nor asked its chain id again', async () => {
      const late = await another();
      // Answers each eth_blockNumber with what the chain said at its previous one: one poll late.
      let previous: unknown;
      late.setFault((call) =>
        call.method === 'eth_blockNumber'
          ? {
              result: (head) => {
                const answer = previous ?? head;
                previous = head;
                return answer;
              },
            }
          : undefined,
      );
      const { lines, logger } = capture();
      let made = '';
      const mine = async () => {
        await rpc(chain.anvil.url, 'evm_mine', []);
      };
      const summary = await window(
        config({ providers: { counted: proxy.url, late: late.url } }),
        [
          mine,
          async () => {},
          async () => {
            made = (await request('window-late')).id;
          },
          async () => {},
          mine,
          async () => {},
          mine,
          async () => waitForMined(chain.anvil.url),
        ],
        {},
        logger,
      );
      const faults = lines.filter((l) => l.provider === 'late' && l.fault !== undefined).map((l) => l.fault);
      expect(faults).to.deep.equal([]);
      expect(late.counts.get('eth_chainId')).to.equal(1);
      expect(summary.providers.find((p) => p.provider === 'late')).to.include({ ok: true });
      await waitForMined(chain.anvil.url);
      expect((await requestEvents(chain.deployment, made)).fulfilled).to.have.length(1);
    });

    it('with minConfirmations 0, a request whose block an eth_getLogs answered without its log is read again at the next poll and served once', async () => {
      let made: { id: string; sponsor: Awaited<ReturnType<typeof createSponsor>> } | undefined;
      let missed = false;
      const summary = await window(config({ minConfirmations: 0 }), [
        async () => {
          made = await request('window-index-behind');
          const requestBlock = Number(await rpc<string>(chain.anvil.url, 'eth_blockNumber', []));
          // The provider's log index is a block behind: the first eth_getLogs that covers the request's block has no logs.
          proxy.setFault((call) => {
            const filter = call.params[0] as { toBlock?: string } | undefined;
            if (call.method !== 'eth_getLogs' || missed || Number(filter?.toBlock) < requestBlock) return undefined;
            missed = true;
            return { result: () => [] };
          });
        },
        async () => {
          await rpc(chain.anvil.url, 'evm_mine', []);
        },
        async () => waitForMined(chain.anvil.url),
      ]);
      await waitForMined(chain.anvil.url);
      expect(missed).to.equal(true);
      expect((await requestEvents(chain.deployment, made!.id)).fulfilled).to.have.length(1);
      expect(sendsFrom(made!.sponsor.sponsorWallet)).to.have.length(1);
      expect(summary.transactions.fulfilled).to.equal(1);
    });

    it('one provider that never answers beside a good one: polls keep their cadence and a request is served within a few polls', async () => {
      const hanging = await another();
      hanging.setFault(() => ({ delayMs: 120_000 }));
      const cfg = config({ providers: { hanging: hanging.url, counted: proxy.url } });
      const windowSeconds = 12;
      // The window runs on the real clock: the test counts the ticks of the cadence it sleeps to, not the time.
      let ticks = 0;
      let madeAtTick: number | undefined;
      let made: string | undefined;
      const servedAtTicks: number[] = [];
      const executor = new InProcessExecutor({ config: cfg, wallets, logger: silentLogger });
      const summary = await runWindow(
        cfg,
        {
          executor: {
            run: (shards, options) => {
              servedAtTicks.push(ticks);
              return executor.run(shards, options);
            },
          },
          logger: silentLogger,
          wallets,
          providerMemory: new ProviderMemory(),
        },
        {
          windowMs: windowSeconds * POLL_MS,
          pollIntervalMs: POLL_MS,
          sleep: async (ms) => {
            await new Promise((resolve) => setTimeout(resolve, ms));
            ticks++;
            if (ticks === 3) {
              made = (await request('window-hanging')).id;
              madeAtTick = ticks;
            }
          },
        },
      );
      await waitForMined(chain.anvil.url);
      // Without the hanging provider the window polls once a second after its first cycle: windowSeconds - 1 polls
      // (a loaded machine may skip a tick or two; waiting 5 s for the hanging one gave 0 to 2).
      expect(summary.window.polls).to.be.at.least(windowSeconds - 4);
      // Not asked again while a read is in flight, and backed off after it timed out: not once per poll.
      expect(hanging.counts.get('eth_blockNumber') ?? 0).to.be.at.most(Math.ceil(summary.window.polls / 2));
      expect((await requestEvents(chain.deployment, made!)).fulfilled).to.have.length(1);
      expect(servedAtTicks.find((tick) => tick >= madeAtTick!)! - madeAtTick!).to.be.at.most(2);
    });
  });

  // Last in the file: it moves the chain's clock ahead of the wall clock.
  it("measures a fulfilled request's latency from the blocks' timestamps, into the engine's histogram and, through the cycle report, the operator's", async () => {
    const { id } = await request('window-latency');
    // The fulfilment's block comes 7 s (of chain time) after the request's.
    await rpc(chain.anvil.url, 'evm_increaseTime', [7]);
    const summary = await window(config(), [async () => waitForMined(chain.anvil.url), async () => {}]);
    const logs = await rpc<{ topics: string[]; blockNumber: string }[]>(chain.anvil.url, 'eth_getLogs', [
      { address: chain.deployment.AirnodeRrpV0, fromBlock: '0x0', toBlock: 'latest', topics: [null, null, id] },
    ]);
    const timestamps = await Promise.all(
      logs.map(async (log) =>
        Number(
          (await rpc<{ timestamp: string }>(chain.anvil.url, 'eth_getBlockByNumber', [log.blockNumber, false]))
            .timestamp,
        ),
      ),
    );
    expect(logs).to.have.length(2);
    const [madeAt, fulfilledAt] = timestamps as [number, number];
    expect(fulfilledAt - madeAt).to.be.at.least(7);
    expect(summary.latency.inclusion).to.deep.equal([fulfilledAt - madeAt]);
    // The submission ends when the provider's answer said it took the transaction, as the shard noted it.
    const sent = summary.results.flatMap((r) => (r.ok ? r.output.outcomes : [])).find((o) => o.id === id);
    expect(sent?.acceptedAtMs).to.be.a('number');
    expect(summary.latency.submission).to.deep.equal([
      Math.round(Math.max(0, sent!.acceptedAtMs! / 1000 - madeAt) * 1000) / 1000,
    ]);

    const engine = createMetricsRegistry();
    cycleMetrics(engine).observe(summary, 1);
    const engineHistogram = (await engine.getSingleMetric('node_request_latency_seconds')?.get())?.values ?? [];
    const of = (values: typeof engineHistogram, suffix: string, stage: string) =>
      values.find((v) => (v as { metricName?: string }).metricName?.endsWith(suffix) && v.labels['stage'] === stage)
        ?.value;
    expect(of(engineHistogram, '_count', 'inclusion')).to.equal(1);
    expect(of(engineHistogram, '_sum', 'inclusion')).to.equal(fulfilledAt - madeAt);
    expect(of(engineHistogram, '_count', 'submission')).to.equal(1);

    const operator = new Registry();
    const metrics = new OracleNodeMetrics(operator);
    const key = { namespace: 'oracles', name: 'window' };
    metrics.observeCycleReport(
      key,
      parseCycleReport({ 'cycle.json': JSON.stringify(cycleReport(summary, { jobName: 'window-1' })) }),
    );
    const operatorHistogram =
      (await operator.getSingleMetric('oracle_node_request_latency_seconds')?.get())?.values ?? [];
    expect(of(operatorHistogram, '_count', 'inclusion')).to.equal(1);
    expect(of(operatorHistogram, '_sum', 'inclusion')).to.equal(fulfilledAt - madeAt);
    expect((await operator.getSingleMetric('oracle_node_window_polls_total')?.get())?.values[0]?.value).to.equal(2);
  });
});
