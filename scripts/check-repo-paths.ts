// Fails when a file of the project names a relative path that leaves the repository (a `shared/` folder beside the
// clone, reached with `../`): a clone must build and test with nothing next to it.
//
//   node --import tsx scripts/check-repo-paths.ts          scans the project's folders, exits 1 on a violation
//
// A path is resolved from the folder of the TypeScript file that names it (new URL(path, import.meta.url)); in every
// other file (shell, make, YAML, CI), from the repository root, where make and CI run them; and from the root when it
// starts with a variable that names the root ($ROOT, $(CURDIR), repoRoot, ...), also behind a ${VAR:-default}.
// A line that must name such a path on purpose carries the marker `repo-paths: allow`.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

export type PathViolation = { file: string; line: number; path: string };

/** The folders and top-level files the rule covers (the repository's own code, build and CI). */
export const SCANNED = ['src', 'test', 'bench', 'scripts', 'image', 'charts', 'crds', '.ci', '.github', 'Makefile'];
const SKIPPED_DIRS = new Set(['node_modules', '.cache', 'dist', 'coverage', '.git', 'fixtures']);
const ALLOW_MARKER = 'repo-paths: allow';
const ROOT_VARIABLE = /^(?:\$\{?|\$\()?(?:[A-Za-z_]*root[A-Za-z_]*|CURDIR|REPO|TOP)\}?\)?$/i;

const resolvesFromItsFolder = (file: string) => /\.(?:ts|mts|js|mjs)$/.test(file);

/** Depth of the file's folder below the root. */
function folderDepth(file: string): number {
  const dir = dirname(file);
  return dir === '.' ? 0 : dir.split('/').length;
}

/** The lowest depth a relative path reaches when walked from `start`; a negative result has left the root. */
function lowestDepth(segments: string[], start: number, folderDepth: number): number {
  let depth = start;
  let lowest = depth;
  segments.forEach((raw, i) => {
    const segment = i === 0 ? raw.replace(/^\$\{\w+:?-/, '') : raw; // ${VAR:-$ROOT/..}: the default is the path
    if (segment === '..') depth -= 1;
    else if (segment === '' || segment === '.') return;
    else if (i === 0 && ROOT_VARIABLE.test(segment)) depth = 0;
    else if (i === 0 && segment.startsWith('$'))
      depth = folderDepth; // $HERE, $(dirname "$0"): the file's folder
    else depth += 1;
    lowest = Math.min(lowest, depth);
  });
  return lowest;
}

// A path-like word with `..` as one of its segments (not `...` spread, not `{1..3}` ranges).
const PATH_WORD = /[^\s'"`<>|;,=()]*(?<![.\w])\.\.(?![.\w])[^\s'"`<>|;,=()]*/g;
// join(root, '..', 'x') or resolve(root, '..'): the `..` arrive as separate arguments. repo-paths: allow
const JOIN_CALL = /\b(?:join|resolve)\(\s*([\w.$]+)\s*((?:,\s*['"][^'"]*['"]\s*)+)\)/g;

/** Every relative path in `text` (the content of `file`, relative to the root) that resolves outside the root. */
export function escapingPaths(file: string, text: string): PathViolation[] {
  const here = folderDepth(file);
  const start = resolvesFromItsFolder(file) ? here : 0;
  const violations: PathViolation[] = [];
  text.split('\n').forEach((content, index) => {
    // A relative symlink target resolves from the link, wherever that is.
    if (content.includes(ALLOW_MARKER) || /\bln\s+-\w*s/.test(content)) return;
    const report = (path: string) => violations.push({ file, line: index + 1, path });
    for (const match of content.matchAll(PATH_WORD)) {
      const word = match[0];
      if (word.includes('://') || word.startsWith('/')) continue; // URLs and absolute paths are not relative
      if (lowestDepth(word.split('/'), start, here) < 0) report(word);
    }
    for (const match of content.matchAll(JOIN_CALL)) {
      const base = match[1] ?? '';
      const parts = [...(match[2] ?? '').matchAll(/['"]([^'"]*)['"]/g)].map((m) => m[1] ?? '');
      if (!parts.some((p) => p.split('/').includes('..'))) continue;
      const from = ROOT_VARIABLE.test(base) ? 0 : here;
      if (lowestDepth(parts.join('/').split('/'), from, here) < 0) report(`${base}, ${parts.join(', ')}`);
    }
  });
  return violations;
}

function* filesUnder(root: string, entry: string): Generator<string> {
  const full = join(root, entry);
  let stat: ReturnType<typeof statSync>;
  try {
    stat = statSync(full);
  } catch {
    return; // a folder this checkout does not have
  }
  if (stat.isFile()) {
    yield entry;
    return;
  }
  for (const child of readdirSync(full, { withFileTypes: true })) {
    if (child.isDirectory() && SKIPPED_DIRS.has(child.name)) continue;
    if (child.isSymbolicLink()) continue;
    yield* filesUnder(root, join(entry, child.name));
  }
}

/** Scans the project's files under `root`; binary files (with a NUL byte) are skipped. */
export function scanRepository(root: string): PathViolation[] {
  const violations: PathViolation[] = [];
  for (const entry of SCANNED) {
    for (const file of filesUnder(root, entry)) {
      const text = readFileSync(join(root, file), 'utf8');
      if (text.includes('\u0000')) continue;
      violations.push(...escapingPaths(relative(root, join(root, file)), text));
    }
  }
  return violations;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const root = join(dirname(new URL(import.meta.url).pathname), '..');
  const violations = scanRepository(root);
  for (const v of violations) console.error(`${v.file}:${v.line}: ${v.path} leaves the repository`);
  if (violations.length > 0) {
    console.error(`${violations.length} path(s) outside the repository: keep what the project needs inside it`);
    process.exit(1);
  }
  console.log('repo paths: nothing points outside the repository');
}
