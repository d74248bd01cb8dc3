// Fulfilment (airnode-facts §2, §3.2): signing the response with the node key, deciding between
// `fulfill` and `fail` with a static call first, the gas limit (fixed or estimated with the EIP-150
// reserve), and building/sending transactions from the sponsor wallet.

import { AbiCoder, type BaseWallet, concat, getBytes, Interface, solidityPackedKeccak256, Transaction } from 'ethers';
import { errorMessage } from '../common/errors.js';
import { fastMessageSigner, type MessageSigner, signDigest } from '../protocol/message-signer.js';
import { type CallRequest, estimateGas, ethCall } from './calls.js';
import { dryRunInterface, rrpInterface } from './contracts.js';
import type { GasTarget } from './gas-price.js';
import { asData, type RpcClient, RpcError, RpcTransportError } from './rpc.js';
import { MAXIMUM_ONCHAIN_ERROR_LENGTH } from './types.js';

// Signing is the largest CPU cost of a cycle (two signatures per request): libsecp256k1 (src/protocol/
// message-signer.ts) signs in about a third of ethers' time, byte for byte the same (RFC 6979, low s).
const messageSigners = new WeakMap<object, MessageSigner>();

/** The response signature the contract checks: EIP-191 over keccak256(requestId ‖ data), by the node key. */
export function signFulfillment(nodeKey: Pick<BaseWallet, 'signingKey'>, requestId: string, data: string): string {
  const hash = solidityPackedKeccak256(['bytes32', 'bytes'], [requestId, data || '0x']);
  let signer = messageSigners.get(nodeKey);
  if (!signer) {
    signer = fastMessageSigner({ address: '', privateKey: nodeKey.signingKey.privateKey });
    messageSigners.set(nodeKey, signer);
  }
  return signer.signMessageSync(getBytes(hash));
}

/** On-chain error messages are cut to 100 characters: 97 + "...". */
export function truncateErrorMessage(message: string): string {
  return message.length > MAXIMUM_ONCHAIN_ERROR_LENGTH
    ? `${message.slice(0, MAXIMUM_ONCHAIN_ERROR_LENGTH - 3)}...`
    : message;
}

const errorInterface = new Interface(['function Error(string)']);

/** Decodes `Error(string)` revert data; "No revert string" otherwise (as the reference). */
export function decodeRevertString(callData: string): string {
  try {
    if (callData.startsWith('0x08c379a0')) {
      const [reason] = errorInterface.decodeFunctionData('Error', callData);
      return String(reason);
    }
  } catch {
    // fall through
  }
  return 'No revert string';
}

/** The reason of a failed eth_call/eth_estimateGas, from the revert data when present. */
export function revertReasonOf(error: unknown): string {
  if (error instanceof RpcError && typeof error.data === 'string' && error.data.startsWith('0x08c379a0')) {
    return decodeRevertString(error.data);
  }
  return errorMessage(error);
}

/**
 * What a failed eth_call or eth_estimateGas says. `revert`: the call itself fails on chain (revert data, "execution
 * reverted", out of gas), which is the request's fault and may end it with `fail()`. `provider`: anything else (an
 * unknown block such as "header not found" from a backend behind, a rate limit, an internal error, a timeout, a
 * malformed answer) says nothing about the call: the request must stay open for another provider or the next poll.
 */
export type CallFailure = { kind: 'revert'; reason: string } | { kind: 'provider'; reason: string };

/** The EVM's own failures, as geth, erigon, besu, nethermind ("VM execution error") and anvil ("EVM error") word them. */
const REVERT_MESSAGE =
  /execution reverted|\breverted\b|\bout of gas\b|outofgas|gas required exceeds allowance|invalid opcode|vm execution error|\bevm error\b/i;
/** EIP-1474's code for "execution reverted" (geth answers it with the revert data). */
const REVERT_CODE = 3;

export function classifyCallError(error: unknown): CallFailure {
  if (!(error instanceof RpcError)) return { kind: 'provider', reason: errorMessage(error) };
  const hasRevertData = typeof error.data === 'string' && /^0x[0-9a-fA-F]{8,}$/.test(error.data);
  if (hasRevertData || error.code === REVERT_CODE || REVERT_MESSAGE.test(error.message)) {
    return { kind: 'revert', reason: revertReasonOf(error) };
  }
  return { kind: 'provider', reason: errorMessage(error) };
}

