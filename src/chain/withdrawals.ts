// Withdrawals (airnode-facts §3.2): send the sponsor wallet's balance, minus the transaction cost and
// the chain's `withdrawalRemainder`, back to the sponsor through fulfillWithdrawal.
import { estimateGas } from './calls.js';
import { rrpInterface } from './contracts.js';
import { type GasTarget, pricePerGas } from './gas-price.js';
import { asQuantity, type RpcClient } from './rpc.js';

export const WITHDRAWAL_GAS_PADDING = 20_000n;

/** value = balance - gasLimit * price - remainder; null when nothing is left to send. */
export function withdrawalValue(
  balance: bigint,
  gasLimit: bigint,
  target: GasTarget,
  remainder: bigint,
): bigint | null {
  const value = balance - gasLimit * pricePerGas(target) - remainder;
  return value > 0n ? value : null;
}

export type PlannedWithdrawal =
  | {
      kind: 'withdrawal';
      requestId: string;
      to: string;
      data: string;
      gasLimit: bigint;
      gasTarget: GasTarget;
      value: bigint;
    }
  | { kind: 'skip'; requestId: string; reason: string };

export async function planWithdrawal(
  client: RpcClient,
  input: {
    id: string;
    nodeAddress: string;
    sponsor: string;
    sponsorWallet: string;
    rrpAddress: string;
    gasTarget: GasTarget;
    remainder: bigint;
  },
): Promise<PlannedWithdrawal> {
  const data = rrpInterface.encodeFunctionData('fulfillWithdrawal', [input.id, input.nodeAddress, input.sponsor]);
  const balance = asQuantity(await client.request('eth_getBalance', [input.sponsorWallet, 'latest']), 'eth_getBalance');
  const estimate = await estimateGas(client, { from: input.sponsorWallet, to: input.rrpAddress, data, value: 1n });
  const gasLimit = estimate + WITHDRAWAL_GAS_PADDING;
  const { gasLimit: _ignored, ...target } = input.gasTarget;
  const value = withdrawalValue(balance, gasLimit, target as GasTarget, input.remainder);
  if (value === null)
    return { kind: 'skip', requestId: input.id, reason: 'balance does not cover the withdrawal cost' };
  return {
    kind: 'withdrawal',
    requestId: input.id,
    to: input.rrpAddress,
    data,
    gasLimit,
    gasTarget: target as GasTarget,
    value,
  };
}
