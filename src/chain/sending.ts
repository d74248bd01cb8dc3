// Sending one wallet's transactions in nonce order, many per round trip: consecutive nonces signed up front and
// sent as JSON-RPC batches (the entries in nonce order), instead of one eth_sendRawTransaction waited for at a
// time. A chain that mines on arrival (anvil's automine, a sequencer) can then put several of them in one
// block, and a shard's sending costs one round trip per batch instead of one per transaction.
//
// A batch is not atomic: an entry the provider rejects (say a request's own `_gasPrice` is more than the wallet
// can pay) leaves its nonce unused while the later entries were accepted, and those would wait behind that gap
// forever. Each such hole is filled at once with a zero-value transfer to the wallet itself (21,000 gas at the
// wallet's price), after which nothing more is sent for the wallet this cycle: what was rejected waits for the
// next cycle, as before. A provider that refuses batches (in any of the shapes rpc.ts's batchRefusal knows, or with an
// HTTP 4xx) gets the transactions one at a time, and, remembered for the provider, every later send too.
//
// A stop (the run's deadline, SIGTERM, a lost hand-over Lease: `stopReason`) is asked before every batch, every single
// transaction and every filler, and again as each leaves the provider's queue (RpcOptions.stopReason): once it is
// there, nothing more reaches the provider, however slowly it answers what was sent before. What was not sent is
// reported as such (`stopped`); its nonces stay free for whoever sends next.
//
// Some error answers do not mean "refused": "already known" (and its spellings in other clients) says this very
// transaction is in the pool, and "nonce too low" or "replacement transaction underpriced" may be said of our own
// transaction, mined or pooled a moment ago (two coordinators, a load-balanced provider, a resend). The first is
// a success; the others are a success when the provider knows our transaction by its hash, and otherwise say
// that another transaction holds the nonce, which may still be mined: such a nonce is never filled.

import { type BaseWallet, keccak256 } from 'ethers';
import { signPlanned } from './fulfillment.js';
import type { GasTarget } from './gas-price.js';
import {
  asData,
  type BatchEntry,
  RpcBatchRefused,
  RpcCallStopped,
  type RpcClient,
  RpcError,
  RpcTransportError,
} from './rpc.js';

/** Transactions per JSON-RPC batch (providers commonly cap batches at 50-100 calls). */
export const SEND_BATCH_SIZE = 50;
/** Gas of a plain transfer: the filler of a nonce hole. */
export const FILLER_GAS_LIMIT = 21_000n;
const SEND_TIMEOUT_MS = 10_000;

export type Signable = { to: string; data: string; gasLimit: bigint; gasTarget: GasTarget; value?: bigint };

export type Sent = { nonce: number; txHash: string } | { nonce: number; rejected: string };

/** `occupied`: the provider said another transaction holds the nonce (nothing to fill: it may be mined). */
export type Filler = { nonce: number; txHash?: string; rejected?: string; occupied?: boolean };

/** The transaction is in the pool already (geth, erigon, besu, nethermind, OpenEthereum and anvil spellings). */
const ALREADY_IN_POOL =
  /already known|known transaction|alreadyknown|already imported|already in (the )?(pool|mempool)|transaction already exists|tx already exists/i;
/** The nonce is taken, by this transaction or another one: which one, only its hash can tell. */
const NONCE_TAKEN =
  /nonce too low|nonce has already been used|oldnonce|replacement transaction underpriced|replacement fee too low|replacementnotallowed|could not replace existing tx|another transaction with (the )?same nonce/i;

/**
 * What an answer to eth_sendRawTransaction means. `nonceTaken`: refused because another transaction holds the
 * nonce, one that may still be mined (a filler must never compete with it).
 */
export type SendAnswer = { ok: true; txHash: string } | { ok: false; error: RpcError; nonceTaken: boolean };

/** The hash of a signed transaction, as the chain will name it. */
export function transactionHash(signed: string): string {
  return keccak256(signed);
}

export type SendReport = {
  /** Per transaction given, in order: sent, rejected, or undefined when not sent (after a rejection or the stop). */
  sent: (Sent | undefined)[];
  /** Zero-value transfers that filled the nonces of rejected transactions below accepted ones. */
  fillers: Filler[];
  /** A batch went unanswered (RpcTransportError): what it carried may or may not have reached the provider. */
  transportError?: RpcTransportError;
  /**
   * With `transportError`: the transactions whose answer was lost (index into the transactions given, nonce, and
   * the hash the chain will know them by), for the caller to confirm by hash before counting them.
   */
  unanswered?: { index: number; nonce: number; txHash: string }[];
  /** The stop came before everything was sent (its reason): what is undefined in `sent` never left. */
  stopped?: string;
};

