// A real sandbox for processing snippets: QuickJS compiled to WebAssembly. Each execution gets a fresh
// runtime and context (no state leaks between calls) from one shared compiled module. Nothing of the
// host is reachable: no process, require, filesystem, environment or network; values cross the
// boundary as JSON strings only. A deadline interrupts busy loops, a memory limit stops allocation
// bombs, a stack limit stops runaway recursion, and timers are emulated by the host so async code works.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import variantImport from '@jitl/quickjs-wasmfile-release-sync';
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSSyncVariant,
  type QuickJSWASMModule,
} from 'quickjs-emscripten-core';

// The package's types describe its CommonJS build; under ESM the default export is the variant itself.
const variant = ((variantImport as unknown as { default?: QuickJSSyncVariant }).default ??
  variantImport) as unknown as QuickJSSyncVariant;

// The compiler's lib has no DOM/WebAssembly typings; declare the two members used here.
type WasmModule = object;
type WasmMemory = { buffer: ArrayBuffer };
const wasm = (
  globalThis as unknown as {
    WebAssembly: {
      compile(bytes: Uint8Array): Promise<WasmModule>;
      Memory: new (descriptor: { initial: number; maximum: number }) => WasmMemory;
    };
  }
).WebAssembly;

export const DEFAULT_MEMORY_LIMIT_BYTES = 64 * 1024 * 1024;
const WASM_PAGE_BYTES = 65_536;
/** The QuickJS build starts with 16 MiB of linear memory; the limit cannot be lower than that plus headroom. */
const INITIAL_PAGES = 256;
const MIN_MEMORY_LIMIT_BYTES = 32 * 1024 * 1024;
const MAX_IDLE_MODULES = 4;
/** Below the WebAssembly stack, so QuickJS reports the overflow itself instead of trapping the instance. */
export const DEFAULT_STACK_LIMIT_BYTES = 256 * 1024;
const MAX_TIMERS = 1_000;
const MAX_LOG_LINES = 100;
const MAX_LOG_LINE_LENGTH = 2_000;

/**
 * sync: evaluate as a script and return the global `output` right away (V1 "Node").
 * callback: evaluate as a script that calls `resolve`/`reject` (V1 "Node async").
 * function: `value` is a function expression called with `payload`, awaited (V2).
 */
export type SandboxMode = 'sync' | 'callback' | 'function';

export type SandboxOptions = {
  code: string;
  mode: SandboxMode;
  /** JSON-serialisable values defined as globals before the code runs. */
  globals: Record<string, unknown>;
  timeoutMs: number;
  /** Message used when the deadline passes (texts as in the reference). */
  timeoutMessage: string;
  memoryLimitBytes?: number | undefined;
  stackLimitBytes?: number | undefined;
  /** Receives console output of the snippet (never printed by the sandbox itself). */
  logs?: string[] | undefined;
};

export class SandboxError extends Error {}

let compiledWasm: Promise<WasmModule> | undefined;
type PooledModule = { module: QuickJSWASMModule; memory: WasmMemory; memoryLimitBytes: number };
const idleModules: PooledModule[] = [];

function compileWasm(): Promise<WasmModule> {
  const require = createRequire(import.meta.url);
  const wasmPath = require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm');
  return readFile(wasmPath).then((bytes) => wasm.compile(bytes));
}

function effectiveMemoryLimit(requested: number | undefined): number {
  return Math.max(requested ?? DEFAULT_MEMORY_LIMIT_BYTES, MIN_MEMORY_LIMIT_BYTES);
}

/**
 * QuickJS' own memory accounting does not work in this WebAssembly build (allocation sizes are not
 * tracked), so the cap is the linear memory itself: every instance gets a Memory whose maximum is the
 * limit, and an instance serves one execution at a time. Compilation happens once; instances are pooled.
 */
async function acquireModule(memoryLimitBytes: number): Promise<PooledModule> {
  const index = idleModules.findIndex((entry) => entry.memoryLimitBytes === memoryLimitBytes);
  if (index >= 0) return idleModules.splice(index, 1)[0]!;
  compiledWasm ??= compileWasm();
  const wasmModule = await compiledWasm;
  const memory = new wasm.Memory({
    initial: INITIAL_PAGES,
    maximum: Math.ceil(memoryLimitBytes / WASM_PAGE_BYTES),
  });
  const module = await newQuickJSWASMModuleFromVariant(
    newVariant(variant, { wasmModule, wasmMemory: memory } as Parameters<typeof newVariant>[1]),
  );
  return { module, memory, memoryLimitBytes };
}

