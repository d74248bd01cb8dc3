import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { providerRequestTarget, RpcClient } from '../../../src/chain/rpc.js';

// Self-hosted RPC nodes take `http://user:password@host/`: fetch refuses such URLs, so the credentials go
// as a Basic Authorization header, and no error ever carries the URL.
describe('chain/rpc: provider URLs with credentials', () => {
  it('sends user:password as a Basic Authorization header to the URL without them', async () => {
    const seen: { auth?: string; url?: string }[] = [];
    const server = createServer((req, res) => {
      seen.push({ auth: req.headers.authorization, url: req.url });
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ jsonrpc: '2.0', id: 1, result: '0x10' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const client = new RpcClient(`http://rpc-user:s%40cret-pass@127.0.0.1:${port}/path`, { attempts: 1 });
      expect(await client.request('eth_blockNumber', [])).to.equal('0x10');
      expect(seen[0]!.url).to.equal('/path');
      expect(seen[0]!.auth).to.equal(`Basic ${Buffer.from('rpc-user:s@cret-pass').toString('base64')}`);
    } finally {
      server.close();
    }
  });

  it('an unreachable provider with credentials fails without the URL in the message', async () => {
    const client = new RpcClient('http://rpc-user:secret-pass-123@127.0.0.1:1/', { attempts: 1, timeoutMs: 2000 });
    const error = await client.request('eth_blockNumber', []).catch((caught: Error) => caught);
    expect((error as Error).message).to.match(/^provider unreachable: /);
    expect((error as Error).message).not.to.contain('secret-pass-123');
    expect(providerRequestTarget('http://a:b@h/').url).to.equal('http://h/');
  });
});
