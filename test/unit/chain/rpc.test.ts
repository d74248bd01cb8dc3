import { expect } from 'chai';
import { asQuantity, RpcClient, RpcError, RpcTransportError } from '../../../src/chain/rpc.js';

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
