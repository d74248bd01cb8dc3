// The servers of bench/gateway.bench.ts that run as plain Node.js on built code, not under tsx:
//   node bench/support/gateway-children.mjs gateway         our gateway from dist/ (as `oracle-node gateway` runs it)
//   node bench/support/gateway-children.mjs minimal-proxy   the smallest one-hop gateway Node.js can be here
// Each takes one IPC message { config, secrets } or { apiUrl, apiKey } from the bench and answers { port, ... }.
// Plain JavaScript so that no loader sits between Node and the code measured; needs `make build` (dist/).
import { createServer } from 'node:http';
import { Agent } from 'undici';
import { validateConfig } from '../../dist/config/index.js';
import { startGatewayServer } from '../../dist/gateway/server.js';
import { silentLogger } from '../../dist/observability/index.js';
import { callEndpoint } from '../../dist/ois/index.js';

// SIGINT ends a child with exit(0) so that --cpu-prof can write its profile.
process.on('SIGINT', () => process.exit(0));

/** Our gateway on the real engine, and a second one whose engine answers at once (server, validation, signing). */
async function serveGateway({ config: configJson, secrets, stubValue }) {
  const result = validateConfig(configJson, secrets);
  if (!result.ok || !result.config) throw new Error(`bench config invalid: ${JSON.stringify(result.errors)}`);
  const config = result.config;
  const server = await startGatewayServer(config, { host: '127.0.0.1', port: 0, callEndpoint, logger: silentLogger() });
  const stub = async () => ({
    success: true,
    rawValue: { price: 1234.5678 },
    encodedValue: stubValue,
    values: ['123456'],
  });
  const stubbed = await startGatewayServer(config, {
    host: '127.0.0.1',
    port: 0,
    callEndpoint: stub,
    logger: silentLogger(),
  });
  return { port: server.port, stubPort: stubbed.port };
}

/**
 * The least a one-hop gateway does: node:http's server reads the JSON body, one GET to the API on undici's pooled
 * keep-alive client (the cheaper of Node's two clients, as our gateway uses), the price answered as JSON. No
 * framework, no validation, no engine, no metrics, no logging: the ceiling of any Node.js gateway on this machine.
 */
async function serveMinimalProxy({ apiUrl, apiKey }) {
  const upstream = new Agent({ connections: 256, allowH2: false, keepAliveTimeout: 4_000 });
  const origin = new URL(apiUrl).origin;
  const fail = (res, status) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end('{"error":"failed"}');
  };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', async () => {
      try {
        const coin = JSON.parse(Buffer.concat(chunks).toString('utf8')).parameters.coin;
        const response = await upstream.request({
          origin,
          path: `/price?coin=${encodeURIComponent(coin)}`,
          method: 'GET',
          headers: { 'x-api-key': apiKey },
        });
        const data = await response.body.json();
        if (response.statusCode !== 200) return fail(res, 502);
        const text = JSON.stringify({ rawValue: data, values: [String(Math.round(data.price * 100))] });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
        res.end(text);
      } catch {
        fail(res, 400);
      }
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: server.address().port };
}

const role = process.argv[2];
process.once('message', async (message) => {
  const answer = role === 'gateway' ? await serveGateway(message) : await serveMinimalProxy(message);
  process.send(answer);
});
