// A JSON-RPC proxy in front of a chain (anvil) that counts calls by method and records every raw transaction
// sent through it, in arrival order (sender and nonce decoded): what the tests and the cycle benchmark use to
// check that each sponsor wallet's transactions were sent in nonce order, and then mined without gaps.
// Transactions are decoded when `sent` is read, not on the way through: recovering a sender is a signature
// recovery (milliseconds of the benchmark's CPU each), which must not slow the node being measured.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Transaction } from 'ethers';
import { rpc } from './chain.js';

/** A raw transaction as it arrived; `rejected` when the chain answered it with an error. */
export type SentTransaction = { from: string; nonce: number; hash: string; rejected?: string };

export type RecordingProxy = {
  url: string;
  counts: Map<string, number>;
  /** Decoded on reading (see above). */
  readonly sent: SentTransaction[];
  reset(): void;
  close(): Promise<void>;
};

export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const counts = new Map<string, number>();
  const raw: { tx: string; rejected?: string }[] = [];
  const decoded: SentTransaction[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      // Recorded before forwarding, so arrival order is the order the node sent them in.
      const recorded = new Map<unknown, { tx: string; rejected?: string }>();
      try {
        const parsed = JSON.parse(body) as { method?: string; params?: unknown[] } | { method?: string }[];
        for (const call of (Array.isArray(parsed) ? parsed : [parsed]) as {
          id?: unknown;
          method?: string;
          params?: unknown[];
        }[]) {
          const method = call.method ?? '?';
          counts.set(method, (counts.get(method) ?? 0) + 1);
          if (method === 'eth_sendRawTransaction' && typeof call.params?.[0] === 'string') {
            const entry = { tx: call.params[0] };
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
        const text = await upstream.text();
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
        res.setHeader('content-type', 'application/json');
        res.end(text);
      } catch {
        res.statusCode = 502;
        res.end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    counts,
    get sent() {
      for (let i = decoded.length; i < raw.length; i++) {
        const tx = Transaction.from(raw[i]!.tx);
        decoded.push({ from: tx.from!, nonce: tx.nonce, hash: tx.hash! });
      }
      // Rejections are known only once the chain answered: read them each time.
      return decoded.map((tx, i) => (raw[i]!.rejected ? { ...tx, rejected: raw[i]!.rejected } : tx));
    },
    reset() {
      counts.clear();
      raw.length = 0;
      decoded.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
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

/**
 * What a faulty provider does, read at every exchange (a test may change it between cycles): `results` rewrites
 * the upstream result of a method's calls (alone or inside a batch), `padTo` pads every answer with whitespace to
 * that many bytes (still valid JSON, so only a size cap tells it from a good answer), streamed in 1 MB chunks.
 */
export type ProxyFault = {
  results?: Record<string, (upstream: unknown) => unknown>;
  padTo?: number;
};

export type FaultProxy = {
  url: string;
  fault: ProxyFault;
  counts: Map<string, number>;
  /** Bytes of answers written to the node (a client that hangs up stops the writing). */
  bytesWritten: number;
  close(): Promise<void>;
};

type RpcCall = { id?: unknown; method?: string; params?: unknown[] };
type RpcAnswer = { id?: unknown; result?: unknown; error?: unknown };

/** A JSON-RPC proxy in front of `target` that answers as `fault` says. */
export async function startFaultProxy(target: string, fault: ProxyFault = {}): Promise<FaultProxy> {
  const proxy: FaultProxy = {
    url: '',
    fault,
    counts: new Map(),
    bytesWritten: 0,
    close: async () => undefined,
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let calls: RpcCall[] = [];
      try {
        const parsed = JSON.parse(body) as RpcCall | RpcCall[];
        calls = Array.isArray(parsed) ? parsed : [parsed];
      } catch {
        // forwarded as it is: the chain answers the parse error
      }
      for (const call of calls) proxy.counts.set(call.method ?? '?', (proxy.counts.get(call.method ?? '?') ?? 0) + 1);
      let text: string;
      try {
        const upstream = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        text = await upstream.text();
      } catch {
        res.statusCode = 502;
        res.end();
        return;
      }
      const rewrites = proxy.fault.results ?? {};
      const methodOf = new Map(calls.map((call) => [call.id, call.method ?? '?']));
      if (Object.keys(rewrites).length > 0) {
        try {
          const answer = JSON.parse(text) as RpcAnswer | RpcAnswer[];
          const rewrite = (entry: RpcAnswer): RpcAnswer => {
            const fn = rewrites[methodOf.get(entry.id) ?? ''];
            return fn && 'result' in entry ? { ...entry, result: fn(entry.result) } : entry;
          };
          text = JSON.stringify(Array.isArray(answer) ? answer.map(rewrite) : rewrite(answer));
        } catch {
          // not JSON: passed on unchanged
        }
      }
      res.setHeader('content-type', 'application/json');
      const write = (chunk: string) => {
        proxy.bytesWritten += Buffer.byteLength(chunk);
        return res.write(chunk);
      };
      write(text);
      let padding = (proxy.fault.padTo ?? 0) - Buffer.byteLength(text);
      const block = ' '.repeat(1024 * 1024);
      while (padding > 0 && !res.destroyed) {
        const chunk = padding >= block.length ? block : ' '.repeat(padding);
        padding -= chunk.length;
        if (!write(chunk)) await drainedOrClosed(res);
      }
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return proxy;
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
