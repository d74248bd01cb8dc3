// The pure half of `oracle-node usage`: attribution, ranges and duplicates (src/chain/usage.ts), and the CLI's
// duration and output formats (src/cli/usage-command.ts).
import { expect } from 'chai';
import { gasPaidOf, summarizeUsage, UNKNOWN } from '../../../src/chain/usage.js';
import { durationSeconds, usageCsv, usageJson } from '../../../src/cli/usage-command.js';

const id = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;
const tx = (n: number) => `0x${(1000 + n).toString(16).padStart(64, '0')}`;
const request = (n: number, block: number, sponsor = '0xS1', requester = '0xR1') => ({
  id: id(n),
  blockNumber: block,
  sponsor,
  requester,
  endpointId: '0xE1',
});

describe('chain/usage: summarizeUsage', () => {
  it('counts requests made in the range, finishes and gas in the range, attributed to the request made before it', () => {
    const report = summarizeUsage({
      chainId: '1',
      fromBlock: 10,
      toBlock: 20,
      requests: [request(1, 5), request(2, 12, '0xS2'), request(3, 21)],
      finishes: [
        // made before the range (look-back), fulfilled in it: its sponsor pays, it is no request of the range
        { requestId: id(1), kind: 'fulfilled', transactionHash: tx(1), block: 11 },
        { requestId: id(2), kind: 'failed', transactionHash: tx(2), block: 13 },
        // after the range
        { requestId: id(3), kind: 'fulfilled', transactionHash: tx(3), block: 22 },
      ],
      gasByTransaction: new Map([
        [tx(1), 100n],
        [tx(2), 7n],
        [tx(3), 1_000n],
      ]),
    });
    expect(report.totals).to.deep.equal({ requests: 1, fulfilled: 1, failed: 1, gasPaidWei: 107n });
    expect(report.sponsors).to.deep.equal([
      { sponsor: '0xS2', requests: 1, fulfilled: 0, failed: 1, gasPaidWei: 7n },
      { sponsor: '0xS1', requests: 0, fulfilled: 1, failed: 0, gasPaidWei: 100n },
    ]);
    expect(report.endpoints).to.deep.equal([
      { endpointId: '0xe1', requests: 1, fulfilled: 1, failed: 1, gasPaidWei: 107n },
    ]);
  });

  it('bills a finish whose request is not known to "unknown", and a repeated event once', () => {
    const finish = { requestId: id(9), kind: 'fulfilled' as const, transactionHash: tx(9), block: 15 };
    const report = summarizeUsage({
      chainId: '1',
      fromBlock: 10,
      toBlock: 20,
      requests: [],
      finishes: [finish, finish],
      gasByTransaction: new Map([[tx(9), 5n]]),
    });
    expect(report.sponsors).to.deep.equal([{ sponsor: UNKNOWN, requests: 0, fulfilled: 1, failed: 0, gasPaidWei: 5n }]);
    expect(report.totals.fulfilled).to.equal(1);
  });

  it('gasPaidOf: gasUsed x effectiveGasPrice, else gasPrice; undefined for anything else', () => {
    expect(gasPaidOf({ gasUsed: '0x10', effectiveGasPrice: '0x2' })).to.equal(32n);
    expect(gasPaidOf({ gasUsed: '0x10', gasPrice: '0x3' })).to.equal(48n);
    expect(gasPaidOf({ gasUsed: '0x10' })).to.equal(undefined);
    expect(gasPaidOf({ gasUsed: 'lots', effectiveGasPrice: '0x1' })).to.equal(undefined);
    expect(gasPaidOf(null)).to.equal(undefined);
  });
});

describe('cli/usage-command: durations and formats', () => {
  it('durationSeconds takes d, h and m; anything else is refused', () => {
    expect(durationSeconds('30d')).to.equal(30 * 86_400);
    expect(durationSeconds('12h')).to.equal(43_200);
    expect(durationSeconds('90m')).to.equal(5_400);
    for (const bad of ['0d', '1w', '-1d', '1.5h', 'd', '']) expect(durationSeconds(bad), bad).to.equal(undefined);
  });

  it('json keeps wei as decimal strings; csv has one row per sponsor, requester and endpoint', () => {
    const report = summarizeUsage({
      chainId: '5',
      fromBlock: 0,
      toBlock: 1,
      requests: [request(1, 1)],
      finishes: [{ requestId: id(1), kind: 'fulfilled', transactionHash: tx(1), block: 1 }],
      gasByTransaction: new Map([[tx(1), 10n ** 30n]]),
    });
    const json = JSON.parse(usageJson([report])) as { chains: { totals: { gasPaidWei: string } }[] };
    expect(json.chains[0]!.totals.gasPaidWei).to.equal('1000000000000000000000000000000');
    expect(usageCsv([report]).trim().split('\n')).to.deep.equal([
      'chain,kind,id,requests,fulfilled,failed,gasPaidWei',
      '5,sponsor,0xS1,1,1,0,1000000000000000000000000000000',
      '5,requester,0xR1,1,1,0,1000000000000000000000000000000',
      '5,endpoint,0xe1,1,1,0,1000000000000000000000000000000',
    ]);
  });
});
