// keccak256 for the derivations a short-lived process runs a few thousand times (the endpoint ids of
// `oracle-node validate`): a Keccak-f[1600] sponge in WebAssembly, assembled here at first use (~1 KiB of code,
// no binary file). In a fresh process a JavaScript keccak runs mostly unoptimised code: js-sha3 took ~75 ms of
// CPU for 5,000 endpoint ids (its unrolled permutation also costs the optimising compiler), while WebAssembly
// is compiled once, at full speed from the first call. Unit tests compare every answer with js-sha3; where
// WebAssembly is unavailable (node --jitless) js-sha3 answers, loaded only then (loading it cost ~4 ms of every
// `validate`).
import { createRequire } from 'node:module';
import type { WasmMemory, WithWebAssembly } from '../common/webassembly.js';

const RATE = 136; // bytes per block of keccak256 (1600 - 2 * 256 bits)
const STATE_AT = 0; // 25 lanes of 8 bytes
const ROUND_CONSTANTS_AT = 256; // 24 lanes of 8 bytes
const INPUT_AT = 1024;
const PAGE = 65536;

const ROUND_CONSTANTS = [
  0x0000000000000001n,
  0x0000000000008082n,
  0x800000000000808an,
  0x8000000080008000n,
  0x000000000000808bn,
  0x0000000080000001n,
  0x8000000080008081n,
  0x8000000000008009n,
  0x000000000000008an,
  0x0000000000000088n,
  0x0000000080008009n,
  0x000000008000000an,
  0x000000008000808bn,
  0x800000000000008bn,
  0x8000000000008089n,
  0x8000000000008003n,
  0x8000000000008002n,
  0x8000000000000080n,
  0x000000000000800an,
  0x800000008000000an,
  0x8000000080008081n,
  0x8000000000008080n,
  0x0000000080000001n,
  0x8000000080008008n,
];

/** Rotation of lane x + 5y in the rho step. */
const RHO = [0, 1, 62, 28, 27, 36, 44, 6, 55, 20, 3, 10, 43, 25, 39, 41, 45, 15, 21, 8, 18, 2, 61, 56, 14];

// WebAssembly opcodes used below.
const OP = {
  block: 0x02,
  loop: 0x03,
  br: 0x0c,
  brIf: 0x0d,
  end: 0x0b,
  call: 0x10,
  localGet: 0x20,
  localSet: 0x21,
  i64Load: 0x29,
  i64Store: 0x37,
  i32Const: 0x41,
  i64Const: 0x42,
  i32Eqz: 0x45,
  i32Add: 0x6a,
  i32Sub: 0x6b,
  i32LtU: 0x49,
  i64And: 0x83,
  i64Xor: 0x85,
  i64Rotl: 0x89,
  voidType: 0x40,
} as const;

function unsignedLeb(value: number): number[] {
  const out: number[] = [];
  do {
    let byte = value & 0x7f;
    value >>>= 7;
    if (value !== 0) byte |= 0x80;
    out.push(byte);
  } while (value !== 0);
  return out;
}

function signedLeb(value: number): number[] {
  const out: number[] = [];
  for (;;) {
    const byte = value & 0x7f;
    value >>= 7;
    if ((value === 0 && (byte & 0x40) === 0) || (value === -1 && (byte & 0x40) !== 0)) {
      out.push(byte);
      return out;
    }
    out.push(byte | 0x80);
  }
}

const section = (id: number, body: number[]) => [id, ...unsignedLeb(body.length), ...body];
const vector = (items: number[][]) => [...unsignedLeb(items.length), ...items.flat()];

/**
 * permute(): Keccak-f[1600] on the state in memory, 24 rounds in a loop over the round constants, the lanes in
 * locals. Locals: a0..a24 (lanes), b0..b24 (after rho and pi), c0..c4 (column parities), d, then the round
 * offset (i32).
 */
