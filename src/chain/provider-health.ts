// Whether a chain's providers may be trusted for this cycle, all rules in one place (docs/chain-cycle.md, "Provider
// faults"). A provider can answer and still be wrong for the cycle: on another network, or with a head behind the
// chain (syncing, stale, stuck) or ahead of it (a head no other provider confirms and that it cannot show). Such a
// provider would hold every request "waiting for confirmations" (the confirmation filter takes the lowest head), have
// confirmations and static calls ask for a block that does not exist, or serve a mainnet view to a testnet chain.
// Heads are judged against each other, never one provider's answer alone: a head is believed when another provider
// confirms it or when its provider shows the block at it (that block, by number, chained to the block before when
// known), and reading (a window's read position) goes no further than a block two providers have or one showed
// (`readCeiling`). Also here: how a window's poll backs off a
// provider whose head read timed out. The rules are pure; what they remember between cycles lives in ProviderMemory,
// one per process.
import { asQuantity, type RpcClient, toQuantity } from './rpc.js';
import type { VerifiedChainIds } from './verified-chain-ids.js';

/**
 * Blocks a provider's head may be behind (or ahead of) the head its chain's providers agree on, sampled in the same
 * cycle, before it is left out. Two healthy providers polled at the same moment differ by a block or two, a few more
 * on sub-second chains; ten blocks is two minutes on Ethereum and a few seconds on the fastest chains, and the most a
 * request is held back by a provider that is still used.
 */
export const MAX_PROVIDER_LAG_BLOCKS = 10;

/**
 * How long a provider may stay behind the agreed head at the same head before it is `stalled`. A provider that sees
 * each new block a poll later than the others is behind for one poll (a second at 1 s polls) and then moves: it is
 * never stalled. One that stopped is left out after this long, before it lags MAX_PROVIDER_LAG_BLOCKS on slow chains.
 */
export const STALLED_AFTER_MS = 10_000;

/** Why a provider is not used this cycle (the `fault` of its summary, and the label of its metric). */
export const PROVIDER_FAULTS = [
  'unavailable',
  'oversized',
  'wrong-chain',
  'syncing',
  'lagging',
  'ahead',
  'stalled',
] as const;
export type ProviderFault = (typeof PROVIDER_FAULTS)[number];

export type ProviderHead = {
  name: string;
  currentBlock: number;
  /** Since when (epoch ms) the provider has been seen behind the agreed head at this same head (ProviderMemory). */
  behindSinceMs?: number | undefined;
  /** Whether the provider showed the block at its own head (asked only while its head is ahead: judgeChainHeads). */
  shown?: boolean | undefined;
};
export type HeadFault = {
  fault: 'syncing' | 'lagging' | 'ahead' | 'stalled';
  /** Blocks behind the agreed head (negative: ahead of it). */
  lagBlocks: number;
  /** The head the chain's providers agree on (`agreedHead`). */
  bestBlock: number;
};

/** A head confirmed by another provider: one whose head is within `maxLag` blocks of it. */
function confirmed(head: ProviderHead, heads: ProviderHead[], maxLag: number): boolean {
  return heads.some(
    (other) => other !== head && other.currentBlock > 0 && Math.abs(other.currentBlock - head.currentBlock) <= maxLag,
  );
}

/**
 * The providers to ask for the block at their own head (`eth_getBlockByNumber`) before the heads are judged: those
 * whose head no other provider confirms and that would set the agreed head (above every confirmed head, or, with
 * none confirmed, above the lowest), and the one head of a poll or cycle in which the chain's other `configured`
 * providers gave none. A provider that reports a head it cannot show is lying or broken; one that shows it is ahead
 * for real, and the others lag. With heads that agree (the usual case), or one provider configured, nobody is asked.
 */
export function headsToShow(
  heads: ProviderHead[],
  maxLag = MAX_PROVIDER_LAG_BLOCKS,
  configured = heads.length,
): string[] {
  const live = heads.filter((h) => h.currentBlock > 0);
  if (live.length === 1 && configured > 1) return [live[0]!.name];
  if (live.length < 2) return [];
  const confirmedHeads = live.filter((h) => confirmed(h, live, maxLag)).map((h) => h.currentBlock);
  const floor = confirmedHeads.length > 0 ? Math.max(...confirmedHeads) : Math.min(...live.map((h) => h.currentBlock));
  return live.filter((h) => h.currentBlock > floor && !confirmed(h, live, maxLag)).map((h) => h.name);
}

