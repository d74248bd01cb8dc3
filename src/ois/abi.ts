// Node ABI: the self-describing parameter encoding of on-chain requests (airnode-facts §4).
// Layout: abi.encode(bytes32 header, bytes32 name1, T1 value1, …) with header = short string "1" + one type
// char per parameter. Byte-compatible with @api3/airnode-abi 0.15. The layout is fixed (one static head
// word per name and value, tails for bytes/string), so it is encoded by hand on hex strings, which is
// faster than a general ABI coder; decoding re-encodes and compares exactly, as the reference does.
import { getAddress } from '../protocol/address.js';
import { ethersUtf8Bytes } from '../protocol/utf8.js';
import { dynamicTail, INT256_MAX, integerWord, TWO_256, WORD } from './abi-words.js';

export type AbiParameterType = 'bytes' | 'bytes32' | 'string' | 'string32' | 'address' | 'int256' | 'uint256' | 'bool';

export type AbiParameter = { type: AbiParameterType; name: string; value: unknown };

/** Decoded parameters: integers as decimal strings, addresses checksummed, bytes as lowercase hex. */
export type DecodedParameters = Record<string, string | boolean>;

const VERSION = '1';
/** The header is a bytes32 short string (31 usable bytes), one of them taken by the version. */
export const MAX_PARAMETERS = 30;

const TYPE_BY_CHAR: Readonly<Record<string, AbiParameterType>> = {
  B: 'bytes',
  b: 'bytes32',
  S: 'string',
  s: 'string32',
  a: 'address',
  i: 'int256',
  u: 'uint256',
  f: 'bool',
};
const CHAR_BY_TYPE = Object.fromEntries(Object.entries(TYPE_BY_CHAR).map(([char, type]) => [type, char])) as Record<
  AbiParameterType,
  string
>;

const ZERO_WORD = '0'.repeat(WORD);
const utf8 = new TextDecoder('utf-8', { fatal: true });

function utf8Bytes(text: string, what: string): Buffer {
  if (typeof text !== 'string') throw new Error(`${what} must be a string`);
  try {
    return ethersUtf8Bytes(text);
  } catch {
    throw new Error(`${what} is not a well-formed string`);
  }
}

/** A bytes32 short string: at most 31 UTF-8 bytes, zero padded (so a terminator always remains). */
function shortStringWord(text: string, what: string): string {
  const bytes = utf8Bytes(text, what);
  if (bytes.length > 31) throw new Error(`${what} is longer than 31 bytes`);
  return bytes.toString('hex').padEnd(WORD, '0');
}

function parseShortString(word: string, what: string): string {
  if (!word.endsWith('00')) throw new Error(`Invalid ${what}: no null terminator`);
  let end = WORD - 2;
  while (end > 0 && word.slice(end - 2, end) === '00') end -= 2;
  return utf8.decode(Buffer.from(word.slice(0, end), 'hex'));
}

function toBigInt(value: unknown, what: string): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new Error(`${what} must be an integer`);
    return BigInt(value);
  }
  if (typeof value === 'string') {
    if (/^-?[0-9]+$/.test(value)) return BigInt(value);
    if (/^-?0x[0-9a-fA-F]+$/.test(value)) return value.startsWith('-') ? -BigInt(value.slice(1)) : BigInt(value);
  }
  throw new Error(`${what} must be an integer`);
}

function checkedIntegerWord(value: bigint, signed: boolean, what: string): string {
  try {
    return integerWord(value, signed);
  } catch {
    throw new Error(`${what} is out of range for ${signed ? 'int256' : 'uint256'}`);
  }
}

function hexBody(value: unknown, what: string): string {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('hex');
  // As ethers' arrayify: a non-negative safe integer becomes its minimal big-endian bytes (0 -> 0x00).
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) {
    const hex = value.toString(16);
    return hex.length % 2 ? `0${hex}` : hex;
  }
  if (typeof value === 'string' && /^0x([0-9a-fA-F]{2})*$/.test(value)) return value.slice(2).toLowerCase();
  throw new Error(`${what} must be 0x-prefixed hex bytes`);
}

/** Head word of a static value, or the tail of a dynamic one. */
function encodeValue(type: AbiParameterType, value: unknown, name: string): { head?: string; tail?: string } {
  const what = `Value of "${name}"`;
  switch (type) {
    case 'int256':
      return { head: checkedIntegerWord(toBigInt(value, what), true, what) };
    case 'uint256':
      return { head: checkedIntegerWord(toBigInt(value, what), false, what) };
    case 'bool':
      return { head: value ? `${'0'.repeat(WORD - 1)}1` : ZERO_WORD };
    case 'address': {
      let address: string;
      try {
        address = getAddress(value as string);
      } catch {
        throw new Error(`${what} is not an address`);
      }
      return { head: address.slice(2).toLowerCase().padStart(WORD, '0') };
    }
    case 'bytes32': {
      const body = hexBody(value, what);
      if (body.length !== WORD) throw new Error(`${what} must be exactly 32 bytes`);
      return { head: body };
    }
    case 'string32':
      return { head: shortStringWord(value as string, `Value of string32 parameter "${name}"`) };
    case 'bytes':
      return { tail: dynamicTail(hexBody(value, what)) };
    case 'string':
      return { tail: dynamicTail(utf8Bytes(value as string, what).toString('hex')) };
  }
}

