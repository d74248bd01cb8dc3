// Lean bindings on the QTS_* functions of the QuickJS WebAssembly build, for the sandbox (sandbox.ts). A value is a
// raw pointer into the instance's linear memory, freed by its owner directly: quickjs-emscripten-core's classes wrap
// every handle, argument and host call in objects of their own (Lifetime, Scope, WeakLifetime), and that garbage and
// those extra steps were a large part of what a small snippet cost. The build's own loader and FFI class are used
// (the variant's importModuleLoader/importFFI); every instance gets the linear memory it is given, so that its
// maximum is the memory limit.

import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import variantImport from '@jitl/quickjs-wasmfile-release-sync';
import type {
  EmscriptenModuleCallbacks,
  HostRefId,
  JSContextPointer,
  JSRuntimePointer,
  JSValueConstPointer,
  JSValuePointer,
  QuickJSEmscriptenModule,
  QuickJSFFI,
  QuickJSSyncVariant,
} from 'quickjs-emscripten-core';
import type {
  WasmInstance,
  WasmMemory,
  WasmModule,
  WebAssemblyGlobal,
  WithWebAssembly,
} from '../common/webassembly.js';

// The package's types describe its CommonJS build; under ESM the default export is the variant itself.
const variant = ((variantImport as unknown as { default?: QuickJSSyncVariant }).default ??
  variantImport) as unknown as QuickJSSyncVariant;

// Node's WebAssembly global (missing under node --jitless, where compiling QuickJS then fails).
const wasm = (globalThis as WithWebAssembly).WebAssembly as WebAssemblyGlobal;

export type { JSContextPointer, JSRuntimePointer, JSValueConstPointer, JSValuePointer };
/** A value owned by the caller or borrowed: what a QTS_* function reads. */
export type JSValueRef = JSValuePointer | JSValueConstPointer;

/** What an execution answers to the calls QuickJS makes into the host. */
export type HostBindings = {
  /** A host function (by the id it was made with) called with argc arguments at argv; returns an owned value or 0. */
  call(id: number, argc: number, argv: JSValueConstPointer): JSValuePointer | 0;
  /** Polled by QuickJS while code runs; true stops it with an uncatchable "interrupted" error. */
  shouldInterrupt(): boolean;
};

/** The build's Emscripten loader, given our memory and compiled module. */
type ModuleLoader = (options: object) => Promise<QuickJSEmscriptenModule>;
type FFIClass = new (module: QuickJSEmscriptenModule) => QuickJSFFI;

let compiled: Promise<WasmModule> | undefined;
let loaded: Promise<[ModuleLoader, FFIClass]> | undefined;

