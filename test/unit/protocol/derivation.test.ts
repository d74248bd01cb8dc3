import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { expect } from 'chai';
import { AbiCoder, getBytes, HDNodeWallet, keccak256, solidityPacked, verifyMessage } from 'ethers';
import fc from 'fast-check';
import {
  deriveDeploymentId,
  deriveEndpointId,
  deriveEndpointIdWithAbiCoder,
  deriveFullRequestId,
  deriveTemplateIdV0,
  deriveTemplateIdV1,
} from '../../../src/protocol/ids.js';
import {
  deriveNodeAddress,
  deriveSponsorWallet,
  deriveSponsorWalletAddressFromXpub,
  deriveWalletPathFromSponsorAddress,
  deriveXpub,
  nodeWallet,
} from '../../../src/protocol/wallet.js';

const vectors = JSON.parse(
  readFileSync(new URL('../../fixtures/airnode/vectors/derivation-vectors.json', import.meta.url), 'utf8'),
);

describe('derivations (reference vectors)', () => {
  it('derives the node address and xpub from the mnemonic', () => {
    expect(deriveNodeAddress(vectors.mnemonic)).to.equal(vectors.nodeAddress_m_44_60_0_0_0.value);
    expect(deriveXpub(vectors.mnemonic)).to.equal(vectors.xpub_m_44_60_0.value);
  });

  it('derives sponsor wallets from the mnemonic and from the xpub', () => {
    for (const v of vectors.sponsorWallets) {
      expect(`m/44'/60'/0'/${deriveWalletPathFromSponsorAddress(v.sponsor, v.protocolId)}`).to.equal(v.path);
      expect(deriveSponsorWallet(vectors.mnemonic, v.sponsor, v.protocolId).address).to.equal(v.address);
      expect(deriveSponsorWalletAddressFromXpub(vectors.xpub_m_44_60_0.value, v.sponsor, v.protocolId)).to.equal(
        v.address,
      );
    }
  });

  it('derives endpoint ids', () => {
    for (const v of vectors.endpointIds) expect(deriveEndpointId(v.oisTitle, v.endpointName)).to.equal(v.endpointId);
  });

  it('derives template ids V0 and V1', () => {
    for (const v of vectors.templateIdsV0) {
      const expectedV0 = v.templateId ?? v.templateIdV0;
      expect(deriveTemplateIdV0(v.nodeAddress, v.endpointId, v.encodedParameters)).to.equal(expectedV0);
      if (v.templateIdV1) expect(deriveTemplateIdV1(v.endpointId, v.encodedParameters)).to.equal(v.templateIdV1);
      if (v.mnemonic) expect(deriveNodeAddress(v.mnemonic)).to.equal(v.nodeAddress);
    }
    expect(vectors.templateIdsV0.some((v: { templateIdV1?: string }) => v.templateIdV1)).to.equal(true);
  });

  it('derives deployment ids', () => {
    for (const v of vectors.deploymentIds) {
      expect(deriveDeploymentId(v.cloudProvider, v.nodeAddress, v.stage, v.nodeVersion)).to.equal(v.deploymentId);
    }
  });

  it('derives the full request id', () => {
    const { inputs, requestId } = vectors.fullRequestId;
    expect(
      deriveFullRequestId({
        ...inputs,
        nodeAddress: inputs.airnode,
      }),
    ).to.equal(requestId);
  });

  it('signs fulfilments like the reference (EIP-191 over keccak256(requestId ‖ data))', async () => {
    const v = vectors.fulfillSignature;
    const hash = keccak256(solidityPacked(['bytes32', 'bytes'], [v.requestId, v.data]));
    expect(hash).to.equal(v.hash_keccak256_packed_requestId_data);
    const signature = await nodeWallet(v.signerMnemonic).signMessage(getBytes(hash));
    expect(signature).to.equal(v.signature_eip191_over_32_byte_hash);
    expect(verifyMessage(getBytes(hash), signature)).to.equal(v.recovers_to);
    expect(HDNodeWallet.fromPhrase(v.signerMnemonic).address).to.equal(v.recovers_to);
  });
});

describe('deriveEndpointId (direct encoding) against ethers ABI coders', () => {
  // Reference node 0.15 derives with ethers 5 (@ethersproject/abi); the general ethers 6 coder is the other oracle.
  const require = createRequire(import.meta.url);
  const ethers5Abi = require('@ethersproject/abi') as {
    defaultAbiCoder: { encode: (t: string[], v: string[]) => string };
  };
  const ethers5Keccak = require('@ethersproject/keccak256') as { keccak256: (data: string) => string };
  const ethers5 = (a: string, b: string) =>
    ethers5Keccak.keccak256(ethers5Abi.defaultAbiCoder.encode(['string', 'string'], [a, b]));
  const v6 = AbiCoder.defaultAbiCoder();
  const ethers6 = (a: string, b: string) => keccak256(v6.encode(['string', 'string'], [a, b]));

  it('is byte-identical for any well-formed strings (ASCII, multi-byte, astral, word-boundary lengths)', () => {
    const text = fc.oneof(
      fc.string({ maxLength: 80 }),
      fc.string({ unit: 'grapheme', maxLength: 40 }),
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.integer({ min: 0, max: 3 }).map((k) => 'x'.repeat(32 * k)),
      fc.integer({ min: 0, max: 3 }).map((k) => 'é'.repeat(16 * k + 1)),
    );
    fc.assert(
      fc.property(text, text, (a, b) => {
        const ours = deriveEndpointId(a, b);
        expect(ours).to.equal(ethers6(a, b));
        expect(ours).to.equal(ethers5(a, b));
        expect(ours).to.equal(deriveEndpointIdWithAbiCoder(a, b));
      }),
      { numRuns: 500 },
    );
  });

  it('answers as ethers does for unpaired surrogates (a lone low surrogate is encoded, a lone high one throws)', () => {
    expect(deriveEndpointId('\udc00api', 'name')).to.equal(ethers6('\udc00api', 'name'));
    expect(() => ethers6('api\ud800', 'name')).to.throw();
    expect(() => deriveEndpointId('api\ud800', 'name')).to.throw();
  });
});
