// Which sponsors get a label value of their own in the metrics, and which are counted as `other`. Anyone can sponsor
// a requester of this node, so a label per sponsor would let strangers multiply the series; and a Prometheus counter
// never goes down, so a sponsor once labelled keeps its label for the process's life. The rule: the labels are
// given out by volume while there are free ones, never taken back (docs/metrics.md, "Usage").

/** The label value of every sponsor without one of its own. */
export const OTHER_SPONSOR = 'other';

/** The default number of sponsors with a label of their own (`--metrics-top-sponsors`). */
export const DEFAULT_TOP_SPONSORS = 20;
/**
 * The most a flag may ask for: each labelled sponsor is a few series on every scrape, and a cycle report's entries per
 * sponsor and outcome (2 N, plus `other` per chain) must stay within what the operator reads of a list (1,000).
 */
export const MAX_TOP_SPONSORS = 250;

/**
 * The labelled sponsors after one observation: `labelled` (never changed) plus, while fewer than `limit`, the
 * sponsors of `volumes` not yet labelled, most requests first (ties by key, so the outcome does not depend on the
 * order they were seen in). Keys are whatever identifies a sponsor's series (chain id and address).
 */
export function labelSponsors(
  labelled: ReadonlySet<string>,
  volumes: ReadonlyMap<string, number>,
  limit: number,
): Set<string> {
  const next = new Set(labelled);
  if (next.size >= limit) return next;
  const newcomers = [...volumes]
    .filter(([key, volume]) => volume > 0 && !next.has(key))
    .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : a > b ? 1 : 0));
  for (const [key] of newcomers) {
    if (next.size >= limit) break;
    next.add(key);
  }
  return next;
}

/** The sponsors' label values of one process: `labelOf` after `observe` with each summary's volumes. */
export class SponsorLabels {
  #labelled = new Set<string>();

  /** At most this many labels; lowered, the labels already given stay (a counter cannot be taken back). */
  constructor(public limit: number) {}

  /** Gives free labels to this observation's biggest newcomers (before any of its counts are added). */
  observe(volumes: ReadonlyMap<string, number>): void {
    this.#labelled = labelSponsors(this.#labelled, volumes, this.limit);
  }

  /** The sponsor's label value: its address when it has a label, else `other`. */
  labelOf(chainId: string, sponsor: string): string {
    const address = sponsor.toLowerCase();
    return this.#labelled.has(sponsorKey(chainId, address)) ? address : OTHER_SPONSOR;
  }
}

/** A sponsor's key among the labelled ones: a sponsor has a series per chain. */
export function sponsorKey(chainId: string, sponsor: string): string {
  return `${chainId}/${sponsor.toLowerCase()}`;
}
