// The timeout of a gas price call: it follows the provider's measured latency, within the oracle's budget.
import { expect } from 'chai';
import {
  gasCallTimeoutMs,
  LATENCY_FACTOR,
  MIN_GAS_CALL_TIMEOUT_MS,
  ORACLE_BUDGET_MS,
  requestedPriceReplacement,
} from '../../../src/chain/gas-price.js';

describe('gasCallTimeoutMs', () => {
  it('gives a fast provider the floor, never less', () => {
    expect(gasCallTimeoutMs(40, ORACLE_BUDGET_MS)).to.equal(MIN_GAS_CALL_TIMEOUT_MS);
  });

  it('gives a provider that answers in 3 s a multiple of its latency instead of timing it out at 2 s', () => {
    expect(gasCallTimeoutMs(3_000, ORACLE_BUDGET_MS)).to.equal(Math.min(LATENCY_FACTOR * 3_000, ORACLE_BUDGET_MS));
    expect(gasCallTimeoutMs(3_000, ORACLE_BUDGET_MS)).to.be.above(3_000);
  });

  it('never runs past the budget left, however slow the provider', () => {
    expect(gasCallTimeoutMs(60_000, 4_000)).to.equal(4_000);
    expect(gasCallTimeoutMs(100, 500)).to.equal(500);
    expect(gasCallTimeoutMs(100, 0)).to.equal(1);
  });

  it('uses the RPC default for a provider not measured yet', () => {
    expect(gasCallTimeoutMs(undefined, ORACLE_BUDGET_MS)).to.equal(5_000);
  });
});

describe('requestedPriceReplacement', () => {
  const GWEI = 10n ** 9n;

  it("raises a request's own price by 20 %, and never below the cycle's replacement price", () => {
    // A `_gasPrice` below the chain's: the cycle's replacement price (already raised) wins.
    expect(requestedPriceReplacement(1n * GWEI, { type: 0, gasPrice: 12n * GWEI })).to.deep.equal({
      type: 0,
      gasPrice: 12n * GWEI,
    });
    // Above it: the request's own price, raised enough to replace its transaction.
    expect(requestedPriceReplacement(50n * GWEI, { type: 0, gasPrice: 12n * GWEI })).to.deep.equal({
      type: 0,
      gasPrice: 60n * GWEI,
    });
  });

  it("keeps an EIP-1559 cycle's type, both fees above the legacy transaction's price", () => {
    expect(
      requestedPriceReplacement(5n * GWEI, { type: 2, maxFeePerGas: 30n * GWEI, maxPriorityFeePerGas: 2n * GWEI }),
    ).to.deep.equal({ type: 2, maxFeePerGas: 30n * GWEI, maxPriorityFeePerGas: 6n * GWEI });
  });
});
