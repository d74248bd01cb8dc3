// The layering rule of src/, checked by `make lint`: each folder may import only the folders below it, no module
// is loaded by a computed path (the type checker cannot see those), and no modules import each other in a circle
// (an import type or a lazy import() included: a circle is two modules that cannot be read one without the other). The table is docs/architecture.md's
// "where things live". Run: node scripts/check-layers.ts [root]
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Folder of src/ -> the folders of src/ it may import (besides itself). */
export const MAY_IMPORT: Record<string, readonly string[]> = {
  common: [],
  protocol: ['common'],
  contract: ['common'],
  observability: ['common'],
  kube: ['common', 'observability'],
  config: ['common', 'protocol', 'observability'],
  ois: ['common', 'protocol', 'config', 'observability'],
  chain: ['common', 'protocol', 'config', 'ois', 'observability'],
  gateway: ['common', 'protocol', 'config', 'ois', 'chain', 'observability'],
  node: ['common', 'protocol', 'contract', 'config', 'ois', 'chain', 'observability', 'kube'],
  feed: ['common', 'protocol', 'config', 'ois', 'observability'],
  operator: ['common', 'protocol', 'contract', 'config', 'observability', 'kube'],
  cli: [
    'common',
    'protocol',
    'contract',
    'config',
    'ois',
    'chain',
    'observability',
    'kube',
    'gateway',
    'node',
    'feed',
    'operator',
  ],
};

/**
 * Folders with a public face: code outside the folder imports only these files of it (relative to src/), as a
 * package's callers import only its entries. The rest of the folder is internal and may change with it. src/kube has
 * two: the whole runtime (index.ts) and the API client alone (api.ts), for the CLI and the pods, which run no
 * controller and so need not load its metrics.
 */
export const ENTRY_POINTS: Record<string, readonly string[]> = {
  kube: ['kube/index.ts', 'kube/api.ts'],
};

/**
 * Packages that only these files of src/ may load at run time (a value import, static or dynamic); `import type`
 * is erased by the compiler and allowed everywhere. @kubernetes/client-node takes ~0.6 s and ~90 MiB to load: only
 * the kubeconfig loader's fallback for credential plugins (exec, auth-provider) loads it.
 */
export const RUNTIME_IMPORTED_ONLY_FROM: Record<string, readonly string[]> = {
  '@kubernetes/client-node': ['kube/kubeconfig.ts'],
  // Loaded through require, by one file each: an ES module import of node:http loads Node's internal undici, and
  // prom-client's index its Pushgateway (common/node-http.ts, observability/prom-client.ts).
  'node:http': ['common/node-http.ts'],
  'prom-client': ['observability/prom-client.ts'],
};

/**
 * Folders that only some sub-folders of an importing folder may import (paths relative to src/, ending in /): of
 * the node, only its Kubernetes edge talks to the API server; the rest of the node runs without a cluster.
 */
export const IMPORTED_ONLY_FROM: Record<string, readonly string[]> = {
  kube: ['operator/', 'node/kubernetes/', 'cli/'],
};

/**
 * Sub-folders with a rule of their own inside their folder: the paths (relative to src/, a folder ending in /) that
 * their files may import from the rest of that folder. `operator/api` is the OracleNode API, which the whole
 * operator builds on, as CloudNativePG's api/v1 imports nothing of its controllers.
 */
export const INNER_MAY_IMPORT: Record<string, readonly string[]> = {
  'operator/api': ['operator/api/', 'operator/resource.ts'],
  // The reconcile steps: pure builders, the diff, the API and the metrics below them; never the controller that
  // calls them or the webhook. The runtime reaches them only through ReconcileContext (src/kube's entry).
  'operator/reconcile': [
    'operator/reconcile/',
    'operator/builders/index.ts',
    'operator/diff.ts',
    'operator/config.ts',
    'operator/metrics.ts',
    'operator/resource.ts',
  ],
};

/**
 * Files inside a folder kept apart from each other (paths relative to src/, matched as prefixes): the files starting
 * with a key never import the files starting with its values. The node's planner (the cycle and its steps) and a
 * shard's halves share only node/shard-types.ts, the contract and what lies below them, as the operator's reconcile
 * steps and its controller do (docs/architecture.md).
 */
export const KEPT_APART: Record<string, readonly string[]> = {
  'node/cycle': [
    'node/shard.ts',
    'node/shard-run.ts',
    'node/shard-answers.ts',
    'node/shard-send.ts',
    'node/shard-settle.ts',
  ],
  'node/shard': ['node/cycle', 'node/window', 'node/run.ts'],
};

export type Violation = { file: string; line: number; message: string };