/** Encodes a parameter list; throws on unknown types, too many parameters, long names or bad values. */
export function encodeParameters(list: readonly AbiParameter[]): string {
  if (!Array.isArray(list)) throw new Error('Parameters must be an array');
  const parameters: readonly AbiParameter[] = list;
  if (parameters.length > MAX_PARAMETERS) {
    throw new Error(`Too many parameters: at most ${MAX_PARAMETERS} can be encoded, got ${parameters.length}`);
  }
  let header = VERSION;
  let head = '';
  let tails = '';
  const headBytes = 32 * (1 + 2 * parameters.length);
  for (const parameter of parameters) {
    const char = CHAR_BY_TYPE[parameter.type];
    if (char === undefined) throw new Error(`Unknown parameter type: ${String(parameter.type)}`);
    header += char;
    head += shortStringWord(parameter.name, `Parameter name "${parameter.name}"`);
    const encoded = encodeValue(parameter.type, parameter.value, parameter.name);
    if (encoded.head !== undefined) {
      head += encoded.head;
    } else {
      head += (headBytes + tails.length / 2).toString(16).padStart(WORD, '0');
      tails += encoded.tail;
    }
  }
  return `0x${shortStringWord(header, 'Header')}${head}${tails}`;
}

function readWord(hex: string, byteOffset: number): string {
  const start = 2 + byteOffset * 2;
  if (byteOffset < 0 || start + WORD > hex.length) throw new Error('Unable to decode parameters: data too short');
  return hex.slice(start, start + WORD);
}

function readDynamic(hex: string, offsetWord: string): string {
  const offset = BigInt(`0x${offsetWord}`);
  if (offset > BigInt(hex.length)) throw new Error('Unable to decode parameters: offset out of bounds');
  const length = BigInt(`0x${readWord(hex, Number(offset))}`);
  const start = 2 + (Number(offset) + 32) * 2;
  if (length > BigInt(hex.length) || start + Number(length) * 2 > hex.length) {
    throw new Error('Unable to decode parameters: length out of bounds');
  }
  return hex.slice(start, start + Number(length) * 2);
}

function decodeValue(type: AbiParameterType, hex: string, word: string): string | boolean {
  switch (type) {
    case 'int256': {
      const value = BigInt(`0x${word}`);
      return (value > INT256_MAX ? value - TWO_256 : value).toString();
    }
    case 'uint256':
      return BigInt(`0x${word}`).toString();
    case 'bool':
      return BigInt(`0x${word}`) !== 0n;
    case 'address':
      return getAddress(`0x${word.slice(24)}`);
    case 'bytes32':
      return `0x${word}`;
    case 'string32':
      return parseShortString(word, 'string32 value');
    case 'bytes':
      return `0x${readDynamic(hex, word)}`;
    case 'string':
      return utf8.decode(Buffer.from(readDynamic(hex, word), 'hex'));
  }
}

/**
 * Decodes Node ABI data. "0x" is the empty parameter set. The data must re-encode to exactly the same
 * string (so non-canonical encodings, trailing bytes and upper-case hex are rejected) as the reference does.
 */
export function decodeParameters(encodedData: string): DecodedParameters {
  if (encodedData === '0x') return {};
  if (typeof encodedData !== 'string' || !/^0x([0-9a-fA-F]{2})*$/.test(encodedData) || encodedData.length < 2 + WORD) {
    throw new Error('Invalid encoded parameters: expected 0x-prefixed hex of at least 32 bytes');
  }
  let header: string;
  try {
    header = parseShortString(encodedData.slice(2, 2 + WORD), 'header');
  } catch {
    throw new Error('Unknown ABI schema version: invalid header');
  }
  const version = header.substring(0, 1);
  if (version !== VERSION) throw new Error(`Unknown ABI schema version: ${version}`);
  const types = Array.from(header.substring(1)).map((char) => {
    const type = TYPE_BY_CHAR[char];
    if (type === undefined) throw new Error(`Unknown parameter type character: ${char}`);
    return type;
  });

  const decoded: AbiParameter[] = [];
  try {
    types.forEach((type, index) => {
      const name = parseShortString(readWord(encodedData, 32 * (1 + 2 * index)), 'parameter name');
      const value = decodeValue(type, encodedData, readWord(encodedData, 32 * (2 + 2 * index)));
      decoded.push({ type, name, value });
    });
  } catch {
    throw new Error('Unable to decode parameters');
  }
  let reEncoded: string;
  try {
    reEncoded = encodeParameters(decoded);
  } catch {
    throw new Error('Re-encoding mismatch');
  }
  if (reEncoded !== encodedData) throw new Error('Re-encoding mismatch');

  const result: DecodedParameters = {};
  for (const { name, value } of decoded) {
    // defineProperty keeps names like "__proto__" as plain data keys.
    Object.defineProperty(result, name, {
      value: value as string | boolean,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return result;
}
