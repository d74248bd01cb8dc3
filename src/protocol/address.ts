// Ethereum addresses as ethers 6's getAddress and isAddress take them, without ethers: the OIS encoders and the feed
// path check addresses, and loading ethers was about 0.12 s of an `oracle-node feed` start. Unit tests check each
// answer, the errors included, against ethers with random addresses in every case and their ICAP forms.
import { checksumAddress } from './node-key.js';

const HEX_ADDRESS = /^(0x)?[0-9a-fA-F]{40}$/;
const MIXED_CASE = /([A-F].*[a-f])|([a-f].*[A-F])/;
const ICAP_ADDRESS = /^XE[0-9]{2}[0-9A-Za-z]{30,31}$/;

/** The error ethers throws for an argument, with the parts of its message a caller may show. */
export class InvalidAddressError extends TypeError {
  readonly code = 'INVALID_ARGUMENT';
  constructor(
    readonly reason: 'invalid address' | 'bad address checksum' | 'bad icap checksum',
    readonly value: unknown,
  ) {
    super(`${reason} (argument="address", value=${JSON.stringify(value) ?? String(value)}, code=INVALID_ARGUMENT)`);
  }
}

// IBAN's letters as numbers: A = 10 ... Z = 35.
function ibanDigits(text: string): string {
  let out = '';
  for (const char of text) out += /[0-9]/.test(char) ? char : String(char.charCodeAt(0) - 55);
  return out;
}

/** The two check digits of an ICAP address (ISO 7064 mod 97-10, as ethers computes them). */
function icapChecksum(address: string): string {
  const upper = address.toUpperCase();
  let expanded = ibanDigits(`${upper.substring(4)}${upper.substring(0, 2)}00`);
  // 15 decimal digits at a time stay within the integers a double holds exactly.
  while (expanded.length >= 15) {
    const block = expanded.substring(0, 15);
    expanded = String(Number.parseInt(block, 10) % 97) + expanded.substring(block.length);
  }
  return String(98 - (Number.parseInt(expanded, 10) % 97)).padStart(2, '0');
}

function fromBase36(text: string): bigint {
  let result = 0n;
  for (const char of text.toLowerCase()) result = result * 36n + BigInt(Number.parseInt(char, 36));
  return result;
}

/**
 * The EIP-55 checksummed form of an address (40 hex digits with or without 0x, or a direct ICAP address); throws
 * InvalidAddressError where ethers' getAddress throws: not an address, a mixed-case address with a wrong checksum,
 * an ICAP address with wrong check digits.
 */
export function getAddress(value: unknown): string {
  if (typeof value !== 'string') throw new InvalidAddressError('invalid address', value);
  if (HEX_ADDRESS.test(value)) {
    const body = value.startsWith('0x') ? value.slice(2) : value;
    const result = checksumAddress(body);
    if (MIXED_CASE.test(value) && result !== `0x${body}`) throw new InvalidAddressError('bad address checksum', value);
    return result;
  }
  if (ICAP_ADDRESS.test(value)) {
    if (value.substring(2, 4) !== icapChecksum(value)) throw new InvalidAddressError('bad icap checksum', value);
    const hex = fromBase36(value.substring(4)).toString(16).padStart(40, '0');
    // 31 base-36 digits can exceed 160 bits: ethers checksums the first 40 hex digits and keeps the rest as they are.
    return hex.length === 40 ? checksumAddress(hex) : `${checksumAddress(hex.slice(0, 40))}${hex.slice(40)}`;
  }
  throw new InvalidAddressError('invalid address', value);
}

/** Whether getAddress takes the value (ethers' isAddress). */
export function isAddress(value: unknown): boolean {
  try {
    getAddress(value);
    return true;
  } catch {
    return false;
  }
}
