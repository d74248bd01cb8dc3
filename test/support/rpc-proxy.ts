// A JSON-RPC proxy in front of a chain (anvil) that counts calls by method and records every raw transaction
// sent through it, in arrival order (sender and nonce decoded): what the tests and the cycle benchmark use to
// check that each sponsor wallet's transactions were sent in nonce order, and then mined without gaps.
// Transactions are decoded when `sent` is read, not on the way through: recovering a sender is a signature
// recovery (milliseconds of the benchmark's CPU each), which must not slow the node being measured.
// It also injects the faults of a bad day on the chain (`setFault`): an answer that comes late, an answer lost
// after the call reached the chain, a chain's answer replaced by a canned error message or by another result (a
// head behind, another chain id), or an answer padded past any sane size. And a provider that takes no JSON-RPC
// batches (`refuseBatches`), in the shapes real ones answer with, never forwarding a refused batch to the chain.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Transaction } from 'ethers';
import { rpc } from './chain.js';

/**
 * A raw transaction as it arrived (`at`: Date.now() on arrival, what a latency benchmark takes as the send time);
 * `rejected` when the chain answered it with an error.
 */
export type SentTransaction = { from: string; nonce: number; hash: string; at: number; rejected?: string };

/**
 * What the proxy does to one call. Every call is forwarded to the chain first (so the chain sees what the node
 * sent); then `delay` holds the answer back, `drop` closes the connection instead of answering (the node never
 * learns the outcome), `error` replaces the chain's answer to this call with a JSON-RPC error, `result` replaces
 * its result with what the function returns for it, `padTo` pads the whole HTTP answer with whitespace to that
 * many bytes (still valid JSON: only a size cap tells it from a good answer), written in 1 MB chunks.
 */
export type Fault =
  | { delayMs: number }
  | { drop: true }
  | { error: { code?: number; message: string } }
  | { result: (upstream: unknown) => unknown }
  | { padTo: number };

/**
 * Chooses the fault of each call (undefined: pass it through); `seen` counts the earlier calls of that method, `from`
 * is the caller's address (which pod, when pods share one proxy).
 */
export type FaultRule = (call: { method: string; params: unknown[]; seen: number; from: string }) => Fault | undefined;

/**
 * How a provider that takes no batches refuses one: `one-error`, one JSON-RPC error object for the whole batch;
 * `per-entry`, each call answered with -32600 "batch requests are not supported"; `null-id`, an array with one error
 * of id null; `{ status }`, an HTTP error with a plain-text body (413 Payload Too Large).
 */
export type BatchRefusal = 'one-error' | 'per-entry' | 'null-id' | { status: number };

const BATCH_REFUSED = { code: -32600, message: 'batch requests are not supported' };

export type RecordingProxy = {
  url: string;
  counts: Map<string, number>;
  /** HTTP exchanges (round trips): a JSON-RPC batch is one exchange carrying many calls. */
  readonly exchanges: number;
  /** Decoded on reading (see above). */
  readonly sent: SentTransaction[];
  /** Faults from now on (undefined: none). */
  setFault(rule: FaultRule | undefined): void;
  /** From now on, refuses every batch in that shape without forwarding it (undefined: takes batches). */
  refuseBatches(shape: BatchRefusal | undefined): void;
  /** Batches refused so far (refuseBatches). */
  readonly refusedBatches: number;
  reset(): void;
  close(): Promise<void>;
};

type JsonRpcCall = { id?: unknown; method?: string; params?: unknown[] };

