// An Airnode feed's signatures, byte-identical to @api3/airnode-feed 3.x (sign-template-data.ts, utils.ts): the base
// signature is EIP-191 over keccak256(abi.encodePacked(bytes32 templateId, uint256 timestamp, bytes encodedValue)),
// the OEV signature the same over the OEV template id, keccak256(abi.encodePacked(bytes32 templateId)). The key is
// the node's (m/44'/60'/0'/0/0 of nodeSettings.airnodeWalletMnemonic), signing with libsecp256k1.
import { keccak256Hex } from '../protocol/keccak.js';
import { fastMessageSigner, type MessageSigner } from '../protocol/message-signer.js';
import { addressOfPrivateKey, deriveNodePrivateKey } from '../protocol/node-key.js';
import { plainSignedDataDigest } from '../protocol/signed-data.js';

/** One entry of a Signed API batch (`signedData` of POST /{airnode}). */
export type SignedTemplateData = {
  templateId: string;
  timestamp: string;
  encodedValue: string;
  signature: string;
  oevSignature: string;
};

/** The node key as a signer, and its address (the `airnode` of every batch). */
export function feedSigner(mnemonic: string): MessageSigner {
  const privateKey = deriveNodePrivateKey(mnemonic);
  return fastMessageSigner({ address: addressOfPrivateKey(Buffer.from(privateKey.slice(2), 'hex')), privateKey });
}

const hexBytes = (hex: string) => Buffer.from(hex.slice(2), 'hex');

/** keccak256(abi.encodePacked(bytes32 templateId)): the template id of the OEV signature. */
export function deriveOevTemplateId(templateId: string): string {
  return `0x${keccak256Hex(hexBytes(templateId))}`;
}

/** EIP-191 signature over keccak256(templateId ‖ uint256 timestamp ‖ encodedValue) (protocol/signed-data.ts). */
export function signTemplateValue(
  signer: MessageSigner,
  templateId: string,
  timestamp: string,
  encodedValue: string,
): string {
  // The template ids are checked bytes32 (config.ts), the timestamp decimal seconds and the value the encoder's hex.
  const digest = plainSignedDataDigest(templateId, timestamp, encodedValue);
  if (!digest) throw new Error(`template ${templateId}: not a signable value at ${timestamp}`);
  return signer.signMessageSync(digest);
}

/** The base and the OEV signature of one template value. */
export function signTemplateData(
  signer: MessageSigner,
  templateId: string,
  oevTemplateId: string,
  timestamp: string,
  encodedValue: string,
): SignedTemplateData {
  return {
    templateId,
    timestamp,
    encodedValue,
    signature: signTemplateValue(signer, templateId, timestamp, encodedValue),
    oevSignature: signTemplateValue(signer, oevTemplateId, timestamp, encodedValue),
  };
}
