import { expect } from 'chai';
import {
  AbiCoder,
  getBytes,
  HDNodeWallet,
  hashMessage,
  hexlify,
  solidityPackedKeccak256,
  Transaction,
  verifyMessage,
} from 'ethers';
import fc from 'fast-check';
import {
  classifyCallError,
  decodeRevertString,
  revertReasonOf,
  signFulfillment,
  signPlanned,
  truncateErrorMessage,
} from '../../../src/chain/fulfillment.js';
import {
  amountToWei,
  blockTransactionPrices,
  bumpGasTarget,
  multiplyByPercentMultiplier,
  percentile,
  withinDeviation,
} from '../../../src/chain/gas-price.js';
import { RpcError, RpcTransportError } from '../../../src/chain/rpc.js';
import { withdrawalValue } from '../../../src/chain/withdrawals.js';

const MNEMONIC = 'achieve climb couple wait accident symbol spy blouse reduce foil echo label';
const node = HDNodeWallet.fromPhrase(MNEMONIC);

describe('fulfilment helpers', () => {
  it('signs keccak256(requestId ‖ data) with EIP-191 by the node key', () => {
    const requestId = `0x${'12'.repeat(32)}`;
    const data = AbiCoder.defaultAbiCoder().encode(['int256'], [42]);
    const signature = signFulfillment(node, requestId, data);
    const hash = solidityPackedKeccak256(['bytes32', 'bytes'], [requestId, data]);
    expect(verifyMessage(getBytes(hash), signature)).to.equal(node.address);
  });

  it('cuts on-chain error messages to 100 characters', () => {
    expect(truncateErrorMessage('short')).to.equal('short');
    expect(truncateErrorMessage('x'.repeat(100))).to.equal('x'.repeat(100));
    expect(truncateErrorMessage('x'.repeat(101))).to.equal(`${'x'.repeat(97)}...`);
  });

  it('decodes Error(string) revert data, else "No revert string"', () => {
    const data = `0x08c379a0${AbiCoder.defaultAbiCoder().encode(['string'], ['Nope']).slice(2)}`;
    expect(decodeRevertString(data)).to.equal('Nope');
    expect(decodeRevertString('0x')).to.equal('No revert string');
    expect(decodeRevertString('0x12345678')).to.equal('No revert string');
    expect(revertReasonOf(new RpcError('eth_call: execution reverted', 3, data))).to.equal('Nope');
    expect(revertReasonOf(new RpcError('eth_call: execution reverted: out of gas'))).to.equal(
      'eth_call: execution reverted: out of gas',
    );
  });

  it("takes only a call that reverts for a revert; every other failed answer is the provider's", () => {
    const nope = `0x08c379a0${AbiCoder.defaultAbiCoder().encode(['string'], ['Nope']).slice(2)}`;
    const reverts: [RpcError, string][] = [
      [new RpcError('eth_call: execution reverted: Nope', 3, nope), 'Nope'],
      [new RpcError('eth_call: execution reverted', -32000), 'eth_call: execution reverted'],
      [new RpcError('eth_call: custom error', -32000, '0x4e487b710000'), 'eth_call: custom error'],
      [new RpcError('eth_call: reverted', 3), 'eth_call: reverted'],
      [new RpcError('eth_call: out of gas', -32000), 'eth_call: out of gas'],
      [new RpcError('eth_estimateGas: gas required exceeds allowance (30000000)', -32000), ''],
      [new RpcError('eth_call: EVM error OutOfGas', -32603), ''],
      [new RpcError('eth_call: VM execution error.', -32015, 'Reverted 0x'), ''],
    ];
    for (const [error, reason] of reverts) {
      const failure = classifyCallError(error);
      expect(failure.kind, error.message).to.equal('revert');
      if (reason) expect(failure.reason).to.equal(reason);
    }
    const providerFailures: unknown[] = [
      new RpcError('eth_call: header not found', -32000),
      new RpcError('eth_call: daily request count exceeded, request rate limited', -32005, { see: 'https://x' }),
      new RpcError('eth_call: internal error', -32603),
      new RpcError('eth_call: missing trie node 0xabc (path )', -32000),
      new RpcError('eth_call: request timed out', -32000),
      new RpcError('eth_call: invalid argument 2: state overrides not supported', -32602),
      new RpcTransportError('eth_call: not hex data'),
      new Error('data out-of-bounds (buffer=0x, length=0, offset=32)'),
    ];
    for (const error of providerFailures) expect(classifyCallError(error).kind, String(error)).to.equal('provider');
  });

  it('signs legacy and EIP-1559 transactions with the given nonce', async () => {
    const base = { to: node.address, data: '0x1234', gasLimit: 100_000n };
    const legacy = Transaction.from(
      await signPlanned(node, { ...base, gasTarget: { type: 0, gasPrice: 5n } }, 7, '31337'),
    );
    expect(legacy.type).to.equal(0);
    expect(legacy.nonce).to.equal(7);
    expect(legacy.gasPrice).to.equal(5n);
    expect(legacy.chainId).to.equal(31337n);
    const eip1559 = Transaction.from(
      await signPlanned(node, { ...base, gasTarget: { type: 2, maxFeePerGas: 9n, maxPriorityFeePerGas: 2n } }, 8, '1'),
    );
    expect(eip1559.type).to.equal(2);
    expect(eip1559.maxFeePerGas).to.equal(9n);
    expect(eip1559.from).to.equal(node.address);
  });

  it("signs transactions and fulfilments byte for byte as ethers' wallet does (libsecp256k1 against noble)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.uint8Array({ minLength: 0, maxLength: 300 }),
        fc.nat({ max: 2 ** 32 }),
        fc.boolean(),
        async (id, data, nonce, legacy) => {
          const wallet = node.deriveChild(nonce % 1000);
          const planned = {
            to: node.address,
            data: hexlify(data),
            gasLimit: 500_000n,
            value: BigInt(nonce),
            gasTarget: legacy
              ? ({ type: 0, gasPrice: 10n ** 10n + BigInt(nonce) } as const)
              : ({ type: 2, maxFeePerGas: 3n * 10n ** 9n, maxPriorityFeePerGas: BigInt(nonce % 10 ** 9) } as const),
          };
          const signed = await signPlanned(wallet, planned, nonce, '31337');
          const tx = Transaction.from(signed);
          tx.signature = null;
          expect(signed).to.equal(await wallet.signTransaction(tx));
          const requestId = hexlify(id);
          const hash = solidityPackedKeccak256(['bytes32', 'bytes'], [requestId, hexlify(data)]);
          expect(signFulfillment(wallet, requestId, hexlify(data))).to.equal(
            wallet.signingKey.sign(hashMessage(getBytes(hash))).serialized,
          );
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('gas price arithmetic (airnode-facts §9)', () => {
  it('takes the ceil(n*p/100)-th smallest price', () => {
    const prices = [5n, 1n, 4n, 2n, 3n];
    expect(percentile(prices, 60)).to.equal(3n);
    expect(percentile(prices, 100)).to.equal(5n);
    expect(percentile(prices, 1)).to.equal(1n);
    expect(percentile([], 50)).to.equal(undefined);
  });

  it('accepts the latest percentile only within the deviation band (integer math)', () => {
    expect(withinDeviation(100n, 150n, 2)).to.equal(true);
    expect(withinDeviation(100n, 200n, 2)).to.equal(false);
    expect(withinDeviation(100n, 50n, 2)).to.equal(false);
    expect(withinDeviation(100n, 51n, 2)).to.equal(true);
  });

  it('multiplies by round(multiplier*100)/100 and converts amounts', () => {
    expect(multiplyByPercentMultiplier(1000n, 1.234)).to.equal(1230n);
    expect(amountToWei({ value: 10, unit: 'gwei' })).to.equal(10_000_000_000n);
    expect(amountToWei({ value: 3.12, unit: 'gwei' })).to.equal(3_120_000_000n);
    expect(bumpGasTarget({ type: 0, gasPrice: 100n }, 20)).to.deep.equal({ type: 0, gasPrice: 120n });
  });

  it('prices transactions by gasPrice, else baseFee + priority fee', () => {
    expect(
      blockTransactionPrices({
        baseFeePerGas: '0x10',
        // A mined EIP-1559 transaction reports its effective price as gasPrice (here capped below 0x10 + 0x20).
        transactions: [
          { gasPrice: '0x5' },
          { maxPriorityFeePerGas: '0x20', gasPrice: '0x19' },
          { maxPriorityFeePerGas: '0x2' },
        ],
      }),
    ).to.deep.equal([5n, 25n, 18n]);
    // Without a base fee a transaction without gasPrice has no price.
    expect(
      blockTransactionPrices({ transactions: [{ maxPriorityFeePerGas: '0x2' }, { gasPrice: '0x7' }] }),
    ).to.deep.equal([7n]);
  });

  it('computes the withdrawal value, or nothing when the balance does not cover it', () => {
    expect(withdrawalValue(1_000_000n, 1000n, { type: 0, gasPrice: 10n }, 5n)).to.equal(989_995n);
    expect(withdrawalValue(10_000n, 1000n, { type: 2, maxFeePerGas: 10n, maxPriorityFeePerGas: 1n }, 0n)).to.equal(
      null,
    );
  });
});
