// --api-rate-limit (src/cli/api-limit-options.ts): TITLE[/ENDPOINT]=N/s|N/m resolved against the config's OISes, and
// every wrong flag refused with its own text.
import { expect } from 'chai';
import { parseApiRateLimits } from '../../../src/cli/api-limit-options.js';

const OISES = [
  { title: 'CoinGecko', endpoints: [{ name: 'price' }, { name: 'volume' }] },
  // A title may hold a slash: the endpoint is what follows the last one.
  { title: 'Acme/Weather', endpoints: [{ name: 'now' }] },
];

describe('cli/api-limit-options', () => {
  it('reads OIS and endpoint targets, per second and per minute, several windows of one target together', () => {
    expect(
      parseApiRateLimits(
        ['CoinGecko=600/m', 'CoinGecko=20/s', 'CoinGecko/price=5/s', 'Acme/Weather=1/s', 'Acme/Weather/now=30/m'],
        OISES,
      ),
    ).to.deep.equal({
      limits: [
        { ois: 'CoinGecko', rate: { calls: 600, windowMs: 60_000 } },
        { ois: 'CoinGecko', rate: { calls: 20, windowMs: 1_000 } },
        { ois: 'CoinGecko', endpoint: 'price', rate: { calls: 5, windowMs: 1_000 } },
        { ois: 'Acme/Weather', rate: { calls: 1, windowMs: 1_000 } },
        { ois: 'Acme/Weather', endpoint: 'now', rate: { calls: 30, windowMs: 60_000 } },
      ],
    });
    expect(parseApiRateLimits(undefined, OISES)).to.deep.equal({ limits: [] });
    // A share of nothing (the operator's division left the pod no call of the API).
    expect(parseApiRateLimits(['CoinGecko/volume=0/m'], OISES)).to.deep.equal({
      limits: [{ ois: 'CoinGecko', endpoint: 'volume', rate: { calls: 0, windowMs: 60_000 } }],
    });
  });

  it('refuses unknown titles and endpoints, bad rates and a window given twice, quoting the flag', () => {
    const cases: [string[], string][] = [
      [['Binance=5/s'], "--api-rate-limit 'Binance=5/s': the config has no OIS titled 'Binance'"],
      [['Binance/price=5/s'], "--api-rate-limit 'Binance/price=5/s': the config has no OIS titled 'Binance'"],
      [['CoinGecko/nope=5/s'], "--api-rate-limit 'CoinGecko/nope=5/s': OIS 'CoinGecko' has no endpoint named 'nope'"],
      [['CoinGecko=1000001/m'], "--api-rate-limit 'CoinGecko=1000001/m': at most 1000000 calls per window"],
      [['CoinGecko=-1/s'], "--api-rate-limit 'CoinGecko=-1/s': expected"],
      [['CoinGecko=00/s'], "--api-rate-limit 'CoinGecko=00/s': expected"],
      [['CoinGecko=5/h'], "--api-rate-limit 'CoinGecko=5/h': expected"],
      [['=5/s'], "--api-rate-limit '=5/s': expected"],
      [['CoinGecko'], "--api-rate-limit 'CoinGecko': expected"],
      [['CoinGecko=5/s', 'CoinGecko=9/s'], "--api-rate-limit 'CoinGecko=9/s': a rate per second for it is given twice"],
    ];
    for (const [flags, error] of cases) {
      const parsed = parseApiRateLimits(flags, OISES);
      expect(parsed, flags.join(' '))
        .to.have.property('error')
        .that.satisfies((text: string) => text.startsWith(error));
    }
  });
});
