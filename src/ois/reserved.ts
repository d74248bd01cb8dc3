// Reserved parameters and response extraction/encoding (airnode-facts §5): `_type`, `_path`, `_times`
// select, cast, scale and ABI-encode values out of an API response. Byte-compatible with
// @api3/airnode-adapter 0.15 where the reference is right; deliberate differences are listed in
// docs/ois-engine.md (array leaves are cast by their declared type, the size limit applies to every
// response, path segments only read own properties, "-0" is printed "0").
import { errorMessage } from '../common/errors.js';
import {
  BASE_RESPONSE_TYPES,
  escapeAwareSplit,
  isNumericType,
  isValidType,
  parseArrayType,
} from '../config/response-types.js';
import { isAddress } from '../protocol/address.js';
import { ethersUtf8Bytes } from '../protocol/utf8.js';
import { encodeAbi } from './abi-words.js';
import { type Decimal, multiply, parseDecimalLike, truncateToIntegerString } from './decimal.js';
import type { Endpoint } from './types.js';

export const MAX_ENCODED_RESPONSE_SIZE = 16_384;

export { BASE_RESPONSE_TYPES, escapeAwareSplit, parseArrayType };

export type ReservedParameterValues = {
  _type?: string | undefined;
  _path?: string | undefined;
  _times?: string | undefined;
  _gasPrice?: string | undefined;
  _minConfirmations?: string | undefined;
};

export type ExtractedResponse = { rawValue: unknown; encodedValue: string; values: unknown[] };

/**
 * Value of a reserved parameter: honoured only when the endpoint lists it; then `fixed || request || default`
 * with JavaScript truthiness, exactly as the reference (an empty `fixed` can be overridden by the requester).
 */
export function getReservedParameterValue(
  name: string,
  endpoint: Pick<Endpoint, 'reservedParameters'>,
  requestParameters: Record<string, unknown>,
): string | undefined {
  const reserved = endpoint.reservedParameters.find((parameter) => parameter.name === name);
  if (!reserved) return undefined;
  const requested = Object.hasOwn(requestParameters, name) ? requestParameters[name] : undefined;
  const value = reserved.fixed || requested || reserved.default;
  return value === undefined || value === null ? undefined : String(value);
}

export function getReservedParameters(
  endpoint: Pick<Endpoint, 'reservedParameters'>,
  requestParameters: Record<string, unknown>,
): ReservedParameterValues {
  return {
    _type: getReservedParameterValue('_type', endpoint, requestParameters),
    _path: getReservedParameterValue('_path', endpoint, requestParameters),
    _times: getReservedParameterValue('_times', endpoint, requestParameters),
    _gasPrice: getReservedParameterValue('_gasPrice', endpoint, requestParameters),
    _minConfirmations: getReservedParameterValue('_minConfirmations', endpoint, requestParameters),
  };
}

/** string32 travels as bytes32 and timestamp as uint256. */
export function solidityType(type: string): string {
  return type.replace('string32', 'bytes32').replace('timestamp', 'uint256');
}

function getRawValue(data: unknown, path: string | undefined): unknown {
  if (!path) return data;
  let current: unknown = data;
  for (const segment of escapeAwareSplit(path, '.')) {
    // Own properties only: "constructor" or "__proto__" must not reach into prototypes.
    if (current === null || current === undefined || !Object.hasOwn(Object(current), segment)) return undefined;
    current = (current as Record<string, unknown>)[segment];
  }
  return current;
}

export function extractValue(data: unknown, path: string | undefined): unknown {
  const value = getRawValue(data, path);
  if (value === undefined) throw new Error(`Unable to find value at path: '${path}'`);
  return value;
}

const SPECIAL_NUMBERS = new Map<unknown, Decimal>([
  [false, { coefficient: 0n, scale: 0 }],
  ['false', { coefficient: 0n, scale: 0 }],
  [true, { coefficient: 1n, scale: 0 }],
  ['true', { coefficient: 1n, scale: 0 }],
]);

/** A number as bignumber.js reads it: String(value) parsed, non-finite rejected. */
export function castNumber(value: unknown): Decimal {
  const special = SPECIAL_NUMBERS.get(value);
  if (special) return special;
  if (typeof value === 'number' && !Number.isFinite(value)) throw new Error('Invalid number value');
  const parsed = parseDecimalLike(String(value));
  if (!parsed) throw new Error('Invalid number value');
  return parsed;
}

function castBoolean(value: unknown): boolean {
  return !(
    value === 0 ||
    value === '0' ||
    value === false ||
    value === 'false' ||
    value === undefined ||
    value === null
  );
}

function isPlainObject(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === null || prototype === Object.prototype;
}

function assertScalar(value: unknown): void {
  if (Array.isArray(value)) throw new Error('Value is an array');
  if (isPlainObject(value)) throw new Error('Value is an object');
}

function castBytesLike(value: unknown): string {
  const text = String(value);
  if (!/^0x([0-9a-fA-F]{2})*$/.test(text)) throw new Error('Invalid hex value');
  return text.toLowerCase();
}

/** ethers' encodeBytes32String of text already cut to 31 UTF-8 bytes: its bytes, zero-padded to 32, as hex. */
function encodeBytes32String(text: string): string {
  const bytes = ethersUtf8Bytes(text);
  if (bytes.length > 31) throw new Error('bytes32 string must be less than 32 bytes');
  return `0x${bytes.toString('hex').padEnd(64, '0')}`;
}