export type SendOptions = {
  client: RpcClient;
  wallet: Pick<BaseWallet, 'address' | 'signingKey'>;
  chainId: string;
  firstNonce: number;
  /** Price of the fillers (the wallet's price this cycle). */
  gasTarget: GasTarget;
  /**
   * Nonces below this one hold transactions that may still be mined (the wallet's pending count): a rejected
   * transaction at such a nonce leaves no hole to fill, it waits behind the pending one.
   */
  pendingNonce?: number;
  batchSize?: number;
  /** Why the run stopped, undefined while it goes on: asked before every send (see the header). */
  stopReason?: () => string | undefined;
};

/**
 * Sends `transactions` with nonces firstNonce, firstNonce + 1, ... in that order. A transport failure (no
 * answer) ends the sending with `transportError`: what that batch carried is left undefined, for the caller to
 * settle by reading the nonce again through another provider; batches answered before it are reported.
 */
export async function sendInNonceOrder(transactions: Signable[], options: SendOptions): Promise<SendReport> {
  const { client, wallet, chainId, firstNonce, stopReason } = options;
  let batchSize = client.takesBatches ? Math.max(1, options.batchSize ?? SEND_BATCH_SIZE) : 1;
  const report: SendReport = { sent: new Array(transactions.length).fill(undefined), fillers: [] };
  let start = 0;
  while (start < transactions.length) {
    const chunk = transactions.slice(start, start + batchSize);
    const signed = await Promise.all(chunk.map((tx, i) => signPlanned(wallet, tx, firstNonce + start + i, chainId)));
    let entries: SendAnswer[];
    let stopped: string | undefined;
    try {
      ({ answers: entries, stopped } = await sendSigned(client, signed, batchSize > 1, stopReason));
    } catch (error) {
      if (error instanceof RpcBatchRefused && batchSize > 1) {
        batchSize = 1; // the same chunk again, one transaction at a time
        continue;
      }
      if (error instanceof RpcCallStopped) return { ...report, stopped: error.reason };
      if (error instanceof RpcTransportError) {
        const unanswered = signed.map((tx, i) => ({
          index: start + i,
          nonce: firstNonce + start + i,
          txHash: transactionHash(tx),
        }));
        return { ...report, transportError: error, unanswered };
      }
      throw error;
    }
    const rejectedNonces: number[] = [];
    const freeNonces: number[] = [];
    let highestAccepted = -1;
    entries.forEach((entry, i) => {
      const nonce = firstNonce + start + i;
      if (entry.ok) {
        report.sent[start + i] = { nonce, txHash: entry.txHash };
        highestAccepted = nonce;
      } else {
        report.sent[start + i] = { nonce, rejected: entry.error.message };
        rejectedNonces.push(nonce);
        if (!entry.nonceTaken && nonce >= (options.pendingNonce ?? 0)) freeNonces.push(nonce);
      }
    });
    if (rejectedNonces.length === 0) {
      if (stopped !== undefined) return { ...report, stopped };
      start += chunk.length;
      continue;
    }
    // Only a nonce nothing else may take is a hole: a filler must never compete with a transaction that may
    // still be mined (it would replace it, or be refused and leave an error where nothing went wrong).
    const holes = freeNonces.filter((nonce) => nonce < highestAccepted);
    if (holes.length > 0) {
      try {
        const filled = await fillHoles(options, holes, batchSize > 1);
        report.fillers = filled.fillers;
        if (filled.stopped !== undefined) return { ...report, stopped: filled.stopped };
      } catch (error) {
        if (error instanceof RpcTransportError) return { ...report, transportError: error };
        throw error;
      }
    }
    return report;
  }
  return report;
}

/**
 * Sends signed transactions as one batch, or one at a time: the answers of those sent, in order, and the stop's reason
 * when it came before the rest (one at a time). A batch stopped before it left throws RpcCallStopped.
 */
