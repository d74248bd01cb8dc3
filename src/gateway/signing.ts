// Signing of the HTTP signed-data gateway and the OEV gateway, byte-compatible with Airnode 0.15
// (airnode-facts §6; reference: airnode-node api/index.ts signWithTemplateId, workers/local-gateways/validation.ts
// verifySignOevDataRequest, handlers/sign-oev-data.ts).
//
// The OEV checks hash caller-supplied values. The reference packs them with ethers 5, which is laxer than
// ethers 6 (an "address" is any even-length hex, numbers may be hex strings, negative uint256 wrap to two's
// complement), so the packing below reproduces ethers 5 rather than calling solidityPacked: otherwise the
// same request would get a different data feed id or update hash, or a 400, from this node.
import { AbiCoder, concat, getBytes, keccak256, solidityPackedKeccak256 } from 'ethers';
import { z } from 'zod';
import { errorMessage } from '../common/errors.js';
import { type RecoverableSignature, recoverSigners } from '../ois/worker-tasks.js';
import { BYTES32_PATTERN, deriveTemplateIdV1 } from '../protocol/ids.js';
import type { MessageSigner } from '../protocol/message-signer.js';
import { plainSignedDataDigest } from '../protocol/signed-data.js';

const abi = AbiCoder.defaultAbiCoder();

/** The node key: anything that signs EIP-191 messages synchronously (ethers Wallet / HDNodeWallet). */
export type NodeSigner = MessageSigner;

export type SignedData = { timestamp: string; encodedValue: string; signature: string };

// ---------------------------------------------------------------------------------------------------------------
// Signed data

/**
 * keccak256(abi.encodePacked(bytes32 templateId, uint256 timestamp, bytes encodedValue)) as 32 bytes: the protocol's
 * digest for the plain forms; any other form of a value (a hex or negative timestamp, malformed hex) goes through
 * ethers' solidityPacked, which answers or throws as before.
 */
function signedDataDigest(templateId: string, timestamp: string | number | bigint, encodedValue: string): Uint8Array {
  return (
    plainSignedDataDigest(templateId, timestamp, encodedValue) ??
    getBytes(solidityPackedKeccak256(['bytes32', 'uint256', 'bytes'], [templateId, timestamp, encodedValue || '0x']))
  );
}

/** keccak256(abi.encodePacked(bytes32 templateId, uint256 timestamp, bytes encodedValue)). */
export function signedDataHash(templateId: string, timestamp: string | number | bigint, encodedValue: string): string {
  return `0x${Buffer.from(signedDataDigest(templateId, timestamp, encodedValue)).toString('hex')}`;
}

/** EIP-191 signature over the 32 bytes of signedDataHash, as the reference's signWithTemplateId. */
export function signWithTemplateId(
  signer: NodeSigner,
  templateId: string,
  timestamp: string | number | bigint,
  encodedValue: string,
): string {
  return signer.signMessageSync(signedDataDigest(templateId, timestamp, encodedValue));
}

/** Template ids of recent (endpoint, parameters) pairs: the same parameters come back every second or so. */
const TEMPLATE_IDS_KEPT = 4096;
/** Longer parameters are derived every time rather than held as a key. */
const MAX_MEMOISED_PARAMETERS_LENGTH = 2048;
const templateIds = new Map<string, string>();

/**
 * deriveTemplateIdV1, remembered for the last TEMPLATE_IDS_KEPT pairs (a pure function of its two strings). Only a
 * bytes32 endpoint id (always 66 characters) is remembered, so that the key, the two strings joined, is unambiguous.
 */
