// Whether a chain's providers may be trusted for this cycle. Discovery on a provider can succeed and still be
// wrong for the cycle: a provider on another network, or one whose head is behind the chain (syncing, stale,
// stuck). Such a provider would hold every request "waiting for confirmations" (the confirmation filter takes
// the lowest head), or serve a mainnet view to a testnet chain. The rules are pure; what they remember between
// cycles lives in ProviderMemory, one per process.
import { asQuantity, type RpcClient } from './rpc.js';
import type { VerifiedChainIds } from './verified-chain-ids.js';

/**
 * Blocks a provider's head may be behind the best head of its chain, sampled in the same cycle, before it is left
 * out. Two healthy providers polled at the same moment differ by a block or two, a few more on sub-second chains;
 * ten blocks is two minutes on Ethereum and a few seconds on the fastest chains, and the most a request is held
 * back by a provider that is still used.
 */
export const MAX_PROVIDER_LAG_BLOCKS = 10;

/** Why a provider is not used this cycle (the `fault` of its summary, and the label of its metric). */
export const PROVIDER_FAULTS = ['unavailable', 'oversized', 'wrong-chain', 'syncing', 'lagging', 'stalled'] as const;
export type ProviderFault = (typeof PROVIDER_FAULTS)[number];

export type ProviderHead = { name: string; currentBlock: number; previousBlock?: number | undefined };
export type HeadFault = { fault: 'syncing' | 'lagging' | 'stalled'; lagBlocks: number; bestBlock: number };

/**
 * The providers whose head makes them unfit for this cycle: a head of 0 (a node still syncing reports that), more
 * than `maxLag` blocks behind the best head, or not moved since the previous cycle while another provider is ahead
 * (stuck). The best provider is never faulty by these rules, so a chain keeps at least one provider.
 */
export function headFaults(heads: ProviderHead[], maxLag = MAX_PROVIDER_LAG_BLOCKS): Map<string, HeadFault> {
  const faults = new Map<string, HeadFault>();
  if (heads.length === 0) return faults;
  const bestBlock = Math.max(...heads.map((h) => h.currentBlock));
  for (const head of heads) {
    const lagBlocks = bestBlock - head.currentBlock;
    if (head.currentBlock === 0 && bestBlock > 0) faults.set(head.name, { fault: 'syncing', lagBlocks, bestBlock });
    else if (lagBlocks > maxLag) faults.set(head.name, { fault: 'lagging', lagBlocks, bestBlock });
    else if (lagBlocks > 0 && head.previousBlock !== undefined && head.currentBlock <= head.previousBlock) {
      faults.set(head.name, { fault: 'stalled', lagBlocks, bestBlock });
    }
  }
  return faults;
}

/**
 * How long a verified chain id is trusted before the provider is asked again. A provider URL does not move to
 * another network by itself, but an endpoint can be repointed behind the same URL; an hour bounds how long that
 * goes unnoticed at one call per provider per hour (a send to the wrong network fails sooner: see forgetChainId).
 */
export const VERIFIED_CHAIN_ID_MAX_AGE_MS = 3600_000;

/**
 * What the process remembers about provider URLs between cycles: the chain id each one answered (asked once, then
 * trusted for VERIFIED_CHAIN_ID_MAX_AGE_MS, so a verified provider costs no call in later cycles) and the last head
 * it reported (for the "not moved" rule). Keyed by URL in memory only; a URL never leaves it: what is carried to
 * the next process (`verifiedFor`, `adoptVerified`) is keyed by a fingerprint (src/chain/verified-chain-ids.ts).
 */
export class ProviderMemory {
  private readonly chainIds = new Map<string, { chainId: bigint; verifiedAt: number }>();
  private readonly heads = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  /** The provider's chain id: remembered and fresh, or asked (a failed call is not remembered). */
  async chainIdOf(client: RpcClient): Promise<bigint> {
    const known = this.chainIds.get(client.url);
    const age = known ? this.now() - known.verifiedAt : Number.POSITIVE_INFINITY;
    if (known && age >= 0 && age < VERIFIED_CHAIN_ID_MAX_AGE_MS) return known.chainId;
    const chainId = asQuantity(await client.request('eth_chainId', []), 'eth_chainId');
    this.chainIds.set(client.url, { chainId, verifiedAt: this.now() });
    return chainId;
  }

  /** Asks the provider again next time: it failed in a way a provider on another network would. */
  forgetChainId(url: string): void {
    this.chainIds.delete(url);
  }

  /** The remembered chain ids of these URLs, keyed by `fingerprint(url)`: what may be stored outside the process. */
  verifiedFor(urls: Iterable<string>, fingerprint: (url: string) => string): VerifiedChainIds {
    const verified: VerifiedChainIds = new Map();
    for (const url of urls) {
      const known = this.chainIds.get(url);
      if (known) verified.set(fingerprint(url), known);
    }
    return verified;
  }

  /** Takes the chain ids an earlier process verified for these URLs (matched by fingerprint; others are ignored). */
  adoptVerified(verified: VerifiedChainIds, urls: Iterable<string>, fingerprint: (url: string) => string): void {
    for (const url of urls) {
      const entry = verified.get(fingerprint(url));
      if (entry && !this.chainIds.has(url)) this.chainIds.set(url, entry);
    }
  }

  previousHead(chainId: string, url: string): number | undefined {
    return this.heads.get(`${chainId}\n${url}`);
  }

  rememberHead(chainId: string, url: string, block: number): void {
    this.heads.set(`${chainId}\n${url}`, block);
  }
}

/** The memory of this process (a long-running `start`, or one coordinator cycle). */
export const processProviderMemory = new ProviderMemory();
