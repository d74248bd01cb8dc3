import { expect } from 'chai';
import { asQuantity, RpcBatchRefused, RpcClient, RpcError, RpcTransportError } from '../../../src/chain/rpc.js';

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('RpcClient', () => {
  it('retries transport failures with back-off and counts every attempt', async () => {
    let attempts = 0;
    const client = new RpcClient(
      'http://127.0.0.1:1',
      { attempts: 3, backoffMs: { min: 1, max: 2 } },
      async (_url, body) => {
        attempts++;
        if (attempts < 3) throw new RpcTransportError('down');
        return { jsonrpc: '2.0', id: JSON.parse(body).id, result: '0x10' };
      },
    );
    expect(await client.request('eth_blockNumber', [])).to.equal('0x10');
    expect(client.calls).to.equal(3);
  });

  it('does not retry a JSON-RPC error answer', async () => {
    const client = new RpcClient('http://127.0.0.1:1', { attempts: 3 }, async () => ({
      jsonrpc: '2.0',
      id: 1,
      error: { code: 3, message: 'execution reverted', data: '0x08c379a0' },
    }));
    const error = await rejection(client.request('eth_call', []));
    expect(error).to.be.instanceOf(RpcError);
    expect((error as RpcError).data).to.equal('0x08c379a0');
    expect(client.calls).to.equal(1);
  });

  it('times out a slow provider', async () => {
    const client = new RpcClient('http://127.0.0.1:1', { attempts: 1, timeoutMs: 20 }, () => new Promise(() => {}));
    const error = await rejection(client.request('eth_blockNumber', []));
    expect(error).to.be.instanceOf(RpcTransportError);
    expect(String(error)).to.match(/timed out/);
  });

  it('treats malformed answers as transport errors', async () => {
    for (const answer of [null, [], 'x', { jsonrpc: '2.0', id: 1 }]) {
      const client = new RpcClient('http://127.0.0.1:1', { attempts: 1 }, async () => answer);
      expect(await rejection(client.request('eth_blockNumber', []))).to.be.instanceOf(RpcTransportError);
    }
    expect(() => asQuantity('garbage', 'x')).to.throw(RpcTransportError);
    expect(asQuantity('0x1f', 'x')).to.equal(31n);
  });

  it('reports an unreachable provider', async () => {
    const client = new RpcClient('http://127.0.0.1:1', { attempts: 1, timeoutMs: 2_000 });
    expect(await rejection(client.request('eth_blockNumber', []))).to.be.instanceOf(RpcTransportError);
  });
});

describe('RpcClient in-flight limit', () => {
  it('queues calls beyond the per-provider limit, shared by clients of the same URL', async () => {
    let active = 0;
    let peak = 0;
    const transport = async (_url: string, body: string) => {
      active++;
      peak = Math.max(peak, active);
      await new Promise((resolve) => setTimeout(resolve, 5));
      active--;
      return { jsonrpc: '2.0', id: JSON.parse(body).id, result: '0x1' };
    };
    const url = 'http://127.0.0.1:2/limited';
    const a = new RpcClient(url, {}, transport, 3);
    const b = new RpcClient(url, {}, transport, 3);
    await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).request('eth_blockNumber', [])));
    expect(peak).to.equal(3);
  });
});

