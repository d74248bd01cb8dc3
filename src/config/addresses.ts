// Addresses of chains[] with a mixed-case EIP-55 checksum that does not match. The reference's validator takes any
// 0x + 40 hex digits (its own config.example.json has such authorizers), but ethers refuses to encode them: used as
// written they would fail the node's calls and transactions. They are used by their 20 bytes, in checksummed form,
// and validation warns, since a wrong checksum often means a mistyped address.
import { getAddress } from '../protocol/address.js';
import { formatPath, type PathSegment } from './paths.js';
import type { Issue } from './secrets.js';

const MIXED_CASE_ADDRESS = /^0x(?=[0-9a-fA-F]*[a-f])(?=[0-9a-fA-F]*[A-F])[0-9a-fA-F]{40}$/;

/** The checksummed form of an address whose checksum does not match, or undefined for any other value. */
function repaired(value: string): string | undefined {
  if (!MIXED_CASE_ADDRESS.test(value)) return undefined;
  const checksummed = getAddress(value.toLowerCase());
  return checksummed === value ? undefined : checksummed;
}

/** Calls visit for every string under node, with its path; visit's answer, when given, replaces the string. */
function walkStrings(
  node: unknown,
  path: PathSegment[],
  visit: (value: string, path: PathSegment[]) => string | undefined,
): void {
  if (typeof node !== 'object' || node === null) return;
  const entries: [PathSegment, unknown][] = Array.isArray(node)
    ? node.map((item, index) => [index, item])
    : Object.entries(node);
  for (const [key, item] of entries) {
    if (typeof item === 'string') {
      const replacement = visit(item, [...path, key]);
      if (replacement !== undefined) (node as Record<PathSegment, unknown>)[key] = replacement;
    } else walkStrings(item, [...path, key], visit);
  }
}

/** A warning for each address of the config's chains whose checksum does not match (the config as written). */
export function addressChecksumWarnings(config: unknown): Issue[] {
  const warnings: Issue[] = [];
  const chains = (config as { chains?: unknown } | null)?.chains;
  walkStrings(chains, ['chains'], (value, path) => {
    const checksummed = repaired(value);
    if (checksummed !== undefined)
      warnings.push({
        path: formatPath(path),
        message: `Address checksum (EIP-55) does not match: a mistyped address? Used by its 20 bytes, as ${checksummed}`,
      });
    return undefined;
  });
  return warnings;
}

/** Replaces, in a parsed config's chains, each address whose checksum does not match with its checksummed form. */
export function repairAddressChecksums(config: { chains: unknown[] }): void {
  walkStrings(config.chains, ['chains'], (value) => repaired(value));
}
