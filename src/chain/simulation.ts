// Batched simulation of a sponsor wallet's fulfilments: one eth_call instead of one static call per request.
// Providers bill per call, and the static call of `fulfill` (which keeps a reverting callback from becoming a
// reverted, paid transaction) was one call per request. `fulfill` requires msg.sender to be the sponsor wallet,
// so a simulator cannot call it from its own address: the eth_call's state override set places the simulator's
// code AT the sponsor wallet's address for that call only (nothing is deployed), and it calls `fulfill` for each
// request in order, with the gas the transaction would have for execution, as the wallet's transactions will run.
// The call is made from the wallet too, so a callback that reads tx.origin sees the wallet, as on chain.
// A provider that refuses state overrides (or caps eth_call gas below the simulation's) answers with an error: the
// caller then makes one static call per request.
import { Interface } from 'ethers';
import { asData, type RpcClient, RpcError, toQuantity } from './rpc.js';

/**
 * Runtime code of FulfillmentSimulator (solc 0.8.9, optimizer 1000 runs), compiled from
 * src/chain/FulfillmentSimulator.sol; test/unit/chain/simulation.test.ts checks it matches the source.
 */
export const SIMULATOR_RUNTIME_CODE =
  '0x608060405234801561001057600080fd5b506004361061002b5760003560e01c80634703443614610030575b600080fd5b61004361003e366004610309565b61005a565b6040516100519291906103a5565b60405180910390f35b6060808267ffffffffffffffff81111561007657610076610478565b60405190808252806020026020018201604052801561009f578160200160208202803683370190505b5091508267ffffffffffffffff8111156100bb576100bb610478565b6040519080825280602002602001820160405280156100ee57816020015b60608152602001906001900390816100d95790505b50905060005b838110156102b257603f8787838181106101105761011061048e565b9050602002013561012191906104ba565b8787838181106101335761013361048e565b9050602002013561014491906104dc565b610150906127106104dc565b5a116101bc576040517f08c379a000000000000000000000000000000000000000000000000000000000815260206004820152601660248201527f53696d756c6174696f6e2067617320746f6f206c6f7700000000000000000000604482015260640160405180910390fd5b8773ffffffffffffffffffffffffffffffffffffffff168787838181106101e5576101e561048e565b905060200201358686848181106101fe576101fe61048e565b905060200281019061021091906104f4565b60405161021e92919061053b565b60006040518083038160008787f1925050503d806000811461025c576040519150601f19603f3d011682016040523d82523d6000602084013e610261565b606091505b508483815181106102745761027461048e565b6020026020010184848151811061028d5761028d61048e565b60209081029190910101919091529015159052806102aa8161054b565b9150506100f4565b509550959350505050565b60008083601f8401126102cf57600080fd5b50813567ffffffffffffffff8111156102e757600080fd5b6020830191508360208260051b850101111561030257600080fd5b9250929050565b60008060008060006060868803121561032157600080fd5b853573ffffffffffffffffffffffffffffffffffffffff8116811461034557600080fd5b9450602086013567ffffffffffffffff8082111561036257600080fd5b61036e89838a016102bd565b9096509450604088013591508082111561038757600080fd5b50610394888289016102bd565b969995985093965092949392505050565b604080825283519082018190526000906020906060840190828701845b828110156103e05781511515845292840192908401906001016103c2565b50505083810382850152845180825282820190600581901b8301840187850160005b8381101561046957601f19808785030186528251805180865260005b81811015610439578281018b01518782018c01528a0161041e565b8181111561044a5760008b83890101525b5096890196601f01909116939093018701925090860190600101610402565b50909998505050505050505050565b634e487b7160e01b600052604160045260246000fd5b634e487b7160e01b600052603260045260246000fd5b634e487b7160e01b600052601160045260246000fd5b6000826104d757634e487b7160e01b600052601260045260246000fd5b500490565b600082198211156104ef576104ef6104a4565b500190565b6000808335601e1984360301811261050b57600080fd5b83018035915067ffffffffffffffff82111561052657600080fd5b60200191503681900382131561030257600080fd5b8183823760009101908152919050565b600060001982141561055f5761055f6104a4565b506001019056fea264697066735822122001696601c0e8fbf04ee3350ff09942dab5827693c706ba7b02f44a4358b4986664736f6c63430008090033';

export const simulatorInterface = new Interface([
  'function simulate(address rrp, uint256[] gas, bytes[] data) returns (bool[] ok, bytes[] results)',
]);

/** Total execution gas per simulation call: far below the default eth_call gas cap of geth (50M) and anvil's blocks. */
export const MAX_GAS_PER_SIMULATION = 25_000_000n;
const INTRINSIC_GAS = 21_000n;

/** Calldata gas of a transaction (EIP-2028: 4 per zero byte, 16 per other byte). */
function calldataGas(data: string): bigint {
  let gas = 0n;
  for (let i = 2; i < data.length; i += 2) gas += data.slice(i, i + 2) === '00' ? 4n : 16n;
  return gas;
}

/** Gas left for execution in a transaction of `gasLimit` with this calldata. */
export function executionGas(gasLimit: bigint, data: string): bigint {
  const left = gasLimit - INTRINSIC_GAS - calldataGas(data);
  return left > 0n ? left : 0n;
}

/**
 * Gas of the simulation call itself: every call's gas with the 1/63 a CALL keeps back (EIP-150), the simulator's
 * own work per call, and the call's intrinsic and calldata gas. Asked explicitly: a provider that caps eth_call gas
 * lower either refuses or clamps it, and then the simulator reverts rather than run a call with less gas.
 */
function simulationGas(data: string, gas: bigint[]): bigint {
  const calls = gas.reduce((sum, g) => sum + g + g / 63n + 40_000n, 0n);
  return INTRINSIC_GAS + calldataGas(data) + calls + 300_000n;
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
          // From the wallet as well: tx.origin is then the wallet, as in the transactions (0x0 without a `from`).
          { from: input.wallet, to: input.wallet, data, gas: toQuantity(simulationGas(data, gas)) },
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
