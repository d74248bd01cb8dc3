// The chain ids providers answered, carried from one coordinator process to the next (a CronJob runs each cycle
// in a new pod), so that a verified provider costs no eth_chainId per cycle. What is stored names a provider by
// a fingerprint, never by its URL: provider URLs carry API keys and the store (a ConfigMap, a cache directory)
// is readable by more than the node. The fingerprint is an HMAC keyed by a secret the node holds and never
// writes (its wallet mnemonic), so it can neither be reversed nor brute-forced from a list of likely URLs.
// What is read back is untrusted input: anything garbled, oversized or mistyped is dropped (verify again).
import { createHmac } from 'node:crypto';

/** Fingerprint -> the provider's chain id (decimal) and when it was verified (epoch ms). */
export type VerifiedChainIds = Map<string, { chainId: bigint; verifiedAt: number }>;

/** Hex characters of a fingerprint: 128 bits, far past guessing, short enough for many providers per ConfigMap. */
const FINGERPRINT_HEX = 32;
/** Bound on what is read back (entries, bytes): far above any node's providers, far below a ConfigMap's 1 MiB. */
export const MAX_VERIFIED_ENTRIES = 500;
const MAX_STORED_BYTES = 64 * 1024;
const FORMAT = 1;

/** The provider URL's fingerprint under `secret` (domain-separated from any other use of the secret). */
export function providerFingerprint(secret: string, url: string): string {
  return createHmac('sha256', secret)
    .update(`oracle-node provider fingerprint\n${url}`)
    .digest('hex')
    .slice(0, FINGERPRINT_HEX);
}

const FINGERPRINT = new RegExp(`^[0-9a-f]{${FINGERPRINT_HEX}}$`);
const DECIMAL = /^[0-9]{1,78}$/;

/** The stored text, or an empty map when it is missing, garbled, too large or of another format. Never throws. */
export function parseVerifiedChainIds(text: string | undefined): VerifiedChainIds {
  const verified: VerifiedChainIds = new Map();
  if (!text || text.length > MAX_STORED_BYTES) return verified;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return verified;
  }
  if (typeof value !== 'object' || value === null) return verified;
  const { format, providers } = value as { format?: unknown; providers?: unknown };
  if (format !== FORMAT || typeof providers !== 'object' || providers === null || Array.isArray(providers)) {
    return verified;
  }
  for (const [fingerprint, entry] of Object.entries(providers).slice(0, MAX_VERIFIED_ENTRIES)) {
    if (!FINGERPRINT.test(fingerprint) || typeof entry !== 'object' || entry === null) continue;
    const { chainId, verifiedAt } = entry as { chainId?: unknown; verifiedAt?: unknown };
    if (typeof chainId !== 'string' || !DECIMAL.test(chainId)) continue;
    if (typeof verifiedAt !== 'number' || !Number.isSafeInteger(verifiedAt) || verifiedAt < 0) continue;
    verified.set(fingerprint, { chainId: BigInt(chainId), verifiedAt });
  }
  return verified;
}

/** The text to store (the most recently verified entries first when over the bound). */
export function serializeVerifiedChainIds(verified: VerifiedChainIds): string {
  const entries = [...verified]
    .sort((a, b) => b[1].verifiedAt - a[1].verifiedAt)
    .slice(0, MAX_VERIFIED_ENTRIES)
    .sort((a, b) => (a[0] < b[0] ? -1 : 1));
  const providers = Object.fromEntries(
    entries.map(([fingerprint, { chainId, verifiedAt }]) => [fingerprint, { chainId: String(chainId), verifiedAt }]),
  );
  return JSON.stringify({ format: FORMAT, providers });
}