function releaseModule(entry: PooledModule, healthy: boolean): void {
  // WebAssembly memory never shrinks: an instance whose memory grew (a snippet that allocated a lot, or ran out
  // of memory) is dropped so that the host gets the memory back; only instances at their initial size are kept.
  const grown = entry.memory.buffer.byteLength > INITIAL_PAGES * WASM_PAGE_BYTES;
  if (healthy && !grown && idleModules.length < MAX_IDLE_MODULES) idleModules.push(entry);
}

/** Compiles the WebAssembly module ahead of the first execution (optional warm-up). */
export async function warmUpSandbox(): Promise<void> {
  releaseModule(await acquireModule(effectiveMemoryLimit(undefined)), true);
}

const PRELUDE = `
(() => {
  const settle = globalThis.__hostSettle;
  const log = globalThis.__hostLog;
  const hostTimer = globalThis.__hostTimer;
  const hostClear = globalThis.__hostClear;
  // Captured before user code runs, so a snippet replacing JSON.stringify cannot forge the transfer format.
  const stringify = JSON.stringify;
  delete globalThis.__hostSettle;
  delete globalThis.__hostLog;
  delete globalThis.__hostTimer;
  delete globalThis.__hostClear;
  const format = (value) => {
    if (typeof value === 'string') return value;
    try { const json = stringify(value); return json === undefined ? String(value) : json; } catch { return String(value); }
  };
  const write = (...args) => log(args.map(format).join(' '));
  globalThis.console = { log: write, info: write, warn: write, error: write, debug: write, trace: write };
  const timers = new Map();
  let nextId = 1;
  const schedule = (repeat) => (callback, delay, ...args) => {
    const id = nextId++;
    const ms = Math.max(0, Number(delay) || 0);
    timers.set(id, { callback, args, repeat, ms });
    hostTimer(id, ms);
    return id;
  };
  globalThis.setTimeout = schedule(false);
  globalThis.setInterval = schedule(true);
  globalThis.clearTimeout = globalThis.clearInterval = (id) => { if (timers.delete(id)) hostClear(id); };
  globalThis.__fireTimer = (id) => {
    const timer = timers.get(id);
    if (!timer) return;
    if (timer.repeat) hostTimer(id, timer.ms); else timers.delete(id);
    if (typeof timer.callback === 'function') timer.callback(...timer.args);
  };
  const describe = (error) => {
    if (error && typeof error === 'object' && 'message' in error) {
      const name = String(error.name || 'Error');
      return name === 'Error' ? String(error.message) : name + ': ' + String(error.message);
    }
    return format(error);
  };
  let settled = false;
  globalThis.__finish = (value) => {
    if (settled) return;
    settled = true;
    let json;
    try { json = stringify(value); } catch (error) { settle('error', 'Processing output is not JSON-serializable: ' + describe(error)); return; }
    if (json === undefined) settle('undefined', ''); else settle('ok', json);
  };
  globalThis.__fail = (error) => {
    if (settled) return;
    settled = true;
    settle('error', describe(error));
  };
  globalThis.resolve = (value) => globalThis.__finish(value);
  globalThis.reject = (error) => globalThis.__fail(error);
})();
`;

type Outcome = { kind: 'ok'; json: string } | { kind: 'undefined' } | { kind: 'error'; message: string };

function script(options: SandboxOptions): string {
  switch (options.mode) {
    case 'sync':
      return `${options.code}\n;__finish(output);`;
    case 'callback':
      return options.code;
    case 'function':
      return `(async () => await (${options.code}\n)(payload))().then((v) => __finish(v), (e) => __fail(e));`;
  }
}

class Execution {
  private readonly runtime: QuickJSRuntime;
  private readonly context: QuickJSContext;
  private readonly hostTimers = new Map<number, NodeJS.Timeout>();
  private outcome: Outcome | undefined;
  private finished = false;
  private wake: (() => void) | undefined;
  readonly deadline: number;
  /** False once the instance ran out of memory or failed inside WebAssembly: it is then discarded. */
  healthy = true;

