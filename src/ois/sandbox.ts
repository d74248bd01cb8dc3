// A real sandbox for processing snippets: QuickJS compiled to WebAssembly, driven through the lean bindings of
// quickjs-ffi.ts. Each execution gets a fresh runtime and context (no state leaks between calls) from one shared
// compiled module; the next one is prepared (runtime, context, host functions) while the instance is idle, and the
// last one is disposed after its answer left, so that a call pays only for its own globals and code. Nothing of the
// host is reachable: no process, require, filesystem, environment or network; values cross the
// boundary as JSON strings only. A deadline interrupts busy loops, a memory limit stops allocation
// bombs, a stack limit stops runaway recursion, and timers are emulated by the host so async code works.
import {
  type HostBindings,
  type JSContextPointer,
  type JSRuntimePointer,
  type JSValueConstPointer,
  type JSValuePointer,
  type JSValueRef,
  QuickJSInstance,
} from './quickjs-ffi.js';

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

type PooledModule = {
  quickjs: QuickJSInstance;
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
  const quickjs = await QuickJSInstance.create(INITIAL_PAGES, Math.ceil(memoryLimitBytes / WASM_PAGE_BYTES));
  return { quickjs, memoryLimitBytes };
}

function releaseModule(entry: PooledModule, healthy: boolean): void {
  // WebAssembly memory never shrinks: an instance whose memory grew (a snippet that allocated a lot, or ran out
  // of memory) is dropped so that the host gets the memory back; only instances at their initial size are kept.
  const grown = entry.quickjs.memory.buffer.byteLength > INITIAL_PAGES * WASM_PAGE_BYTES;
  if (!healthy || grown || idleModules.length >= MAX_IDLE_MODULES) return;
  try {
    entry.prepared = new Execution(entry.quickjs, entry.memoryLimitBytes);
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

/** A timer of the snippet: its callback and arguments are held (owned values) until it fires or is cleared. */
type SnippetTimer = { callback: JSValuePointer; args: JSValuePointer[]; repeat: boolean; ms: number };

type Outcome = { kind: 'ok'; json: string } | { kind: 'undefined' } | { kind: 'error'; message: string };

/** Host functions of a context, by the id QuickJS calls them with. */
enum Host {
  Finish = 1,
  Fail = 2,
  Log = 3,
  SetTimeout = 4,
  SetInterval = 5,
  ClearTimer = 6,
}
const CONSOLE_METHODS = ['log', 'info', 'warn', 'error', 'debug', 'trace'];

/**
 * The call's globals as a script run before its code: each one JSON.parse'd from a string literal (JSON text is a
 * valid JS string literal once stringified again), so that a response's own "__proto__" key stays a plain key.
 */
function globalsScript(globals: Record<string, unknown>): string {
  let text = '';
  for (const [name, value] of Object.entries(globals)) {
    const json = JSON.stringify(value);
    if (json === undefined) continue;
    text += `globalThis[${JSON.stringify(name)}]=JSON.parse(${JSON.stringify(json)});\n`;
  }
  return text;
}

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

class Execution implements HostBindings {
  private readonly rt: JSRuntimePointer;
  private readonly ctx: JSContextPointer;
  private readonly hostTimers = new Map<number, NodeJS.Timeout>();
  /** JSON.stringify and String as they were before user code ran (the output's transfer format, console lines). */
  private readonly stringify: JSValuePointer;
  private readonly toText: JSValuePointer;
  private describeError: JSValuePointer | undefined;
  private options: SandboxOptions | undefined;
  private outcome: Outcome | undefined;
  private settled = false;
  private finished = false;
  /** The host failed inside a call from QuickJS: the instance is not trusted any more and the code is stopped. */
  private aborted = false;
  private wake: (() => void) | undefined;
  /** Until start(): the preparation (our own code) has a budget too. */
  deadline = performance.now() + 1_000;
  /** False once the instance ran out of memory or failed inside WebAssembly: it is then discarded. */
  healthy = true;
  private readonly timers = new Map<number, SnippetTimer>();
  private nextTimerId = 1;

  /**
   * A fresh runtime and context with the host functions, before any call's values or code: made while the instance
   * is idle (releaseModule), so that a call starts at start().
   */
  constructor(
    private readonly quickjs: QuickJSInstance,
    private readonly memoryLimitBytes: number,
  ) {
    const { rt, ctx } = quickjs.newContext(this);
    this.rt = rt;
    this.ctx = ctx;
    const ffi = quickjs.ffi;
    // Still useful for single huge allocations; the linear-memory maximum is the real cap.
    ffi.QTS_RuntimeSetMemoryLimit(rt, memoryLimitBytes);
    ffi.QTS_RuntimeSetMaxStackSize(rt, DEFAULT_STACK_LIMIT_BYTES);
    const global = ffi.QTS_GetGlobalObject(ctx);
    // Captured before user code runs, so that a snippet replacing them cannot forge the transfer format.
    const json = quickjs.getProp(ctx, global, 'JSON');
    this.stringify = quickjs.getProp(ctx, json, 'stringify');
    ffi.QTS_FreeValuePointer(ctx, json);
    this.toText = quickjs.getProp(ctx, global, 'String');
    const define = (object: JSValuePointer, names: readonly string[], id: Host) => {
      const fn = quickjs.newFunction(ctx, names[0]!, id);
      for (const name of names) quickjs.setProp(ctx, object, name, fn);
      ffi.QTS_FreeValuePointer(ctx, fn);
    };
    // __finish(value) and resolve(value) hand the JSON of the output over, once; __fail(error) and reject(error) a
    // description of the error. The scripts of every mode end in one of them.
    define(global, ['resolve', '__finish'], Host.Finish);
    define(global, ['reject', '__fail'], Host.Fail);
    define(global, ['setTimeout'], Host.SetTimeout);
    define(global, ['setInterval'], Host.SetInterval);
    define(global, ['clearTimeout', 'clearInterval'], Host.ClearTimer);
    const console = ffi.QTS_NewObject(ctx);
    define(console, CONSOLE_METHODS, Host.Log);
    quickjs.setProp(ctx, global, 'console', console);
    ffi.QTS_FreeValuePointer(ctx, console);
    ffi.QTS_FreeValuePointer(ctx, global);
  }

  /** The call's limits; then run(). */
  start(options: SandboxOptions): this {
    this.options = options;
    this.deadline = performance.now() + options.timeoutMs;
    if (options.stackLimitBytes !== undefined) {
      this.quickjs.ffi.QTS_RuntimeSetMaxStackSize(this.rt, options.stackLimitBytes);
    }
    return this;
  }

  shouldInterrupt(): boolean {
    return this.aborted || performance.now() > this.deadline;
  }

  /** A call from QuickJS into a host function; never throws into WebAssembly. */
  call(id: number, argc: number, argv: JSValueConstPointer): JSValuePointer | 0 {
    try {
      const arg = (index: number): JSValueConstPointer =>
        index < argc ? this.quickjs.ffi.QTS_ArgvGetJSValueConstPointer(argv, index) : this.quickjs.undefinedValue;
      switch (id) {
        case Host.Finish:
          this.finish(arg(0));
          return 0;
        case Host.Fail:
          if (!this.settled) {
            this.settled = true;
            this.settleError(this.describe(arg(0)));
          }
          return 0;
        case Host.Log:
          this.log(argc, arg);
          return 0;
        case Host.SetTimeout:
        case Host.SetInterval:
          return this.schedule(
            id === Host.SetInterval,
            arg(0),
            argc > 1 ? arg(1) : undefined,
            Array.from({ length: Math.max(0, argc - 2) }, (_, index) => arg(index + 2)),
          );
        case Host.ClearTimer:
          if (argc > 0) this.clearTimer(this.quickjs.getNumber(this.ctx, arg(0)));
          return 0;
        default:
          return 0;
      }
    } catch {
      // Only a failure of the instance itself gets here (a trap, its memory exhausted in native code).
      this.aborted = true;
      this.trap();
      return 0;
    }
  }

  /** The output's JSON through the captured JSON.stringify, once. */
  private finish(value: JSValueRef): void {
    if (this.settled) return;
    this.settled = true;
    const { quickjs, ctx } = this;
    const json = this.consume(
      quickjs.call(ctx, this.stringify, [value]),
      (text) => quickjs.getString(ctx, text),
      (error) => {
        this.settleError(`Processing output is not JSON-serializable: ${this.describe(error)}`);
        return null;
      },
    );
    if (json === null) return; // settled as an error
    // Reading a string fails only when its copy cannot be allocated. JSON text is never the bare word undefined,
    // which is what JSON.stringify's undefined reads as.
    if (json === undefined) this.trap();
    else if (json === 'undefined') this.settle({ kind: 'undefined' });
    else this.settle({ kind: 'ok', json });
  }

  /**
   * Hands a QuickJS result to onValue, or the value it threw to onError, and frees both afterwards, whatever
   * happens: the one place where a result's ownership ends. The callbacks borrow what they get (dup it to keep it).
   */
  private consume<T>(
    result: JSValuePointer,
    onValue: (value: JSValuePointer) => T,
    onError: (error: JSValuePointer) => T,
  ): T {
    const { quickjs, ctx } = this;
    const error = quickjs.exception(ctx, result);
    try {
      return error ? onError(error) : onValue(result);
    } finally {
      if (error) quickjs.ffi.QTS_FreeValuePointer(ctx, error);
      quickjs.ffi.QTS_FreeValuePointer(ctx, result);
    }
  }

  /** A thrown value as text, as the reference words it (DESCRIBE); "null" when even that fails (out of memory). */
  private describe(error: JSValueRef): string {
    const { quickjs, ctx } = this;
    const ffi = quickjs.ffi;
    const failed = () => undefined;
    // The describing function is made once per context, from DESCRIBE given the captured JSON.stringify.
    this.describeError ??= this.consume(
      quickjs.evalScript(ctx, DESCRIBE),
      (make) =>
        this.consume(
          quickjs.call(ctx, make, [this.stringify]),
          (describe) => ffi.QTS_DupValuePointer(ctx, describe),
          failed,
        ),
      failed,
    );
    if (!this.describeError) return 'null';
    return this.consume(
      quickjs.call(ctx, this.describeError, [error]),
      (text) => (quickjs.typeOf(ctx, text) === 'string' ? (quickjs.getString(ctx, text) ?? 'null') : 'null'),
      () => 'null',
    );
  }

  private settleError(text: string): void {
    if (/out of memory/i.test(text) || (text === 'null' && this.nearMemoryLimit())) {
      // QuickJS throws null when it cannot even allocate the out-of-memory error.
      this.healthy = false;
      this.settle({ kind: 'error', message: this.memoryMessage() });
    } else this.settle({ kind: 'error', message: text });
  }

  /**
   * console.* write the snippet's lines to options.logs (bounded), never to the host's output. Arguments past the
   * line's length limit are not formatted at all: a call with thousands of them costs no more than a full line.
   */
  private log(argc: number, arg: (index: number) => JSValueConstPointer): void {
    const logs = this.options?.logs;
    if (!logs || logs.length >= MAX_LOG_LINES) return;
    let line = '';
    for (let index = 0; index < argc && line.length < MAX_LOG_LINE_LENGTH; index++) {
      line += (index > 0 ? ' ' : '') + this.format(arg(index));
    }
    logs.push(line.slice(0, MAX_LOG_LINE_LENGTH));
  }

  /** A console argument as text: strings as they are, other values as JSON, else String(value). */
  private format(value: JSValueRef): string {
    const { quickjs, ctx } = this;
    if (quickjs.typeOf(ctx, value) === 'string') return quickjs.getString(ctx, value) ?? '';
    for (const fn of [this.stringify, this.toText]) {
      const text = this.consume(
        quickjs.call(ctx, fn, [value]),
        (result) => quickjs.getString(ctx, result),
        () => undefined,
      );
      // JSON.stringify gives undefined (read as the bare word) for functions and undefined: String() then.
      if (text !== undefined && (fn === this.toText || text !== 'undefined')) return text;
    }
    return '';
  }

  /**
   * setTimeout/setInterval, backed by host timers. A timer that cannot fire within the budget never fires: the run
   * ends with the timeout, every time (shortening it would let a snippet awaiting a 1 h timer succeed when the
   * budget runs out).
   */
  private schedule(
    repeat: boolean,
    callback: JSValueConstPointer,
    delay: JSValueConstPointer | undefined,
    args: JSValueConstPointer[],
  ): JSValuePointer {
    const { quickjs, ctx } = this;
    if (this.timers.size >= MAX_TIMERS) return quickjs.throwError(ctx, 'Too many timers');
    const id = this.nextTimerId++;
    const ms = Math.max(0, (delay ? quickjs.getNumber(ctx, delay) : 0) || 0);
    this.timers.set(id, {
      callback: quickjs.ffi.QTS_DupValuePointer(ctx, callback),
      args: args.map((arg) => quickjs.ffi.QTS_DupValuePointer(ctx, arg)),
      repeat,
      ms,
    });
    this.arm(id, ms);
    return quickjs.newNumber(ctx, id);
  }

  private arm(id: number, ms: number): void {
    if (performance.now() + ms > this.deadline) return;
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
    this.release(timer);
  }

  private release(timer: SnippetTimer): void {
    const ffi = this.quickjs.ffi;
    ffi.QTS_FreeValuePointer(this.ctx, timer.callback);
    for (const arg of timer.args) ffi.QTS_FreeValuePointer(this.ctx, arg);
  }

  /** Runs code; a thrown sandbox error becomes an outcome (unless one is already set). */
  private evaluate(code: string): void {
    const { quickjs, ctx } = this;
    this.consume(
      quickjs.evalScript(ctx, code),
      () => undefined,
      (error) => this.failWith(error),
    );
  }

  private failWith(error: JSValueRef): void {
    if (this.outcome) return;
    const ffi = this.quickjs.ffi;
    // Lift the memory limit so that reading the error of an out-of-memory failure cannot fail again.
    ffi.QTS_RuntimeSetMemoryLimit(this.rt, -1);
    let dumped: unknown;
    try {
      dumped = this.dump(error);
    } catch {
      dumped = { name: 'InternalError', message: 'out of memory' };
    }
    ffi.QTS_RuntimeSetMemoryLimit(this.rt, this.memoryLimitBytes);
    this.settle({ kind: 'error', message: this.classify(dumped) });
  }

  /** A thrown value on the host side: primitives as they are, objects as their JSON with name and message. */
  private dump(value: JSValueRef): unknown {
    const { quickjs, ctx } = this;
    switch (quickjs.typeOf(ctx, value)) {
      case 'undefined':
        return undefined;
      case 'number':
        return quickjs.getNumber(ctx, value);
      case 'string':
      case 'bigint':
        return quickjs.getString(ctx, value) ?? null;
      case 'symbol':
        return 'Symbol()';
      default: {
        const text = quickjs.dumpJson(ctx, value);
        try {
          return JSON.parse(text);
        } catch {
          return text;
        }
      }
    }
  }

  /** A WebAssembly trap (for example memory exhausted in native code) ends the execution. */
  trap(): void {
    this.healthy = false;
    this.settle({ kind: 'error', message: this.memoryMessage() });
  }

  private settle(outcome: Outcome): void {
    if (this.outcome) return;
    if (outcome.kind === 'error' && performance.now() > this.deadline && outcome.message !== this.memoryMessage()) {
      this.outcome = { kind: 'error', message: this.timeoutMessage() };
    } else {
      this.outcome = outcome;
    }
    this.wake?.();
  }

  /** The linear memory has grown to most of its maximum (what a failed allocation looks like from outside). */
  private nearMemoryLimit(): boolean {
    return this.quickjs.memory.buffer.byteLength >= 0.75 * this.memoryLimitBytes;
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
    if (performance.now() > this.deadline || message === 'interrupted') return this.timeoutMessage();
    if (/stack overflow/i.test(message)) return 'Processing exceeded the maximum stack size';
    if (!name || name === 'Error') return message;
    return `${name}: ${message}`;
  }

  private drainJobs(): void {
    const { quickjs, ctx, rt } = this;
    for (;;) {
      if (this.outcome || !quickjs.hasPendingJob(rt)) return;
      const result = quickjs.executePendingJobs(rt);
      // A job count, or the value a job threw (read only when nothing settled the call yet).
      const failed = !this.outcome && quickjs.typeOf(ctx, result) !== 'number';
      if (failed) this.failWith(result);
      quickjs.ffi.QTS_FreeValuePointer(ctx, result);
      if (failed) return;
    }
  }

  private fireTimer(id: number): void {
    this.hostTimers.delete(id);
    if (this.finished || this.outcome) return;
    const timer = this.timers.get(id);
    if (!timer) return;
    const { quickjs, ctx } = this;
    const ffi = quickjs.ffi;
    try {
      if (timer.repeat) this.arm(id, timer.ms);
      else this.timers.delete(id);
      if (quickjs.typeOf(ctx, timer.callback) === 'function') {
        // Held for the call: the callback may clear its own timer, which releases the timer's references.
        const callback = ffi.QTS_DupValuePointer(ctx, timer.callback);
        const args = timer.args.map((arg) => ffi.QTS_DupValuePointer(ctx, arg));
        const result = quickjs.call(ctx, callback, args);
        ffi.QTS_FreeValuePointer(ctx, callback);
        for (const arg of args) ffi.QTS_FreeValuePointer(ctx, arg);
        this.consume(
          result,
          () => undefined,
          (error) => this.failWith(error),
        );
      }
      if (!timer.repeat) this.release(timer);
      this.drainJobs();
    } catch {
      this.trap();
    }
  }

  async run(options: SandboxOptions): Promise<Outcome> {
    if (this.outcome) return this.outcome;
    const globals = globalsScript(options.globals);
    if (options.mode === 'function') {
      // The code is an expression inside the wrapper: nothing of it runs (or is hoisted) before the globals are set.
      this.evaluate(globals + script(options));
    } else {
      // A script's function declarations take effect before any of its statements: the globals come first.
      if (globals) this.evaluate(globals);
      if (!this.outcome) this.evaluate(script(options));
    }
    if (options.mode === 'sync') {
      return this.outcome ?? { kind: 'error', message: 'Processing did not produce an output' };
    }
    this.drainJobs();
    if (!this.outcome) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, this.deadline - performance.now()) + 1);
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
    const { quickjs, ctx } = this;
    try {
      if (this.describeError) quickjs.ffi.QTS_FreeValuePointer(ctx, this.describeError);
      quickjs.ffi.QTS_FreeValuePointer(ctx, this.stringify);
      quickjs.ffi.QTS_FreeValuePointer(ctx, this.toText);
      quickjs.freeContext(ctx);
      quickjs.freeRuntime(this.rt);
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
    execution ??= new Execution(pooled.quickjs, memoryLimitBytes);
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
