import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { runDerive } from '../../../src/cli/derive-command.js';
import { capture } from './helpers.js';

const vectors = JSON.parse(
  readFileSync(new URL('../../fixtures/airnode/vectors/derivation-vectors.json', import.meta.url), 'utf8'),
);

describe('oracle-node derive', () => {
  it('endpoint-id', async () => {
    for (const v of vectors.endpointIds) {
      const out = await capture(runDerive, ['endpoint-id', v.oisTitle, v.endpointName]);
      expect(out).to.deep.include({ code: 0, stdout: `${v.endpointId}\n` });
    }
  });

  it('template-id V0 and V1', async () => {
    const v = vectors.templateIdsV0[0];
    const out = await capture(runDerive, [
      'template-id',
      '--node-address',
      v.nodeAddress,
      '--endpoint-id',
      v.endpointId,
      '--parameters',
      v.encodedParameters,
    ]);
    expect(out.code).to.equal(0);
    expect(out.stdout.trim()).to.equal(v.templateId);
    const v1 = await capture(runDerive, ['template-id', '--v1', '--endpoint-id', v.endpointId, '--parameters', '0x']);
    expect(v1.code).to.equal(0);
    expect(v1.stdout.trim()).to.match(/^0x[0-9a-f]{64}$/);
  });

  it('node-address and xpub from --mnemonic, the environment or stdin', async () => {
    const address = vectors.nodeAddress_m_44_60_0_0_0.value;
    expect((await capture(runDerive, ['node-address', '--mnemonic', vectors.mnemonic])).stdout.trim()).to.equal(
      address,
    );
    expect(
      (await capture(runDerive, ['node-address'], { env: { NODE_WALLET_MNEMONIC: vectors.mnemonic } })).stdout.trim(),
    ).to.equal(address);
    expect((await capture(runDerive, ['node-address'], { stdin: `${vectors.mnemonic}\n` })).stdout.trim()).to.equal(
      address,
    );
    expect((await capture(runDerive, ['xpub'], { stdin: vectors.mnemonic })).stdout.trim()).to.equal(
      vectors.xpub_m_44_60_0.value,
    );
  });

  it('sponsor-wallet from the mnemonic or the xpub', async () => {
    for (const v of vectors.sponsorWallets) {
      const fromMnemonic = await capture(
        runDerive,
        ['sponsor-wallet', '--sponsor', v.sponsor, '--protocol-id', v.protocolId],
        { env: { NODE_WALLET_MNEMONIC: vectors.mnemonic } },
      );
      expect(fromMnemonic.stdout.trim()).to.equal(v.address);
      const fromXpub = await capture(runDerive, [
        'sponsor-wallet',
        '--sponsor',
        v.sponsor,
        '--protocol-id',
        v.protocolId,
        '--xpub',
        vectors.xpub_m_44_60_0.value,
      ]);
      expect(fromXpub.stdout.trim()).to.equal(v.address);
    }
  });

  it('exits 2 on bad input without echoing the mnemonic', async () => {
    const bad = await capture(runDerive, ['node-address', '--mnemonic', 'secret words that are wrong']);
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.not.include('secret words');
    expect((await capture(runDerive, ['node-address'])).code).to.equal(2);
    expect((await capture(runDerive, ['endpoint-id', 'only-one'])).code).to.equal(2);
    expect(
      (await capture(runDerive, ['template-id', '--endpoint-id', '0x12', '--parameters', '0x', '--v1'])).code,
    ).to.equal(2);
    expect((await capture(runDerive, ['sponsor-wallet', '--sponsor', 'nope'])).code).to.equal(2);
    expect(
      (
        await capture(runDerive, [
          'sponsor-wallet',
          '--sponsor',
          vectors.sponsorWallets[0].sponsor,
          '--xpub',
          'xpubbad',
        ])
      ).code,
    ).to.equal(2);
    expect((await capture(runDerive, ['what'])).code).to.equal(2);
    expect((await capture(runDerive, [])).code).to.equal(2);
  });
});