export function memoisedTemplateIdV1(endpointId: string, encodedParameters: string): string {
  if (encodedParameters.length > MAX_MEMOISED_PARAMETERS_LENGTH || !BYTES32_PATTERN.test(endpointId)) {
    return deriveTemplateIdV1(endpointId, encodedParameters);
  }
  const key = endpointId + encodedParameters;
  const known = templateIds.get(key);
  if (known !== undefined) return known;
  const templateId = deriveTemplateIdV1(endpointId, encodedParameters);
  if (templateIds.size >= TEMPLATE_IDS_KEPT) templateIds.delete(templateIds.keys().next().value!);
  templateIds.set(key, templateId);
  return templateId;
}

export type SignedDataInput = {
  signer: NodeSigner;
  endpointId: string;
  /** Exactly as the requester sent them: the template id covers these bytes, not a re-encoding. */
  encodedParameters: string;
  encodedValue: string;
  /** Post-processing V2 `timestamp`, when it returned one. */
  timestamp?: number | string | undefined;
  nowMs?: number;
};

/** The signed-data gateway answer: templateId V1, timestamp (post-processing or now), signature. */
export function signHttpSignedData(input: SignedDataInput): SignedData & { templateId: string } {
  const templateId = memoisedTemplateIdV1(input.endpointId, input.encodedParameters);
  const timestamp = String(input.timestamp ?? Math.floor((input.nowMs ?? Date.now()) / 1000));
  const signature = signWithTemplateId(input.signer, templateId, timestamp, input.encodedValue);
  return { templateId, timestamp, encodedValue: input.encodedValue, signature };
}

// ---------------------------------------------------------------------------------------------------------------
// ethers 5 compatible packing of caller-supplied values

const BIT_256 = 1n << 256n;

/** ethers 5 arrayify of a string: 0x prefix, hex digits, even length; no checksum or length rule. */
function hexBytes(value: unknown, what: string): Uint8Array {
  if (typeof value !== 'string' || !/^0x[0-9A-Fa-f]*$/.test(value)) throw new Error(`invalid ${what}`);
  if (value.length % 2 !== 0) throw new Error(`odd-length ${what}`);
  return getBytes(value);
}

function bytes32(value: unknown, what: string): Uint8Array {
  const bytes = hexBytes(value, what);
  if (bytes.length !== 32) throw new Error(`invalid ${what}`);
  return bytes;
}

/** ethers 5 BigNumber.from: decimal or (optionally negative) hex strings, safe integers as numbers. */
export function bigNumberFrom(value: unknown): bigint {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value % 1 !== 0) throw new Error('underflow');
    if (value >= Number.MAX_SAFE_INTEGER || value <= -Number.MAX_SAFE_INTEGER) throw new Error('overflow');
    return BigInt(value);
  }
  if (typeof value === 'string') {
    if (/^-?0x[0-9a-f]+$/i.test(value)) {
      const negative = value.startsWith('-');
      const magnitude = BigInt(negative ? value.slice(1) : value);
      return negative ? -magnitude : magnitude;
    }
    if (/^-?[0-9]+$/.test(value)) return BigInt(value);
  }
  throw new Error('invalid BigNumber value');
}

/** solidityPack uint256 as ethers 5 does it: negatives wrap to two's complement, more than 32 bytes throws. */
function uint256(value: unknown): Uint8Array {
  let number = bigNumberFrom(value);
  if (number < 0n) number = BIT_256 + number;
  if (number < 0n || number >= BIT_256) throw new Error('value out of range');
  return getBytes(`0x${number.toString(16).padStart(64, '0')}`);
}

// ---------------------------------------------------------------------------------------------------------------
// OEV

const TIMESTAMP_DEVIATION_MS = 2 * 60 * 1000;
export const INT224_MIN = -(2n ** 223n);
export const INT224_MAX = 2n ** 223n - 1n;
// 100 % as in DapiServer (1e8), so 1 % is 1e6.
const HUNDRED_PERCENT = 100_000_000n;
const ONE_PERCENT = HUNDRED_PERCENT / 100n;