/** A fulfilment check the provider could not answer: the shard tries the next provider, the request stays open. */
export class ProviderCheckError extends Error {
  constructor(reason: string) {
    super(`provider could not check the fulfilment: ${reason}`);
    this.name = 'ProviderCheckError';
  }
}

/** Rethrows a provider's failure to answer a check; gives back the revert reason of a call that reverts. */
function revertReasonOrThrow(error: unknown): string {
  const failure = classifyCallError(error);
  if (failure.kind === 'provider') throw new ProviderCheckError(failure.reason);
  return failure.reason;
}

/** The request is no longer awaiting fulfilment (fulfilled, failed, or never ours): nothing to send. */
export function isNotAwaiting(reason: string): boolean {
  return /Invalid request fulfillment/.test(reason);
}

export type ApiResponse =
  | { success: true; encodedValue: string; signature: string; gasPrice?: string }
  | {
      success: false;
      errorMessage: string;
      /** The wait the API named with a 429 or 503 (ms): its request is not retried sooner (src/node/api-retries.ts). */
      retryAfterMs?: number;
    };

export type FulfillmentRequest = {
  id: string;
  nodeAddress: string;
  sponsorWallet: string;
  fulfillAddress: string;
  fulfillFunctionId: string;
};

/** What to send for one request, before nonce and signature. */
export type PlannedTransaction =
  | {
      kind: 'fulfill' | 'fail';
      requestId: string;
      to: string;
      data: string;
      gasLimit: bigint;
      gasTarget: GasTarget;
      errorMessage?: string;
      /** The request's own `_gasPrice` (wei), which `gasTarget` is: repriced when it replaces a stuck transaction. */
      requestedGasPrice?: bigint;
    }
  | { kind: 'skip'; requestId: string; reason: string };

export type PlanContext = {
  client: RpcClient;
  rrpAddress: string;
  dryRunAddress?: string;
  fulfillmentGasLimit?: number;
  gasTarget: GasTarget;
  /**
   * Block of the cycle's discovery: static calls run against its state. Some providers (anvil without
   * automine, for one) answer `latest` calls with pending state, where our own unmined transaction from the
   * previous cycle already consumed the request; at this block the request is still open, so it is planned
   * again and its transaction replaced (same nonce, higher price) instead of being skipped.
   */
  stateBlock?: number;
  /**
   * Outcomes of the static call already known from a batched simulation (src/chain/simulation.ts), by request id,
   * with the calldata simulated: used instead of a static call of its own when the calldata is the same.
   */
  simulated?: ReadonlyMap<string, { data: string; check: StaticCheck }>;
};

/** What the static call of `fulfill` says: ok when the callback succeeds, else the failure reason. */
export type StaticCheck = { ok: true } | { ok: false; reason: string };

/** The static check from a simulated call of `fulfill`: its revert data, or its (callSuccess, callData). */
export function staticCheckOf(call: { returned: boolean; data: string }): StaticCheck {
  if (!call.returned) return { ok: false, reason: decodeRevertString(call.data) };
  try {
    const [callSuccess, callData] = rrpInterface.decodeFunctionResult('fulfill', call.data).toArray() as [
      boolean,
      string,
    ];
    return callSuccess ? { ok: true } : { ok: false, reason: decodeRevertString(callData) };
  } catch {
    return { ok: false, reason: 'No revert string' };
  }
}

/** The calldata of `fulfill` for a successful API answer. */
export function fulfillData(
  request: FulfillmentRequest,
  response: { encodedValue: string; signature: string },
): string {
  return rrpInterface.encodeFunctionData('fulfill', fulfillArguments(request, response));
}

/** The arguments of `fulfill`, the same for the protocol contract and its dry-run twin. */
function fulfillArguments(request: FulfillmentRequest, response: { encodedValue: string; signature: string }) {
  return [
    request.id,
    request.nodeAddress,
    request.fulfillAddress,
    request.fulfillFunctionId,
    response.encodedValue,
    response.signature,
  ];
}

const abi = AbiCoder.defaultAbiCoder();