/**
 * The head the chain's providers agree on: the highest head that another provider confirms within `maxLag` or that
 * its provider showed; with none such, the highest head not disproved (one provider, or two that disagree and were
 * not asked); undefined when every head was disproved. A provider's head alone never sets it when another provider
 * disagrees and it cannot show its block.
 */
export function agreedHead(heads: ProviderHead[], maxLag = MAX_PROVIDER_LAG_BLOCKS): number | undefined {
  const believable = heads.filter((h) => h.shown !== false);
  if (believable.length === 0) return undefined;
  const live = believable.filter((h) => h.currentBlock > 0);
  const backed = live.filter((h) => h.shown === true || confirmed(h, live, maxLag));
  const candidates = backed.length > 0 ? backed : live.length > 0 ? live : believable;
  return Math.max(...candidates.map((h) => h.currentBlock));
}

type HeadRuleInput = { head: ProviderHead; agreed: number; maxLag: number; nowMs: number };
/** One rule per fault: the first that applies names the provider's fault. A new fault is one more rule here. */
const HEAD_RULES: { fault: HeadFault['fault']; applies: (input: HeadRuleInput) => boolean }[] = [
  // A node still syncing reports block 0.
  { fault: 'syncing', applies: ({ head, agreed }) => head.currentBlock === 0 && agreed > 0 },
  // A head the others do not confirm and its provider cannot show: confirmations and static calls would ask for a
  // block that does not exist.
  { fault: 'ahead', applies: ({ head, agreed }) => head.shown === false || head.currentBlock > agreed },
  // It would hold every request "waiting for confirmations" (the confirmation filter takes the lowest head).
  { fault: 'lagging', applies: ({ head, agreed, maxLag }) => agreed - head.currentBlock > maxLag },
  // Behind at the same head for a while (not between two polls: a provider a poll late is behind for one poll).
  {
    fault: 'stalled',
    applies: ({ head, agreed, nowMs }) =>
      head.currentBlock < agreed && head.behindSinceMs !== undefined && nowMs - head.behindSinceMs >= STALLED_AFTER_MS,
  },
];

/**
 * The agreed head of the chain (`agreedHead`) and the providers whose head makes them unfit for this cycle, each
 * with the first rule of HEAD_RULES that applies. The provider(s) with the agreed head are never faulty, so a chain
 * keeps at least one provider unless every head was disproved; one provider alone is never left out by its head.
 */
export function judgeHeads(
  heads: ProviderHead[],
  options: { maxLag?: number; nowMs?: number } = {},
): { agreed: number | undefined; faults: Map<string, HeadFault> } {
  const maxLag = options.maxLag ?? MAX_PROVIDER_LAG_BLOCKS;
  const nowMs = options.nowMs ?? Date.now();
  const agreed = agreedHead(heads, maxLag);
  const faults = new Map<string, HeadFault>();
  for (const head of heads) {
    // With no head believable, each is judged against itself: only a head it could not show is a fault.
    const against = agreed ?? head.currentBlock;
    const rule = HEAD_RULES.find((r) => r.applies({ head, agreed: against, maxLag, nowMs }));
    if (rule) faults.set(head.name, { fault: rule.fault, lagBlocks: against - head.currentBlock, bestBlock: against });
  }
  return { agreed, faults };
}

/**
 * The highest block the chain's providers may read to (logs, and so a window's read position): the highest block
 * that two providers' heads reach, or the head of a provider that showed its block; with one provider configured,
 * its head. Undefined when nothing confirms a block. A provider's head alone, however well confirmed within
 * `maxLag` for the faults, never moves reading past what another provider has or what it showed: a provider one
 * block ahead waits for the others (which the confirmation filter, on the lowest head, does anyway), and one that
 * lies by a few blocks moves nothing.
 */