/** `host`: where it listens (loopback by default; the real node's bridge address for pods). */
export async function startRecordingProxy(target: string, options: { host?: string } = {}): Promise<RecordingProxy> {
  const counts = new Map<string, number>();
  const raw: { tx: string; at: number; rejected?: string }[] = [];
  const decoded: SentTransaction[] = [];
  let rule: FaultRule | undefined;
  let refusal: BatchRefusal | undefined;
  let refusedBatches = 0;
  let exchanges = 0;
  // The answers a delay fault holds back: close() lets them go, so a long delay (a provider that hangs) keeps no
  // timer running after the test that set it.
  const held = new Set<{ timer: NodeJS.Timeout; release: () => void }>();
  const holdBack = (ms: number) =>
    new Promise<void>((resolve) => {
      const entry = {
        timer: setTimeout(() => entry.release(), ms),
        release: () => {
          clearTimeout(entry.timer);
          held.delete(entry);
          resolve();
        },
      };
      held.add(entry);
    });
  const server: Server = createServer((req, res) => {
    exchanges++;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      if (refusal && refuseBatch(res, body, refusal)) {
        refusedBatches++;
        return;
      }
      // Recorded before forwarding, so arrival order is the order the node sent them in.
      const recorded = new Map<unknown, { tx: string; at: number; rejected?: string }>();
      const faults = new Map<unknown, Fault>();
      try {
        const parsed = JSON.parse(body) as JsonRpcCall | JsonRpcCall[];
        for (const call of Array.isArray(parsed) ? parsed : [parsed]) {
          const method = call.method ?? '?';
          const fault = rule?.({
            method,
            params: call.params ?? [],
            seen: counts.get(method) ?? 0,
            from: req.socket.remoteAddress ?? '',
          });
          if (fault) faults.set(call.id, fault);
          counts.set(method, (counts.get(method) ?? 0) + 1);
          if (method === 'eth_sendRawTransaction' && typeof call.params?.[0] === 'string') {
            const entry = { tx: call.params[0], at: Date.now() };
            raw.push(entry);
            recorded.set(call.id, entry);
          }
        }
      } catch {
        counts.set('<malformed>', (counts.get('<malformed>') ?? 0) + 1);
      }
      try {
        const upstream = await fetch(target, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        });
        let text = await upstream.text();
        if (recorded.size > 0) {
          try {
            const answer = JSON.parse(text) as { id?: unknown; error?: { message?: string } }[];
            for (const entry of Array.isArray(answer) ? answer : [answer]) {
              const tx = recorded.get(entry.id);
              if (tx && entry.error) tx.rejected = entry.error.message ?? 'error';
            }
          } catch {
            // not JSON: nothing to mark
          }
        }
        if (faults.size > 0) {
          const all = [...faults.values()];
          if (all.some((f) => 'drop' in f)) {
            res.socket?.destroy();
            return;
          }
          const delayMs = Math.max(0, ...all.map((f) => ('delayMs' in f ? f.delayMs : 0)));
          if (delayMs > 0) await holdBack(delayMs);
          text = withFaults(text, faults);
        }
        res.setHeader('content-type', 'application/json');
        const padTo = Math.max(0, ...[...faults.values()].map((f) => ('padTo' in f ? f.padTo : 0)));
        if (padTo > 0) await writePadded(res, text, padTo);
        else res.end(text);
      } catch {
        res.statusCode = 502;
        res.end();
      }
    });
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    url: `http://${host}:${(server.address() as AddressInfo).port}`,
    counts,
    get exchanges() {
      return exchanges;
    },
    get sent() {
      for (let i = decoded.length; i < raw.length; i++) {
        const tx = Transaction.from(raw[i]!.tx);
        decoded.push({ from: tx.from!, nonce: tx.nonce, hash: tx.hash!, at: raw[i]!.at });
      }
      // Rejections are known only once the chain answered: read them each time.
      return decoded.map((tx, i) => (raw[i]!.rejected ? { ...tx, rejected: raw[i]!.rejected } : tx));
    },
    setFault(next) {
      rule = next;
    },
    refuseBatches(shape) {
      refusal = shape;
    },
    get refusedBatches() {
      return refusedBatches;
    },
    reset() {
      counts.clear();
      exchanges = 0;
      raw.length = 0;
      decoded.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        for (const entry of [...held]) entry.release();
        server.close(() => resolve());
      }),
  };
}

/** Answers a JSON-RPC batch with the refusal `shape` (true), or leaves anything else alone (false). */
function refuseBatch(res: ServerResponse, body: string, shape: BatchRefusal): boolean {
  let calls: unknown;
  try {
    calls = JSON.parse(body);
  } catch {
    return false;
  }
  if (!Array.isArray(calls)) return false;
  if (typeof shape === 'object') {
    res.statusCode = shape.status;
    res.setHeader('content-type', 'text/plain');
    res.end('request refused');
    return true;
  }
  const ids = calls.map((call) => (call as JsonRpcCall | null)?.id ?? null);
  const answer =
    shape === 'one-error'
      ? { jsonrpc: '2.0', id: null, error: BATCH_REFUSED }
      : shape === 'null-id'
        ? [{ jsonrpc: '2.0', id: null, error: BATCH_REFUSED }]
        : ids.map((id) => ({ jsonrpc: '2.0', id, error: BATCH_REFUSED }));
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(answer));
  return true;
}