  constructor(
    module: QuickJSWASMModule,
    private readonly options: SandboxOptions,
    private readonly memory?: WasmMemory,
  ) {
    this.deadline = Date.now() + options.timeoutMs;
    this.runtime = module.newRuntime();
    // Still useful for single huge allocations; the linear-memory maximum is the real cap.
    this.runtime.setMemoryLimit(effectiveMemoryLimit(options.memoryLimitBytes));
    this.runtime.setMaxStackSize(options.stackLimitBytes ?? DEFAULT_STACK_LIMIT_BYTES);
    this.runtime.setInterruptHandler(() => Date.now() > this.deadline);
    this.context = this.runtime.newContext();
    this.installHostFunctions();
  }

  private installHostFunctions(): void {
    const ctx = this.context;
    const define = (name: string, fn: (...args: QuickJSHandle[]) => void) => {
      const handle = ctx.newFunction(name, fn);
      ctx.setProp(ctx.global, name, handle);
      handle.dispose();
    };
    define('__hostSettle', (kind, payload) => {
      const kindText = ctx.getString(kind!);
      const text = ctx.getString(payload!);
      if (kindText === 'ok') this.settle({ kind: 'ok', json: text });
      else if (kindText === 'undefined') this.settle({ kind: 'undefined' });
      else if (/out of memory/i.test(text) || (text === 'null' && this.nearMemoryLimit())) {
        // QuickJS throws null when it cannot even allocate the out-of-memory error.
        this.healthy = false;
        this.settle({ kind: 'error', message: this.memoryMessage() });
      } else this.settle({ kind: 'error', message: text });
    });
    define('__hostLog', (line) => {
      const logs = this.options.logs;
      if (!logs || logs.length >= MAX_LOG_LINES) return;
      logs.push(ctx.getString(line!).slice(0, MAX_LOG_LINE_LENGTH));
    });
    define('__hostTimer', (idHandle, msHandle) => {
      const id = ctx.getNumber(idHandle!);
      const ms = ctx.getNumber(msHandle!);
      if (this.hostTimers.size >= MAX_TIMERS) throw new Error('Too many timers');
      // A timer that cannot fire within the budget never fires: the run ends with the timeout, every time
      // (shortening it would let a snippet awaiting a 1 h timer succeed when the budget runs out).
      if (Date.now() + ms > this.deadline) return;
      this.hostTimers.set(
        id,
        setTimeout(() => this.fireTimer(id), ms),
      );
    });
    define('__hostClear', (idHandle) => {
      const id = ctx.getNumber(idHandle!);
      clearTimeout(this.hostTimers.get(id));
      this.hostTimers.delete(id);
    });
    for (const [name, value] of Object.entries(this.options.globals)) {
      const json = JSON.stringify(value);
      if (json === undefined) continue;
      const text = ctx.newString(json);
      ctx.setProp(ctx.global, '__json', text);
      text.dispose();
      this.evaluate(`globalThis[${JSON.stringify(name)}] = JSON.parse(globalThis.__json); delete globalThis.__json;`);
    }
    this.evaluate(PRELUDE);
  }

  /** Runs code; a thrown sandbox error becomes an outcome (unless one is already set). */
  private evaluate(code: string): void {
    const result = this.context.evalCode(code, 'processing.js');
    if (result.error) {
      this.failWith(result.error);
      result.error.dispose();
    } else {
      result.value.dispose();
    }
  }

  private failWith(errorHandle: QuickJSHandle): void {
    if (this.outcome) return;
    // Lift the memory limit so that reading the error of an out-of-memory failure cannot fail again.
    this.runtime.setMemoryLimit(-1);
    let dumped: unknown;
    try {
      dumped = this.context.dump(errorHandle);
    } catch {
      dumped = { name: 'InternalError', message: 'out of memory' };
    }
    this.runtime.setMemoryLimit(effectiveMemoryLimit(this.options.memoryLimitBytes));
    this.settle({ kind: 'error', message: this.classify(dumped) });
  }

  /** A WebAssembly trap (for example memory exhausted in native code) ends the execution. */
  trap(): void {
    this.healthy = false;
    this.settle({ kind: 'error', message: this.memoryMessage() });
  }