export function readCeiling(heads: ProviderHead[], configured = heads.length): number | undefined {
  const live = heads.filter((h) => h.currentBlock > 0 && h.shown !== false);
  if (configured === 1) return live[0]?.currentBlock;
  const byHeight = live.map((h) => h.currentBlock).sort((a, b) => b - a);
  const shown = live.filter((h) => h.shown === true).map((h) => h.currentBlock);
  const reached = [...shown, ...(byHeight.length >= 2 ? [byHeight[1]!] : [])];
  return reached.length > 0 ? Math.max(...reached) : undefined;
}

/** The heads judged (`judgeHeads`) and the block the trusted providers read to (`readCeiling`). */
export type HeadJudgement = ReturnType<typeof judgeHeads> & { readTo: number | undefined };

/**
 * The heads of a chain's providers judged against each other, showing blocks where that decides: first the heads
 * `headsToShow` names (a head nobody confirms), then, when the read ceiling would hold the trusted providers below
 * the lowest of their heads (the others lag, stall or were disproved), the highest trusted head. `show` asks a
 * provider for the block at its head (`showsBlock`): one call, only while a provider's claim is ahead of every
 * other; with heads that agree, nobody is asked. A trusted head that cannot show its block is read only up to the
 * ceiling; when nothing at all confirms a block, the heads are judged again as disproved, so the chain reads nothing
 * this cycle rather than trust one provider's word.
 */
export async function judgeChainHeads(
  heads: ProviderHead[],
  show: (name: string, block: number) => Promise<boolean>,
  options: { configured?: number; maxLag?: number; nowMs?: number } = {},
): Promise<HeadJudgement> {
  const maxLag = options.maxLag ?? MAX_PROVIDER_LAG_BLOCKS;
  const configured = options.configured ?? heads.length;
  const toShow = new Set(headsToShow(heads, maxLag, configured));
  await Promise.all(
    heads
      .filter((h) => toShow.has(h.name))
      .map(async (h) => {
        h.shown = await show(h.name, h.currentBlock);
      }),
  );
  const judged = judgeHeads(heads, options);
  const readTo = readCeiling(heads, configured);
  const trusted = heads.filter((h) => !judged.faults.has(h.name) && h.currentBlock > 0);
  if (trusted.length === 0 || configured === 1) return { ...judged, readTo };
  const lowest = Math.min(...trusted.map((h) => h.currentBlock));
  if (readTo !== undefined && readTo >= lowest) return { ...judged, readTo };
  const highest = trusted.filter((h) => h.shown === undefined).sort((a, b) => b.currentBlock - a.currentBlock)[0];
  if (!highest) return { ...judged, readTo };
  // Not shown, a head the others confirm within maxLag is only read no further than the ceiling; but a head
  // nothing else confirms is disproved.
  if (await show(highest.name, highest.currentBlock)) highest.shown = true;
  else if (readTo === undefined) highest.shown = false;
  return { ...judgeHeads(heads, options), readTo: readCeiling(heads, configured) };
}

/** Polls a provider whose head read timed out sits out: 1, 2, 4, ... up to this many, then it is asked again. */
export const MAX_BACKOFF_POLLS = 16;

/** How many polls a provider sits out after `failures` head reads in a row that timed out or failed (0: none). */
export function backoffPolls(failures: number): number {
  if (failures <= 0) return 0;
  return Math.min(2 ** (failures - 1), MAX_BACKOFF_POLLS);
}

/**
 * How long a poll or a cycle waits for the other providers' heads once one provider answered: a provider that
 * hangs does not hold the chain back longer than this (it sits the poll out; its read goes on in the background).
 */
export const HEAD_GRACE_MS = 1_000;

/** A head read (or a head's block, shown) that takes longer than this counts as no answer. */
export const HEAD_TIMEOUT_MS = 5_000;

const BLOCK_HASH = /^0x[0-9a-fA-F]{64}$/;

/**
 * The hash of `answer` when it is the block at `block`: an object whose `number` is that block, with a hash and a
 * parent hash, and, when the hash of the block before is known (`knownParent`), that one as its parent. Else
 * undefined: a provider that answers a head it claims with another block (or a block out of another chain than the
 * one verified before) does not show it.
 */
