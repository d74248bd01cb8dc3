// The pure part of request discovery (airnode-facts §3 2c–2g): drop finished requests, decode
// parameters, apply templates, verify request ids, match triggers, verify sponsor wallets, block
// sponsors with a pending withdrawal. No I/O: templates and wallet derivation come in as inputs.
import { keccak256 } from 'ethers';
import { deriveTemplateIdV0 } from '../protocol/ids.js';
import { byLogPosition, type DecodedLogs } from './logs.js';
import type { Template } from './templates.js';
import type { ApiCallRequest, ServableApiCall, WithdrawalRequest } from './types.js';

export type RrpTrigger = { endpointId: string; oisTitle: string; endpointName: string; cacheResponses: boolean };

export type DroppedRequest = { id: string; reason: string };

/** A discovered request: either servable, or to be answered with `fail(errorMessage)`. */
export type DiscoveredApiCall = ServableApiCall & { errorMessage?: string };

export type DiscoveryResult = {
  apiCalls: DiscoveredApiCall[];
  withdrawals: WithdrawalRequest[];
  dropped: DroppedRequest[];
};

export type DiscoveryInput = {
  decoded: DecodedLogs;
  chainId: string;
  rrpAddress: string;
  nodeAddress: string;
  templates: Map<string, Template>;
  triggers: RrpTrigger[];
  decodeParameters: (encoded: string) => Record<string, unknown>;
  sponsorWalletOf: (sponsor: string) => string;
};

/** Unfinished API calls and withdrawals, in log order. */
export function pendingRequests(decoded: DecodedLogs): {
  apiCalls: ApiCallRequest[];
  withdrawals: WithdrawalRequest[];
} {
  return {
    apiCalls: decoded.apiCalls.filter((r) => !decoded.finishedRequestIds.has(r.id)).sort(byLogPosition),
    withdrawals: decoded.withdrawals.filter((w) => !decoded.fulfilledWithdrawalIds.has(w.id)).sort(byLogPosition),
  };
}

// abi.encodePacked by hand: ethers' solidityPacked costs ~0.3 ms per request, the string concatenation a
// few microseconds. Equality with ids.ts (deriveFullRequestId / deriveTemplateRequestId) is unit-tested.
const uint256Hex = (value: string) => BigInt(value).toString(16).padStart(64, '0');
function fixedHex(value: string, bytes: number): string {
  if (!new RegExp(`^0x[0-9a-fA-F]{${bytes * 2}}$`).test(value)) throw new Error('bad fixed-size value');
  return value.slice(2).toLowerCase();
}

/** The request id the contract computed, recomputed from the event with the configured chain id. */
export function expectedRequestId(request: ApiCallRequest, chainId: string, rrpAddress: string): string {
  const head = uint256Hex(chainId) + fixedHex(rrpAddress, 20) + fixedHex(request.requester, 20);
  const count = uint256Hex(request.requesterRequestCount);
  const target =
    request.type === 'full'
      ? fixedHex(request.nodeAddress, 20) + fixedHex(request.endpointId ?? '', 32)
      : fixedHex(request.templateId ?? '', 32);
  const tail =
    fixedHex(request.sponsor, 20) +
    fixedHex(request.sponsorWallet, 20) +
    fixedHex(request.fulfillAddress, 20) +
    fixedHex(request.fulfillFunctionId, 4) +
    request.encodedParameters.slice(2).toLowerCase();
  return keccak256(`0x${head}${count}${target}${tail}`);
}

export function verifyRequestId(request: ApiCallRequest, chainId: string, rrpAddress: string): boolean {
  try {
    return expectedRequestId(request, chainId, rrpAddress) === request.id.toLowerCase();
  } catch {
    return false;
  }
}

/**
 * The most a request's encoded parameters may hold, its template's included: 64 KiB of ABI data. Honest requests
 * carry well under 1 KiB (a handful of short strings, at most 31 parameters), and calldata alone costs 16 gas a
 * byte, so 64 KiB is over a million gas of parameters. The bound keeps what a worker's input ConfigMap carries per
 * request (the decoded parameters as JSON: about twice this, six times for control characters escaped) under the
 * 1 MiB object limit: without it anyone may ask an open endpoint with a megabyte, and every shard sharing that input
 * failed.
 */
export const MAX_ENCODED_PARAMETERS_BYTES = 64 * 1024;

const hexBytes = (hex: string) => Math.max(0, Math.ceil((hex.length - 2) / 2));

