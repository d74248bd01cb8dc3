// The oldest Node.js the binary runs on (package.json "engines"). Older ones fail deep inside a dependency (undici
// on Node 20) with a stack trace; the binary says so in one line instead.
export const MINIMUM_NODE_VERSION = '22.19.0';

function parts(version: string): number[] {
  return version
    .replace(/^v/, '')
    .split('.')
    .map((part) => Number.parseInt(part, 10) || 0);
}

/** Why this Node.js cannot run the binary, or undefined when it can. */
export function unsupportedNode(version: string, minimum = MINIMUM_NODE_VERSION): string | undefined {
  const have = parts(version);
  const need = parts(minimum);
  for (let i = 0; i < need.length; i++) {
    const a = have[i] ?? 0;
    const b = need[i] ?? 0;
    if (a > b) return undefined;
    if (a < b) return `oracle-node needs Node.js ${minimum} or newer; this is Node.js ${version.replace(/^v/, '')}`;
  }
  return undefined;
}