function failData(request: FulfillmentRequest, message: string): string {
  return rrpInterface.encodeFunctionData('fail', [
    request.id,
    request.nodeAddress,
    request.fulfillAddress,
    request.fulfillFunctionId,
    truncateErrorMessage(message),
  ]);
}

// Providers that reject a block argument for eth_estimateGas say so in a params error, not a revert.
const UNSUPPORTED_BLOCK_ARGUMENT = /invalid (params|argument)|too many arguments|expected 1 argument/i;

/**
 * eth_estimateGas against the discovery block's state (see PlanContext.stateBlock): against pending state
 * our own unmined transaction would already have run the callback and made it look cheaper.
 */
async function estimateAtStateBlock(context: PlanContext, call: CallRequest): Promise<bigint> {
  if (context.stateBlock === undefined) return estimateGas(context.client, call);
  try {
    return await estimateGas(context.client, call, undefined, context.stateBlock);
  } catch (error) {
    if (error instanceof RpcError && UNSUPPORTED_BLOCK_ARGUMENT.test(error.message)) {
      return estimateGas(context.client, call);
    }
    throw error;
  }
}

async function planFail(
  context: PlanContext,
  request: FulfillmentRequest,
  message: string,
): Promise<PlannedTransaction> {
  const data = failData(request, message);
  let gasLimit: bigint;
  if (context.fulfillmentGasLimit !== undefined) {
    gasLimit = BigInt(context.fulfillmentGasLimit);
  } else {
    try {
      gasLimit = await estimateAtStateBlock(context, { from: request.sponsorWallet, to: context.rrpAddress, data });
    } catch (error) {
      if (isNotAwaiting(revertReasonOrThrow(error))) return noLongerAwaiting(request);
      throw error;
    }
  }
  const { gasLimit: _ignored, ...target } = context.gasTarget;
  return {
    kind: 'fail',
    requestId: request.id,
    to: context.rrpAddress,
    data,
    gasLimit,
    gasTarget: target as GasTarget,
    errorMessage: truncateErrorMessage(message),
  };
}

/** Static call of `fulfill` from the sponsor wallet: ok when the callback succeeds, else the failure reason. */
async function staticFulfill(
  context: PlanContext,
  request: FulfillmentRequest,
  data: string,
  gas?: bigint,
): Promise<StaticCheck> {
  const simulated = context.simulated?.get(request.id);
  if (simulated && simulated.data === data && gas !== undefined) return simulated.check;
  try {
    const raw = await ethCall(
      context.client,
      { from: request.sponsorWallet, to: context.rrpAddress, data, ...(gas === undefined ? {} : { gas }) },
      context.stateBlock ?? 'latest',
    );
    const [callSuccess, callData] = rrpInterface.decodeFunctionResult('fulfill', raw).toArray() as [boolean, string];
    return callSuccess ? { ok: true } : { ok: false, reason: decodeRevertString(callData) };
  } catch (error) {
    // Only a call that reverts says no; a provider that could not answer leaves the request to another provider.
    return { ok: false, reason: revertReasonOrThrow(error) };
  }
}

