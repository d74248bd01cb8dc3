import { expect } from 'chai';
import {
  gasPriceCeilingArgs,
  lowBalanceThresholds,
  nativeToWei,
} from '../../../../src/operator/builders/chain-limits.js';
import type { OracleNode } from '../../../../src/operator/resource.js';
import { loadSample } from '../fake-kube.js';

describe('spec.chainLimits', () => {
  const node = (chainLimits: OracleNode['spec']['chainLimits']): OracleNode => {
    const { node } = loadSample('minimal');
    node.spec.chainLimits = chainLimits;
    return node;
  };

  it('reads a native amount as wei, exactly (no floating point)', () => {
    expect(nativeToWei('0.05')).to.equal(50_000_000_000_000_000n);
    expect(nativeToWei('12')).to.equal(12n * 10n ** 18n);
    expect(nativeToWei('0.000000000000000001')).to.equal(1n);
    expect(nativeToWei('123456789.123456789123456789')).to.equal(123456789123456789123456789n);
  });

  it('gives the thresholds by chain and the coordinator its --max-gas-price arguments', () => {
    const limited = node([
      { chainId: '1', lowSponsorBalance: '0.05', maxGasPriceGwei: 150 },
      { chainId: '137', lowSponsorBalance: '20' },
      { chainId: '10', maxGasPriceGwei: 0.001 },
    ]);
    expect(lowBalanceThresholds(limited)).to.deep.equal(
      new Map([
        ['1', 50_000_000_000_000_000n],
        ['137', 20n * 10n ** 18n],
      ]),
    );
    expect(gasPriceCeilingArgs(limited)).to.deep.equal(['--max-gas-price', '1=150', '--max-gas-price', '10=0.001']);
    expect(gasPriceCeilingArgs(node(undefined))).to.deep.equal([]);
  });
});