/** The chain's answer with the answers of the calls that have an `error` or a `result` fault replaced. */
function withFaults(text: string, faults: Map<unknown, Fault>): string {
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    return text;
  }
  const replace = (entry: { id?: unknown; result?: unknown }) => {
    const fault = faults.get(entry.id);
    if (fault && 'error' in fault) {
      return {
        jsonrpc: '2.0',
        id: entry.id,
        error: { code: fault.error.code ?? -32000, message: fault.error.message },
      };
    }
    if (fault && 'result' in fault && 'result' in entry) return { ...entry, result: fault.result(entry.result) };
    return entry;
  };
  return JSON.stringify(Array.isArray(answer) ? answer.map(replace) : replace(answer as { id?: unknown }));
}

export type NonceReport = {
  wallets: number;
  transactions: number;
  /** Wallets whose accepted transactions arrived out of nonce order or with a nonce skipped, with their nonces. */
  outOfOrder: { from: string; nonces: number[] }[];
  /** Wallets whose on-chain transaction count is not just past their last sent nonce (a gap or a lost one). */
  gaps: { from: string; lastSent: number; minedCount: number }[];
  /** Transactions the chain holds back (queued behind a missing nonce). */
  queued: number;
  /** Transactions the chain refused (they use no nonce). */
  rejected: number;
  /** Nonces sent again after the chain refused them, once later nonces were in: the filling of a hole. */
  refilled: { from: string; nonce: number }[];
};

/**
 * Checks the transactions a proxy saw: per sender, the accepted ones in arrival order have strictly consecutive
 * nonces (n, n+1, ...; a resend of the same nonce, a replacement, is allowed; a nonce the chain refused before
 * may come again later, as the filling of that hole, and is listed in `refilled`), and after mining the
 * sender's `latest` count is last nonce + 1 with nothing queued in the pool.
 */
export async function checkNonceOrder(chainUrl: string, sent: SentTransaction[]): Promise<NonceReport> {
  const bySender = new Map<string, SentTransaction[]>();
  for (const tx of sent) bySender.set(tx.from, [...(bySender.get(tx.from) ?? []), tx]);
  const outOfOrder: NonceReport['outOfOrder'] = [];
  const gaps: NonceReport['gaps'] = [];
  const refilled: NonceReport['refilled'] = [];
  for (const [from, txs] of bySender) {
    const refused = new Set<number>();
    const inOrder: number[] = [];
    for (const tx of txs) {
      if (tx.rejected) refused.add(tx.nonce);
      else if (refused.has(tx.nonce) && inOrder.length > 0 && tx.nonce < inOrder[inOrder.length - 1]!) {
        refilled.push({ from, nonce: tx.nonce });
      } else inOrder.push(tx.nonce);
    }
    const filled = new Set(refilled.filter((r) => r.from === from).map((r) => r.nonce));
    // A refilled hole is the one missing step allowed between two accepted nonces.
    const inSequence = inOrder.every(
      (nonce, i) =>
        i === 0 ||
        nonce === inOrder[i - 1]! ||
        nonce === inOrder[i - 1]! + 1 ||
        Array.from({ length: nonce - inOrder[i - 1]! - 1 }, (_, k) => inOrder[i - 1]! + 1 + k).every((n) =>
          filled.has(n),
        ),
    );
    if (!inSequence) outOfOrder.push({ from, nonces: txs.map((tx) => tx.nonce) });
    const accepted = txs.filter((tx) => !tx.rejected).map((tx) => tx.nonce);
    if (accepted.length === 0) continue;
    const lastSent = Math.max(...accepted);
    const minedCount = Number(await rpc<string>(chainUrl, 'eth_getTransactionCount', [from, 'latest']));
    if (minedCount !== lastSent + 1) gaps.push({ from, lastSent, minedCount });
  }
  const status = await rpc<{ queued: string }>(chainUrl, 'txpool_status');
  return {
    wallets: bySender.size,
    transactions: sent.length,
    outOfOrder,
    gaps,
    queued: Number(status.queued),
    rejected: sent.filter((tx) => tx.rejected).length,
    refilled,
  };
}

/** `text`, then whitespace up to `bytes` in all, stopping when the client hangs up. */
async function writePadded(res: ServerResponse, text: string, bytes: number): Promise<void> {
  res.write(text);
  let padding = bytes - Buffer.byteLength(text);
  const block = ' '.repeat(1024 * 1024);
  while (padding > 0 && !res.destroyed) {
    const chunk = padding >= block.length ? block : ' '.repeat(padding);
    padding -= chunk.length;
    if (!res.write(chunk)) await drainedOrClosed(res);
  }
  res.end();
}

function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
