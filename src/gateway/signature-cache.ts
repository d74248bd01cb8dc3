// The node key's signatures are deterministic (RFC 6979: the nonce is derived from the key and the message), so
// the same message always gets the same signature bytes. Callers that ask for the same signed data within the
// same second (one timestamp) need one signing, not one each: this keeps the last signatures by message.
import { BaseWallet } from 'ethers';
import { fastMessageSigner } from '../protocol/message-signer.js';
import type { NodeSigner } from './signing.js';

export const DEFAULT_SIGNATURE_CACHE_ENTRIES = 1024;

/** Messages longer than this are signed every time (the gateways sign 32-byte hashes). */
const MAX_CACHED_MESSAGE_BYTES = 64;

/**
 * The gateways' node signer: the signer, with its last `capacity` signatures of short byte messages kept by message
 * (oldest dropped first). An ethers wallet signs through fastMessageSigner (libsecp256k1: the same bytes as the
 * wallet's signMessageSync, about three times faster); any other signer is used as it is.
 */
export function cachingSigner(signer: NodeSigner, capacity = DEFAULT_SIGNATURE_CACHE_ENTRIES): NodeSigner {
  const inner = signer instanceof BaseWallet ? fastMessageSigner(signer) : signer;
  const signatures = new Map<string, string>();
  return {
    get address() {
      return inner.address;
    },
    signMessageSync(message: string | Uint8Array): string {
      if (typeof message === 'string' || message.length > MAX_CACHED_MESSAGE_BYTES) {
        return inner.signMessageSync(message);
      }
      const key = Buffer.from(message.buffer, message.byteOffset, message.length).toString('hex');
      const cached = signatures.get(key);
      if (cached !== undefined) return cached;
      const signature = inner.signMessageSync(message);
      if (signatures.size >= capacity) signatures.delete(signatures.keys().next().value!);
      signatures.set(key, signature);
      return signature;
    },
  };
}
