// Node ABI: the self-describing parameter encoding of on-chain requests (airnode-facts §4).
// Layout: abi.encode(bytes32 header, bytes32 name1, T1 value1, …) with header = short string "1" + one type
// char per parameter. Byte-compatible with @api3/airnode-abi 0.15.
import { AbiCoder, decodeBytes32String, encodeBytes32String, getAddress, hexlify } from 'ethers';

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

const coder = AbiCoder.defaultAbiCoder();

/** string32 is not a Solidity type: it travels as a bytes32 short string. */
function solidityType(type: AbiParameterType): string {
  return type === 'string32' ? 'bytes32' : type;
}

function bytes32Name(name: string): string {
  if (typeof name !== 'string') throw new Error('Parameter name must be a string');
  try {
    return encodeBytes32String(name);
  } catch {
    throw new Error(`Parameter name "${name}" is longer than 31 bytes`);
  }
}

function encodeValue(parameter: AbiParameter): unknown {
  if (parameter.type !== 'string32') return parameter.value;
  if (typeof parameter.value !== 'string') throw new Error(`Value of "${parameter.name}" must be a string`);
  try {
    return encodeBytes32String(parameter.value);
  } catch {
    throw new Error(`Value of string32 parameter "${parameter.name}" is longer than 31 bytes`);
  }
}

/** Encodes a parameter list; throws on unknown types, too many parameters, long names or bad values. */
export function encodeParameters(parameters: readonly AbiParameter[]): string {
  if (parameters.length > MAX_PARAMETERS) {
    throw new Error(`Too many parameters: at most ${MAX_PARAMETERS} can be encoded, got ${parameters.length}`);
  }
  const types = ['bytes32'];
  const values: unknown[] = [];
  let header = VERSION;
  for (const parameter of parameters) {
    const char = CHAR_BY_TYPE[parameter.type];
    if (char === undefined) throw new Error(`Unknown parameter type: ${String(parameter.type)}`);
    header += char;
    types.push('bytes32', solidityType(parameter.type));
    values.push(bytes32Name(parameter.name), encodeValue(parameter));
  }
  return coder.encode(types, [encodeBytes32String(header), ...values]);
}

function toDecodedValue(type: AbiParameterType, value: unknown): string | boolean {
  switch (type) {
    case 'string32':
      return decodeBytes32String(value as string);
    case 'int256':
    case 'uint256':
      return (value as bigint).toString();
    case 'address':
      return getAddress(value as string);
    case 'bool':
      return value as boolean;
    case 'bytes':
    case 'bytes32':
      return hexlify(value as string);
    case 'string':
      return value as string;
  }
}

/**
 * Decodes Node ABI data. "0x" is the empty parameter set. The data must re-encode to exactly the same
 * string (so non-canonical encodings, trailing bytes and upper-case hex are rejected) as the reference does.
 */
export function decodeParameters(encodedData: string): DecodedParameters {
  if (encodedData === '0x') return {};
  if (typeof encodedData !== 'string' || !/^0x([0-9a-fA-F]{2})*$/.test(encodedData) || encodedData.length < 66) {
    throw new Error('Invalid encoded parameters: expected 0x-prefixed hex of at least 32 bytes');
  }
  let header: string;
  try {
    header = decodeBytes32String(encodedData.slice(0, 66));
  } catch {
    throw new Error('Unknown ABI schema version: invalid header');
  }
  const version = header.substring(0, 1);
  if (version !== VERSION) throw new Error(`Unknown ABI schema version: ${version}`);
  const parameterTypes = Array.from(header.substring(1)).map((char) => {
    const type = TYPE_BY_CHAR[char];
    if (type === undefined) throw new Error(`Unknown parameter type character: ${char}`);
    return type;
  });
  const abiTypes = ['bytes32', ...parameterTypes.flatMap((type) => ['bytes32', solidityType(type)])];
  let decoded: unknown[];
  try {
    decoded = [...coder.decode(abiTypes, encodedData)];
  } catch {
    throw new Error('Unable to decode parameters');
  }
  if (coder.encode(abiTypes, decoded) !== encodedData) throw new Error('Re-encoding mismatch');

  const result: DecodedParameters = {};
  parameterTypes.forEach((type, index) => {
    let name: string;
    try {
      name = decodeBytes32String(decoded[1 + 2 * index] as string);
    } catch {
      throw new Error('Invalid parameter name');
    }
    // defineProperty keeps names like "__proto__" as plain data keys.
    Object.defineProperty(result, name, {
      value: toDecodedValue(type, decoded[2 + 2 * index]),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  });
  return result;
}
