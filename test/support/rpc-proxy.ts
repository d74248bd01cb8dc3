// A JSON-RPC proxy in front of a chain (anvil) that counts calls by method and records every raw transaction
// sent through it, in arrival order (sender and nonce decoded): what the tests and the cycle benchmark use to
// check that each sponsor wallet's transactions were sent in nonce order, and then mined without gaps.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Transaction } from 'ethers';
import { rpc } from './chain.js';

export type SentTransaction = { from: string; nonce: number; hash: string };

export type RecordingProxy = {
  url: string;
  counts: Map<string, number>;
  sent: SentTransaction[];
  reset(): void;
  close(): Promise<void>;
};

export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const counts = new Map<string, number>();
  const sent: SentTransaction[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        const parsed = JSON.parse(body) as { method?: string; params?: unknown[] } | { method?: string }[];
        for (const call of (Array.isArray(parsed) ? parsed : [parsed]) as { method?: string; params?: unknown[] }[]) {
          const method = call.method ?? '?';
          counts.set(method, (counts.get(method) ?? 0) + 1);
          if (method === 'eth_sendRawTransaction' && typeof call.params?.[0] === 'string') {
            const tx = Transaction.from(call.params[0]);
            sent.push({ from: tx.from!, nonce: tx.nonce, hash: tx.hash! });
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
        res.setHeader('content-type', 'application/json');
        res.end(await upstream.text());
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
    sent,
    reset() {
      counts.clear();
      sent.length = 0;
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
  /** Wallets whose transactions arrived out of nonce order or with a nonce skipped, with their arrival nonces. */
  outOfOrder: { from: string; nonces: number[] }[];
  /** Wallets whose on-chain transaction count is not just past their last sent nonce (a gap or a lost one). */
  gaps: { from: string; lastSent: number; minedCount: number }[];
  /** Transactions the chain holds back (queued behind a missing nonce). */
  queued: number;
};

/**
 * Checks the transactions a proxy saw: per sender, arrival nonces strictly consecutive (n, n+1, ...; a resend of
 * the same nonce, a replacement, is allowed), and after mining the sender's `latest` count is last nonce + 1 with
 * nothing queued in the pool.
 */
export async function checkNonceOrder(chainUrl: string, sent: SentTransaction[]): Promise<NonceReport> {
  const bySender = new Map<string, number[]>();
  for (const tx of sent) bySender.set(tx.from, [...(bySender.get(tx.from) ?? []), tx.nonce]);
  const outOfOrder: NonceReport['outOfOrder'] = [];
  const gaps: NonceReport['gaps'] = [];
  for (const [from, nonces] of bySender) {
    if (nonces.some((nonce, i) => i > 0 && nonce !== nonces[i - 1]! + 1 && nonce !== nonces[i - 1]!)) {
      outOfOrder.push({ from, nonces });
    }
    const lastSent = Math.max(...nonces);
    const minedCount = Number(await rpc<string>(chainUrl, 'eth_getTransactionCount', [from, 'latest']));
    if (minedCount !== lastSent + 1) gaps.push({ from, lastSent, minedCount });
  }
  const status = await rpc<{ queued: string }>(chainUrl, 'txpool_status');
  return { wallets: bySender.size, transactions: sent.length, outOfOrder, gaps, queued: Number(status.queued) };
}
