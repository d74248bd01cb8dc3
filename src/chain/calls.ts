// eth_call / eth_estimateGas helpers over RpcClient with ABI encoding through ethers Interfaces.
import type { Interface } from 'ethers';
import { asData, asQuantity, type RpcClient, type RpcOptions, toQuantity } from './rpc.js';

export type CallRequest = { from?: string; to: string; data: string; gas?: bigint; value?: bigint };

function txObject(call: CallRequest): Record<string, string> {
  const tx: Record<string, string> = { to: call.to, data: call.data };
  if (call.from) tx['from'] = call.from;
  if (call.gas !== undefined) tx['gas'] = toQuantity(call.gas);
  if (call.value !== undefined) tx['value'] = toQuantity(call.value);
  return tx;
}

export async function ethCall(
  client: RpcClient,
  call: CallRequest,
  block: string | number = 'latest',
  options?: RpcOptions,
): Promise<string> {
  const tag = typeof block === 'number' ? toQuantity(block) : block;
  return asData(await client.request('eth_call', [txObject(call), tag], options), 'eth_call');
}

export async function estimateGas(
  client: RpcClient,
  call: CallRequest,
  options?: RpcOptions,
  block?: number,
): Promise<bigint> {
  const params: unknown[] = block === undefined ? [txObject(call)] : [txObject(call), toQuantity(block)];
  return asQuantity(await client.request('eth_estimateGas', params, options), 'eth_estimateGas');
}

/** Calls a view function and decodes its result. */
export async function callView<T extends unknown[]>(
  client: RpcClient,
  contract: { address: string; iface: Interface },
  fn: string,
  args: unknown[],
  options?: RpcOptions,
): Promise<T> {
  const data = contract.iface.encodeFunctionData(fn, args);
  const result = await ethCall(client, { to: contract.address, data }, 'latest', options);
  return contract.iface.decodeFunctionResult(fn, result).toArray(true) as T;
}
