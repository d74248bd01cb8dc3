import { expect } from 'chai';
import {
  asQuantity,
  RpcBatchRefused,
  RpcCallStopped,
  RpcClient,
  RpcError,
  RpcHttpError,
  RpcTransportError,
} from '../../../src/chain/rpc.js';

async function waitUntil(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}

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

  describe('a provider that refuses batches, in each shape it may answer with', () => {
    const sends = [
      { method: 'eth_sendRawTransaction', params: ['0x01'] },
      { method: 'eth_sendRawTransaction', params: ['0x02'] },
    ];
    const refused = { code: -32600, message: 'batch requests are not supported' };
    const shapes: [string, (calls: Call[]) => unknown][] = [
      ['one error object', () => ({ jsonrpc: '2.0', id: null, error: refused })],
      ['each call answered with -32600', (calls) => calls.map((c) => ({ jsonrpc: '2.0', id: c.id, error: refused }))],
      [
        'each call answered with an error naming batches',
        (calls) =>
          calls.map((c) => ({ jsonrpc: '2.0', id: c.id, error: { code: -32000, message: 'Batch size exceeded' } })),
      ],
      ['one error of id null in an array', () => [{ jsonrpc: '2.0', id: null, error: refused }]],
      [
        'HTTP 413 with a plain-text body',
        () => {
          throw new RpcHttpError(413);
        },
      ],
      [
        'HTTP 400 with a plain-text body',
        () => {
          throw new RpcHttpError(400);
        },
      ],
    ];
    for (const [shape, refusal] of shapes) {
      it(`${shape}: refused, remembered for the provider, and its queued calls go one at a time`, async () => {
        const sizes: number[] = [];
        const client = new RpcClient(`http://127.0.0.1:3/refuses/${shape}`, {}, async (_url, body) => {
          const parsed = JSON.parse(body) as Call | Call[];
          sizes.push(Array.isArray(parsed) ? parsed.length : 0);
          if (Array.isArray(parsed)) return refusal(parsed);
          return { jsonrpc: '2.0', id: parsed.id, result: parsed.params[0] };
        });
        expect(client.takesBatches).to.equal(true);
        expect(await rejection(client.batch(sends))).to.be.instanceOf(RpcBatchRefused);
        expect(client.takesBatches).to.equal(false);
        // Remembered: the next batch is refused without a call, and queued calls leave one by one.
        expect(await rejection(client.batch(sends))).to.be.instanceOf(RpcBatchRefused);
        const results = await Promise.all(['0x1', '0x2'].map((p) => client.request('eth_call', [p])));
        expect(results).to.deep.equal(['0x1', '0x2']);
        expect(sizes).to.deep.equal([2, 0, 0]);
        // Another client of the same provider URL knows it too.
        expect(new RpcClient(`http://127.0.0.1:3/refuses/${shape}`).takesBatches).to.equal(false);
      });
    }

    it('calls queued together fall back to one at a time when each is answered with -32600', async () => {
      const sizes: number[] = [];
      const client = new RpcClient('http://127.0.0.1:3/refuses-queued', {}, async (_url, body) => {
        const parsed = JSON.parse(body) as Call | Call[];
        sizes.push(Array.isArray(parsed) ? parsed.length : 0);
        if (Array.isArray(parsed)) return parsed.map((c) => ({ jsonrpc: '2.0', id: c.id, error: refused }));
        return { jsonrpc: '2.0', id: parsed.id, result: parsed.params[0] };
      });
      const results = await Promise.all(['0x1', '0x2', '0x3'].map((p) => client.request('eth_call', [p])));
      expect(results).to.deep.equal(['0x1', '0x2', '0x3']);
      expect(sizes).to.deep.equal([3, 0, 0, 0]);
    });

    it('an error of one call among answered ones, a rate limit or a credential refusal is not a refusal of batches', async () => {
      const statuses = [429, 401];
      let exchange = 0;
      const client = new RpcClient('http://127.0.0.1:3/not-a-refusal', {}, async (_url, body) => {
        const calls = JSON.parse(body) as Call[];
        exchange++;
        if (exchange <= statuses.length) throw new RpcHttpError(statuses[exchange - 1]!);
        return calls.map((c, i) =>
          i === 0 ? { jsonrpc: '2.0', id: c.id, error: refused } : { jsonrpc: '2.0', id: c.id, result: '0x' },
        );
      });
      for (const _status of statuses) expect(await rejection(client.batch(sends))).to.be.instanceOf(RpcHttpError);
      const entries = await client.batch(sends);
      expect(entries.map((e) => e.ok)).to.deep.equal([false, true]);
      expect(client.takesBatches).to.equal(true);
    });
  });

  it('a call still queued when its caller stops is never sent', async () => {
    const sent: string[] = [];
    let stop: string | undefined;
    let answerFirst: (() => void) | undefined;
    const client = new RpcClient(
      'http://127.0.0.1:3/stopping',
      {},
      async (_url, body) => {
        const call = JSON.parse(body) as Call;
        sent.push(String(call.params[0]));
        await new Promise<void>((resolve) => (answerFirst = resolve));
        return { jsonrpc: '2.0', id: call.id, result: call.params[0] };
      },
      1,
    );
    const options = { stopReason: () => stop };
    const first = client.request('eth_sendRawTransaction', ['0x01'], options);
    await waitUntil(() => answerFirst !== undefined);
    // Queued behind the one slot the first call holds; the stop comes while both wait.
    const second = rejection(client.request('eth_sendRawTransaction', ['0x02'], options));
    const batch = rejection(client.batch([{ method: 'eth_sendRawTransaction', params: ['0x03'] }], options));
    stop = 'lease lost';
    answerFirst!();
    expect(await first).to.equal('0x01');
    expect(await second).to.be.instanceOf(RpcCallStopped);
    expect(await batch).to.be.instanceOf(RpcCallStopped);
    expect(sent).to.deep.equal(['0x01']);
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
