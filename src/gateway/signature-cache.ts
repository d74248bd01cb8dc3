// The node key's signatures are deterministic (RFC 6979: the nonce is derived from the key and the message), so
// the same message always gets the same signature bytes. Callers that ask for the same signed data within the
// same second (one timestamp) need one signing, not one each: this keeps the last signatures by message.
import { hexlify } from 'ethers';
import type { NodeSigner } from './signing.js';

export const DEFAULT_SIGNATURE_CACHE_ENTRIES = 1024;

/** Messages longer than this are signed every time (the gateways sign 32-byte hashes). */
const MAX_CACHED_MESSAGE_BYTES = 64;

/** The signer, with its last `capacity` signatures of short byte messages kept by message (oldest dropped first). */
export function cachingSigner(signer: NodeSigner, capacity = DEFAULT_SIGNATURE_CACHE_ENTRIES): NodeSigner {
  const signatures = new Map<string, string>();
  return {
    get address() {
      return signer.address;
    },
    signMessageSync(message: string | Uint8Array): string {
      if (typeof message === 'string' || message.length > MAX_CACHED_MESSAGE_BYTES) {
        return signer.signMessageSync(message);
      }
      const key = hexlify(message);
      const cached = signatures.get(key);
      if (cached !== undefined) return cached;
      const signature = signer.signMessageSync(message);
      if (signatures.size >= capacity) signatures.delete(signatures.keys().next().value!);
      signatures.set(key, signature);
      return signature;
    },
  };
}