function permuteBody(): number[] {
  const A = 0;
  const B = 25;
  const C = 50;
  const D = 55;
  const ROUND = 56;
  const code: number[] = [];
  const get = (local: number) => code.push(OP.localGet, local);
  const set = (local: number) => code.push(OP.localSet, local);
  const load = (address: number) => code.push(OP.i64Load, 3, ...unsignedLeb(address));
  for (let i = 0; i < 25; i++) {
    code.push(OP.i32Const, 0);
    load(STATE_AT + 8 * i);
    set(A + i);
  }
  code.push(OP.i32Const, 0);
  set(ROUND);
  code.push(OP.loop, OP.voidType);
  // theta
  for (let x = 0; x < 5; x++) {
    get(A + x);
    for (let y = 1; y < 5; y++) {
      get(A + x + 5 * y);
      code.push(OP.i64Xor);
    }
    set(C + x);
  }
  for (let x = 0; x < 5; x++) {
    get(C + ((x + 4) % 5));
    get(C + ((x + 1) % 5));
    code.push(OP.i64Const, 1, OP.i64Rotl, OP.i64Xor);
    set(D);
    for (let y = 0; y < 5; y++) {
      get(A + x + 5 * y);
      get(D);
      code.push(OP.i64Xor);
      set(A + x + 5 * y);
    }
  }
  // rho and pi: B[y, 2x + 3y] = rotl(A[x, y], RHO[x, y])
  for (let x = 0; x < 5; x++) {
    for (let y = 0; y < 5; y++) {
      get(A + x + 5 * y);
      code.push(OP.i64Const, ...signedLeb(RHO[x + 5 * y]!), OP.i64Rotl);
      set(B + y + 5 * ((2 * x + 3 * y) % 5));
    }
  }
  // chi: A[x, y] = B[x, y] ^ (~B[x + 1, y] & B[x + 2, y])
  for (let y = 0; y < 5; y++) {
    for (let x = 0; x < 5; x++) {
      get(B + x + 5 * y);
      get(B + ((x + 1) % 5) + 5 * y);
      code.push(OP.i64Const, ...signedLeb(-1), OP.i64Xor);
      get(B + ((x + 2) % 5) + 5 * y);
      code.push(OP.i64And, OP.i64Xor);
      set(A + x + 5 * y);
    }
  }
  // iota
  get(A);
  get(ROUND);
  load(ROUND_CONSTANTS_AT);
  code.push(OP.i64Xor);
  set(A);
  get(ROUND);
  code.push(OP.i32Const, 8, OP.i32Add);
  set(ROUND);
  get(ROUND);
  code.push(OP.i32Const, ...signedLeb(8 * 24), OP.i32LtU, OP.brIf, 0, OP.end);
  for (let i = 0; i < 25; i++) {
    code.push(OP.i32Const, 0);
    get(A + i);
    code.push(OP.i64Store, 3, ...unsignedLeb(STATE_AT + 8 * i));
  }
  code.push(OP.end);
  const locals = vector([
    [...unsignedLeb(56), 0x7e],
    [1, 0x7f],
  ]); // 56 i64, 1 i32
  return [...locals, ...code];
}

/** absorb(at, blocks): XORs each 136-byte block at `at` into the state and permutes. */
function absorbBody(): number[] {
  const AT = 0;
  const BLOCKS = 1;
  const code: number[] = [OP.block, OP.voidType, OP.loop, OP.voidType];
  code.push(OP.localGet, BLOCKS, OP.i32Eqz, OP.brIf, 1);
  for (let i = 0; i < RATE / 8; i++) {
    code.push(OP.i32Const, 0);
    code.push(OP.i32Const, 0, OP.i64Load, 3, ...unsignedLeb(STATE_AT + 8 * i));
    code.push(OP.localGet, AT, OP.i64Load, 3, ...unsignedLeb(8 * i));
    code.push(OP.i64Xor, OP.i64Store, 3, ...unsignedLeb(STATE_AT + 8 * i));
  }
  code.push(OP.call, 0);
  code.push(OP.localGet, AT, OP.i32Const, ...signedLeb(RATE), OP.i32Add, OP.localSet, AT);
  code.push(OP.localGet, BLOCKS, OP.i32Const, 1, OP.i32Sub, OP.localSet, BLOCKS);
  code.push(OP.br, 0, OP.end, OP.end, OP.end);
  return [0, ...code];
}

function assemble(): Uint8Array {
  const withSize = (body: number[]) => [...unsignedLeb(body.length), ...body];
  const bytes = [
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    // types: 0 = () -> (), 1 = (i32, i32) -> ()
    ...section(
      1,
      vector([
        [0x60, 0, 0],
        [0x60, 2, 0x7f, 0x7f, 0],
      ]),
    ),
    ...section(3, vector([[0], [1]])), // functions: permute, absorb
    ...section(5, vector([[0x00, 1]])), // one memory, at least one page
    ...section(
      7,
      vector([
        [6, ...Buffer.from('memory'), 0x02, 0], // name, kind memory, index
        [6, ...Buffer.from('absorb'), 0x00, 1], // name, kind function, index
      ]),
    ),
    ...section(10, vector([withSize(permuteBody()), withSize(absorbBody())])),
  ];
  return Uint8Array.from(bytes);
}

