// Which packages a child process loads: a module hook (node --import) appends every URL the process loads to a
// file, and `packages()` names the node_modules packages among them. At exit the process also writes the CommonJS
// files in require's cache (a hook under tsx does not see what createRequire loads) and the built-in modules Node
// loaded. For tests that hold a command to loading only what it uses (start-up time and memory are mostly module
// loading).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export type ModuleRecorder = {
  /** Arguments for node, before the entry: `--import <hook>`. */
  nodeArgs: string[];
  /** Every URL loaded so far. */
  urls(): string[];
  /** The packages (node_modules/<name>) loaded so far. */
  packages(): Set<string>;
  /** After the process exited: the files require loaded (its cache), absolute paths. */
  requiredFiles(): string[];
  /** After the process exited: the built-in modules Node loaded, internal ones included (`http`, `internal/...`). */
  builtins(): string[];
  remove(): void;
};

export function recordLoadedModules(): ModuleRecorder {
  const dir = mkdtempSync(join(tmpdir(), 'loaded-modules-'));
  const record = join(dir, 'loaded.txt');
  const atExit = join(dir, 'at-exit.json');
  const hook = join(dir, 'record-modules.mjs');
  writeFileSync(record, '');
  writeFileSync(
    hook,
    `import { createRequire, registerHooks } from 'node:module';
import { appendFileSync, writeFileSync } from 'node:fs';
registerHooks({ load(url, context, next) { appendFileSync(${JSON.stringify(record)}, url + '\\n'); return next(url, context); } });
const require = createRequire(import.meta.url);
process.on('exit', () => writeFileSync(${JSON.stringify(atExit)}, JSON.stringify({
  required: Object.keys(require.cache),
  builtins: process.moduleLoadList.filter((entry) => entry.startsWith('NativeModule ')).map((entry) => entry.slice(13)),
})));
`,
  );
  const exitRecord = () => JSON.parse(readFileSync(atExit, 'utf8')) as { required: string[]; builtins: string[] };
  const urls = () => readFileSync(record, 'utf8').split('\n').filter(Boolean);
  return {
    nodeArgs: ['--import', pathToFileURL(hook).href],
    urls,
    packages: () =>
      new Set(
        urls()
          .map((url) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1])
          .filter((name): name is string => name !== undefined),
      ),
    requiredFiles: () => exitRecord().required,
    builtins: () => exitRecord().builtins,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