/** The reason a request is failed for when its parameters (with its template's) are over the bound; else undefined. */
export function oversizedParametersMessage(
  requestParameters: string,
  templateParameters: string | undefined,
): string | undefined {
  const size = hexBytes(requestParameters) + (templateParameters === undefined ? 0 : hexBytes(templateParameters));
  return size > MAX_ENCODED_PARAMETERS_BYTES
    ? `Parameters are ${size} bytes, over the limit of ${MAX_ENCODED_PARAMETERS_BYTES}`
    : undefined;
}

export function discoverRequests(input: DiscoveryInput): DiscoveryResult {
  const { apiCalls, withdrawals: pendingWithdrawals } = pendingRequests(input.decoded);
  const dropped: DroppedRequest[] = [];
  const result: DiscoveredApiCall[] = [];
  const triggers = new Map(input.triggers.map((t) => [t.endpointId.toLowerCase(), t]));
  const withdrawals: WithdrawalRequest[] = [];
  const blockedSponsors = new Set<string>();
  for (const withdrawal of pendingWithdrawals) {
    if (input.sponsorWalletOf(withdrawal.sponsor) !== withdrawal.sponsorWallet) {
      dropped.push({ id: withdrawal.id, reason: 'withdrawal sponsor wallet does not match the derived one' });
      continue;
    }
    withdrawals.push(withdrawal);
    blockedSponsors.add(withdrawal.sponsor);
  }

  for (const request of apiCalls) {
    if (blockedSponsors.has(request.sponsor)) {
      dropped.push({ id: request.id, reason: 'sponsor has a pending withdrawal' });
      continue;
    }
    let template: Template | undefined;
    if (request.type === 'template') {
      template = input.templates.get(request.templateId ?? '');
      if (!template) {
        dropped.push({ id: request.id, reason: 'template not found' });
        continue;
      }
    }
    let errorMessage = oversizedParametersMessage(request.encodedParameters, template?.encodedParameters);
    let parameters: Record<string, unknown> = {};
    // Oversized parameters are not decoded: the request is failed without them.
    if (!errorMessage) {
      try {
        parameters = input.decodeParameters(request.encodedParameters);
      } catch {
        dropped.push({ id: request.id, reason: 'request parameters cannot be decoded' });
        continue;
      }
      if (template) {
        let templateParameters: Record<string, unknown>;
        try {
          templateParameters = input.decodeParameters(template.encodedParameters);
        } catch {
          dropped.push({ id: request.id, reason: 'template parameters cannot be decoded' });
          continue;
        }
        // Request parameters override template parameters (case-sensitive keys).
        parameters = { ...templateParameters, ...parameters };
      }
    }
    let endpointId = request.endpointId;
    if (template) {
      endpointId = template.endpointId;
      const expectedTemplateId = deriveTemplateIdV0(
        template.nodeAddress,
        template.endpointId,
        template.encodedParameters,
      );
      if (expectedTemplateId.toLowerCase() !== request.templateId) {
        errorMessage = `Invalid template ID:${request.templateId} Expected template ID:${expectedTemplateId}`;
      }
    }
    const trigger = triggers.get((endpointId ?? '').toLowerCase());
    if (!trigger || !endpointId) {
      dropped.push({ id: request.id, reason: `no rrp trigger for endpointId ${endpointId}` });
      continue;
    }
    if (input.sponsorWalletOf(request.sponsor) !== request.sponsorWallet) {
      dropped.push({ id: request.id, reason: 'sponsor wallet does not match the derived one' });
      continue;
    }
    if (!verifyRequestId(request, input.chainId, input.rrpAddress)) {
      errorMessage = `RequestId is invalid. Request ID:${request.id}`;
    }
    const call: DiscoveredApiCall = {
      ...request,
      endpointId: endpointId.toLowerCase(),
      parameters,
      oisTitle: trigger.oisTitle,
      endpointName: trigger.endpointName,
      cacheResponses: trigger.cacheResponses,
    };
    if (template) call.template = template;
    if (errorMessage) call.errorMessage = errorMessage;
    result.push(call);
  }
  return { apiCalls: result, withdrawals, dropped };
}

/**
 * The chain limit (airnode-facts §3 step 4): `maxConcurrency` API calls + withdrawals per chain per cycle
 * across providers. Providers sorted ascending by count each take an equal share of what remains.
 */