export function verifiedBlockHash(answer: unknown, block: number, knownParent?: string): string | undefined {
  if (typeof answer !== 'object' || answer === null) return undefined;
  const { number, hash, parentHash } = answer as { number?: unknown; hash?: unknown; parentHash?: unknown };
  if (typeof number !== 'string' || !/^0x[0-9a-fA-F]{1,16}$/.test(number) || Number(number) !== block) return undefined;
  if (typeof hash !== 'string' || !BLOCK_HASH.test(hash)) return undefined;
  if (typeof parentHash !== 'string' || !BLOCK_HASH.test(parentHash) || parentHash === hash) return undefined;
  if (knownParent !== undefined && parentHash.toLowerCase() !== knownParent.toLowerCase()) return undefined;
  return hash.toLowerCase();
}

/**
 * Whether the provider shows the block at `block` (`eth_getBlockByNumber`, one call): its answer is that block
 * (`verifiedBlockHash`), chained to the block before when `memory` verified that one on the chain earlier; a block
 * shown is remembered for the next check.
 */
export async function showsBlock(
  client: RpcClient,
  block: number,
  verified?: { memory: ProviderMemory; chainId: string },
): Promise<boolean> {
  const answer = await client.request<unknown>('eth_getBlockByNumber', [toQuantity(block), false]);
  const hash = verifiedBlockHash(answer, block, verified?.memory.verifiedBlock(verified.chainId, block - 1));
  if (hash !== undefined) verified?.memory.rememberBlock(verified.chainId, block, hash);
  return hash !== undefined;
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
 * it reported with since when it has been behind at that head (for the "stalled" rule). Keyed by URL in memory only; a URL never leaves it: what is carried to
 * the next process (`verifiedFor`, `adoptVerified`) is keyed by a fingerprint (src/chain/verified-chain-ids.ts).
 */
export class ProviderMemory {
  private readonly chainIds = new Map<string, { chainId: bigint; verifiedAt: number }>();
  private readonly heads = new Map<string, { block: number; behindSinceMs: number | undefined }>();
  /** Per chain, the hashes of the blocks providers showed (the newest VERIFIED_BLOCKS_KEPT). */
  private readonly blocks = new Map<string, Map<number, string>>();

  constructor(private readonly now: () => number = Date.now) {}

  /** The clock the "stalled" rule is judged by (a test's may be its own). */
  nowMs(): number {
    return this.now();
  }

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

  /** Since when the provider has been behind at `block` (undefined: not seen behind at that head). */
  behindSince(chainId: string, url: string, block: number): number | undefined {
    const seen = this.heads.get(`${chainId}\n${url}`);
    return seen?.block === block ? seen.behindSinceMs : undefined;
  }

  /** The hash of the block at `block` of the chain, when a provider showed it earlier. */
  verifiedBlock(chainId: string, block: number): string | undefined {
    return this.blocks.get(chainId)?.get(block);
  }

  /** A block a provider showed: the block after it must be its child (`showsBlock`). */
  rememberBlock(chainId: string, block: number, hash: string): void {
    const blocks = this.blocks.get(chainId) ?? new Map<number, string>();
    this.blocks.set(chainId, blocks);
    blocks.delete(block);
    blocks.set(block, hash);
    for (const oldest of blocks.keys()) {
      if (blocks.size <= VERIFIED_BLOCKS_KEPT) break;
      blocks.delete(oldest);
    }
  }

  /** The provider's head of this cycle, and whether it is behind the agreed head (the "stalled" rule's memory). */
  rememberHead(chainId: string, url: string, block: number, behind: boolean): void {
    const key = `${chainId}\n${url}`;
    const seen = this.heads.get(key);
    const behindSinceMs = !behind ? undefined : seen?.block === block ? (seen.behindSinceMs ?? this.now()) : this.now();
    this.heads.set(key, { block, behindSinceMs });
  }
}

/** How many shown blocks' hashes ProviderMemory keeps per chain: enough for the blocks a window's polls show. */
const VERIFIED_BLOCKS_KEPT = 64;

/** The memory of this process (a long-running `start`, or one coordinator cycle). */
export const processProviderMemory = new ProviderMemory();
