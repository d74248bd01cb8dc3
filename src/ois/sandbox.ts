// A real sandbox for processing snippets: QuickJS compiled to WebAssembly. Each execution gets a fresh
// runtime and context (no state leaks between calls) from one shared compiled module; the next one is prepared
// (runtime, context, host functions, prelude) while the instance is idle, and the last one is disposed after its
// answer left, so that a call pays only for its own globals and code. Nothing of the
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
type PooledModule = {
  module: QuickJSWASMModule;
  memory: WasmMemory;
  memoryLimitBytes: number;
  /** A fresh execution made while the instance was idle; never run yet, used by exactly one call. */
  prepared?: Execution | undefined;
};
const idleModules: PooledModule[] = [];
/** Disposal and preparation of the next execution, after an answer left; run before any new acquisition. */
const housekeeping: (() => void)[] = [];

function runHousekeeping(): void {
  for (const job of housekeeping.splice(0)) job();
}

function afterAnswer(job: () => void): void {
  housekeeping.push(job);
  if (housekeeping.length === 1) setImmediate(runHousekeeping);
}

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
  runHousekeeping();
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
  if (!healthy || grown || idleModules.length >= MAX_IDLE_MODULES) return;
  try {
    entry.prepared = new Execution(entry.module, entry.memoryLimitBytes, entry.memory);
  } catch {
    // An instance that cannot even prepare a context is not kept.
    entry.prepared = undefined;
    return;
  }
  idleModules.push(entry);
}

/** Compiles the WebAssembly module ahead of the first execution (optional warm-up). */
export async function warmUpSandbox(): Promise<void> {
  const entry = await acquireModule(effectiveMemoryLimit(undefined));
  entry.prepared?.dispose();
  entry.prepared = undefined;
  releaseModule(entry, true);
}

/**
 * How a thrown value reads in an error message. Evaluated only on the error path (parsing is most of what a context
 * costs, so nothing is evaluated before a call's own code), with JSON.stringify as it was before user code ran.
 */
const DESCRIBE = `((stringify) => (error) => {
  if (error && typeof error === 'object' && 'message' in error) {
    const name = String(error.name || 'Error');
    return name === 'Error' ? String(error.message) : name + ': ' + String(error.message);
  }
  if (typeof error === 'string') return error;
  try { const json = stringify(error); return json === undefined ? String(error) : json; } catch { return String(error); }
})`;

