// The request-response cycle end to end on anvil through the real AirnodeRrpV0: runCycle with the
// in-process executor, an API stand-in on 127.0.0.1, and outcomes counted from on-chain events.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { Contract } from 'ethers';
import { PendingSightings, STUCK_AFTER_BLOCKS } from '../../../src/chain/pending.js';
import { MemoryResponseCache } from '../../../src/node/cache.js';
import { type CycleSummary, runCycle } from '../../../src/node/cycle.js';
import { InProcessExecutor } from '../../../src/node/executor.js';
import { silentLogger } from '../../../src/node/logger.js';
import { encodeParameters } from '../../../src/ois/abi.js';
import { deriveTemplateIdV0 } from '../../../src/protocol/ids.js';
import {
  deployer,
  deployRequester,
  freePort,
  mineBlocks,
  minedReceipt,
  protocolArtifacts,
  rpc,
  setBalance,
  startTestChain,
  waitForMined,
} from '../../support/chain.js';
import {
  type ApiServer,
  buildConfig,
  type ConfigOptions,
  createOnChainTemplate,
  createSponsor,
  ENDPOINTS,
  encodeCoin,
  int256,
  makeFullRequest,
  makeTemplateRequest,
  NODE_ADDRESS,
  requestEvents,
  requesterCall,
  startApiServer,
  wallets,
} from '../../support/harness.js';
import { checkNonceOrder, startRecordingProxy } from '../../support/rpc-proxy.js';