describe('RpcClient batching', () => {
  type Call = { id: number; method: string; params: unknown[] };
  /** A provider that takes batches and answers them in reverse order; records each HTTP exchange's size. */
  const batchingProvider =
    (exchanges: number[], answer: (call: Call) => object = (c) => ({ result: c.params[0] })) =>
    async (_url: string, body: string) => {
      const parsed = JSON.parse(body) as Call | Call[];
      const calls = Array.isArray(parsed) ? parsed : [parsed];
      exchanges.push(Array.isArray(parsed) ? calls.length : 0);
      await new Promise((resolve) => setTimeout(resolve, 2));
      const answers = calls.map((c) => ({ jsonrpc: '2.0', id: c.id, ...answer(c) })).reverse();
      return Array.isArray(parsed) ? answers : answers[0];
    };

  it('sends the calls queued in the same turn as one JSON-RPC batch and matches the answers by id', async () => {
    const exchanges: number[] = [];
    const client = new RpcClient('http://127.0.0.1:3/batched', {}, batchingProvider(exchanges));
    const results = await Promise.all(Array.from({ length: 7 }, (_, i) => client.request('eth_call', [`0x0${i}`])));
    expect(results).to.deep.equal(['0x00', '0x01', '0x02', '0x03', '0x04', '0x05', '0x06']);
    expect(exchanges).to.deep.equal([7]);
    expect(client.calls).to.equal(7);
    // A call on its own goes on its own (a plain JSON-RPC object, no batch).
    expect(await client.request('eth_call', ['0x09'])).to.equal('0x09');
    expect(exchanges).to.deep.equal([7, 0]);
  });

  it('keeps the error of one call in a batch to that call', async () => {
    const client = new RpcClient(
      'http://127.0.0.1:3/one-error',
      {},
      batchingProvider([], (c) =>
        c.params[0] === 'bad' ? { error: { code: 3, message: 'execution reverted' } } : { result: '0x1' },
      ),
    );
    const settled = await Promise.allSettled(['a', 'bad', 'c'].map((p) => client.request('eth_call', [p])));
    expect(settled.map((s) => s.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
    expect((settled[1] as PromiseRejectedResult).reason).to.be.instanceOf(RpcError);
  });

  it('falls back to one call at a time for a provider that answers a batch with one error', async () => {
    const sizes: number[] = [];
    const client = new RpcClient('http://127.0.0.1:3/no-batches', {}, async (_url, body) => {
      const parsed = JSON.parse(body);
      sizes.push(Array.isArray(parsed) ? parsed.length : 0);
      if (Array.isArray(parsed))
        return { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batch not supported' } };
      return { jsonrpc: '2.0', id: parsed.id, result: parsed.params[0] };
    });
    const results = await Promise.all(['0x1', '0x2', '0x3'].map((p) => client.request('eth_call', [p])));
    expect(results).to.deep.equal(['0x1', '0x2', '0x3']);
    expect(sizes).to.deep.equal([3, 0, 0, 0]);
    const explicit = await rejection(
      client.batch([
        { method: 'eth_sendRawTransaction', params: ['0x01'] },
        { method: 'eth_sendRawTransaction', params: ['0x02'] },
      ]),
    );
    expect(explicit).to.be.instanceOf(RpcBatchRefused);
  });

  it('a call the batch answer leaves out is a transport error (and retried as such)', async () => {
    let exchanges = 0;
    const client = new RpcClient('http://127.0.0.1:3/lossy', { backoffMs: { min: 1, max: 2 } }, async (_url, body) => {
      exchanges++;
      const parsed = JSON.parse(body) as Call | Call[];
      if (!Array.isArray(parsed)) return { jsonrpc: '2.0', id: parsed.id, result: 'retried' };
      return parsed.slice(1).map((c) => ({ jsonrpc: '2.0', id: c.id, result: 'batched' }));
    });
    const results = await Promise.all([1, 2, 3].map((p) => client.request('eth_call', [p])));
    expect(results).to.deep.equal(['retried', 'batched', 'batched']);
    expect(exchanges).to.equal(2);
  });

  it('answers an explicit batch entry by entry, in the order given', async () => {
    const client = new RpcClient(
      'http://127.0.0.1:3/explicit',
      {},
      batchingProvider([], (c) =>
        c.params[0] === '0x02' ? { error: { code: -32000, message: 'insufficient funds' } } : { result: '0xaa' },
      ),
    );
    const entries = await client.batch(
      ['0x01', '0x02', '0x03'].map((tx) => ({ method: 'eth_sendRawTransaction', params: [tx] })),
    );
    expect(entries.map((e) => e.ok)).to.deep.equal([true, false, true]);
    expect(entries[1]!.ok ? undefined : entries[1]!.error.message).to.match(/insufficient funds/);
    expect(client.calls).to.equal(3);
  });
});