type Sponge = { memory: WasmMemory; absorb: (at: number, blocks: number) => void };
let sponge: Sponge | null | undefined;
let jsKeccak256: ((data: Uint8Array) => string) | undefined;

function loadJsSha3(): (data: Uint8Array) => string {
  const jsSha3 = createRequire(import.meta.url)('js-sha3') as { keccak256: (data: Uint8Array) => string };
  return jsSha3.keccak256;
}

function instantiate(): Sponge | null {
  const wasm = (globalThis as WithWebAssembly).WebAssembly;
  if (!wasm) return null; // no WebAssembly here (node --jitless): js-sha3 answers
  try {
    const instance = new wasm.Instance(new wasm.Module(assemble()));
    const memory = instance.exports['memory'] as WasmMemory;
    const constants = new DataView(memory.buffer);
    for (const [i, constant] of ROUND_CONSTANTS.entries()) {
      constants.setBigUint64(ROUND_CONSTANTS_AT + 8 * i, constant, true);
    }
    return { memory, absorb: instance.exports['absorb'] as Sponge['absorb'] };
  } catch {
    return null; // a WebAssembly that refuses the module (a restricted engine): js-sha3 answers
  }
}

/** keccak256 of the bytes, as 64 lower-case hex digits (no 0x), the same answer as js-sha3's keccak256. */
export function keccak256Hex(data: Uint8Array): string {
  return keccak256HexOfWritten(data.length, (target) => target.set(data));
}

/** keccak256 of the bytes, as 32 bytes of a Buffer of its own. */
export function keccak256Bytes(data: Uint8Array): Buffer {
  return keccak256OfWritten(data.length, (target) => target.set(data));
}

let inputView: Buffer | undefined;

/**
 * keccak256 of `length` bytes that `write` puts at the start of a zero-filled buffer of at least that length: the
 * sponge's own input area, so that an encoder writes straight into it (a Buffer per hash was a third of the time
 * of 5,000 endpoint ids).
 */
export function keccak256HexOfWritten(length: number, write: (target: Buffer) => void): string {
  const state = absorbWritten(length, write);
  return typeof state === 'string' ? state : state.toString('hex', STATE_AT, STATE_AT + 32);
}

/** keccak256HexOfWritten's hash as 32 bytes of a Buffer of its own (what a signature takes). */
export function keccak256OfWritten(length: number, write: (target: Buffer) => void): Buffer {
  const state = absorbWritten(length, write);
  return typeof state === 'string' ? Buffer.from(state, 'hex') : Buffer.from(state.subarray(STATE_AT, STATE_AT + 32));
}

/** The sponge's memory with the hash at STATE_AT, or (without WebAssembly) js-sha3's hex answer. */
function absorbWritten(length: number, write: (target: Buffer) => void): Buffer | string {
  if (sponge === undefined) sponge = instantiate();
  if (sponge === null) {
    const target = Buffer.alloc(length);
    write(target);
    jsKeccak256 ??= loadJsSha3();
    return jsKeccak256(target);
  }
  const blocks = Math.floor(length / RATE) + 1;
  const needed = INPUT_AT + blocks * RATE;
  let buffer = sponge.memory.buffer;
  if (needed > buffer.byteLength) {
    sponge.memory.grow(Math.ceil((needed - buffer.byteLength) / PAGE));
    buffer = sponge.memory.buffer;
  }
  // Growing the memory replaces its ArrayBuffer: the view is made again then.
  if (inputView?.buffer !== buffer) inputView = Buffer.from(buffer);
  inputView.fill(0, STATE_AT, STATE_AT + 200);
  inputView.fill(0, INPUT_AT, needed);
  write(inputView.subarray(INPUT_AT, INPUT_AT + length));
  // keccak padding (0x01 ... 0x80), not SHA-3's 0x06
  inputView[INPUT_AT + length]! ^= 0x01;
  inputView[needed - 1]! ^= 0x80;
  sponge.absorb(INPUT_AT, blocks);
  return inputView;
}
