import { expect } from 'chai';
import {
  MAX_VERIFIED_ENTRIES,
  parseVerifiedChainIds,
  providerFingerprint,
  serializeVerifiedChainIds,
  type VerifiedChainIds,
} from '../../../src/chain/verified-chain-ids.js';

const URL = 'https://mainnet.example.test/v3/secret-api-key-0123456789';

describe('verified chain ids (stored between coordinator runs)', () => {
  it('names a provider by a fingerprint that depends on the secret and carries nothing of the URL', () => {
    const fingerprint = providerFingerprint('mnemonic one', URL);
    expect(fingerprint).to.match(/^[0-9a-f]{32}$/);
    expect(providerFingerprint('mnemonic one', URL)).to.equal(fingerprint);
    expect(providerFingerprint('mnemonic two', URL)).not.to.equal(fingerprint);
    expect(providerFingerprint('mnemonic one', `${URL}x`)).not.to.equal(fingerprint);
  });

  it('reads back what it wrote', () => {
    const verified: VerifiedChainIds = new Map([
      [providerFingerprint('s', URL), { chainId: 31337n, verifiedAt: 1_700_000_000_000 }],
    ]);
    const text = serializeVerifiedChainIds(verified);
    expect(text).not.to.include('secret-api-key');
    expect(parseVerifiedChainIds(text)).to.deep.equal(verified);
  });

  it('treats missing, garbled, oversized or mistyped input as nothing verified, entry by entry', () => {
    for (const text of [undefined, '', 'not json', 'null', '[]', '{"format":2,"providers":{}}', ' '.repeat(70_000)]) {
      expect(parseVerifiedChainIds(text).size).to.equal(0);
    }
    const good = providerFingerprint('s', URL);
    const parsed = parseVerifiedChainIds(
      JSON.stringify({
        format: 1,
        providers: {
          [good]: { chainId: '5', verifiedAt: 1 },
          ['a'.repeat(32)]: { chainId: '0x5', verifiedAt: 1 },
          ['b'.repeat(32)]: { chainId: '5', verifiedAt: -1 },
          ['c'.repeat(32)]: 'x',
          'not-a-fingerprint': { chainId: '5', verifiedAt: 1 },
          __proto__: { chainId: '5', verifiedAt: 1 },
        },
      }),
    );
    expect([...parsed.keys()]).to.deep.equal([good]);
  });

  it(`keeps at most ${MAX_VERIFIED_ENTRIES} entries, the most recently verified`, () => {
    const verified: VerifiedChainIds = new Map();
    for (let i = 0; i < MAX_VERIFIED_ENTRIES + 10; i++) {
      verified.set(providerFingerprint('s', `${URL}/${i}`), { chainId: 1n, verifiedAt: i });
    }
    const parsed = parseVerifiedChainIds(serializeVerifiedChainIds(verified));
    expect(parsed.size).to.equal(MAX_VERIFIED_ENTRIES);
    expect(Math.min(...[...parsed.values()].map((e) => e.verifiedAt))).to.equal(10);
  });
});
