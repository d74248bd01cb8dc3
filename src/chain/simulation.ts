// Batched simulation of a sponsor wallet's fulfilments: one eth_call instead of one static call per request.
// Providers bill per call, and the static call of `fulfill` (which keeps a reverting callback from becoming a
// reverted, paid transaction) was one call per request. `fulfill` requires msg.sender to be the sponsor wallet,
// so a simulator cannot call it from its own address: the eth_call's state override set places the simulator's
// code AT the sponsor wallet's address for that call only (nothing is deployed), and it calls `fulfill` for each
// request in order, with the gas the transaction would have for execution, as the wallet's transactions will run.
// A provider that refuses state overrides answers with an error: the caller then makes one static call per request.
import { Interface } from 'ethers';
import { asData, type RpcClient, RpcError, toQuantity } from './rpc.js';

/**
 * Runtime code of FulfillmentSimulator (solc 0.8.9, optimizer 1000 runs), compiled from
 * src/chain/FulfillmentSimulator.sol; test/unit/chain/simulation.test.ts checks it matches the source.
 */
export const SIMULATOR_RUNTIME_CODE =
  '0x608060405234801561001057600080fd5b506004361061002b5760003560e01c80634703443614610030575b600080fd5b61004361003e366004610249565b61005a565b6040516100519291906102e5565b60405180910390f35b6060808267ffffffffffffffff811115610076576100766103b8565b60405190808252806020026020018201604052801561009f578160200160208202803683370190505b5091508267ffffffffffffffff8111156100bb576100bb6103b8565b6040519080825280602002602001820160405280156100ee57816020015b60608152602001906001900390816100d95790505b50905060005b838110156101f2578773ffffffffffffffffffffffffffffffffffffffff16878783818110610125576101256103ce565b9050602002013586868481811061013e5761013e6103ce565b905060200281019061015091906103e4565b60405161015e92919061042b565b60006040518083038160008787f1925050503d806000811461019c576040519150601f19603f3d011682016040523d82523d6000602084013e6101a1565b606091505b508483815181106101b4576101b46103ce565b602002602001018484815181106101cd576101cd6103ce565b60209081029190910101919091529015159052806101ea8161043b565b9150506100f4565b509550959350505050565b60008083601f84011261020f57600080fd5b50813567ffffffffffffffff81111561022757600080fd5b6020830191508360208260051b850101111561024257600080fd5b9250929050565b60008060008060006060868803121561026157600080fd5b853573ffffffffffffffffffffffffffffffffffffffff8116811461028557600080fd5b9450602086013567ffffffffffffffff808211156102a257600080fd5b6102ae89838a016101fd565b909650945060408801359150808211156102c757600080fd5b506102d4888289016101fd565b969995985093965092949392505050565b604080825283519082018190526000906020906060840190828701845b82811015610320578151151584529284019290840190600101610302565b50505083810382850152845180825282820190600581901b8301840187850160005b838110156103a957601f19808785030186528251805180865260005b81811015610379578281018b01518782018c01528a0161035e565b8181111561038a5760008b83890101525b5096890196601f01909116939093018701925090860190600101610342565b50909998505050505050505050565b634e487b7160e01b600052604160045260246000fd5b634e487b7160e01b600052603260045260246000fd5b6000808335601e198436030181126103fb57600080fd5b83018035915067ffffffffffffffff82111561041657600080fd5b60200191503681900382131561024257600080fd5b8183823760009101908152919050565b600060001982141561045d57634e487b7160e01b600052601160045260246000fd5b506001019056fea2646970667358221220f95f8c9bd2a3932282eae0f8d6127e1f5cd012cc1354ca7cc6fc4f9e42912ea764736f6c63430008090033';

export const simulatorInterface = new Interface([
  'function simulate(address rrp, uint256[] gas, bytes[] data) returns (bool[] ok, bytes[] results)',
]);

/** Total execution gas per simulation call: far below the default eth_call gas cap of geth (50M) and anvil's blocks. */
export const MAX_GAS_PER_SIMULATION = 25_000_000n;
const INTRINSIC_GAS = 21_000n;

/** Gas left for execution in a transaction of `gasLimit` with this calldata (EIP-2028: 4 per zero byte, 16 else). */
export function executionGas(gasLimit: bigint, data: string): bigint {
  let calldata = 0n;
  for (let i = 2; i < data.length; i += 2) calldata += data.slice(i, i + 2) === '00' ? 4n : 16n;
  const left = gasLimit - INTRINSIC_GAS - calldata;
  return left > 0n ? left : 0n;
}

/** What one simulated call answered: whether it returned, and its return or revert data. */
export type SimulatedCall = { returned: boolean; data: string };

/**
 * Runs `calls` (RRP calldata and transaction gas limit each) in order from `wallet` at `block`, in as few eth_calls
 * as the gas bound allows. Undefined when the provider refuses the simulation (an RPC error: no state overrides);
 * a transport failure rejects, as any other call of the shard.
 */
export async function simulateFromWallet(
  client: RpcClient,
  input: { wallet: string; rrpAddress: string; block: number | 'latest' },
  calls: { data: string; gasLimit: bigint }[],
): Promise<SimulatedCall[] | undefined> {
  const results: SimulatedCall[] = [];
  for (const chunk of gasBoundChunks(calls)) {
    const gas = chunk.map((c) => executionGas(c.gasLimit, c.data));
    const data = simulatorInterface.encodeFunctionData('simulate', [input.rrpAddress, gas, chunk.map((c) => c.data)]);
    const tag = typeof input.block === 'number' ? toQuantity(input.block) : input.block;
    let answer: string;
    try {
      answer = asData(
        await client.request('eth_call', [
          { to: input.wallet, data },
          tag,
          { [input.wallet]: { code: SIMULATOR_RUNTIME_CODE } },
        ]),
        'eth_call',
      );
    } catch (error) {
      if (error instanceof RpcError) return undefined;
      throw error;
    }
    let decoded: [boolean[], string[]];
    try {
      decoded = simulatorInterface.decodeFunctionResult('simulate', answer).toArray(true) as [boolean[], string[]];
    } catch {
      return undefined; // an answer that is not the simulator's (code not placed): do not trust it
    }
    const [ok, returned] = decoded;
    if (ok.length !== chunk.length || returned.length !== chunk.length) return undefined;
    for (let i = 0; i < chunk.length; i++) results.push({ returned: ok[i]!, data: returned[i]! });
  }
  return results;
}

function gasBoundChunks<T extends { gasLimit: bigint }>(calls: T[]): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let gas = 0n;
  for (const call of calls) {
    if (current.length > 0 && gas + call.gasLimit > MAX_GAS_PER_SIMULATION) {
      chunks.push(current);
      current = [];
      gas = 0n;
    }
    current.push(call);
    gas += call.gasLimit;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}