/** Keeps at most 31 UTF-8 bytes without splitting a character (the reference cuts 31 UTF-16 units). */
function truncateUtf8(text: string, maxBytes: number): string {
  let result = '';
  let bytes = 0;
  for (const char of text) {
    const size = ethersUtf8Bytes(char).length;
    if (bytes + size > maxBytes) break;
    result += char;
    bytes += size;
  }
  return result;
}

/** Casts one leaf (non-array) value of a base type; numbers stay Decimal for `_times`. */
function castLeaf(value: unknown, baseType: string): unknown {
  switch (baseType) {
    case 'int256':
    case 'uint256':
      return castNumber(value);
    case 'bool':
      return castBoolean(value);
    case 'bytes':
    case 'bytes32':
      return castBytesLike(value);
    case 'string':
      assertScalar(value);
      return String(value);
    case 'address': {
      assertScalar(value);
      const text = String(value);
      if (!isAddress(text)) throw new Error('Invalid address');
      return text;
    }
    case 'string32':
      assertScalar(value);
      return encodeBytes32String(truncateUtf8(String(value), 31));
    case 'timestamp':
      return Math.floor(Date.now() / 1000).toString();
  }
  throw new Error(`Invalid type: ${baseType}`);
}

function mapArray(value: unknown, dimensions: number, leaf: (element: unknown) => unknown): unknown {
  if (dimensions === 0) return leaf(value);
  if (!Array.isArray(value)) throw new Error(`Expected ${String(value)} to be an array`);
  return value.map((element) => mapArray(element, dimensions - 1, leaf));
}

export function castValue(value: unknown, type: string): unknown {
  if (!isValidType(type)) throw new Error(`Invalid type: ${type}`);
  const arrayType = parseArrayType(type);
  try {
    if (arrayType) {
      if (arrayType.baseType === 'timestamp') throw new Error('timestamp cannot be an array element');
      return mapArray(value, arrayType.dimensions, (leaf) => castLeaf(leaf, arrayType.baseType));
    }
    return castLeaf(value, type);
  } catch {
    throw new Error(`Unable to cast value to ${type}`);
  }
}

/** floor toward zero of value × times (times absent or empty: no multiplication). */
export function multiplyValue(value: Decimal, times: string | undefined): string {
  if (!times) return truncateToIntegerString(value);
  const factor = parseDecimalLike(times);
  if (!factor) throw new Error(`Invalid "_times" value: ${times}`);
  return truncateToIntegerString(multiply(value, factor));
}

type SingleReserved = { _type: string; _path?: string | undefined; _times?: string | undefined };

function extractSingleResponse(data: unknown, parameters: SingleReserved): unknown {
  const arrayType = parseArrayType(parameters._type);
  const type = arrayType?.baseType ?? parameters._type;
  if (!isNumericType(type) && parameters._times) {
    throw new Error(`Parameter "_times" can only be used with numeric types, but "_type" was "${type}"`);
  }
  if (type === 'timestamp' && parameters._path) {
    throw new Error(
      `Parameter "_path" must be empty string or undefined when "_type" is "timestamp", but it was "${parameters._path}"`,
    );
  }
  const extracted = extractValue(data, parameters._path);
  const value = castValue(extracted, parameters._type);
  if (!isNumericType(type)) return value;
  return arrayType
    ? mapArray(value, arrayType.dimensions, (leaf) => multiplyValue(leaf as Decimal, parameters._times))
    : multiplyValue(value as Decimal, parameters._times);
}

/** Splits `_type`, `_path` and `_times` into one set per encoded value; counts must agree. */
export function splitReservedParameters(parameters: ReservedParameterValues): SingleReserved[] {
  if (!parameters._type) throw new Error('Missing reserved parameter "_type"');
  const types = escapeAwareSplit(parameters._type, ',');
  const split = (name: '_path' | '_times') => {
    const value = parameters[name];
    if (!value) return undefined;
    const parts = escapeAwareSplit(value, ',');
    if (parts.length !== types.length) {
      throw new Error(
        `Unexpected number of parsed reserved parameters. Number of "_types" parameters = ${types.length}, but "${name}" has only ${parts.length}`,
      );
    }
    return parts;
  };
  const paths = split('_path');
  const timeses = split('_times');
  return types.map((type, i) => ({ _type: type, _path: paths?.[i], _times: timeses?.[i] }));
}

function encode(types: string[], values: unknown[]): string {
  try {
    return encodeAbi(types.map(solidityType), values);
  } catch (error) {
    throw new Error(`Unable to encode the value as ${types.join(',')}: ${errorMessage(error)}`);
  }
}

/**
 * Extracts, casts, multiplies and ABI-encodes the response per `_type`/`_path`/`_times`. Several
 * comma-separated types encode one tuple. Throws with the reference's messages.
 */
export function extractAndEncodeResponse(data: unknown, parameters: ReservedParameterValues): ExtractedResponse {
  const split = splitReservedParameters(parameters);
  const values = split.map((single) => extractSingleResponse(data, single));
  const encodedValue = encode(
    split.map((single) => single._type),
    values,
  );
  if ((encodedValue.length - 2) / 2 > MAX_ENCODED_RESPONSE_SIZE) {
    throw new Error(`Encoded value exceeds the maximum allowed size (${MAX_ENCODED_RESPONSE_SIZE} bytes)`);
  }
  return { rawValue: data, encodedValue, values };
}
