// sendInNonceOrder against scripted providers (the batch path with a refused entry runs on anvil in
// test/component/node/cycle.test.ts): the one-at-a-time fallback and a batch that goes unanswered.
import { expect } from 'chai';
import { Transaction, Wallet } from 'ethers';
import { RpcClient, RpcTransportError } from '../../../src/chain/rpc.js';
import { type Signable, sendInNonceOrder } from '../../../src/chain/sending.js';

const wallet = new Wallet(`0x${'42'.repeat(32)}`);
const transactions: Signable[] = Array.from({ length: 4 }, () => ({
  to: `0x${'11'.repeat(20)}`,
  data: '0x',
  gasLimit: 21_000n,
  gasTarget: { type: 0, gasPrice: 10n },
}));
type Call = { id: number; method: string; params: string[] };

/** The provider's acceptance of a sent transaction (its hash), or its rejection with `message`. */
const accepted = (call: Call) => ({ jsonrpc: '2.0', id: call.id, result: Transaction.from(call.params[0]!).hash });
const rejected = (call: Call, message: string) => ({ jsonrpc: '2.0', id: call.id, error: { code: -32000, message } });

/** A provider that answers each call of an exchange, a batch or a single call, with `answer`. */
function provider(name: string, answer: (call: Call) => unknown): RpcClient {
  return new RpcClient(`http://127.0.0.1:4/${name}`, {}, async (_url, body) => {
    const parsed = JSON.parse(body) as Call | Call[];
    const answers = (Array.isArray(parsed) ? parsed : [parsed]).map(answer);
    return Array.isArray(parsed) ? answers : answers[0];
  });
}

/** sendInNonceOrder of the four transactions, from the test wallet on chain 31337, from nonce 0 unless told. */
const send = (client: RpcClient, options: Partial<Parameters<typeof sendInNonceOrder>[1]> = {}) =>
  sendInNonceOrder(transactions, {
    client,
    wallet,
    chainId: '31337',
    firstNonce: 0,
    gasTarget: { type: 0, gasPrice: 10n },
    ...options,
  });