/** A timer of the snippet: its callback and arguments are held (as handles) until it fires or is cleared. */
type SnippetTimer = { callback: QuickJSHandle; args: QuickJSHandle[]; repeat: boolean; ms: number };

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
  /** JSON.parse as it was before user code ran (the call's globals). */
  private readonly parse: QuickJSHandle;
  private describeError: QuickJSHandle | undefined;
  private options: SandboxOptions | undefined;
  private outcome: Outcome | undefined;
  private finished = false;
  private wake: (() => void) | undefined;
  /** Until start(): the prelude (our own code) has a budget too. */
  deadline = Date.now() + 1_000;
  /** False once the instance ran out of memory or failed inside WebAssembly: it is then discarded. */
  healthy = true;
  private readonly timers = new Map<number, SnippetTimer>();
  private nextTimerId = 1;
  /** JSON.stringify and String as they were before user code ran (console formatting). */
  private readonly stringify: QuickJSHandle;
  private readonly toText: QuickJSHandle;

  /**
   * A fresh runtime and context with the host functions and the prelude, before any call's values or code: made
   * while the instance is idle (releaseModule), so that a call starts at start().
   */
  constructor(
    module: QuickJSWASMModule,
    private readonly memoryLimitBytes: number,
    private readonly memory?: WasmMemory,
  ) {
    this.runtime = module.newRuntime();
    // Still useful for single huge allocations; the linear-memory maximum is the real cap.
    this.runtime.setMemoryLimit(memoryLimitBytes);
    this.runtime.setMaxStackSize(DEFAULT_STACK_LIMIT_BYTES);
    this.runtime.setInterruptHandler(() => Date.now() > this.deadline);
    this.context = this.runtime.newContext();
    const ctx = this.context;
    // Captured before user code runs, so that a snippet replacing them cannot forge the transfer format.
    const json = ctx.getProp(ctx.global, 'JSON');
    this.stringify = ctx.getProp(json, 'stringify');
    this.parse = ctx.getProp(json, 'parse');
    json.dispose();
    this.toText = ctx.getProp(ctx.global, 'String');
    this.installConsole();
    this.installTimers();
    this.installSettlement();
  }

  /** The call's limits and globals; then run(). */
  start(options: SandboxOptions): this {
    this.options = options;
    this.deadline = Date.now() + options.timeoutMs;
    if (options.stackLimitBytes !== undefined) this.runtime.setMaxStackSize(options.stackLimitBytes);
    const ctx = this.context;
    for (const [name, value] of Object.entries(options.globals)) {
      const json = JSON.stringify(value);
      if (json === undefined) continue;
      const text = ctx.newString(json);
      const result = ctx.callFunction(this.parse, ctx.undefined, text);
      text.dispose();
      if (result.error) {
        this.failWith(result.error);
        result.error.dispose();
        break;
      }
      ctx.setProp(ctx.global, name, result.value);
      result.value.dispose();
    }
    return this;
  }

  /**
   * __finish(value) and resolve(value) hand the JSON of the output over, once; __fail(error) and reject(error) a
   * description of the error. The scripts of every mode end in one of them.
   */
  private installSettlement(): void {
    const ctx = this.context;
    let settled = false;
    const finish = ctx.newFunction('resolve', (value) => {
      if (settled) return;
      settled = true;
      const json = ctx.callFunction(this.stringify, ctx.undefined, value ?? ctx.undefined);
      if (json.error) {
        const message = `Processing output is not JSON-serializable: ${this.describe(json.error)}`;
        json.error.dispose();
        this.settleError(message);
        return;
      }
      if (ctx.typeof(json.value) === 'string') this.settle({ kind: 'ok', json: ctx.getString(json.value) });
      else this.settle({ kind: 'undefined' });
      json.value.dispose();
    });
    const fail = ctx.newFunction('reject', (error) => {
      if (settled) return;
      settled = true;
      this.settleError(this.describe(error ?? ctx.undefined));
    });
    for (const [name, handle] of [
      ['__finish', finish],
      ['resolve', finish],
      ['__fail', fail],
      ['reject', fail],
    ] as const) {
      ctx.setProp(ctx.global, name, handle);
    }
    finish.dispose();
    fail.dispose();
  }

  /** A thrown value as text, as the reference words it (DESCRIBE); "null" when even that fails (out of memory). */
  private describe(error: QuickJSHandle): string {
    const ctx = this.context;
    if (!this.describeError) {
      const made = ctx.evalCode(DESCRIBE, 'processing.js');
      if (made.error) {
        made.error.dispose();
        return 'null';
      }
      const describe = ctx.callFunction(made.value, ctx.undefined, this.stringify);
      made.value.dispose();
      if (describe.error) {
        describe.error.dispose();
        return 'null';
      }
      this.describeError = describe.value;
    }
    const text = ctx.callFunction(this.describeError, ctx.undefined, error);
    if (text.error) {
      text.error.dispose();
      return 'null';
    }
    const result = ctx.typeof(text.value) === 'string' ? ctx.getString(text.value) : 'null';
    text.value.dispose();
    return result;
  }

  private settleError(text: string): void {
    if (/out of memory/i.test(text) || (text === 'null' && this.nearMemoryLimit())) {
      // QuickJS throws null when it cannot even allocate the out-of-memory error.
      this.healthy = false;
      this.settle({ kind: 'error', message: this.memoryMessage() });
    } else this.settle({ kind: 'error', message: text });
  }

  /** console.* write the snippet's lines to options.logs (bounded), never to the host's output. */
  private installConsole(): void {
    const ctx = this.context;
    const write = ctx.newFunction('log', (...args) => {
      const logs = this.options?.logs;
      if (!logs || logs.length >= MAX_LOG_LINES) return;
      logs.push(
        args
          .map((arg) => this.format(arg))
          .join(' ')
          .slice(0, MAX_LOG_LINE_LENGTH),
      );
    });
    const console = ctx.newObject();
    for (const name of ['log', 'info', 'warn', 'error', 'debug', 'trace']) ctx.setProp(console, name, write);
    ctx.setProp(ctx.global, 'console', console);
    console.dispose();
    write.dispose();
  }

  /** A console argument as text: strings as they are, other values as JSON, else String(value). */
  private format(value: QuickJSHandle): string {
    const ctx = this.context;
    if (ctx.typeof(value) === 'string') return ctx.getString(value);
    const json = ctx.callFunction(this.stringify, ctx.undefined, value);
    if (json.error === undefined && ctx.typeof(json.value) === 'string') {
      const text = ctx.getString(json.value);
      json.value.dispose();
      return text;
    }
    (json.error ?? json.value).dispose();
    const text = ctx.callFunction(this.toText, ctx.undefined, value);
    if (text.error) {
      text.error.dispose();
      return '';
    }
    const result = ctx.getString(text.value);
    text.value.dispose();
    return result;
  }

  /**
   * setTimeout/setInterval/clearTimeout/clearInterval, backed by host timers. A timer that cannot fire within the
   * budget never fires: the run ends with the timeout, every time (shortening it would let a snippet awaiting a
   * 1 h timer succeed when the budget runs out).
   */
  private installTimers(): void {
    const ctx = this.context;
    const define = (name: string, fn: (...args: QuickJSHandle[]) => QuickJSHandle | undefined) => {
      const handle = ctx.newFunction(name, fn);
      ctx.setProp(ctx.global, name, handle);
      handle.dispose();
    };
    const schedule =
      (repeat: boolean) =>
      (callback?: QuickJSHandle, delay?: QuickJSHandle, ...args: QuickJSHandle[]): QuickJSHandle => {
        if (this.timers.size >= MAX_TIMERS) throw new Error('Too many timers');
        const id = this.nextTimerId++;
        const ms = Math.max(0, (delay ? ctx.getNumber(delay) : 0) || 0);
        this.timers.set(id, {
          callback: (callback ?? ctx.undefined).dup(),
          args: args.map((arg) => arg.dup()),
          repeat,
          ms,
        });
        this.arm(id, ms);
        return ctx.newNumber(id);
      };
    const clear = (idHandle?: QuickJSHandle): undefined => {
      if (idHandle) this.clearTimer(ctx.getNumber(idHandle));
      return undefined;
    };
    define('setTimeout', schedule(false));
    define('setInterval', schedule(true));
    define('clearTimeout', clear);
    define('clearInterval', clear);
  }

  private arm(id: number, ms: number): void {
    if (Date.now() + ms > this.deadline) return;
    this.hostTimers.set(
      id,
      setTimeout(() => this.fireTimer(id), ms),
    );
  }

  private clearTimer(id: number): void {
    const timer = this.timers.get(id);
    if (!timer) return;
    this.timers.delete(id);
    clearTimeout(this.hostTimers.get(id));
    this.hostTimers.delete(id);
    timer.callback.dispose();
    for (const arg of timer.args) arg.dispose();
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
    this.runtime.setMemoryLimit(this.memoryLimitBytes);
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
      this.outcome = { kind: 'error', message: this.timeoutMessage() };
    } else {
      this.outcome = outcome;
    }
    this.wake?.();
  }

  /** The linear memory has grown to most of its maximum (what a failed allocation looks like from outside). */
  private nearMemoryLimit(): boolean {
    if (!this.memory) return false;
    return this.memory.buffer.byteLength >= 0.75 * this.memoryLimitBytes;
  }

  private memoryMessage(): string {
    return `Processing exceeded the memory limit of ${this.memoryLimitBytes} bytes`;
  }

  private timeoutMessage(): string {
    return this.options?.timeoutMessage ?? 'Processing timed out';
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
    if (Date.now() > this.deadline || message === 'interrupted') return this.timeoutMessage();
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
    const timer = this.timers.get(id);
    if (!timer) return;
    const ctx = this.context;
    try {
      if (timer.repeat) this.arm(id, timer.ms);
      else this.timers.delete(id);
      if (ctx.typeof(timer.callback) === 'function') {
        // Held for the call: the callback may clear its own timer, which releases the timer's references.
        const callback = timer.callback.dup();
        const args = timer.args.map((arg) => arg.dup());
        const result = ctx.callFunction(callback, ctx.undefined, ...args);
        callback.dispose();
        for (const arg of args) arg.dispose();
        if (result.error) {
          this.failWith(result.error);
          result.error.dispose();
        } else {
          result.value.dispose();
        }
      }
      if (!timer.repeat) {
        timer.callback.dispose();
        for (const arg of timer.args) arg.dispose();
      }
      this.drainJobs();
    } catch {
      this.trap();
    }
  }

  async run(options: SandboxOptions): Promise<Outcome> {
    if (this.outcome) return this.outcome;
    this.evaluate(script(options));
    if (options.mode === 'sync') {
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
    return this.outcome ?? { kind: 'error', message: this.timeoutMessage() };
  }

  /** Ends the execution: its timers are cleared and never fire. */
  stop(): void {
    this.finished = true;
    for (const id of [...this.timers.keys()]) this.clearTimer(id);
    for (const timer of this.hostTimers.values()) clearTimeout(timer);
    this.hostTimers.clear();
  }

  dispose(): void {
    this.stop();
    try {
      this.describeError?.dispose();
      this.parse.dispose();
      this.stringify.dispose();
      this.toText.dispose();
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
  let execution: Execution | undefined = pooled.prepared;
  pooled.prepared = undefined;
  let outcome: Outcome;
  try {
    execution ??= new Execution(pooled.module, memoryLimitBytes, pooled.memory);
    outcome = await execution.start(options).run(options);
  } catch (error) {
    // Only a WebAssembly trap gets here (sandbox errors are outcomes): host stack or memory exhausted.
    execution?.trap();
    outcome =
      error instanceof RangeError && /call stack/i.test(error.message)
        ? { kind: 'error', message: 'Processing exceeded the maximum stack size' }
        : { kind: 'error', message: `Processing exceeded the memory limit of ${memoryLimitBytes} bytes` };
  }
  // No timer or callback of this execution runs after this point; the instance goes back to the pool (with the
  // next execution prepared) once the answer left, or at the next acquisition, whichever comes first.
  execution?.stop();
  afterAnswer(() => {
    execution?.dispose();
    releaseModule(pooled, execution?.healthy ?? false);
  });
  if (outcome.kind === 'error') throw new SandboxError(outcome.message);
  if (outcome.kind === 'undefined') return undefined;
  try {
    return JSON.parse(outcome.json);
  } catch {
    throw new SandboxError('Processing output is not valid JSON');
  }
}
