// Gas price strategies (airnode-facts §9) on a real anvil chain: blocks are built from real competing
// transactions with chosen prices (automine off, several funded accounts, one `evm_mine`), then one cycle
// fulfils a request and the fulfilment transaction's gas price must be exactly what the strategy picks.
import { expect } from 'chai';
import { Interface, parseUnits, zeroPadValue } from 'ethers';
import { MemoryResponseCache } from '../../../src/node/cache.js';
import { runCycle } from '../../../src/node/cycle.js';
import { InProcessExecutor } from '../../../src/node/executor.js';
import { silentLogger } from '../../../src/node/logger.js';
import { mineBlocks, protocolArtifacts, rpc, startTestChain, waitForMined } from '../../support/chain.js';
import {
  type ApiServer,
  buildConfig,
  createSponsor,
  NODE_ADDRESS,
  requestPrice,
  startApiServer,
  wallets,
} from '../../support/harness.js';

const gwei = (value: string | number) => parseUnits(String(value), 'gwei');
const hex = (value: bigint) => `0x${value.toString(16)}`;

/** A legacy price, or an EIP-1559 transaction's fee caps. */
type Price = bigint | { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint };
type Block = { number: string; baseFeePerGas: string; transactions: { hash: string }[] };

const PAST = 3;
const percentileStrategy = (overrides: Record<string, unknown> = {}) => ({
  gasPriceStrategy: 'latestBlockPercentileGasPrice',
  percentile: 50,
  minTransactionCount: 5,
  pastToCompareInBlocks: PAST,
  maxDeviationMultiplier: 2,
  ...overrides,
});
/** Always sanitizes in these tests (provider price x4 is above baseFee x2): baseFee x3 + 1.25 gwei. */
const SANITIZED = {
  gasPriceStrategy: 'sanitizedProviderRecommendedGasPrice',
  recommendedGasPriceMultiplier: 4,
  baseFeeMultiplierThreshold: 2,
  baseFeeMultiplier: 3,
  priorityFee: { value: 1.25, unit: 'gwei' },
};
const CONSTANT = { gasPriceStrategy: 'constantGasPrice', gasPrice: { value: 23.456, unit: 'gwei' } };