const beaconSchema = z.object({
  airnodeAddress: z.string(),
  templateId: z.string(),
  // A beacon may come without data as long as a majority has it; every beacon counts for the data feed id.
  signedData: z.object({ encodedValue: z.string(), timestamp: z.string(), signature: z.string() }).optional(),
});

// Extra fields are allowed, as in the reference (no .strict()).
export const signOevDataBodySchema = z.object({
  chainId: z.number().positive(),
  api3ServerV1: z.string(),
  oevProxyAddress: z.string(),
  updateId: z.string(),
  bidderAddress: z.string(),
  bidAmount: z.string(),
  // Order matters: it determines the beacon set id and the order of the signatures.
  beacons: z.array(beaconSchema),
});

export type SignOevDataBody = z.infer<typeof signOevDataBodySchema>;
export type OevBeacon = z.infer<typeof beaconSchema>;
export type DecodedBeacon = OevBeacon & {
  beaconId: string;
  signedData: NonNullable<OevBeacon['signedData']>;
  decodedValue: bigint;
};

export type GatewayFailure = { success: false; statusCode: number; error: { message: string }; reason?: string };
export type OevVerification = { success: true; oevUpdateHash: string; beacons: DecodedBeacon[] } | GatewayFailure;

function failure(message: string, reason?: string): GatewayFailure {
  return { success: false, statusCode: 400, error: { message }, ...(reason ? { reason } : {}) };
}

/** keccak256(abi.encodePacked(address airnode, bytes32 templateId)). */
export function deriveBeaconId(airnodeAddress: string, templateId: string): string {
  return keccak256(concat([hexBytes(airnodeAddress, 'address'), bytes32(templateId, 'templateId')]));
}

/** keccak256(abi.encode(bytes32[] beaconIds)). */
export function deriveBeaconSetId(beaconIds: string[]): string {
  return keccak256(abi.encode(['bytes32[]'], [beaconIds]));
}

