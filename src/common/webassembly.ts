// Node's WebAssembly global, typed: the TypeScript libraries in use (no DOM) do not declare it. Types only, so
// importing this file loads nothing; the keccak sponge (protocol) and the QuickJS sandbox (ois) share them.

export type WasmModule = object;
export type WasmInstance = { exports: Record<string, unknown> };
export type WasmMemory = { readonly buffer: ArrayBuffer; grow(pages: number): number };

/** The members of the global used in src/. */
export type WebAssemblyGlobal = {
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (module: WasmModule, imports?: object) => WasmInstance;
  Memory: new (descriptor: { initial: number; maximum: number }) => WasmMemory;
  compile(bytes: Uint8Array): Promise<WasmModule>;
  instantiate(module: WasmModule, imports: object): Promise<WasmInstance>;
};

/** What `globalThis` holds: the global is missing where WebAssembly is off (node --jitless). */
export type WithWebAssembly = { WebAssembly?: WebAssemblyGlobal };