async function sendSigned(
  client: RpcClient,
  signed: string[],
  asBatch: boolean,
  stopReason: (() => string | undefined) | undefined,
): Promise<{ answers: SendAnswer[]; stopped?: string }> {
  const stopped = stopReason?.();
  if (stopped !== undefined) return { answers: [], stopped };
  if (asBatch && signed.length > 1 && client.takesBatches) {
    const entries = await client.batch(
      signed.map((tx) => ({ method: 'eth_sendRawTransaction', params: [tx] })),
      { timeoutMs: SEND_TIMEOUT_MS, ...(stopReason ? { stopReason } : {}) },
    );
    return { answers: await Promise.all(entries.map((entry, i) => settleAnswer(client, signed[i]!, entry))) };
  }
  const answers: SendAnswer[] = [];
  for (const tx of signed) {
    const stopped = stopReason?.();
    if (stopped !== undefined) return { answers, stopped };
    let entry: BatchEntry;
    try {
      // No retry: a lost answer is resolved by the nonce check of the next attempt, not by resending blindly.
      const result = await client.request('eth_sendRawTransaction', [tx], {
        attempts: 1,
        timeoutMs: SEND_TIMEOUT_MS,
        ...(stopReason ? { stopReason } : {}),
      });
      entry = { ok: true, result };
    } catch (error) {
      if (error instanceof RpcCallStopped) return { answers, stopped: error.reason };
      if (!(error instanceof RpcError)) throw error;
      entry = { ok: false, error };
    }
    const answer = await settleAnswer(client, tx, entry);
    answers.push(answer);
    // One at a time, a rejection stops here: nothing after it was sent, so it leaves no hole.
    if (!answer.ok) break;
  }
  return { answers };
}

/** Reads one answer to eth_sendRawTransaction (see the header): an "in the pool" error is a success. */
async function settleAnswer(client: RpcClient, signed: string, entry: BatchEntry): Promise<SendAnswer> {
  if (entry.ok) return { ok: true, txHash: asData(entry.result, 'txHash') };
  const { message } = entry.error;
  if (ALREADY_IN_POOL.test(message)) return { ok: true, txHash: transactionHash(signed) };
  if (!NONCE_TAKEN.test(message)) return { ok: false, error: entry.error, nonceTaken: false };
  const txHash = transactionHash(signed);
  return (await isKnown(client, txHash)) ? { ok: true, txHash } : { ok: false, error: entry.error, nonceTaken: true };
}

/** Whether the provider knows a transaction by its hash (pending or mined); a failed lookup says no. */
export async function isKnown(client: RpcClient, txHash: string): Promise<boolean> {
  try {
    const tx = await client.request<unknown>('eth_getTransactionByHash', [txHash]);
    const hash = typeof tx === 'object' && tx !== null ? (tx as { hash?: unknown }).hash : undefined;
    return typeof hash === 'string' && hash.toLowerCase() === txHash.toLowerCase();
  } catch {
    return false;
  }
}

async function fillHoles(
  options: SendOptions,
  holes: number[],
  asBatch: boolean,
): Promise<{ fillers: Filler[]; stopped?: string }> {
  const { client, wallet, chainId, gasTarget, stopReason } = options;
  const { gasLimit: _ignored, ...price } = gasTarget;
  const filler: Signable = {
    to: wallet.address,
    data: '0x',
    gasLimit: FILLER_GAS_LIMIT,
    gasTarget: price as GasTarget,
    value: 0n,
  };
  const signed = await Promise.all(holes.map((nonce) => signPlanned(wallet, filler, nonce, chainId)));
  let sent: { answers: SendAnswer[]; stopped?: string };
  try {
    sent = await sendSigned(client, signed, asBatch, stopReason);
  } catch (error) {
    if (error instanceof RpcCallStopped) sent = { answers: [], stopped: error.reason };
    else if (error instanceof RpcBatchRefused) sent = await sendSigned(client, signed, false, stopReason);
    else throw error;
  }
  const { answers, stopped } = sent;
  const fillers = holes.map((nonce, i): Filler => {
    const entry = answers[i];
    if (!entry && stopped !== undefined) return { nonce, rejected: `not sent: ${stopped}` };
    if (!entry) return { nonce, rejected: 'not sent: an earlier filler was rejected' };
    if (entry.ok) return { nonce, txHash: entry.txHash };
    return { nonce, rejected: entry.error.message, ...(entry.nonceTaken ? { occupied: true } : {}) };
  });
  return { fillers, ...(stopped !== undefined ? { stopped } : {}) };
}