function compileOnce(): Promise<WasmModule> {
  compiled ??= (async () => {
    const require = createRequire(import.meta.url);
    const bytes = await readFile(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm'));
    return wasm.compile(bytes);
  })();
  return compiled;
}

function loadOnce(): Promise<[ModuleLoader, FFIClass]> {
  const unwrap = (loader: unknown) => ((loader as { default?: unknown }).default ?? loader) as ModuleLoader;
  loaded ??= Promise.all([variant.importModuleLoader().then(unwrap), variant.importFFI()]);
  return loaded;
}

const encoder = new TextEncoder();
const FILENAME = 'processing.js';
/** Pointer slots of an instance's scratch area: argument arrays of up to SCRATCH_SLOTS - 1 values, then an out-pointer. */
const SCRATCH_SLOTS = 8;

/** One WebAssembly instance of QuickJS: its own linear memory, and the runtimes and contexts made in it. */
export class QuickJSInstance {
  private readonly bindings = new Map<number, HostBindings>();
  private readonly runtimes = new Map<number, HostBindings>();
  /** NUL-terminated copies of the constant names the sandbox uses (property names), written once. */
  private readonly names = new Map<string, number>();
  private view: Int32Array;
  /** SCRATCH_SLOTS pointer slots: argument arrays of QTS_Call and the out-pointer of QTS_ExecutePendingJob. */
  private readonly scratch: number;
  readonly undefinedValue: JSValueConstPointer;

  private constructor(
    readonly ffi: QuickJSFFI,
    private readonly module: QuickJSEmscriptenModule,
    readonly memory: WasmMemory,
  ) {
    this.view = new Int32Array(memory.buffer);
    this.scratch = this.malloc(SCRATCH_SLOTS * 4);
    this.undefinedValue = ffi.QTS_GetUndefined();
  }

  static async create(initialPages: number, maximumPages: number): Promise<QuickJSInstance> {
    const [wasmModule, [loader, FFI]] = await Promise.all([compileOnce(), loadOnce()]);
    const memory = new wasm.Memory({ initial: initialPages, maximum: maximumPages });
    const quiet = () => {};
    const module = await loader({
      wasmMemory: memory,
      // The build prints aborts to the console; a snippet's failures reach the caller as errors, never the host's output.
      print: quiet,
      printErr: quiet,
      instantiateWasm: (imports: object, onSuccess: (instance: WasmInstance) => void) =>
        wasm.instantiate(wasmModule, imports).then((instance) => {
          onSuccess(instance);
          return instance.exports;
        }),
    });
    const instance = new QuickJSInstance(new FFI(module), module, memory);
    module.callbacks = instance.callbacks();
    return instance;
  }

  private callbacks(): EmscriptenModuleCallbacks {
    const never = () => 0 as never;
    return {
      callFunction: (_asyncify, ctx, _this, argc, argv, id) =>
        (this.bindings.get(ctx)?.call(id, argc, argv) ?? 0) as JSValuePointer,
      shouldInterrupt: (_asyncify, rt) => (this.runtimes.get(rt)?.shouldInterrupt() === false ? 0 : 1),
      // Host functions are identified by fixed ids, not by references that would need freeing.
      freeHostRef: () => {},
      // The module loader is never enabled.
      loadModuleSource: never,
      normalizeModule: never,
    };
  }

  /** A fresh runtime and context answering to `bindings`; with the interrupt handler on. */
  newContext(bindings: HostBindings): { rt: JSRuntimePointer; ctx: JSContextPointer } {
    const rt = this.ffi.QTS_NewRuntime();
    if (!rt) throw new RangeError('QuickJS could not create a runtime');
    this.runtimes.set(rt, bindings);
    this.ffi.QTS_RuntimeEnableInterruptHandler(rt);
    const ctx = this.ffi.QTS_NewContext(rt, 0 as never);
    if (!ctx) {
      this.freeRuntime(rt);
      throw new RangeError('QuickJS could not create a context');
    }
    this.bindings.set(ctx, bindings);
    return { rt, ctx };
  }

  freeContext(ctx: JSContextPointer): void {
    this.bindings.delete(ctx);
    this.ffi.QTS_FreeContext(ctx);
  }

  freeRuntime(rt: JSRuntimePointer): void {
    this.runtimes.delete(rt);
    this.ffi.QTS_FreeRuntime(rt);
  }

  private malloc(bytes: number): number {
    const pointer = this.module._malloc(bytes);
    // Writing through a null pointer would corrupt the instance's memory (WebAssembly has no guard page).
    if (!pointer) throw new RangeError('QuickJS instance out of memory');
    return pointer;
  }

  private int32(): Int32Array {
    // Growing the memory replaces its buffer.
    if (this.view.buffer !== this.memory.buffer) this.view = new Int32Array(this.memory.buffer);
    return this.view;
  }

  /** `text` as NUL-terminated UTF-8 in a fresh allocation (free it with release()); its byte length beside. */
  private writeString(text: string): { pointer: number; length: number } {
    const length = Buffer.byteLength(text, 'utf8');
    const pointer = this.malloc(length + 1);
    const bytes = new Uint8Array(this.memory.buffer, pointer, length + 1);
    encoder.encodeInto(text, bytes);
    bytes[length] = 0;
    return { pointer, length };
  }

  private name(text: string): number {
    let pointer = this.names.get(text);
    if (pointer === undefined) {
      pointer = this.writeString(text).pointer;
      this.names.set(text, pointer);
    }
    return pointer;
  }

  /** Evaluates `code` as a global script; the result may be the exception marker (see exception()). */
  evalScript(ctx: JSContextPointer, code: string): JSValuePointer {
    const { pointer, length } = this.writeString(code);
    try {
      return this.ffi.QTS_Eval(ctx, pointer as never, length, FILENAME, 0 as never, 0 as never);
    } finally {
      this.module._free(pointer);
    }
  }

  /** The pending exception when `result` is the exception marker (owned), else 0. */
  exception(ctx: JSContextPointer, result: JSValuePointer): JSValuePointer | 0 {
    return this.ffi.QTS_ResolveException(ctx, result) as JSValuePointer | 0;
  }

  /** fn.call(undefined, ...args); the result may be the exception marker. */
  call(ctx: JSContextPointer, fn: JSValueRef, args: readonly JSValueRef[]): JSValuePointer {
    const argv = args.length < SCRATCH_SLOTS ? this.scratch : this.malloc(args.length * 4);
    const view = this.int32();
    for (let i = 0; i < args.length; i++) view[(argv >> 2) + i] = args[i]!;
    // QTS_Call copies the argument values before running any code, so the scratch area may be reused inside.
    const result = this.ffi.QTS_Call(ctx, fn, this.undefinedValue, args.length, argv as never);
    if (argv !== this.scratch) this.module._free(argv);
    return result;
  }

  getProp(ctx: JSContextPointer, object: JSValueRef, name: string): JSValuePointer {
    const key = this.ffi.QTS_NewString(ctx, this.name(name) as never);
    const value = this.ffi.QTS_GetProp(ctx, object, key);
    this.ffi.QTS_FreeValuePointer(ctx, key);
    return value;
  }

  setProp(ctx: JSContextPointer, object: JSValueRef, name: string, value: JSValueRef): void {
    const key = this.ffi.QTS_NewString(ctx, this.name(name) as never);
    this.ffi.QTS_SetProp(ctx, object, key, value);
    this.ffi.QTS_FreeValuePointer(ctx, key);
  }

  newFunction(ctx: JSContextPointer, name: string, id: number): JSValuePointer {
    return this.ffi.QTS_NewFunction(ctx, name, 0, false, id as HostRefId);
  }

  newNumber(ctx: JSContextPointer, value: number): JSValuePointer {
    return this.ffi.QTS_NewFloat64(ctx, value);
  }

  /** ToNumber(value), which may run the value's valueOf. */
  getNumber(ctx: JSContextPointer, value: JSValueRef): number {
    return this.ffi.QTS_GetFloat64(ctx, value);
  }

  /** ToString(value) (runs toString for objects); undefined when it fails (an exception, out of memory). */
  getString(ctx: JSContextPointer, value: JSValueRef): string | undefined {
    const chars = this.ffi.QTS_GetString(ctx, value);
    if (!chars) return undefined;
    const text = this.module.UTF8ToString(chars as never);
    this.ffi.QTS_FreeCString(ctx, chars);
    return text;
  }

  /** typeof value, without running any code of the snippet. */
  typeOf(ctx: JSContextPointer, value: JSValueRef): string {
    const chars = this.ffi.QTS_Typeof(ctx, value);
    const text = this.module.UTF8ToString(chars as never);
    this.module._free(chars);
    return text;
  }

  /** JSON of the value with name/message/stack of errors (QTS_Dump); may run the snippet's toJSON/getters. */
  dumpJson(ctx: JSContextPointer, value: JSValueRef): string {
    const chars = this.ffi.QTS_Dump(ctx, value);
    if (!chars) return '';
    const text = this.module.UTF8ToString(chars as never);
    this.ffi.QTS_FreeCString(ctx, chars);
    return text;
  }

  /** Throws `new Error(message)` in the context; the result is what a host function returns to do so. */
  throwError(ctx: JSContextPointer, message: string): JSValuePointer {
    const error = this.ffi.QTS_NewError(ctx);
    const text = this.writeString(message);
    const value = this.ffi.QTS_NewString(ctx, text.pointer as never);
    this.module._free(text.pointer);
    this.setProp(ctx, error, 'message', value);
    this.ffi.QTS_FreeValuePointer(ctx, value);
    const thrown = this.ffi.QTS_Throw(ctx, error);
    this.ffi.QTS_FreeValuePointer(ctx, error);
    return thrown;
  }

  /** Runs queued promise jobs until none is left or one throws; the result is a job count or the thrown value. */
  executePendingJobs(rt: JSRuntimePointer): JSValuePointer {
    return this.ffi.QTS_ExecutePendingJob(rt, -1, (this.scratch + (SCRATCH_SLOTS - 1) * 4) as never);
  }

  hasPendingJob(rt: JSRuntimePointer): boolean {
    return this.ffi.QTS_IsJobPending(rt) !== 0;
  }
}
