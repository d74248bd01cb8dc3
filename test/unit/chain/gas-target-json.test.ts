import { expect } from 'chai';
import { type GasTarget, gasTargetFromJson, gasTargetToJson } from '../../../src/chain/gas-price.js';

describe('a gas target handed to a shard as JSON', () => {
  it('comes back as it left, legacy and EIP-1559, with and without a gas limit', () => {
    const targets: GasTarget[] = [
      { type: 0, gasPrice: 12_000_000_000n },
      { type: 0, gasPrice: 1n, gasLimit: 500_000n },
      { type: 2, maxFeePerGas: 30_000_000_000n, maxPriorityFeePerGas: 3_120_000_000n, gasLimit: 21_000n },
    ];
    for (const target of targets) expect(gasTargetFromJson(gasTargetToJson(target))).to.deep.equal(target);
  });

  it('is refused when malformed, so the shard reads its own price', () => {
    for (const json of [
      undefined,
      { type: 0, gasPrice: '-1' },
      { type: 0, gasPrice: '0x10' },
      { type: 2, maxFeePerGas: '1' },
      { type: 0, gasPrice: '1', gasLimit: 'lots' },
      { type: 1, gasPrice: '1' },
    ]) {
      expect(gasTargetFromJson(json as never), JSON.stringify(json)).to.equal(undefined);
    }
  });
});