  private settle(outcome: Outcome): void {
    if (this.outcome) return;
    if (outcome.kind === 'error' && Date.now() > this.deadline && outcome.message !== this.memoryMessage()) {
      this.outcome = { kind: 'error', message: this.options.timeoutMessage };
    } else {
      this.outcome = outcome;
    }
    this.wake?.();
  }

  /** The linear memory has grown to most of its maximum (what a failed allocation looks like from outside). */
  private nearMemoryLimit(): boolean {
    if (!this.memory) return false;
    return this.memory.buffer.byteLength >= 0.75 * effectiveMemoryLimit(this.options.memoryLimitBytes);
  }

  private memoryMessage(): string {
    return `Processing exceeded the memory limit of ${effectiveMemoryLimit(this.options.memoryLimitBytes)} bytes`;
  }

  private classify(error: unknown): string {
    const name = typeof error === 'object' && error !== null ? String((error as { name?: unknown }).name ?? '') : '';
    const message =
      typeof error === 'object' && error !== null
        ? String((error as { message?: unknown }).message ?? '')
        : String(error);
    if (/out of memory/i.test(message) || (error === null && this.nearMemoryLimit())) {
      this.healthy = false;
      return this.memoryMessage();
    }
    if (Date.now() > this.deadline || message === 'interrupted') return this.options.timeoutMessage;
    if (/stack overflow/i.test(message)) return 'Processing exceeded the maximum stack size';
    if (!name || name === 'Error') return message;
    return `${name}: ${message}`;
  }

  private drainJobs(): void {
    for (;;) {
      if (this.outcome || !this.runtime.hasPendingJob()) return;
      const result = this.runtime.executePendingJobs();
      if (result.error) {
        this.failWith(result.error);
        result.error.dispose();
        return;
      }
    }
  }

  private fireTimer(id: number): void {
    this.hostTimers.delete(id);
    if (this.finished || this.outcome) return;
    try {
      this.evaluate(`__fireTimer(${id})`);
      this.drainJobs();
    } catch {
      this.trap();
    }
  }

  async run(): Promise<Outcome> {
    if (this.outcome) return this.outcome;
    this.evaluate(script(this.options));
    if (this.options.mode === 'sync') {
      return this.outcome ?? { kind: 'error', message: 'Processing did not produce an output' };
    }
    this.drainJobs();
    if (!this.outcome) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, this.deadline - Date.now()) + 1);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return this.outcome ?? { kind: 'error', message: this.options.timeoutMessage };
  }

  dispose(): void {
    this.finished = true;
    for (const timer of this.hostTimers.values()) clearTimeout(timer);
    this.hostTimers.clear();
    try {
      this.context.dispose();
      this.runtime.dispose();
    } catch {
      // A failed disposal means the WebAssembly instance may be corrupt: never reuse it.
      this.healthy = false;
    }
  }
}

/**
 * Runs a snippet and returns its JSON-decoded result (undefined when it produced undefined).
 * Throws SandboxError with a clear message for timeouts, memory/stack limits, thrown errors and
 * non-JSON results; the host process is never affected.
 */
export async function runInSandbox(options: SandboxOptions): Promise<unknown> {
  const memoryLimitBytes = effectiveMemoryLimit(options.memoryLimitBytes);
  const pooled = await acquireModule(memoryLimitBytes);
  let execution: Execution | undefined;
  let outcome: Outcome;
  try {
    execution = new Execution(pooled.module, options, pooled.memory);
    outcome = await execution.run();
  } catch (error) {
    // Only a WebAssembly trap gets here (sandbox errors are outcomes): host stack or memory exhausted.
    execution?.trap();
    outcome =
      error instanceof RangeError && /call stack/i.test(error.message)
        ? { kind: 'error', message: 'Processing exceeded the maximum stack size' }
        : { kind: 'error', message: `Processing exceeded the memory limit of ${memoryLimitBytes} bytes` };
  } finally {
    execution?.dispose();
    releaseModule(pooled, execution?.healthy ?? false);
  }
  if (outcome.kind === 'error') throw new SandboxError(outcome.message);
  if (outcome.kind === 'undefined') return undefined;
  try {
    return JSON.parse(outcome.json);
  } catch {
    throw new SandboxError('Processing output is not valid JSON');
  }
}