describe('request-response cycle on anvil (real AirnodeRrpV0)', () => {
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  let api: ApiServer;
  let cache: MemoryResponseCache;
  let sponsorSeq = 0;

  const base = (): ConfigOptions => ({
    providers: { anvil: chain.anvil.url },
    deployment: chain.deployment,
    apiUrl: api.url,
  });

  async function cycle(
    overrides: Partial<ConfigOptions> = {},
    cacheOverride?: MemoryResponseCache,
  ): Promise<CycleSummary> {
    const config = buildConfig({ ...base(), ...overrides });
    const executor = new InProcessExecutor({ config, wallets, logger: silentLogger, cache: cacheOverride ?? cache });
    const summary = await runCycle(config, { executor, logger: silentLogger, wallets, discoveryTimeoutMs: 10_000 });
    await waitForMined(chain.anvil.url);
    return summary;
  }

  const newSponsor = (requesters?: string[]) => createSponsor(chain.deployment, `cycle-${sponsorSeq++}`, requesters);

  async function fullRequest(
    sponsor: { address: string; sponsorWallet: string },
    parameters = encodeCoin('ETH'),
    endpointId: string = ENDPOINTS.price,
    requester?: string,
  ) {
    return makeFullRequest(chain.deployment, {
      endpointId,
      sponsor: sponsor.address,
      sponsorWallet: sponsor.sponsorWallet,
      parameters,
      ...(requester ? { requester } : {}),
    });
  }

  before(async () => {
    chain = await startTestChain();
    api = await startApiServer();
    // The node wallet pays for whitelisting requesters on the authorizer contract.
    await setBalance(chain.anvil.url, NODE_ADDRESS, 10n ** 20n);
  });
  beforeEach(() => {
    cache = new MemoryResponseCache();
  });
  after(async () => {
    await api?.close();
    await chain?.anvil.stop();
  });

  describe('requests', () => {
    it('fulfils a full request with the API value, signed by the node', async () => {
      const sponsor = await newSponsor();
      const requestId = await fullRequest(sponsor, encodeCoin('BTC'));
      await cycle();
      const events = await requestEvents(chain.deployment, requestId);
      expect(events).to.deep.equal({ fulfilled: [{ data: int256(65000500000n) }], failed: [] });
      const stored = await requesterCall<string>(chain.deployment, 'fulfilledData', [requestId]);
      expect(stored).to.equal(int256(65000500000n));
    });

    it('fulfils template requests from a local template and from an on-chain template (request params override)', async () => {
      const sponsor = await newSponsor();
      const localParams = encodeCoin('BTC');
      const localTemplateId = deriveTemplateIdV0(NODE_ADDRESS, ENDPOINTS.price, localParams);
      const onChainTemplateId = await createOnChainTemplate(chain.deployment, ENDPOINTS.price, encodeCoin('BTC'));
      // A local template that does not exist on chain: makeTemplateRequest needs the template on chain,
      // so the local one is given the same content; the node must not fetch it.
      expect(localTemplateId).to.equal(onChainTemplateId);
      const otherOnChain = await createOnChainTemplate(
        chain.deployment,
        ENDPOINTS.price,
        encodeParameters([
          { type: 'string', name: 'coin', value: 'BTC' },
          { type: 'string', name: '_times', value: '10' },
        ]),
      );
      const fromLocal = await makeTemplateRequest(chain.deployment, {
        templateId: localTemplateId,
        sponsor: sponsor.address,
        sponsorWallet: sponsor.sponsorWallet,
        parameters: '0x',
      });
      const overridden = await makeTemplateRequest(chain.deployment, {
        templateId: otherOnChain,
        sponsor: sponsor.address,
        sponsorWallet: sponsor.sponsorWallet,
        parameters: encodeCoin('ETH'),
      });
      await cycle({
        templates: [{ templateId: localTemplateId, endpointId: ENDPOINTS.price, encodedParameters: localParams }],
      });
      expect((await requestEvents(chain.deployment, fromLocal)).fulfilled).to.deep.equal([
        { data: int256(65000500000n) },
      ]);
      // coin ETH from the request overrides BTC of the template; _times 10 from the template stays.
      expect((await requestEvents(chain.deployment, overridden)).fulfilled).to.deep.equal([{ data: int256(30002n) }]);
    });

    it('answers an API error with fail and the message', async () => {
      const sponsor = await newSponsor();
      const requestId = await fullRequest(sponsor, encodeCoin('ETH'), ENDPOINTS.broken);
      const summary = await cycle();
      expect(summary.transactions.failed).to.be.at.least(1);
      expect(await requestEvents(chain.deployment, requestId)).to.deep.equal({
        fulfilled: [],
        failed: [{ message: 'API call failed with status code 500' }],
      });
    });

    it('fails a request whose callback reverts, with the revert reason (fixed gas limit and estimation)', async () => {
      const requester = await deployRequester(chain.anvil.url, chain.deployment.AirnodeRrpV0);
      await requesterCall(chain.deployment, 'setShouldRevert', [true], requester);
      const sponsor = await newSponsor([requester]);
      const first = await fullRequest(sponsor, encodeCoin('ETH'), ENDPOINTS.price, requester);
      await cycle({ fulfillmentGasLimit: 500_000 });
      const second = await fullRequest(sponsor, encodeCoin('ETH'), ENDPOINTS.price, requester);
      await cycle();
      for (const requestId of [first, second]) {
        expect(await requestEvents(chain.deployment, requestId)).to.deep.equal({
          fulfilled: [],
          failed: [{ message: 'Requester reverted on purpose' }],
        });
      }
    });

    it("checks a sponsor wallet's fulfilments in one eth_call, and still fails the one whose callback reverts", async () => {
      const reverting = await deployRequester(chain.anvil.url, chain.deployment.AirnodeRrpV0);
      await requesterCall(chain.deployment, 'setShouldRevert', [true], reverting);
      const sponsor = await newSponsor([chain.deployment.Requester, reverting]);
      const good = [await fullRequest(sponsor), await fullRequest(sponsor, encodeCoin('BTC'))];
      const bad = await fullRequest(sponsor, encodeCoin('ETH'), ENDPOINTS.price, reverting);
      const proxy = await startRecordingProxy(chain.anvil.url);
      try {
        await cycle({ providers: { anvil: proxy.url }, fulfillmentGasLimit: 500_000 });
        // One simulation of the wallet's three fulfilments, one read of the balances.
        expect(proxy.counts.get('eth_call')).to.equal(2);
      } finally {
        await proxy.close();
      }
      for (const id of good) expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
      expect(await requestEvents(chain.deployment, bad)).to.deep.equal({
        fulfilled: [],
        failed: [{ message: 'Requester reverted on purpose' }],
      });
    });

    it('checks each fulfilment with its own static call when the provider refuses state overrides', async () => {
      const reverting = await deployRequester(chain.anvil.url, chain.deployment.AirnodeRrpV0);
      await requesterCall(chain.deployment, 'setShouldRevert', [true], reverting);
      const sponsor = await newSponsor([chain.deployment.Requester, reverting]);
      const good = [await fullRequest(sponsor), await fullRequest(sponsor, encodeCoin('BTC'))];
      const bad = await fullRequest(sponsor, encodeCoin('ETH'), ENDPOINTS.price, reverting);
      const proxy = await startRecordingProxy(chain.anvil.url);
      proxy.setFault((call) =>
        call.method === 'eth_call' && call.params.length > 2
          ? { error: { code: -32602, message: 'invalid argument 2: state overrides not supported' } }
          : undefined,
      );
      try {
        await cycle({ providers: { anvil: proxy.url }, fulfillmentGasLimit: 500_000 });
        // The refused simulation, then one static call per request, and the balances.
        expect(proxy.counts.get('eth_call')).to.equal(5);
      } finally {
        await proxy.close();
      }
      for (const id of good) expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
      expect(await requestEvents(chain.deployment, bad)).to.deep.equal({
        fulfilled: [],
        failed: [{ message: 'Requester reverted on purpose' }],
      });
    });

    it('fails a request whose callback needs more gas than fulfillmentGasLimit', async () => {
      const requester = await deployRequester(chain.anvil.url, chain.deployment.AirnodeRrpV0);
      await requesterCall(chain.deployment, 'setBurnIterations', [2_000], requester);
      const sponsor = await newSponsor([requester]);
      const requestId = await fullRequest(sponsor, encodeCoin('ETH'), ENDPOINTS.price, requester);
      await cycle({ fulfillmentGasLimit: 80_000 });
      const events = await requestEvents(chain.deployment, requestId);
      expect(events.fulfilled).to.deep.equal([]);
      expect(events.failed).to.have.length(1);
      // Without a fixed limit the estimate covers the callback (plus the EIP-150 reserve) and it succeeds.
      const next = await fullRequest(sponsor, encodeCoin('ETH'), ENDPOINTS.price, requester);
      await cycle();
      expect((await requestEvents(chain.deployment, next)).fulfilled).to.have.length(1);
    });

    it('cuts long error messages to 100 characters on chain (97 + "...")', async () => {
      const sponsor = await newSponsor();
      const requestId = await fullRequest(
        sponsor,
        encodeParameters([
          { type: 'string', name: 'coin', value: 'ETH' },
          { type: 'string', name: '_type', value: 'int256' },
          { type: 'string', name: '_path', value: 'x'.repeat(150) },
        ]),
        ENDPOINTS.dynamic,
      );
      await cycle();
      const { failed } = await requestEvents(chain.deployment, requestId);
      expect(failed).to.have.length(1);
      const expected = `Unable to find value at path: '${'x'.repeat(150)}'`;
      expect(failed[0]!.message).to.equal(`${expected.slice(0, 97)}...`);
    });
  });

  describe('authorization', () => {
    it('serves whitelisted requesters, drops others, and lets `authorizations` take precedence', async () => {
      const authorizer = new Contract(
        chain.deployment.RequesterAuthorizerWithAirnode,
        protocolArtifacts.RequesterAuthorizerWithAirnode().abi,
        wallets.node.connect(deployer(chain.anvil.url).provider),
      );
      const allowed = await deployRequester(chain.anvil.url, chain.deployment.AirnodeRrpV0);
      const denied = await deployRequester(chain.anvil.url, chain.deployment.AirnodeRrpV0);
      const offChain = await deployRequester(chain.anvil.url, chain.deployment.AirnodeRrpV0);
      await minedReceipt(
        await authorizer.getFunction('setIndefiniteWhitelistStatus')(NODE_ADDRESS, ENDPOINTS.price, allowed, true),
      );
      const sponsor = await newSponsor([allowed, denied, offChain]);
      const a = await fullRequest(sponsor, encodeCoin('ETH'), ENDPOINTS.price, allowed);
      const d = await fullRequest(sponsor, encodeCoin('ETH'), ENDPOINTS.price, denied);
      const o = await fullRequest(sponsor, encodeCoin('ETH'), ENDPOINTS.price, offChain);
      await cycle({
        authorizers: [chain.deployment.RequesterAuthorizerWithAirnode],
        authorizations: { [ENDPOINTS.price]: [offChain] },
      });
      expect((await requestEvents(chain.deployment, a)).fulfilled).to.have.length(1);
      expect((await requestEvents(chain.deployment, o)).fulfilled).to.have.length(1);
      expect(await requestEvents(chain.deployment, d)).to.deep.equal({ fulfilled: [], failed: [] });
      // With all authorizer lists empty the node is open: the denied request is served next cycle.
      await cycle();
      expect((await requestEvents(chain.deployment, d)).fulfilled).to.have.length(1);
    });
  });

  describe('confirmations', () => {
    it('waits for minConfirmations, and `_minConfirmations` overrides it per request', async () => {
      const sponsor = await newSponsor();
      const slow = await fullRequest(sponsor);
      const other = await newSponsor();
      const fast = await fullRequest(
        other,
        encodeCoin('ETH', [{ name: '_minConfirmations', type: 'string', value: '0' }]),
      );
      await cycle({ minConfirmations: 3 });
      expect(await requestEvents(chain.deployment, slow)).to.deep.equal({ fulfilled: [], failed: [] });
      expect((await requestEvents(chain.deployment, fast)).fulfilled).to.have.length(1);
      await mineBlocks(chain.anvil.url, 3);
      await cycle({ minConfirmations: 3 });
      expect((await requestEvents(chain.deployment, slow)).fulfilled).to.have.length(1);
    });
  });

  describe('providers', () => {
    let garbage: Server;
    let garbageUrl: string;
    before(async () => {
      // A lying provider: well-formed JSON-RPC with nonsense results.
      garbage = createServer((req, res) => {
        let body = '';
        req.on('data', (c) => {
          body += c;
        });
        req.on('end', () => {
          const id = (() => {
            try {
              return (JSON.parse(body) as { id: number }).id;
            } catch {
              return 1;
            }
          })();
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ jsonrpc: '2.0', id, result: [{ address: 'nonsense', topics: 7 }] }));
        });
      });
      await new Promise<void>((resolve) => garbage.listen(0, '127.0.0.1', resolve));
      garbageUrl = `http://127.0.0.1:${(garbage.address() as AddressInfo).port}`;
    });
    after(() => {
      garbage.closeAllConnections();
      garbage.close();
    });

    it('serves with a dead and a lying provider next to a good one, and submits once with two good ones', async () => {
      const deadUrl = `http://127.0.0.1:${await freePort()}`;
      const sponsor = await newSponsor();
      const requestId = await fullRequest(sponsor);
      const second = await fullRequest(sponsor);
      const summary = await cycle({
        providers: { dead: deadUrl, liar: garbageUrl, good: chain.anvil.url, good2: chain.anvil.url },
      });
      const byName = Object.fromEntries(summary.providers.map((p) => [p.provider, p.ok]));
      expect(byName).to.deep.equal({ dead: false, liar: false, good: true, good2: true });
      for (const id of [requestId, second]) {
        expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
      }
      // One transaction per request: the sponsor wallet's nonce is exactly 2.
      const nonce = await rpc<string>(chain.anvil.url, 'eth_getTransactionCount', [sponsor.sponsorWallet, 'latest']);
      expect(Number(nonce)).to.equal(2);
    });

    it('splits eth_getLogs ranges for a provider that limits them', async () => {
      // A provider in front of anvil that refuses eth_getLogs over more than 8 blocks, as hosted providers do.
      const ranges: number[] = [];
      const limited = createServer((req, res) => {
        let body = '';
        req.on('data', (c) => {
          body += c;
        });
        req.on('end', async () => {
          const request = JSON.parse(body) as {
            id: number;
            method: string;
            params: { fromBlock: string; toBlock: string }[];
          };
          res.setHeader('content-type', 'application/json');
          if (request.method === 'eth_getLogs') {
            const span = Number(request.params[0]!.toBlock) - Number(request.params[0]!.fromBlock) + 1;
            ranges.push(span);
            if (span > 8) {
              res.end(
                JSON.stringify({
                  jsonrpc: '2.0',
                  id: request.id,
                  error: { code: -32005, message: 'query exceeds max block range 8' },
                }),
              );
              return;
            }
          }
          const upstream = await fetch(chain.anvil.url, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body,
          });
          res.end(await upstream.text());
        });
      });
      await new Promise<void>((resolve) => limited.listen(0, '127.0.0.1', resolve));
      try {
        await mineBlocks(chain.anvil.url, 120);
        const sponsor = await newSponsor();
        const requestId = await fullRequest(sponsor);
        const summary = await cycle({
          providers: { limited: `http://127.0.0.1:${(limited.address() as AddressInfo).port}` },
          blockHistoryLimit: 100,
        });
        expect(summary.providers[0]!.ok).to.equal(true);
        expect(ranges[0]).to.equal(101);
        expect(Math.max(...ranges.slice(1))).to.be.at.most(101);
        expect(ranges.filter((r) => r <= 8).length).to.be.at.least(13);
        expect((await requestEvents(chain.deployment, requestId)).fulfilled).to.have.length(1);
      } finally {
        limited.closeAllConnections();
        limited.close();
      }
    });

    it('logs an unreachable chain and carries on (no provider at all)', async () => {
      const summary = await cycle({ providers: { dead: `http://127.0.0.1:${await freePort()}` } });
      expect(summary.providers).to.have.length(1);
      expect(summary.providers[0]!.ok).to.equal(false);
      expect(summary.shards.total).to.equal(0);
    });
  });

  describe('sponsors and nonces', () => {
    it('serves several sponsors, each in request order with consecutive nonces', async () => {
      const sponsors = await Promise.all([newSponsor(), newSponsor(), newSponsor()]);
      const requests: { sponsor: (typeof sponsors)[number]; id: string }[] = [];
      for (let round = 0; round < 3; round++) {
        for (const sponsor of sponsors) requests.push({ sponsor, id: await fullRequest(sponsor) });
      }
      const summary = await cycle();
      for (const sponsor of sponsors) {
        const mine = requests.filter((r) => r.sponsor === sponsor).map((r) => r.id);
        const outcomes = summary.results
          .flatMap((r) => (r.ok ? r.output.outcomes : []))
          .filter((o) => mine.includes(o.id));
        expect(outcomes.map((o) => o.id)).to.deep.equal(mine);
        expect(outcomes.map((o) => o.nonce)).to.deep.equal([0, 1, 2]);
        const nonce = await rpc<string>(chain.anvil.url, 'eth_getTransactionCount', [sponsor.sponsorWallet, 'latest']);
        expect(Number(nonce)).to.equal(3);
      }
      for (const { id } of requests) expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
    });

    it("sends each sponsor wallet's transactions in nonce order, and the chain mines them without gaps", async () => {
      const sponsors = await Promise.all(Array.from({ length: 4 }, () => newSponsor()));
      for (let round = 0; round < 6; round++) {
        for (const sponsor of sponsors) await fullRequest(sponsor, encodeCoin(round % 2 ? 'BTC' : 'ETH'));
      }
      const proxy = await startRecordingProxy(chain.anvil.url);
      try {
        await cycle({ providers: { anvil: proxy.url } });
        const report = await checkNonceOrder(chain.anvil.url, proxy.sent);
        expect(report).to.deep.include({ wallets: 4, transactions: 24, outOfOrder: [], gaps: [], queued: 0 });
      } finally {
        await proxy.close();
      }
    });

    it('fills the nonce of a transaction the chain rejects inside a batch, so the later ones are mined', async () => {
      const sponsor = await newSponsor();
      const first = await fullRequest(sponsor);
      // 10^24 wei per gas: more than the sponsor wallet holds, so the chain refuses this one transaction.
      const unaffordable = await fullRequest(
        sponsor,
        encodeCoin('ETH', [{ name: '_gasPrice', type: 'string', value: '1000000000000000000000000' }]),
      );
      const third = await fullRequest(sponsor);
      const fourth = await fullRequest(sponsor);
      const proxy = await startRecordingProxy(chain.anvil.url);
      try {
        const summary = await cycle({ providers: { anvil: proxy.url } });
        const outcome = (id: string) =>
          summary.results.flatMap((r) => (r.ok ? r.output.outcomes : [])).find((o) => o.id === id)!;
        expect(outcome(first)).to.include({ outcome: 'fulfilled', nonce: 0 });
        expect(outcome(unaffordable)).to.include({ outcome: 'error', nonce: 1 });
        expect(outcome(unaffordable).reason).to.match(/insufficient funds/i);
        // Sent in the same batch, after the refused one: mined once nonce 1 was filled.
        expect(outcome(third)).to.include({ outcome: 'fulfilled', nonce: 2 });
        expect(outcome(fourth)).to.include({ outcome: 'fulfilled', nonce: 3 });
        const report = await checkNonceOrder(chain.anvil.url, proxy.sent);
        expect(report).to.deep.include({
          wallets: 1,
          outOfOrder: [],
          gaps: [],
          queued: 0,
          rejected: 1,
          refilled: [{ from: sponsor.sponsorWallet, nonce: 1 }],
        });
        for (const id of [first, third, fourth]) {
          expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
        }
        const filler = await rpc<{ to: string; value: string; input: string } | null>(
          chain.anvil.url,
          'eth_getTransactionByHash',
          [proxy.sent.find((tx) => tx.nonce === 1 && !tx.rejected)!.hash],
        );
        expect(filler).to.deep.include({ to: sponsor.sponsorWallet.toLowerCase(), value: '0x0', input: '0x' });
        // The refused request is still open: the next cycle tries it again (and is refused again, alone).
        expect((await requestEvents(chain.deployment, unaffordable)).fulfilled).to.have.length(0);
      } finally {
        await proxy.close();
      }
    });

    it('uses the `_gasPrice` of a request and EIP-1559 transactions from the oracle', async () => {
      const sponsor = await newSponsor();
      const priced = await fullRequest(
        sponsor,
        encodeCoin('ETH', [{ name: '_gasPrice', type: 'string', value: '7000000000' }]),
      );
      const plain = await fullRequest(sponsor);
      const summary = await cycle({
        gasPriceOracle: [
          {
            gasPriceStrategy: 'providerRecommendedEip1559GasPrice',
            baseFeeMultiplier: 2,
            priorityFee: { value: 1, unit: 'gwei' },
          },
          { gasPriceStrategy: 'constantGasPrice', gasPrice: { value: 10, unit: 'gwei' } },
        ],
      });
      const outcome = (id: string) =>
        summary.results.flatMap((r) => (r.ok ? r.output.outcomes : [])).find((o) => o.id === id)!;
      const pricedTx = await rpc<{ type: string; gasPrice: string }>(chain.anvil.url, 'eth_getTransactionByHash', [
        outcome(priced).txHash,
      ]);
      const plainTx = await rpc<{ type: string; maxPriorityFeePerGas: string }>(
        chain.anvil.url,
        'eth_getTransactionByHash',
        [outcome(plain).txHash],
      );
      expect(pricedTx.type).to.equal('0x0');
      expect(BigInt(pricedTx.gasPrice)).to.equal(7_000_000_000n);
      expect(plainTx.type).to.equal('0x2');
      expect(BigInt(plainTx.maxPriorityFeePerGas)).to.equal(1_000_000_000n);
    });
  });

  describe('stuck transactions', () => {
    it('replaces a transaction that stays pending for STUCK_AFTER_BLOCKS blocks (same nonce, higher price), counted as a replacement', async () => {
      const sponsor = await newSponsor();
      const requestId = await fullRequest(sponsor);
      const config = buildConfig({
        ...base(),
        gasPriceOracle: [{ gasPriceStrategy: 'constantGasPrice', gasPrice: { value: 10, unit: 'gwei' } }],
      });
      const run = () =>
        runCycle(config, {
          executor: new InProcessExecutor({ config, wallets, logger: silentLogger, cache }),
          logger: silentLogger,
          wallets,
        });
      const outcome = (summary: CycleSummary) =>
        summary.results.flatMap((r) => (r.ok ? r.output.outcomes : [])).find((o) => o.id === requestId)!;
      const funded = BigInt(await rpc<string>(chain.anvil.url, 'eth_getBalance', [sponsor.sponsorWallet, 'latest']));
      await rpc(chain.anvil.url, 'evm_setAutomine', [false]);
      try {
        const first = await run();
        // Nothing is mined yet, yet the reported balance already pays for the pending fulfilment ('pending').
        const reported = first.sponsorWallets.find((w) => w.sponsorWallet === sponsor.sponsorWallet)?.balanceWei;
        expect(BigInt(reported ?? funded) < funded, 'balance after the pending transaction').to.equal(true);
        // Blocks go by without it: a block gas limit below its gas keeps it in the pool.
        await rpc(chain.anvil.url, 'evm_setBlockGasLimit', ['0xc350']);
        await mineBlocks(chain.anvil.url, STUCK_AFTER_BLOCKS);
        expect(await requestEvents(chain.deployment, requestId)).to.deep.equal({ fulfilled: [], failed: [] });
        expect(await rpc(chain.anvil.url, 'txpool_status')).to.include({ pending: '0x1' });
        // Nothing is mined before the next evm_mine: the limit can go back for the static calls of the cycle.
        await rpc(chain.anvil.url, 'evm_setBlockGasLimit', ['0x5f5e100']);
        const second = await run();
        expect(outcome(first).nonce).to.equal(0);
        expect(outcome(second)).to.include({ outcome: 'fulfilled', nonce: 0, replacement: true });
        // One fulfilment, counted once: the replacement is counted as such.
        expect(first.transactions).to.include({ fulfilled: 1, replaced: 0 });
        expect(second.transactions).to.include({ fulfilled: 0, replaced: 1 });
        expect(outcome(second).txHash).to.not.equal(outcome(first).txHash);
        const replacement = await rpc<{ gasPrice: string }>(chain.anvil.url, 'eth_getTransactionByHash', [
          outcome(second).txHash,
        ]);
        expect(BigInt(replacement.gasPrice)).to.equal(12n * 10n ** 9n);
        await rpc(chain.anvil.url, 'evm_mine', []);
      } finally {
        await rpc(chain.anvil.url, 'evm_setBlockGasLimit', ['0x5f5e100']);
        await rpc(chain.anvil.url, 'evm_setAutomine', [true]);
      }
      await waitForMined(chain.anvil.url);
      expect((await requestEvents(chain.deployment, requestId)).fulfilled).to.have.length(1);
      const nonce = await rpc<string>(chain.anvil.url, 'eth_getTransactionCount', [sponsor.sponsorWallet, 'latest']);
      expect(Number(nonce)).to.equal(1);
    });

    it("replaces a stuck fulfilment priced by its request's `_gasPrice` at the replacement price, so its wallet is not held behind it", async () => {
      const sponsor = await newSponsor();
      // A requester's price far below the node's: the kind of transaction that stays in the pool.
      const cheap = await fullRequest(
        sponsor,
        encodeCoin('ETH', [{ name: '_gasPrice', type: 'string', value: '1000000000' }]),
      );
      const tenGwei = [{ gasPriceStrategy: 'constantGasPrice', gasPrice: { value: 10, unit: 'gwei' } }];
      const config = buildConfig({ ...base(), gasPriceOracle: tenGwei });
      const run = () =>
        runCycle(config, {
          executor: new InProcessExecutor({ config, wallets, logger: silentLogger, cache }),
          logger: silentLogger,
          wallets,
        });
      const outcome = (summary: CycleSummary) =>
        summary.results.flatMap((r) => (r.ok ? r.output.outcomes : [])).find((o) => o.id === cheap)!;
      const priceOf = async (txHash: string) =>
        BigInt((await rpc<{ gasPrice: string }>(chain.anvil.url, 'eth_getTransactionByHash', [txHash])).gasPrice);
      await rpc(chain.anvil.url, 'evm_setAutomine', [false]);
      try {
        const first = await run();
        expect(await priceOf(outcome(first).txHash!)).to.equal(10n ** 9n);
        await rpc(chain.anvil.url, 'evm_setBlockGasLimit', ['0xc350']);
        await mineBlocks(chain.anvil.url, STUCK_AFTER_BLOCKS);
        await rpc(chain.anvil.url, 'evm_setBlockGasLimit', ['0x5f5e100']);
        const second = await run();
        // At its own price again it would be refused as underpriced, every cycle: raised as any replacement.
        expect(outcome(second)).to.include({ outcome: 'fulfilled', nonce: 0, replacement: true });
        expect(await priceOf(outcome(second).txHash!)).to.equal(12n * 10n ** 9n);
        await rpc(chain.anvil.url, 'evm_mine', []);
      } finally {
        await rpc(chain.anvil.url, 'evm_setBlockGasLimit', ['0x5f5e100']);
        await rpc(chain.anvil.url, 'evm_setAutomine', [true]);
      }
      await waitForMined(chain.anvil.url);
      expect((await requestEvents(chain.deployment, cheap)).fulfilled).to.have.length(1);
      // The wallet goes on: its next request is served at the next nonce.
      const next = await fullRequest(sponsor);
      await cycle({ gasPriceOracle: tenGwei });
      expect((await requestEvents(chain.deployment, next)).fulfilled).to.have.length(1);
    });

    it("never replaces on first sight: an overlapping coordinator leaves old requests' pending fulfilments alone until it has seen them pending for STUCK_AFTER_BLOCKS blocks", async () => {
      const sponsor = await newSponsor();
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push(await fullRequest(sponsor, encodeCoin(i % 2 === 0 ? 'ETH' : 'BTC')));
      // The node was down: the requests waited past the stuck threshold before any coordinator ran.
      await mineBlocks(chain.anvil.url, STUCK_AFTER_BLOCKS + 2);
      const config = buildConfig({
        ...base(),
        gasPriceOracle: [{ gasPriceStrategy: 'constantGasPrice', gasPrice: { value: 10, unit: 'gwei' } }],
      });
      // Two coordinator processes: each has its own sightings of pending transactions.
      const coordinator = (sightings: PendingSightings) => () =>
        runCycle(config, {
          executor: new InProcessExecutor({
            config,
            wallets,
            logger: silentLogger,
            cache,
            pendingSightings: sightings,
          }),
          logger: silentLogger,
          wallets,
        });
      const first = coordinator(new PendingSightings());
      const second = coordinator(new PendingSightings());
      const outcomes = (summary: CycleSummary) =>
        summary.results.flatMap((r) => (r.ok ? r.output.outcomes : [])).filter((o) => ids.includes(o.id));
      /** A block that leaves the pending fulfilments in the pool (too small for any of them). */
      const mineWithoutThem = async (blocks: number) => {
        await rpc(chain.anvil.url, 'evm_setBlockGasLimit', ['0xc350']);
        await mineBlocks(chain.anvil.url, blocks);
        await rpc(chain.anvil.url, 'evm_setBlockGasLimit', ['0x5f5e100']);
      };
      await rpc(chain.anvil.url, 'evm_setAutomine', [false]);
      try {
        const sent = await first();
        expect(sent.transactions).to.include({ fulfilled: 5, replaced: 0 });
        // One block later the second coordinator runs: it sees them for the first time, however old the requests.
        await mineWithoutThem(1);
        const overlapping = await second();
        expect(overlapping.transactions).to.include({ fulfilled: 0, replaced: 0 });
        expect(outcomes(overlapping).map((o) => o.outcome)).to.deep.equal(Array(5).fill('skipped'));
        expect(outcomes(overlapping)[0]!.reason).to.match(
          /^5 pending transaction\(s\) of this wallet.* 0 block\(s\): not stuck$/,
        );
        expect(await rpc(chain.anvil.url, 'txpool_status')).to.include({ pending: '0x5' });
        // One block short of the threshold in its own sightings: still left alone.
        await mineWithoutThem(STUCK_AFTER_BLOCKS - 1);
        expect((await second()).transactions).to.include({ fulfilled: 0, replaced: 0 });
        // Seen pending for STUCK_AFTER_BLOCKS blocks by this coordinator: now they are stuck and replaced once.
        await mineWithoutThem(1);
        const replacing = await second();
        expect(replacing.transactions).to.include({ fulfilled: 0, replaced: 5 });
        expect(outcomes(replacing).map((o) => [o.outcome, o.nonce, o.replacement])).to.deep.equal(
          [0, 1, 2, 3, 4].map((nonce) => ['fulfilled', nonce, true]),
        );
        await rpc(chain.anvil.url, 'evm_mine', []);
      } finally {
        await rpc(chain.anvil.url, 'evm_setBlockGasLimit', ['0x5f5e100']);
        await rpc(chain.anvil.url, 'evm_setAutomine', [true]);
      }
      await waitForMined(chain.anvil.url);
      for (const id of ids) expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
      const nonce = await rpc<string>(chain.anvil.url, 'eth_getTransactionCount', [sponsor.sponsorWallet, 'latest']);
      expect(Number(nonce)).to.equal(5);
    });
  });

  describe('sponsor wallets an operator can watch', () => {
    const walletOf = (summary: CycleSummary, sponsorWallet: string) =>
      summary.sponsorWallets.find((w) => w.sponsorWallet === sponsorWallet);

    it('reads the balance of every wallet with an open request, a never-funded one included, with its open requests', async () => {
      const sponsor = await newSponsor();
      await setBalance(chain.anvil.url, sponsor.sponsorWallet, 0n);
      const ids = [await fullRequest(sponsor), await fullRequest(sponsor)];
      const summary = await cycle();
      // Nothing could be sent (no funds for gas), and still the wallet is reported, at 0, with both requests.
      expect(summary.results.flatMap((r) => (r.ok ? r.output.outcomes : [])).some((o) => o.txHash)).to.equal(false);
      expect(walletOf(summary, sponsor.sponsorWallet)).to.deep.include({ balanceWei: '0', openRequests: 2 });
      for (const id of ids)
        expect(await requestEvents(chain.deployment, id)).to.deep.equal({ fulfilled: [], failed: [] });
    });

    it("sends nothing priced above the chain's gas price ceiling: the request waits with the reason, then is served once", async () => {
      const sponsor = await newSponsor();
      const id = await fullRequest(sponsor);
      const config = buildConfig(base());
      const withCeiling = (wei: bigint) =>
        runCycle(config, {
          executor: new InProcessExecutor({
            config,
            wallets,
            logger: silentLogger,
            cache,
            gasPriceCeilings: new Map([[config.chains[0]!.id, wei]]),
          }),
          logger: silentLogger,
          wallets,
          discoveryTimeoutMs: 10_000,
        });
      const capped = await withCeiling(1n);
      const outcome = capped.results.flatMap((r) => (r.ok ? r.output.outcomes : [])).find((o) => o.id === id);
      expect(outcome).to.include({ outcome: 'skipped' });
      expect(outcome!.reason).to.match(/gas price [0-9.,]+ gwei is above this node's ceiling of 0 gwei: waits/);
      expect(outcome!.txHash).to.equal(undefined);
      expect(await requestEvents(chain.deployment, id)).to.deep.equal({ fulfilled: [], failed: [] });
      const served = await withCeiling(10n ** 15n);
      await waitForMined(chain.anvil.url);
      expect(served.transactions.fulfilled).to.be.at.least(1);
      expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
    });
  });

  describe('withdrawals', () => {
    it('sends the sponsor wallet balance minus cost and remainder back, and holds the sponsor requests meanwhile', async () => {
      const sponsor = await newSponsor();
      const blocked = await fullRequest(sponsor);
      const rrp = new Contract(chain.deployment.AirnodeRrpV0, protocolArtifacts.AirnodeRrpV0().abi, sponsor.wallet);
      await minedReceipt(await rrp.getFunction('requestWithdrawal')(NODE_ADDRESS, sponsor.sponsorWallet));
      const before = BigInt(await rpc<string>(chain.anvil.url, 'eth_getBalance', [sponsor.address, 'latest']));
      const summary = await cycle({ withdrawalRemainder: { value: 1, unit: 'gwei' } });
      expect(summary.transactions.withdrawn).to.equal(1);
      expect(await requestEvents(chain.deployment, blocked)).to.deep.equal({ fulfilled: [], failed: [] });
      const after = BigInt(await rpc<string>(chain.anvil.url, 'eth_getBalance', [sponsor.address, 'latest']));
      const left = BigInt(await rpc<string>(chain.anvil.url, 'eth_getBalance', [sponsor.sponsorWallet, 'latest']));
      expect(after - before > 9n * 10n ** 18n).to.equal(true);
      expect(left >= 1_000_000_000n).to.equal(true);
      expect(left < 10n ** 16n).to.equal(true);
    });
  });

  describe('response cache', () => {
    it('reuses a cached response instead of calling the API again', async () => {
      const sponsor = await newSponsor();
      // An empty sponsor wallet: the API is called and cached, but no transaction can be paid for.
      await setBalance(chain.anvil.url, sponsor.sponsorWallet, 0n);
      const requestId = await fullRequest(sponsor, '0x', ENDPOINTS.counter);
      const shared = new MemoryResponseCache();
      await cycle({ fulfillmentGasLimit: 200_000 }, shared);
      expect(await requestEvents(chain.deployment, requestId)).to.deep.equal({ fulfilled: [], failed: [] });
      const cached = await shared.get(requestId);
      expect(cached).to.not.equal(undefined);
      const counterCalls = api.calls.filter((c) => c.path === '/counter').length;
      await setBalance(chain.anvil.url, sponsor.sponsorWallet, 10n ** 18n);
      await cycle({ fulfillmentGasLimit: 200_000 }, shared);
      expect(api.calls.filter((c) => c.path === '/counter').length).to.equal(counterCalls);
      expect((await requestEvents(chain.deployment, requestId)).fulfilled).to.deep.equal([
        { data: cached!.encodedValue },
      ]);
    });
  });
});
