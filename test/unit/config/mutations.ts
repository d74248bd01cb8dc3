// Random mutations of valid configs for the property and differential tests.
// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} strings are secret references
import fc from 'fast-check';
import type { Json } from './fixtures.js';

export type Mutation =
  | { kind: 'delete'; pick: number }
  | { kind: 'replace'; pick: number; value: unknown }
  | { kind: 'addKey'; pick: number; key: string; value: unknown }
  | { kind: 'nest'; pick: number; depth: number };

export const jsonValue = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.string(),
  fc.constantFrom('0x', '0x123', '${PROVIDER_URL}', '${MISSING}', '\\${X}', '_type', 'get', 'evm', '', ' '),
  fc.array(fc.string(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
);

export const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('replace' as const), pick: fc.nat(), value: jsonValue }),
  fc.record({
    kind: fc.constant('addKey' as const),
    pick: fc.nat(),
    key: fc.string({ maxLength: 8 }),
    value: jsonValue,
  }),
  fc.record({ kind: fc.constant('nest' as const), pick: fc.nat(), depth: fc.integer({ min: 1, max: 400 }) }),
);

/** All container paths and leaf paths of a JSON tree (document order). */
export function allPaths(root: Json): (string | number)[][] {
  const out: (string | number)[][] = [];
  const stack: [Json, (string | number)[]][] = [[root, []]];
  while (stack.length > 0) {
    const [node, path] = stack.pop()!;
    out.push(path);
    if (node && typeof node === 'object') {
      for (const [k, v] of Object.entries(node)) stack.push([v, [...path, Array.isArray(node) ? Number(k) : k]]);
    }
  }
  return out;
}

/** Applies mutations in place (to a deep copy the caller owns). */
export function applyMutations(config: Json, mutations: Mutation[]): Json {
  let root = config;
  for (const m of mutations) {
    const paths = allPaths(root);
    const path = paths[m.pick % paths.length]!;
    if (path.length === 0) {
      if (m.kind === 'replace') root = m.value;
      continue;
    }
    let parent = root;
    for (const key of path.slice(0, -1)) parent = parent[key];
    const last = path[path.length - 1]!;
    if (m.kind === 'delete') {
      if (Array.isArray(parent)) parent.splice(Number(last), 1);
      else delete parent[last];
    } else if (m.kind === 'replace') parent[last] = m.value;
    else if (m.kind === 'addKey') {
      if (parent[last] && typeof parent[last] === 'object' && !Array.isArray(parent[last]))
        parent[last][m.key] = m.value;
      else parent[last] = { [m.key]: m.value };
    } else {
      let nested: Json = parent[last];
      for (let i = 0; i < m.depth; i++) nested = [nested];
      parent[last] = nested;
    }
  }
  return root;
}