export async function planApiCallTransaction(
  context: PlanContext,
  request: FulfillmentRequest,
  response: ApiResponse,
): Promise<PlannedTransaction> {
  if (!response.success) return planFail(context, request, response.errorMessage);
  const data = fulfillData(request, response);
  // `_gasPrice` replaces the price (legacy, in wei) but keeps the gas limit.
  const gasTarget: GasTarget =
    response.gasPrice !== undefined ? { type: 0, gasPrice: BigInt(response.gasPrice) } : { ...context.gasTarget };
  const fulfill = (gasLimit: bigint): PlannedTransaction => ({
    kind: 'fulfill',
    requestId: request.id,
    to: context.rrpAddress,
    data,
    gasLimit,
    gasTarget,
    ...(response.gasPrice !== undefined ? { requestedGasPrice: BigInt(response.gasPrice) } : {}),
  });

  if (context.fulfillmentGasLimit !== undefined) {
    const gasLimit = BigInt(context.fulfillmentGasLimit);
    return decideByStaticCall(context, request, data, gasLimit, () => fulfill(gasLimit));
  }

  let estimationError: string;
  try {
    if (!context.dryRunAddress) throw new Error('no NodeRrpDryRun address to estimate gas with');
    const dryRunData = dryRunInterface.encodeFunctionData('fulfill', fulfillArguments(request, response));
    const callbackData = concat([
      request.fulfillFunctionId,
      abi.encode(['bytes32', 'bytes'], [request.id, response.encodedValue]),
    ]);
    const [overhead, callback] = await Promise.all([
      estimateAtStateBlock(context, { from: request.sponsorWallet, to: context.dryRunAddress, data: dryRunData }),
      estimateAtStateBlock(context, { from: context.rrpAddress, to: request.fulfillAddress, data: callbackData }),
    ]);
    const total = overhead + callback;
    // EIP-150: a call forwards at most 63/64 of the remaining gas, so reserve 1/63 on top.
    const gasLimit = total + total / 63n;
    return await decideByStaticCall(context, request, data, gasLimit, () => fulfill(gasLimit));
  } catch (error) {
    if (error instanceof Error && /NodeRrpDryRun/.test(error.message)) {
      estimationError = `Gas estimation failed: ${error.message}`;
    } else if (error instanceof RpcError) {
      // An estimate the provider could not make is not a callback that fails: never a reason to `fail()`.
      estimationError = `Gas estimation failed: ${revertReasonOrThrow(error)}`;
    } else throw error;
  }
  return decideByStaticCall(context, request, data, undefined, () => planFail(context, request, estimationError));
}

/**
 * The static call decides what is sent: nothing when the request is no longer awaiting fulfilment, `fail` with
 * the reason when the call reverts, else what `whenItSucceeds` plans.
 */
async function decideByStaticCall(
  context: PlanContext,
  request: FulfillmentRequest,
  data: string,
  gas: bigint | undefined,
  whenItSucceeds: () => PlannedTransaction | Promise<PlannedTransaction>,
): Promise<PlannedTransaction> {
  const check = await staticFulfill(context, request, data, gas);
  if (check.ok) return whenItSucceeds();
  if (isNotAwaiting(check.reason)) return noLongerAwaiting(request);
  return planFail(context, request, check.reason);
}

function noLongerAwaiting(request: FulfillmentRequest): PlannedTransaction {
  return { kind: 'skip', requestId: request.id, reason: 'no longer awaiting fulfilment' };
}

/** Signs a planned transaction with the sponsor wallet (local, no RPC), by libsecp256k1 as signFulfillment. */
export async function signPlanned(
  wallet: Pick<BaseWallet, 'signingKey'>,
  planned: { to: string; data: string; gasLimit: bigint; gasTarget: GasTarget; value?: bigint },
  nonce: number,
  chainId: string,
): Promise<string> {
  const target = planned.gasTarget;
  const tx = Transaction.from({
    to: planned.to,
    data: planned.data,
    nonce,
    gasLimit: planned.gasLimit,
    chainId: BigInt(chainId),
    value: planned.value ?? 0n,
    ...(target.type === 0
      ? { type: 0, gasPrice: target.gasPrice }
      : { type: 2, maxFeePerGas: target.maxFeePerGas, maxPriorityFeePerGas: target.maxPriorityFeePerGas }),
  });
  tx.signature = signDigest(wallet.signingKey.privateKey, tx.unsignedHash);
  return tx.serialized;
}

export async function sendRawTransaction(client: RpcClient, signed: string): Promise<string> {
  // No retry here: a lost answer is resolved by the nonce check of the next attempt, not by resending blindly.
  return asData(await client.request('eth_sendRawTransaction', [signed], { attempts: 1, timeoutMs: 10_000 }), 'txHash');
}

/** Transaction count of an address at a block tag or number. */
export async function transactionCount(
  client: RpcClient,
  address: string,
  tag: 'latest' | 'pending' | number,
): Promise<number> {
  const block = typeof tag === 'number' ? `0x${tag.toString(16)}` : tag;
  const value = await client.request('eth_getTransactionCount', [address, block]);
  if (typeof value !== 'string' || !/^0x[0-9a-fA-F]+$/.test(value)) {
    throw new RpcTransportError('eth_getTransactionCount: malformed answer');
  }
  return Number(BigInt(value));
}
