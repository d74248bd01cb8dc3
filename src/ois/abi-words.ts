// Standard ABI encoding (abi.encode) of the value types the engine produces, on hex strings. A general
// coder (ethers' AbiCoder) spends most of its time building type objects; the engine's types are few and
// fixed, so encoding them by hand is several times faster. Output is identical to ethers (tested).
import { getAddress } from '../protocol/address.js';
import { ethersUtf8Bytes } from '../protocol/utf8.js';

export const WORD = 64; // hex characters per 32-byte word
export const TWO_256 = 1n << 256n;
export const INT256_MIN = -(1n << 255n);
export const INT256_MAX = (1n << 255n) - 1n;
export const UINT256_MAX = TWO_256 - 1n;

export function lengthWord(length: number): string {
  return length.toString(16).padStart(WORD, '0');
}

export function integerWord(value: bigint, signed: boolean): string {
  const [min, max] = signed ? [INT256_MIN, INT256_MAX] : [0n, UINT256_MAX];
  if (value < min || value > max) throw new Error(`value out-of-bounds for ${signed ? 'int256' : 'uint256'}`);
  return (value < 0n ? value + TWO_256 : value).toString(16).padStart(WORD, '0');
}

/** Length word plus the data right-padded to whole words (bytes and string). */
export function dynamicTail(bytesHex: string): string {
  const remainder = bytesHex.length % WORD;
  return lengthWord(bytesHex.length / 2) + (remainder === 0 ? bytesHex : bytesHex + '0'.repeat(WORD - remainder));
}

function hexOf(value: unknown, what: string): string {
  if (typeof value === 'string' && /^0x([0-9a-fA-F]{2})*$/.test(value)) return value.slice(2).toLowerCase();
  if (value instanceof Uint8Array) return Buffer.from(value).toString('hex');
  throw new Error(`invalid ${what} value`);
}

function integerOf(value: unknown): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  if (typeof value === 'string' && /^-?[0-9]+$/.test(value)) return BigInt(value);
  throw new Error('invalid integer value');
}

type BaseType = 'uint256' | 'int256' | 'bool' | 'address' | 'bytes32' | 'bytes' | 'string';
/** dims from the innermost to the outermost, as written: `int256[2][]` is a dynamic array of int256[2]. */
type AbiType = { base: BaseType; dims: (number | null)[] };

const BASE_TYPES: readonly string[] = ['uint256', 'int256', 'bool', 'address', 'bytes32', 'bytes', 'string'];

function parseType(type: string): AbiType {
  const match = /^([a-z0-9]+)((?:\[\d*\])*)$/.exec(type);
  if (!match || !BASE_TYPES.includes(match[1]!)) throw new Error(`invalid type ${type}`);
  const dims = [...match[2]!.matchAll(/\[(\d*)\]/g)].map((m) => (m[1] === '' ? null : Number(m[1])));
  return { base: match[1] as BaseType, dims };
}

function isDynamic(type: AbiType): boolean {
  if (type.dims.length === 0) return type.base === 'bytes' || type.base === 'string';
  if (type.dims.at(-1) === null) return true;
  return isDynamic({ base: type.base, dims: type.dims.slice(0, -1) });
}

function encodeBase(base: BaseType, value: unknown): string {
  switch (base) {
    case 'uint256':
      return integerWord(integerOf(value), false);
    case 'int256':
      return integerWord(integerOf(value), true);
    case 'bool':
      return value ? `${'0'.repeat(WORD - 1)}1` : '0'.repeat(WORD);
    case 'address':
      return getAddress(value as string)
        .slice(2)
        .toLowerCase()
        .padStart(WORD, '0');
    case 'bytes32': {
      const hex = hexOf(value, 'bytes32');
      if (hex.length !== WORD) throw new Error('incorrect data length for bytes32');
      return hex;
    }
    case 'bytes':
      return dynamicTail(hexOf(value, 'bytes'));
    case 'string':
      if (typeof value !== 'string') throw new Error('invalid string value');
      return dynamicTail(ethersUtf8Bytes(value).toString('hex'));
  }
}

function encodeOne(type: AbiType, value: unknown): string {
  if (type.dims.length === 0) return encodeBase(type.base, value);
  if (!Array.isArray(value)) throw new Error('value is not an array');
  const outer = type.dims.at(-1);
  const element: AbiType = { base: type.base, dims: type.dims.slice(0, -1) };
  const body = encodeTuple(
    value.map(() => element),
    value,
  );
  if (outer === null) return lengthWord(value.length) + body;
  if (value.length !== outer) throw new Error(`array is wrong length: expected ${outer}, got ${value.length}`);
  return body;
}

function encodeTuple(types: AbiType[], values: readonly unknown[]): string {
  const parts = types.map((type, i) => ({ dynamic: isDynamic(type), data: encodeOne(type, values[i]) }));
  let offset = parts.reduce((size, part) => size + (part.dynamic ? 32 : part.data.length / 2), 0);
  let head = '';
  let tail = '';
  for (const part of parts) {
    if (part.dynamic) {
      head += lengthWord(offset);
      tail += part.data;
      offset += part.data.length / 2;
    } else {
      head += part.data;
    }
  }
  return head + tail;
}

/** abi.encode(types…, values…) for uint256/int256/bool/address/bytes32/bytes/string and arrays of them. */
export function encodeAbi(types: readonly string[], values: readonly unknown[]): string {
  if (types.length !== values.length) throw new Error('types/values length mismatch');
  return `0x${encodeTuple(types.map(parseType), values)}`;
}