// `... from 'x'` (also the last line of a multi-line import) and `import 'x'`.
const STATIC_IMPORT = /(?:\bfrom|^\s*import)\s+(['"])([^'"]+)\1/gm;
const DYNAMIC_IMPORT = /\bimport\s*\(\s*([^)]*)/g;

function sourceFiles(directory: string): string[] {
  return readdirSync(directory)
    .sort()
    .flatMap((entry) => {
      const path = join(directory, entry);
      if (statSync(path).isDirectory()) return sourceFiles(path);
      return /\.(ts|mts|js|mjs)$/.test(entry) && !entry.endsWith('.d.ts') ? [path] : [];
    });
}

/** The top folder of src/ a path lies in, or undefined outside src/ (packages, node: builtins). */
function folderOf(srcRoot: string, path: string): string | undefined {
  const inside = relative(srcRoot, path);
  if (inside.startsWith('..') || inside === '') return undefined;
  return inside.split(sep)[0];
}

export function checkLayers(srcRoot: string): Violation[] {
  const violations: Violation[] = [];
  const files = sourceFiles(srcRoot);
  const known = new Set(files.map((file) => relative(srcRoot, file).split(sep).join('/')));
  /** Module -> the modules of src/ it imports, with the line of the first import of each. */
  const imports = new Map<string, Map<string, number>>();
  for (const file of files) {
    const from = folderOf(srcRoot, file)!;
    const allowed = MAY_IMPORT[from];
    const name = relative(srcRoot, file);
    if (!allowed) {
      violations.push({ file: name, line: 1, message: `folder src/${from} is not in the layering table` });
      continue;
    }
    const text = readFileSync(file, 'utf8');
    const lineAt = (offset: number) => text.slice(0, offset).split('\n').length;
    const specifiers: { specifier: string; line: number; typeOnly: boolean }[] = [];
    for (const found of text.matchAll(STATIC_IMPORT)) {
      // The statement starts at the last `import`/`export` keyword before `from` (multi-line imports included).
      const statement = text.slice(0, found.index + found[0].length);
      const start = Math.max(statement.lastIndexOf('import'), statement.lastIndexOf('export'));
      const typeOnly = /^(?:import|export)\s+type\s/.test(statement.slice(start));
      specifiers.push({ specifier: found[2]!, line: lineAt(found.index), typeOnly });
    }
    for (const dynamic of text.matchAll(DYNAMIC_IMPORT)) {
      const argument = dynamic[1]!.trim();
      const literal = /^(['"])([^'"`$]+)\1$/.exec(argument);
      if (literal) specifiers.push({ specifier: literal[2]!, line: lineAt(dynamic.index), typeOnly: false });
      else if (argument !== '')
        violations.push({
          file: name,
          line: lineAt(dynamic.index),
          message: `import(${argument}) loads a computed path`,
        });
    }
    const edges = new Map<string, number>();
    imports.set(name.split(sep).join('/'), edges);
    for (const { specifier, line, typeOnly } of specifiers) {
      if (specifier.startsWith('.')) {
        const target = relative(srcRoot, resolve(dirname(file), specifier))
          .split(sep)
          .join('/')
          .replace(/\.js$/, '.ts');
        if (known.has(target) && !edges.has(target)) edges.set(target, line);
      }
      const packageImporters = RUNTIME_IMPORTED_ONLY_FROM[specifier];
      const posixName = name.split(sep).join('/');
      if (
        packageImporters &&
        !typeOnly &&
        !packageImporters.some((allowed) =>
          allowed.endsWith('/') ? posixName.startsWith(allowed) : posixName === allowed,
        )
      )
        violations.push({
          file: name,
          line,
          message: `only ${packageImporters.map((p) => `src/${p}`).join(', ')} may load ${specifier} at run time (import type is free)`,
        });
      if (!specifier.startsWith('.')) continue;
      const target = folderOf(srcRoot, resolve(dirname(file), specifier));
      if (target === undefined) {
        violations.push({ file: name, line, message: `imports ${specifier}, outside src/` });
      } else if (target !== from && !allowed.includes(target)) {
        violations.push({ file: name, line, message: `src/${from} may not import src/${target} (${specifier})` });
      } else if (target !== from) {
        const outer = entryViolation(name, target, relative(srcRoot, resolve(dirname(file), specifier)));
        if (outer) violations.push({ file: name, line, message: `${outer} (${specifier})` });
      } else if (target === from) {
        const inner = innerViolation(name, relative(srcRoot, resolve(dirname(file), specifier)));
        if (inner) violations.push({ file: name, line, message: `${inner} (${specifier})` });
        const apart = apartViolation(name, relative(srcRoot, resolve(dirname(file), specifier)));
        if (apart) violations.push({ file: name, line, message: `${apart} (${specifier})` });
      }
    }
  }
  for (const circle of importCircles(imports)) {
    const line = imports.get(circle[0]!)!.get(circle[1]!)!;
    violations.push({ file: circle[0]!, line, message: `import circle: ${circle.join(' -> ')}` });
  }
  return violations;
}

/**
 * One circle through each group of modules that import each other (Tarjan's strongly connected components), as
 * paths from the group's first module back to itself: [a, b, a].
 */
export function importCircles(imports: ReadonlyMap<string, ReadonlyMap<string, number>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (module: string) => {
    index.set(module, index.size);
    low.set(module, index.get(module)!);
    stack.push(module);
    onStack.add(module);
    for (const next of imports.get(module)?.keys() ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(module, Math.min(low.get(module)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(module, Math.min(low.get(module)!, index.get(next)!));
      }
    }
    if (low.get(module) !== index.get(module)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== module);
    if (group.length > 1 || imports.get(module)?.has(module)) groups.push(group.sort());
  };
  for (const module of [...imports.keys()].sort()) if (!index.has(module)) visit(module);
  return groups
    .sort((a, b) => a[0]!.localeCompare(b[0]!))
    .map((group) => {
      // The shortest way from the group's first module back to it, inside the group (breadth first).
      const members = new Set(group);
      const start = group[0]!;
      const cameFrom = new Map<string, string>();
      const queue = [start];
      search: while (queue.length > 0) {
        const at = queue.shift()!;
        for (const next of imports.get(at)?.keys() ?? []) {
          if (!members.has(next) || cameFrom.has(next)) continue;
          cameFrom.set(next, at);
          if (next === start) break search;
          queue.push(next);
        }
      }
      const path = [start];
      for (let at = cameFrom.get(start)!; at !== start; at = cameFrom.get(at)!) path.unshift(at);
      path.unshift(start);
      return path;
    });
}

/** Why an import of another folder breaks that folder's entry or importer rule, or undefined. Paths relative to src/. */
function entryViolation(file: string, folder: string, target: string): string | undefined {
  const posix = (path: string) => path.split(sep).join('/');
  const [source, imported] = [posix(file), posix(target).replace(/\.js$/, '.ts')];
  const importers = IMPORTED_ONLY_FROM[folder];
  if (importers && MAY_IMPORT[source.split('/')[0]!]?.includes(folder)) {
    const own = source.split('/')[0]!;
    const scoped = importers.filter((prefix) => prefix.startsWith(`${own}/`));
    if (scoped.length > 0 && !scoped.some((prefix) => source.startsWith(prefix)))
      return `of src/${own}, only ${scoped.map((p) => `src/${p}`).join(', ')} may import src/${folder}`;
  }
  const entries = ENTRY_POINTS[folder];
  if (entries && !entries.includes(imported))
    return `src/${folder} is imported only through ${entries.map((e) => `src/${e}`).join(' or ')}`;
  return undefined;
}

/** Why an import inside a folder breaks its sub-folder's rule, or undefined. Paths are relative to src/. */
function innerViolation(file: string, target: string): string | undefined {
  const posix = (path: string) => path.split(sep).join('/');
  const [source, imported] = [posix(file), posix(target).replace(/\.js$/, '.ts')];
  for (const [folder, mayImport] of Object.entries(INNER_MAY_IMPORT)) {
    if (!source.startsWith(`${folder}/`)) continue;
    if (!mayImport.some((allowed) => (allowed.endsWith('/') ? imported.startsWith(allowed) : imported === allowed)))
      return `src/${folder} may import of its folder only ${mayImport.map((p) => `src/${p}`).join(', ')}`;
  }
  return undefined;
}

/** Why an import inside a folder breaks a KEPT_APART rule, or undefined. Paths are relative to src/. */
function apartViolation(file: string, target: string): string | undefined {
  const posix = (path: string) => path.split(sep).join('/');
  const [source, imported] = [posix(file), posix(target).replace(/\.js$/, '.ts')];
  for (const [files, apart] of Object.entries(KEPT_APART)) {
    if (!source.startsWith(files)) continue;
    const refused = apart.find((prefix) => imported.startsWith(prefix));
    const shown = (prefix: string) => (prefix.endsWith('.ts') ? prefix : `${prefix}*`);
    if (refused) return `src/${shown(files)} never imports src/${shown(refused)}`;
  }
  return undefined;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..', 'src'));
  const violations = checkLayers(root);
  for (const v of violations) process.stderr.write(`src/${v.file}:${v.line}: ${v.message}\n`);
  if (violations.length > 0) {
    process.stderr.write(`${violations.length} layering violation(s); the rule is in docs/architecture.md\n`);
    process.exit(1);
  }
  process.stdout.write(`layering: ${Object.keys(MAY_IMPORT).length} folders of src/ import only downwards\n`);
}
