// The digest that signed data is signed over, byte-compatible with Airnode 0.15's signWithTemplateId and
// @api3/airnode-feed's signTemplateData: keccak256(abi.encodePacked(bytes32 templateId, uint256 timestamp, bytes
// encodedValue)). The HTTP signed-data gateway (gateway/signing.ts) and the feed (feed/signing.ts) both sign it; no
// ethers here, which the feed does not load.
import { BYTES32_PATTERN, HEX_BYTES_PATTERN } from './direct-ids.js';
import { keccak256Bytes } from './keccak.js';

const UINT256_LIMIT = 1n << 256n;

/** A uint256 as 64 hex digits, for the plain forms (decimal digits, safe integers, bigints); else undefined. */
function plainUint256Hex(value: string | number | bigint): string | undefined {
  let number: bigint;
  if (typeof value === 'string') {
    if (!/^[0-9]{1,78}$/.test(value)) return undefined;
    number = BigInt(value);
  } else if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) return undefined;
    number = BigInt(value);
  } else if (typeof value === 'bigint') {
    number = value;
  } else {
    return undefined;
  }
  if (number < 0n || number >= UINT256_LIMIT) return undefined;
  return number.toString(16).padStart(64, '0');
}

/**
 * keccak256(abi.encodePacked(bytes32 templateId, uint256 timestamp, bytes encodedValue)) as 32 bytes, for the plain
 * forms of the values: a bytes32 template id, a timestamp of decimal digits, a safe integer or a bigint within
 * uint256, and whole hex bytes (an empty value is `0x`). The packed encoding is then the three values' bytes one after
 * the other, hashed by keccak.ts's sponge. Undefined for any other form, which the caller packs as it must.
 */
export function plainSignedDataDigest(
  templateId: string,
  timestamp: string | number | bigint,
  encodedValue: string,
): Uint8Array | undefined {
  const value = encodedValue || '0x';
  const time = plainUint256Hex(timestamp);
  if (time === undefined || !BYTES32_PATTERN.test(templateId) || !HEX_BYTES_PATTERN.test(value)) return undefined;
  return keccak256Bytes(Buffer.from(templateId.slice(2) + time + value.slice(2), 'hex'));
}
