// The servers of bench/gateway.bench.ts that run as plain Node.js on built code, not under tsx:
//   node bench/support/gateway-children.mjs gateway         our gateway from dist/ (as `oracle-node gateway` runs it)
//   node bench/support/gateway-children.mjs minimal-proxy   the bare proxy: the floor of a one-hop Node.js gateway
// Each takes one IPC message { config, secrets } or { apiUrl, apiKey } from the bench and answers { port, ... }.
// Plain JavaScript so that no loader sits between Node and the code measured; needs `make build` (dist/).
import { Agent, createServer, request as httpRequest } from 'node:http';
import { validateConfig } from '../../dist/config/index.js';
import { startGatewayServer } from '../../dist/gateway/server.js';
import { silentLogger } from '../../dist/observability/index.js';
import { callEndpoint, setApiBudgets } from '../../dist/ois/index.js';

// SIGINT ends a child with exit(0) so that --cpu-prof can write its profile.
process.on('SIGINT', () => process.exit(0));

/** Our gateway on the real engine, and a second one whose engine answers at once (server, validation, signing). */
async function serveGateway({ config: configJson, secrets, stubValue }) {
  const result = validateConfig(configJson, secrets);
  if (!result.ok || !result.config) throw new Error(`bench config invalid: ${JSON.stringify(result.errors)}`);
  const config = result.config;
  const server = await startGatewayServer(config, {
    host: '127.0.0.1',
    port: 0,
    callEndpoint,
    logger: silentLogger(),
    keepProcessingWarm: true,
  });
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
 * The bare proxy the gateway is measured against (issue 27's definition): node:http's server, the JSON body parsed,
 * one GET to the API through node:http's keep-alive agent, the API's answer relayed as it came (status, type,
 * body). No framework, no validation, no engine, no metrics, no logging: the floor of a Node.js one-hop gateway.
 */
async function serveMinimalProxy({ apiUrl, apiKey }) {
  const agent = new Agent({ keepAlive: true, maxSockets: 256, keepAliveMsecs: 4_000 });
  const api = new URL(apiUrl);
  const fail = (res, status) => {
    if (res.headersSent) return res.destroy();
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end('{"error":"failed"}');
  };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      let coin;
      try {
        coin = JSON.parse(Buffer.concat(chunks).toString('utf8')).parameters.coin;
      } catch {
        return fail(res, 400);
      }
      const upstream = httpRequest(
        {
          host: api.hostname,
          port: api.port,
          agent,
          path: `/price?coin=${encodeURIComponent(coin)}`,
          method: 'GET',
          headers: { 'x-api-key': apiKey },
        },
        (answer) => {
          const parts = [];
          answer.on('data', (chunk) => parts.push(chunk));
          answer.on('end', () => {
            const body = Buffer.concat(parts);
            res.writeHead(answer.statusCode ?? 502, {
              'content-type': answer.headers['content-type'] ?? 'application/json',
              'content-length': body.length,
            });
            res.end(body);
          });
          answer.on('error', () => fail(res, 502));
        },
      );
      upstream.on('error', () => fail(res, 502));
      upstream.end();
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
  // Later messages to the gateway: { apiLimits } sets the process's APIs' budgets (what --api-rate-limit sets).
  process.on('message', ({ apiLimits }) => {
    setApiBudgets(apiLimits, { defaultMaxWaitMs: 0 });
    process.send({ ok: true });
  });
});