describe('gas price strategies on anvil (real blocks, real fulfilment transactions)', () => {
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  let api: ApiServer;
  let url: string;
  let accounts: string[];
  let sponsorSeq = 0;
  const fulfilledTopic = new Interface(protocolArtifacts.AirnodeRrpV0().abi).getEvent('FulfilledRequest')!.topicHash;

  before(async () => {
    chain = await startTestChain();
    url = chain.anvil.url;
    api = await startApiServer();
    // Account 0 deploys and makes the requests; the other default accounts send the competing transactions.
    accounts = (await rpc<string[]>(url, 'eth_accounts')).slice(1);
  });
  after(async () => {
    await api?.close();
    await chain?.anvil.stop();
  });

  /** A request of a new sponsor, mined before the blocks of the test. */
  async function newRequest(): Promise<string> {
    const sponsor = await createSponsor(chain.deployment, `gas-${sponsorSeq++}`);
    return requestPrice(chain.deployment, sponsor);
  }

  /** Mines one block with a chosen base fee holding exactly one transaction per given price. */
  async function mineBlockWith(baseFee: bigint, prices: Price[]): Promise<Block> {
    expect(prices.length).to.be.at.most(accounts.length);
    await rpc(url, 'evm_setAutomine', [false]);
    try {
      await rpc(url, 'anvil_setNextBlockBaseFeePerGas', [hex(baseFee)]);
      for (const [i, price] of prices.entries()) {
        const fees =
          typeof price === 'bigint'
            ? { gasPrice: hex(price) }
            : { maxFeePerGas: hex(price.maxFeePerGas), maxPriorityFeePerGas: hex(price.maxPriorityFeePerGas) };
        await rpc(url, 'eth_sendTransaction', [
          { from: accounts[i], to: accounts[(i + 1) % accounts.length], value: '0x1', gas: hex(21_000n), ...fees },
        ]);
      }
      await rpc(url, 'evm_mine', []);
    } finally {
      await rpc(url, 'evm_setAutomine', [true]);
    }
    const block = await rpc<Block>(url, 'eth_getBlockByNumber', ['latest', false]);
    expect(block.transactions, 'every competing transaction is in the block').to.have.length(prices.length);
    expect(BigInt(block.baseFeePerGas)).to.equal(baseFee);
    return block;
  }

  /** A reference block, PAST - 1 empty blocks, then the latest block: `latest - PAST` is the reference. */
  async function mineComparedBlocks(reference: Price[], latest: Price[], latestBaseFee: bigint): Promise<Block> {
    const first = await mineBlockWith(gwei(1), reference);
    await mineBlocks(url, PAST - 1);
    const last = await mineBlockWith(latestBaseFee, latest);
    expect(BigInt(last.number) - BigInt(first.number)).to.equal(BigInt(PAST));
    return last;
  }

  /** One cycle with the given oracle; returns the fulfilment transaction of the request. */
  async function fulfilWith(requestId: string, gasPriceOracle: unknown[]) {
    const config = buildConfig({
      providers: { anvil: url },
      deployment: chain.deployment,
      apiUrl: api.url,
      gasPriceOracle,
    });
    const cache = new MemoryResponseCache();
    const executor = new InProcessExecutor({ config, wallets, logger: silentLogger, cache });
    await runCycle(config, { executor, logger: silentLogger, wallets, discoveryTimeoutMs: 10_000 });
    await waitForMined(url);
    const logs = await rpc<{ transactionHash: string }[]>(url, 'eth_getLogs', [
      {
        address: chain.deployment.AirnodeRrpV0,
        fromBlock: '0x0',
        toBlock: 'latest',
        topics: [fulfilledTopic, zeroPadValue(NODE_ADDRESS, 32), requestId],
      },
    ]);
    expect(logs, 'one FulfilledRequest for the request').to.have.length(1);
    const tx = await rpc<{ type: string; gasPrice: string }>(url, 'eth_getTransactionByHash', [
      logs[0]!.transactionHash,
    ]);
    expect(tx.type, 'the strategies here all give legacy transactions').to.equal('0x0');
    return { gasPrice: BigInt(tx.gasPrice) };
  }

  /** What SANITIZED must give on the current latest block (checks that it does sanitize). */
  async function sanitizedExpectation(): Promise<bigint> {
    const latest = await rpc<Block>(url, 'eth_getBlockByNumber', ['latest', false]);
    const baseFee = BigInt(latest.baseFeePerGas);
    const provider = (BigInt(await rpc<string>(url, 'eth_gasPrice')) * 400n) / 100n;
    expect(provider > baseFee * 2n, 'provider price x4 is above the threshold').to.equal(true);
    return baseFee * 3n + gwei('1.25');
  }

  describe('latestBlockPercentileGasPrice', () => {
    it('takes the percentile (element ceil(n*p/100)-1) of the latest block when the reference is within the band', async () => {
      const requestId = await newRequest();
      // sorted 12 15 [18] 24 30; reference sorted 10 11 [14] 20 26, and 9 < 14 < 36
      await mineComparedBlocks(
        [gwei(26), gwei(10), gwei(14), gwei(20), gwei(11)],
        [gwei(30), gwei(12), gwei(24), gwei(18), gwei(15)],
        gwei(2),
      );
      expect((await fulfilWith(requestId, [percentileStrategy(), SANITIZED, CONSTANT])).gasPrice).to.equal(gwei(18));
    });

    it('prices an EIP-1559 transaction of the block by its gasPrice (the effective price), not baseFee + tip', async () => {
      const requestId = await newRequest();
      // Base fee 2 gwei, fee cap = tip = 25 gwei: the transaction paid 25 gwei (capped), not 2 + 25.
      // Prices sorted 12 15 18 [25] 30 at p80 (element 3); reference sorted 20 22 24 [26] 28.
      await mineComparedBlocks(
        [gwei(20), gwei(22), gwei(24), gwei(26), gwei(28)],
        [gwei(12), gwei(15), gwei(18), gwei(30), { maxFeePerGas: gwei(25), maxPriorityFeePerGas: gwei(25) }],
        gwei(2),
      );
      const latest = await rpc<{ transactions: { type: string; gasPrice: string }[] }>(url, 'eth_getBlockByNumber', [
        'latest',
        true,
      ]);
      const eip1559 = latest.transactions.find((tx) => tx.type === '0x2');
      expect(BigInt(eip1559!.gasPrice), 'the node reports the effective price').to.equal(gwei(25));
      expect(
        (await fulfilWith(requestId, [percentileStrategy({ percentile: 80 }), SANITIZED, CONSTANT])).gasPrice,
      ).to.equal(gwei(25));
    });

    it('falls back to the next strategy when the latest block has fewer than minTransactionCount transactions', async () => {
      const requestId = await newRequest();
      await mineComparedBlocks(
        [gwei(26), gwei(10), gwei(14), gwei(20), gwei(11)],
        [gwei(30), gwei(12), gwei(24), gwei(18)],
        gwei(4),
      );
      const expected = await sanitizedExpectation();
      expect(expected).to.equal(gwei('13.25'));
      expect((await fulfilWith(requestId, [percentileStrategy(), SANITIZED, CONSTANT])).gasPrice).to.equal(expected);
    });

    it('falls back to the next strategy when the reference block has fewer than minTransactionCount transactions', async () => {
      const requestId = await newRequest();
      await mineComparedBlocks(
        [gwei(26), gwei(10), gwei(14), gwei(20)],
        [gwei(30), gwei(12), gwei(24), gwei(18), gwei(15)],
        gwei(5),
      );
      const expected = await sanitizedExpectation();
      expect(expected).to.equal(gwei('16.25'));
      expect((await fulfilWith(requestId, [percentileStrategy(), SANITIZED, CONSTANT])).gasPrice).to.equal(expected);
    });

    it('falls back when the reference percentile is at the lower bound latest/maxDeviationMultiplier (strict)', async () => {
      const requestId = await newRequest();
      // latest percentile 18, reference percentile exactly 18 / 2 = 9
      await mineComparedBlocks(
        [gwei(5), gwei(7), gwei(9), gwei(11), gwei(13)],
        [gwei(30), gwei(12), gwei(24), gwei(18), gwei(15)],
        gwei(6),
      );
      const expected = await sanitizedExpectation();
      expect(expected).to.equal(gwei('19.25'));
      expect((await fulfilWith(requestId, [percentileStrategy(), SANITIZED, CONSTANT])).gasPrice).to.equal(expected);
    });

    it('falls back when the reference percentile is at the upper bound latest*maxDeviationMultiplier (strict)', async () => {
      const requestId = await newRequest();
      // latest percentile 18, reference percentile exactly 18 * 2 = 36
      await mineComparedBlocks(
        [gwei(30), gwei(33), gwei(36), gwei(40), gwei(44)],
        [gwei(30), gwei(12), gwei(24), gwei(18), gwei(15)],
        gwei(7),
      );
      const expected = await sanitizedExpectation();
      expect(expected).to.equal(gwei('22.25'));
      expect((await fulfilWith(requestId, [percentileStrategy(), SANITIZED, CONSTANT])).gasPrice).to.equal(expected);
    });

    it('accepts a reference one wei inside the band of a two-decimal multiplier (1.5)', async () => {
      const requestId = await newRequest();
      // latest sorted 11 17 [21] 29 35; lower bound 21 * 100 / 150 = 14 gwei, reference percentile 14 gwei + 1 wei
      await mineComparedBlocks(
        [gwei(9), gwei(12), gwei(14) + 1n, gwei(20), gwei(25)],
        [gwei(35), gwei(11), gwei(29), gwei(21), gwei(17)],
        gwei(3),
      );
      expect(
        (await fulfilWith(requestId, [percentileStrategy({ maxDeviationMultiplier: 1.5 }), SANITIZED, CONSTANT]))
          .gasPrice,
      ).to.equal(gwei(21));
    });
  });

  describe('sanitizedProviderRecommendedGasPrice', () => {
    it('replaces a provider price above baseFee x threshold by baseFee x baseFeeMultiplier + priorityFee', async () => {
      const requestId = await newRequest();
      await mineBlockWith(gwei(10), []);
      const provider = BigInt(await rpc<string>(url, 'eth_gasPrice'));
      expect((provider * 400n) / 100n > gwei(20), 'provider price x4 is above 10 gwei x 2').to.equal(true);
      expect((await fulfilWith(requestId, [SANITIZED, CONSTANT])).gasPrice).to.equal(gwei('31.25'));
    });

    it('keeps the provider price x multiplier when it is not above baseFee x threshold', async () => {
      const requestId = await newRequest();
      await mineBlockWith(gwei(10), []);
      const expected = (BigInt(await rpc<string>(url, 'eth_gasPrice')) * 150n) / 100n;
      expect(expected <= gwei(20), 'provider price x1.5 is not above 10 gwei x 2').to.equal(true);
      expect(expected).to.not.equal(gwei('31.25'));
      const gasPrice = (await fulfilWith(requestId, [{ ...SANITIZED, recommendedGasPriceMultiplier: 1.5 }, CONSTANT]))
        .gasPrice;
      expect(gasPrice).to.equal(expected);
    });
  });

  describe('constantGasPrice', () => {
    it('is the last resort when every other strategy fails', async () => {
      const requestId = await newRequest();
      // Too few transactions for the percentile; a non-integer baseFeeMultiplier makes the sanitized one fail.
      await mineComparedBlocks([gwei(10), gwei(11)], [gwei(12), gwei(13)], gwei(8));
      const gasPrice = (
        await fulfilWith(requestId, [percentileStrategy(), { ...SANITIZED, baseFeeMultiplier: 2.5 }, CONSTANT])
      ).gasPrice;
      expect(gasPrice).to.equal(gwei('23.456'));
    });
  });
});
