// Sending one wallet's transactions in nonce order, many per round trip: consecutive nonces signed up front and
// sent as JSON-RPC batches (the entries in nonce order), instead of one eth_sendRawTransaction waited for at a
// time. A chain that mines on arrival (anvil's automine, a sequencer) can then put several of them in one
// block, and a shard's sending costs one round trip per batch instead of one per transaction.
//
// A batch is not atomic: an entry the provider rejects (say a request's own `_gasPrice` is more than the wallet
// can pay) leaves its nonce unused while the later entries were accepted, and those would wait behind that gap
// forever. Each such hole is filled at once with a zero-value transfer to the wallet itself (21,000 gas at the
// wallet's price), after which nothing more is sent for the wallet this cycle: what was rejected waits for the
// next cycle, as before. A provider that refuses batches gets the transactions one at a time.

import type { BaseWallet } from 'ethers';
import { signPlanned } from './fulfillment.js';
import type { GasTarget } from './gas-price.js';
import { asData, type BatchEntry, RpcBatchRefused, type RpcClient, RpcError, RpcTransportError } from './rpc.js';

/** Transactions per JSON-RPC batch (providers commonly cap batches at 50-100 calls). */
export const SEND_BATCH_SIZE = 50;
/** Gas of a plain transfer: the filler of a nonce hole. */
export const FILLER_GAS_LIMIT = 21_000n;
const SEND_TIMEOUT_MS = 10_000;

export type Signable = { to: string; data: string; gasLimit: bigint; gasTarget: GasTarget; value?: bigint };

export type Sent = { nonce: number; txHash: string } | { nonce: number; rejected: string };

export type Filler = { nonce: number; txHash?: string; rejected?: string };

export type SendReport = {
  /** Per transaction given, in order: sent, rejected, or undefined when not sent (after a rejection). */
  sent: (Sent | undefined)[];
  /** Zero-value transfers that filled the nonces of rejected transactions below accepted ones. */
  fillers: Filler[];
  /** A batch went unanswered (RpcTransportError): what it carried may or may not have reached the provider. */
  transportError?: RpcTransportError;
};

export type SendOptions = {
  client: RpcClient;
  wallet: Pick<BaseWallet, 'address' | 'signingKey'>;
  chainId: string;
  firstNonce: number;
  /** Price of the fillers (the wallet's price this cycle). */
  gasTarget: GasTarget;
  batchSize?: number;
};

/**
 * Sends `transactions` with nonces firstNonce, firstNonce + 1, ... in that order. A transport failure (no
 * answer) ends the sending with `transportError`: what that batch carried is left undefined, for the caller to
 * settle by reading the nonce again through another provider; batches answered before it are reported.
 */
export async function sendInNonceOrder(transactions: Signable[], options: SendOptions): Promise<SendReport> {
  const { client, wallet, chainId, firstNonce } = options;
  let batchSize = Math.max(1, options.batchSize ?? SEND_BATCH_SIZE);
  const report: SendReport = { sent: new Array(transactions.length).fill(undefined), fillers: [] };
  let start = 0;
  while (start < transactions.length) {
    const chunk = transactions.slice(start, start + batchSize);
    const signed = await Promise.all(chunk.map((tx, i) => signPlanned(wallet, tx, firstNonce + start + i, chainId)));
    let entries: BatchEntry[];
    try {
      entries = await sendSigned(client, signed, batchSize > 1);
    } catch (error) {
      if (error instanceof RpcBatchRefused && batchSize > 1) {
        batchSize = 1; // the same chunk again, one transaction at a time
        continue;
      }
      if (error instanceof RpcTransportError) return { ...report, transportError: error };
      throw error;
    }
    const rejectedNonces: number[] = [];
    let highestAccepted = -1;
    entries.forEach((entry, i) => {
      const nonce = firstNonce + start + i;
      if (entry.ok) {
        report.sent[start + i] = { nonce, txHash: asData(entry.result, 'txHash') };
        highestAccepted = nonce;
      } else {
        report.sent[start + i] = { nonce, rejected: entry.error.message };
        rejectedNonces.push(nonce);
      }
    });
    if (rejectedNonces.length === 0) {
      start += chunk.length;
      continue;
    }
    const holes = rejectedNonces.filter((nonce) => nonce < highestAccepted);
    if (holes.length > 0) {
      try {
        report.fillers = await fillHoles(options, holes, batchSize > 1);
      } catch (error) {
        if (error instanceof RpcTransportError) return { ...report, transportError: error };
        throw error;
      }
    }
    return report;
  }
  return report;
}

async function sendSigned(client: RpcClient, signed: string[], asBatch: boolean): Promise<BatchEntry[]> {
  if (asBatch && signed.length > 1) {
    return client.batch(
      signed.map((tx) => ({ method: 'eth_sendRawTransaction', params: [tx] })),
      { timeoutMs: SEND_TIMEOUT_MS },
    );
  }
  const entries: BatchEntry[] = [];
  for (const tx of signed) {
    try {
      // No retry: a lost answer is resolved by the nonce check of the next attempt, not by resending blindly.
      const result = await client.request('eth_sendRawTransaction', [tx], { attempts: 1, timeoutMs: SEND_TIMEOUT_MS });
      entries.push({ ok: true, result });
    } catch (error) {
      if (!(error instanceof RpcError)) throw error;
      entries.push({ ok: false, error });
      // One at a time, a rejection stops here: nothing after it was sent, so it leaves no hole.
      break;
    }
  }
  return entries;
}

async function fillHoles(options: SendOptions, holes: number[], asBatch: boolean): Promise<Filler[]> {
  const { client, wallet, chainId, gasTarget } = options;
  const { gasLimit: _ignored, ...price } = gasTarget;
  const filler: Signable = {
    to: wallet.address,
    data: '0x',
    gasLimit: FILLER_GAS_LIMIT,
    gasTarget: price as GasTarget,
    value: 0n,
  };
  const signed = await Promise.all(holes.map((nonce) => signPlanned(wallet, filler, nonce, chainId)));
  let entries: BatchEntry[];
  try {
    entries = await sendSigned(client, signed, asBatch);
  } catch (error) {
    if (!(error instanceof RpcBatchRefused)) throw error;
    entries = await sendSigned(client, signed, false);
  }
  return holes.map((nonce, i): Filler => {
    const entry = entries[i];
    if (!entry) return { nonce, rejected: 'not sent: an earlier filler was rejected' };
    return entry.ok ? { nonce, txHash: asData(entry.result, 'txHash') } : { nonce, rejected: entry.error.message };
  });
}
