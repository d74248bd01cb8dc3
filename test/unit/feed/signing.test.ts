// The feed's signatures against the reference's own functions (@api3/airnode-feed 3.3.0 utils.ts, ethers 5): the
// same OEV template id, the same base and OEV signatures byte for byte, the same node address, for any template id,
// timestamp and encoded value.
import { createRequire } from 'node:module';
import { expect } from 'chai';
import fc from 'fast-check';
import { deriveOevTemplateId, feedSigner, signTemplateData } from '../../../src/feed/signing.js';
import { TEST_MNEMONIC } from '../../support/chain.js';

const require = createRequire(import.meta.url);
const reference = require('@api3/airnode-feed') as {
  deriveOevTemplateId(templateId: string): string;
  signWithTemplateId(wallet: unknown, templateId: string, timestamp: string, data: string): Promise<string>;
};
// The reference's own ethers 5, as its state.ts makes the wallet.
const ethers5 = require(require.resolve('ethers', { paths: [require.resolve('@api3/airnode-feed')] })) as {
  ethers: { Wallet: { fromMnemonic(mnemonic: string): { address: string } } };
};

const hex = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString('hex')}`;

describe('feed signing: byte-identical to the reference Airnode feed', function () {
  this.timeout(60_000);
  const wallet = ethers5.ethers.Wallet.fromMnemonic(TEST_MNEMONIC);
  const signer = feedSigner(TEST_MNEMONIC);

  it("derives the node address as the reference (m/44'/60'/0'/0/0 of airnodeWalletMnemonic)", () => {
    expect(signer.address).to.equal(wallet.address);
  });

  it('gives the same OEV template id and the same base and OEV signatures', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        async (templateBytes, time, valueBytes) => {
          const templateId = hex(templateBytes);
          const timestamp = time.toString();
          const encodedValue = hex(valueBytes);
          const oevTemplateId = deriveOevTemplateId(templateId);
          expect(oevTemplateId).to.equal(reference.deriveOevTemplateId(templateId));
          const signed = signTemplateData(signer, templateId, oevTemplateId, timestamp, encodedValue);
          expect(signed.signature).to.equal(
            await reference.signWithTemplateId(wallet, templateId, timestamp, encodedValue),
          );
          expect(signed.oevSignature).to.equal(
            await reference.signWithTemplateId(wallet, oevTemplateId, timestamp, encodedValue),
          );
        },
      ),
      { numRuns: 40 },
    );
  });

  it('refuses a timestamp that is not decimal digits (the reference fails to sign it too)', async () => {
    const templateId = `0x${'11'.repeat(32)}`;
    expect(() =>
      signTemplateData(signer, templateId, deriveOevTemplateId(templateId), '1.5', `0x${'00'.repeat(32)}`),
    ).to.throw();
    let referenceFailed = false;
    try {
      await reference.signWithTemplateId(wallet, templateId, '1.5', `0x${'00'.repeat(32)}`);
    } catch {
      referenceFailed = true;
    }
    expect(referenceFailed).to.equal(true);
  });
});
