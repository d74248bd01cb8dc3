// Balances of many addresses in one JSON-RPC call. Providers bill per call, and the cycle reads the balance of
// every sponsor wallet that sent transactions (for the low-balance alert): one eth_getBalance each would be one
// call per sponsor. Instead, one eth_call without `to` runs a small piece of init code (nothing is deployed: an
// eth_call only simulates) that returns BALANCE of each address appended to it, as "deployless" reads do. A
// provider that refuses it gets one eth_getBalance per address, in one batch.
import { asData, asQuantity, type RpcClient } from './rpc.js';

/**
 * Init code: copies the 32-byte words appended after its own 38 bytes into memory, replaces each with the BALANCE
 * of the address in it, and returns them.
 *   PUSH2 38, CODESIZE, SUB, DUP1, PUSH2 38, PUSH1 0, CODECOPY      ; memory[0..n] = appended words, stack [n]
 *   PUSH1 0                                                       ; [n, i]
 *   loop: JUMPDEST, DUP2, DUP2, LT, ISZERO, PUSH1 end, JUMPI      ; i >= n: done
 *   DUP1, MLOAD, BALANCE, DUP2, MSTORE                            ; memory[i] = balance(memory[i])
 *   PUSH1 32, ADD, PUSH1 loop, JUMP
 *   end: JUMPDEST, POP, PUSH1 0, RETURN                           ; return memory[0..n]
 */
export const BALANCES_INIT_CODE = '0x61002638038061002660003960005b818110156021578051318152602001600e565b506000f3';

/** How many addresses one call carries at most (BALANCE costs up to 2,600 gas each; far below any call gas cap). */
export const MAX_ADDRESSES_PER_CALL = 1_000;

/** Balances (wei) by address, at `blockTag` ('pending' counts the cycle's own transactions as paid). */
export async function readBalances(
  client: RpcClient,
  addresses: string[],
  blockTag = 'pending',
): Promise<Map<string, bigint>> {
  const balances = new Map<string, bigint>();
  for (let start = 0; start < addresses.length; start += MAX_ADDRESSES_PER_CALL) {
    const chunk = addresses.slice(start, start + MAX_ADDRESSES_PER_CALL);
    const values = await readChunk(client, chunk, blockTag);
    for (const [i, address] of chunk.entries()) balances.set(address, values[i]!);
  }
  return balances;
}

async function readChunk(client: RpcClient, addresses: string[], blockTag: string): Promise<bigint[]> {
  const words = addresses.map((address) => address.toLowerCase().replace(/^0x/, '').padStart(64, '0')).join('');
  try {
    const answer = asData(
      await client.request('eth_call', [{ data: `${BALANCES_INIT_CODE}${words}` }, blockTag]),
      'eth_call',
    );
    if (answer.length !== 2 + 64 * addresses.length) throw new Error('balances: answer of the wrong length');
    return addresses.map((_, i) => BigInt(`0x${answer.slice(2 + 64 * i, 2 + 64 * (i + 1))}`));
  } catch {
    const answers = await client.batch(
      addresses.map((address) => ({ method: 'eth_getBalance', params: [address, blockTag] })),
    );
    return answers.map((entry) => {
      if (!entry.ok) throw entry.error;
      return asQuantity(entry.result, 'eth_getBalance');
    });
  }
}