/** Median; an even count takes the mean of the middle two with integer division (truncating toward zero). */
export function calculateMedian(values: bigint[]): bigint {
  const sorted = [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 !== 0 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2n;
}

/** floor(mean) of the timestamps read with parseInt, in JS numbers, as the reference does. */
export function calculateUpdateTimestamp(timestamps: string[]): number {
  const total = timestamps.reduce((sum, next) => sum + Number.parseInt(next, 10), 0);
  return Math.floor(total / timestamps.length);
}

/**
 * Every value within 1 % of the (truncated) mean. With a negative mean the allowed deviation is negative, so
 * the check fails: the reference behaves the same way and data feeds are positive in practice.
 */
export function allBeaconsConsistent(values: bigint[]): boolean {
  const average = values.reduce((sum, value) => sum + value, 0n) / BigInt(values.length);
  const maxDeviation = (average * ONE_PERCENT) / HUNDRED_PERCENT;
  return values.every((value) => {
    const deviation = average - value;
    return (deviation < 0n ? -deviation : deviation) <= maxDeviation;
  });
}

/**
 * A signature as ethers' recoverAddress takes it; v bytes are read like ethers 5 (0/1 and any value >= 27 by
 * parity). Throws on a malformed signature, before any costly recovery.
 */
function parseSignature(signature: string): RecoverableSignature {
  const bytes = hexBytes(signature, 'signature');
  if (bytes.length === 65) {
    const v = bytes[64]!;
    if (v < 27 && v !== 0 && v !== 1) throw new Error('signature invalid v byte');
    const normalized = v < 27 ? v + 27 : 28 - (v % 2 === 0 ? 0 : 1);
    return {
      r: `0x${Buffer.from(bytes.subarray(0, 32)).toString('hex')}`,
      s: `0x${Buffer.from(bytes.subarray(32, 64)).toString('hex')}`,
      v: normalized,
    };
  }
  if (bytes.length !== 64) throw new Error('invalid signature string');
  return signature;
}

/** More beacons than any data feed has; the cap bounds the signatures one request makes the node recover. */
export const MAX_OEV_BEACONS = 64;

type BeaconWithId = OevBeacon & { beaconId: string };
type SignatureCheck = { index: number; messageHash: string; signature: RecoverableSignature };

/** The cheap checks of a request, and the signatures left to recover (everything up to the first failure). */
type OevPlan = {
  body: SignOevDataBody;
  beaconsWithIds: BeaconWithId[];
  beaconsWithData: BeaconWithId[];
  checks: SignatureCheck[];
  /** The first beacon (index into beaconsWithData) that failed before recovery, and why. */
  firstFailure?: { index: number; reason: string };
};

function planOevVerification(body: SignOevDataBody, nodeAddress: string, nowMs: number): OevPlan | GatewayFailure {
  if (body.beacons.length > MAX_OEV_BEACONS) return failure(`Too many beacons (at most ${MAX_OEV_BEACONS})`);
  let beaconsWithIds: BeaconWithId[];
  try {
    beaconsWithIds = body.beacons.map((beacon) => ({
      ...beacon,
      beaconId: deriveBeaconId(beacon.airnodeAddress, beacon.templateId),
    }));
  } catch (error) {
    return failure('Some of the beacons are invalid', errorMessage(error));
  }

  const majority = Math.floor(beaconsWithIds.length / 2) + 1;
  const beaconsWithData = beaconsWithIds.filter((beacon) => beacon.signedData);
  if (beaconsWithData.length < majority) return failure('Not enough beacons with data to proceed');

  if (!beaconsWithIds.some((beacon) => beacon.airnodeAddress === nodeAddress)) {
    return failure('Missing beacon data from the Airnode requested for signing');
  }

  const checks: SignatureCheck[] = [];
  for (const [index, beacon] of beaconsWithData.entries()) {
    const { encodedValue, timestamp, signature } = beacon.signedData!;
    try {
      // NaN (e.g. "-0x10") passes this comparison, as with date-fns isBefore in the reference.
      if (Number(timestamp) * 1000 < nowMs - TIMESTAMP_DEVIATION_MS) throw new Error('Beacon timestamp too old');
      const messageHash = keccak256(
        concat([bytes32(beacon.templateId, 'templateId'), uint256(timestamp), hexBytes(encodedValue, 'encodedValue')]),
      );
      checks.push({ index, messageHash, signature: parseSignature(signature) });
    } catch (error) {
      return {
        body,
        beaconsWithIds,
        beaconsWithData,
        checks,
        firstFailure: { index, reason: errorMessage(error) },
      };
    }
  }
  return { body, beaconsWithIds, beaconsWithData, checks };
}

/** The rest of the checks, in the reference's order, once the signers are known (one per check). */
function completeOevVerification(plan: OevPlan, signers: (string | undefined)[]): OevVerification {
  const { body, beaconsWithIds, beaconsWithData } = plan;
  const decoded: DecodedBeacon[] = [];
  for (const [index, beacon] of beaconsWithData.entries()) {
    if (plan.firstFailure?.index === index) {
      return failure('Not enough beacons with valid data to proceed', plan.firstFailure.reason);
    }
    const signedData = beacon.signedData!;
    try {
      if (beacon.airnodeAddress !== signers[index]) throw new Error('Invalid beacon signature');
      const decodedValue = abi.decode(['int256'], hexBytes(signedData.encodedValue, 'encodedValue'))[0] as bigint;
      if (decodedValue > INT224_MAX || decodedValue < INT224_MIN) throw new Error('Beacon value not within range');
      decoded.push({ ...beacon, signedData, decodedValue });
    } catch (error) {
      return failure('Not enough beacons with valid data to proceed', errorMessage(error));
    }
  }

  const values = decoded.map((beacon) => beacon.decodedValue);
  if (!allBeaconsConsistent(values)) return failure('Inconsistent beacon data');

  const beaconIds = beaconsWithIds.map((beacon) => beacon.beaconId);
  const dataFeedId = beaconIds.length === 1 ? beaconIds[0]! : deriveBeaconSetId(beaconIds);
  const timestamp = calculateUpdateTimestamp(decoded.map((beacon) => beacon.signedData.timestamp));
  const updateValue = calculateMedian(values);
  try {
    const oevUpdateHash = keccak256(
      concat([
        uint256(body.chainId),
        hexBytes(body.api3ServerV1, 'api3ServerV1'),
        hexBytes(body.oevProxyAddress, 'oevProxyAddress'),
        bytes32(dataFeedId, 'dataFeedId'),
        bytes32(body.updateId, 'updateId'),
        uint256(timestamp),
        getBytes(abi.encode(['int256'], [updateValue])),
        hexBytes(body.bidderAddress, 'bidderAddress'),
        uint256(body.bidAmount),
      ]),
    );
    return { success: true, oevUpdateHash, beacons: decoded };
  } catch (error) {
    return failure('Error deriving OEV update hash', errorMessage(error));
  }
}

/** Signers by beaconsWithData index (undefined where a signature does not recover or was not checked). */
function signersByIndex(plan: OevPlan, checks: SignatureCheck[], recovered: (string | undefined)[]) {
  const signers: (string | undefined)[] = new Array(plan.beaconsWithData.length);
  checks.forEach((check, i) => {
    signers[check.index] = recovered[i];
  });
  return signers;
}

/**
 * All checks of the OEV gateway, in the reference's order and with its messages. `nodeAddress` must be the
 * checksummed node address: beacons are matched to it by exact string comparison, as in the reference.
 */
export function verifySignOevDataRequest(
  body: SignOevDataBody,
  nodeAddress: string,
  nowMs = Date.now(),
): OevVerification {
  const plan = planOevVerification(body, nodeAddress, nowMs);
  if (!('checks' in plan)) return plan;
  const recovered = recoverSigners({ kind: 'recover', items: plan.checks });
  return completeOevVerification(plan, signersByIndex(plan, plan.checks, recovered));
}

export type SignerRecovery = (
  items: { messageHash: string; signature: RecoverableSignature }[],
) => Promise<(string | undefined)[]>;

/**
 * verifySignOevDataRequest with the signatures recovered by `recover` (a worker thread in the gateway), and the
 * node's own beacons checked first: a request whose beacon of this node is not validly signed is refused
 * before anyone else's signature is recovered. Same answers as the synchronous version.
 */
export async function verifySignOevDataRequestAsync(
  body: SignOevDataBody,
  nodeAddress: string,
  recover: SignerRecovery,
  nowMs = Date.now(),
): Promise<OevVerification> {
  const plan = planOevVerification(body, nodeAddress, nowMs);
  if (!('checks' in plan)) return plan;
  const own = plan.checks.filter((check) => plan.beaconsWithData[check.index]!.airnodeAddress === nodeAddress);
  const others = plan.checks.filter((check) => plan.beaconsWithData[check.index]!.airnodeAddress !== nodeAddress);
  const ownSigners = await recover(own);
  if (ownSigners.some((signer) => signer !== nodeAddress)) {
    return failure('Not enough beacons with valid data to proceed', 'Invalid beacon signature');
  }
  const otherSigners = await recover(others);
  const signers = signersByIndex(plan, [...own, ...others], [...ownSigners, ...otherSigners]);
  return completeOevVerification(plan, signers);
}

/** One signature per beacon of this node (among the verified ones), in request order. */
export function signOevData(signer: NodeSigner, beacons: DecodedBeacon[], oevUpdateHash: string): string[] {
  return beacons
    .filter((beacon) => beacon.airnodeAddress === signer.address)
    .map((beacon) =>
      signer.signMessageSync(
        getBytes(solidityPackedKeccak256(['bytes32', 'bytes32'], [oevUpdateHash, beacon.templateId])),
      ),
    );
}
