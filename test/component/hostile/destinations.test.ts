// The opt-in deny list for API destinations: off by default (the reference calls any configured URL), on
// through ORACLE_NODE_DENY_PRIVATE_API_DESTINATIONS, checked on the resolved address of each connection.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { callApi } from '../../../src/ois/api-client.js';
import {
  destinationPolicyFromEnvironment,
  isPrivateAddress,
  setDestinationPolicy,
} from '../../../src/ois/destinations.js';

describe('hostile input: private API destinations (opt-in deny list)', () => {
  let server: Server;
  let port: number;
  let calls = 0;

  before(async () => {
    server = createServer((_req, res) => {
      calls++;
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":true}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    setDestinationPolicy({ denyPrivate: false });
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const get = (host: string) =>
    callApi({ method: 'get', url: `http://${host}:${port}/x`, headers: {} } as never, { timeoutsMs: [5_000] });

  it('classifies private, loopback, link-local and metadata addresses', () => {
    for (const address of ['127.0.0.1', '10.1.2.3', '172.20.0.1', '192.168.1.1', '169.254.169.254', '::1', 'fe80::1']) {
      expect(isPrivateAddress(address), address).to.equal(true);
    }
    expect(isPrivateAddress('fd00:ec2::254'), 'AWS IPv6 metadata').to.equal(true);
    expect(isPrivateAddress('::ffff:169.254.169.254')).to.equal(true);
    for (const address of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111']) {
      expect(isPrivateAddress(address), address).to.equal(false);
    }
    expect(destinationPolicyFromEnvironment({ ORACLE_NODE_DENY_PRIVATE_API_DESTINATIONS: 'true' })).to.deep.equal({
      denyPrivate: true,
    });
    expect(destinationPolicyFromEnvironment({})).to.deep.equal({ denyPrivate: false });
  });

  it('calls a loopback API by default, as the reference does', async () => {
    setDestinationPolicy({ denyPrivate: false });
    expect(await get('127.0.0.1')).to.deep.include({ success: true });
  });

  it('refuses an address literal and a name resolving to a private address when the deny list is on', async () => {
    setDestinationPolicy({ denyPrivate: true });
    const before = calls;
    for (const host of ['127.0.0.1', 'localhost']) {
      const result = await get(host);
      expect(result, host).to.deep.equal({
        success: false,
        errorMessage: 'API call refused: the API server is at a private, loopback or link-local address',
      });
    }
    expect(calls).to.equal(before);
  });
});