describe('sendInNonceOrder', () => {
  it('sends one at a time, in nonce order, to a provider that refuses batches; a rejection stops there', async () => {
    const arrivals: (number | 'batch')[] = [];
    const client = new RpcClient('http://127.0.0.1:4/no-batches', {}, async (_url, body) => {
      const parsed = JSON.parse(body) as Call | Call[];
      if (Array.isArray(parsed)) {
        arrivals.push('batch');
        return { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batch requests are not supported' } };
      }
      const tx = Transaction.from(parsed.params[0]!);
      arrivals.push(tx.nonce);
      return tx.nonce === 7 ? rejected(parsed, 'insufficient funds') : accepted(parsed);
    });
    const report = await send(client, { firstNonce: 5 });
    expect(arrivals).to.deep.equal(['batch', 5, 6, 7]);
    expect(
      report.sent.map((s) => (s ? ('txHash' in s ? `sent ${s.nonce}` : `rejected ${s.nonce}`) : 'not sent')),
    ).to.deep.equal(['sent 5', 'sent 6', 'rejected 7', 'not sent']);
    // Nothing after the rejected nonce went out: no hole to fill.
    expect(report.fillers).to.deep.equal([]);
    expect(report.transportError).to.equal(undefined);
  });

  it('reports a batch that got no answer as a transport error, its transactions neither sent nor rejected', async () => {
    let exchanges = 0;
    const client = new RpcClient('http://127.0.0.1:4/down', {}, async (_url, body) => {
      exchanges++;
      const parsed = JSON.parse(body) as Call[];
      if (exchanges === 1) return parsed.map(accepted);
      throw new RpcTransportError('provider unreachable: ECONNRESET');
    });
    const report = await send(client, { batchSize: 2 });
    expect(report.sent.map((s) => s?.nonce)).to.deep.equal([0, 1, undefined, undefined]);
    expect(report.transportError).to.be.instanceOf(RpcTransportError);
    // What the lost batch carried, with the hashes to confirm it by.
    expect(report.unanswered?.map((u) => [u.index, u.nonce])).to.deep.equal([
      [2, 2],
      [3, 3],
    ]);
    for (const u of report.unanswered ?? []) expect(u.txHash).to.match(/^0x[0-9a-f]{64}$/);
    expect(exchanges).to.equal(2);
  });

  it('fills no nonce that another transaction holds: "replacement underpriced" for a hash the provider does not know', async () => {
    const methods: string[] = [];
    const client = provider('taken', (c) => {
      methods.push(c.method);
      if (c.method === 'eth_getTransactionByHash') return { jsonrpc: '2.0', id: c.id, result: null };
      return Transaction.from(c.params[0]!).nonce === 0
        ? rejected(c, 'replacement transaction underpriced')
        : accepted(c);
    });
    const report = await send(client);
    expect(report.sent[0]).to.deep.equal({
      nonce: 0,
      rejected: 'eth_sendRawTransaction: replacement transaction underpriced',
    });
    expect(report.fillers).to.deep.equal([]);
    expect(methods.filter((m) => m === 'eth_sendRawTransaction')).to.have.length(4);
  });

  it('fills no nonce below the pending nonce, where a transaction may still be mined', async () => {
    const client = provider('pending', (c) => {
      const tx = Transaction.from(c.params[0]!);
      return tx.nonce === 1 && tx.to !== wallet.address
        ? rejected(c, 'insufficient funds for gas * price + value')
        : accepted(c);
    });
    expect((await send(client, { pendingNonce: 2 })).fillers).to.deep.equal([]);
    // The same rejection above the pending nonce is a hole, and gets its filler.
    expect((await send(client, { pendingNonce: 0 })).fillers.map((f) => f.nonce)).to.deep.equal([1]);
  });

  describe('a stop (the run deadline, SIGTERM, a lost Lease), asked before every send', () => {
    const refused = { code: -32600, message: 'batch requests are not supported' };

    it('a stop while one transaction is with a provider that takes no batches: nothing more is sent, the rest reported unsent', async () => {
      const arrivals: (number | 'batch')[] = [];
      let stop: string | undefined;
      const client = new RpcClient('http://127.0.0.1:4/stop-single', {}, async (_url, body) => {
        const parsed = JSON.parse(body) as Call | Call[];
        if (Array.isArray(parsed)) {
          arrivals.push('batch');
          return parsed.map((c) => ({ jsonrpc: '2.0', id: c.id, error: refused }));
        }
        arrivals.push(Transaction.from(parsed.params[0]!).nonce);
        stop = 'lease lost';
        return accepted(parsed);
      });
      const report = await send(client, { firstNonce: 5, stopReason: () => stop });
      expect(arrivals).to.deep.equal(['batch', 5]);
      expect(report.sent.map((s) => s?.nonce)).to.deep.equal([5, undefined, undefined, undefined]);
      expect(report.stopped).to.equal('lease lost');
      // The refusal of batches is remembered for the provider: the next run sends no batch first.
      stop = undefined;
      arrivals.length = 0;
      await sendInNonceOrder(transactions.slice(0, 2), {
        client,
        wallet,
        chainId: '31337',
        firstNonce: 6,
        gasTarget: { type: 0, gasPrice: 10n },
      });
      expect(arrivals).to.deep.equal([6, 7]);
    });

    it('a stop before a filler leaves the hole unfilled and says so', async () => {
      let stop: string | undefined;
      const sent: number[] = [];
      const client = provider('stop-filler', (c) => {
        const { nonce } = Transaction.from(c.params[0]!);
        sent.push(nonce);
        // The stop comes while this exchange is with the provider: asked before the next send, the filler's.
        stop = 'SIGTERM';
        return nonce === 1 ? rejected(c, 'insufficient funds for gas * price + value') : accepted(c);
      });
      const report = await send(client, { stopReason: () => stop });
      expect(sent).to.deep.equal([0, 1, 2, 3]);
      expect(report.fillers).to.deep.equal([{ nonce: 1, rejected: 'not sent: SIGTERM' }]);
      expect(report.stopped).to.equal('SIGTERM');
    });

    it('stopped before the first batch: nothing is sent', async () => {
      let exchanges = 0;
      const client = new RpcClient('http://127.0.0.1:4/stopped-before', {}, async () => {
        exchanges++;
        return [];
      });
      const report = await send(client, { stopReason: () => "the window's hard end" });
      expect(exchanges).to.equal(0);
      expect(report).to.deep.include({ stopped: "the window's hard end", fillers: [] });
      expect(report.sent).to.deep.equal([undefined, undefined, undefined, undefined]);
    });
  });
});