export function applyChainLimit<
  T extends {
    apiCalls: { blockNumber: number; logIndex: number }[];
    withdrawals: { blockNumber: number; logIndex: number }[];
  },
>(providers: T[], maxConcurrency: number): T[] {
  type Item = { kind: 'api' | 'withdrawal'; index: number; blockNumber: number; logIndex: number };
  const order = providers
    .map((provider, index) => ({ provider, index, count: provider.apiCalls.length + provider.withdrawals.length }))
    .sort((a, b) => a.count - b.count);
  let remaining = maxConcurrency;
  const limited: T[] = new Array(providers.length);
  order.forEach(({ provider, index, count }, position) => {
    const providersLeft = order.length - position;
    const take = Math.min(Math.floor(remaining / providersLeft), count);
    remaining -= take;
    const items: Item[] = [
      ...provider.apiCalls.map((r, i) => ({
        kind: 'api' as const,
        index: i,
        blockNumber: r.blockNumber,
        logIndex: r.logIndex,
      })),
      ...provider.withdrawals.map((r, i) => ({
        kind: 'withdrawal' as const,
        index: i,
        blockNumber: r.blockNumber,
        logIndex: r.logIndex,
      })),
    ]
      .sort(byLogPosition)
      .slice(0, take);
    const api = new Set(items.filter((i) => i.kind === 'api').map((i) => i.index));
    const wd = new Set(items.filter((i) => i.kind === 'withdrawal').map((i) => i.index));
    limited[index] = {
      ...provider,
      apiCalls: provider.apiCalls.filter((_, i) => api.has(i)),
      withdrawals: provider.withdrawals.filter((_, i) => wd.has(i)),
    };
  });
  return limited;
}

/**
 * The `_minConfirmations` filter (§3 step 6): per sponsor, the required confirmations are the maximum of the
 * valid requested values (0…300) or the chain default; once a request is too young, all later requests of the
 * sponsor wait too, which keeps the nonce order.
 */
export function filterByMinConfirmations<T extends { sponsor: string; blockNumber: number; logIndex: number }>(
  requests: T[],
  input: {
    currentBlock: number;
    chainMinConfirmations: number;
    requestedMinConfirmations: (request: T) => unknown;
    /**
     * A standby node's delay (`--standby-delay-blocks`): a request is kept only once it has been servable (its
     * confirmations reached) for this many blocks; 0 or absent: a primary, kept as soon as it is servable.
     */
    standbyDelayBlocks?: number;
  },
): { kept: T[]; waiting: T[]; leftToPrimary: T[] } {
  const bySponsor = new Map<string, T[]>();
  for (const request of [...requests].sort(byLogPosition)) {
    const list = bySponsor.get(request.sponsor) ?? [];
    list.push(request);
    bySponsor.set(request.sponsor, list);
  }
  const kept: T[] = [];
  const waiting: T[] = [];
  const leftToPrimary: T[] = [];
  const delay = Math.max(0, input.standbyDelayBlocks ?? 0);
  for (const list of bySponsor.values()) {
    const requested = list
      .map((r) => parseMinConfirmations(input.requestedMinConfirmations(r)))
      .filter((v): v is number => v !== undefined);
    const required = requested.length > 0 ? Math.max(...requested) : input.chainMinConfirmations;
    let blocked = false;
    for (const request of list) {
      const age = input.currentBlock - request.blockNumber;
      if (!blocked && age >= required + delay) kept.push(request);
      else {
        // The first request held back holds the sponsor's later ones, for either reason (nonce order).
        if (!blocked && age >= required) leftToPrimary.push(request);
        blocked = true;
        waiting.push(request);
      }
    }
  }
  return { kept, waiting, leftToPrimary };
}

/**
 * A standby's withdrawals: those requested at least `standbyDelayBlocks` blocks before the head (withdrawals need no
 * confirmations, so the primary serves them at once); the others are left to the primary.
 */
export function withdrawalsPastStandbyDelay<T extends { blockNumber: number }>(
  withdrawals: T[],
  input: { currentBlock: number; standbyDelayBlocks?: number },
): T[] {
  const delay = Math.max(0, input.standbyDelayBlocks ?? 0);
  return withdrawals.filter((w) => input.currentBlock - w.blockNumber >= delay);
}

export function parseMinConfirmations(value: unknown): number | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const text = String(value);
  if (!/^\d+$/.test(text)) return undefined;
  const n = Number(text);
  return n >= 0 && n <= 300 ? n : undefined;
}
