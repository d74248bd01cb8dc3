// The REST transport over a real loopback HTTP server: how bytes on the wire become events, and which failed
// requests it sends again.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { expect } from 'chai';
import { RuntimeClient } from '../../../src/kube/client.js';
import { ApiError, isNotFound } from '../../../src/kube/errors.js';
import { RuntimeMetrics } from '../../../src/kube/metrics.js';
import { type RequestOptions, RestClient, type WatchEvent } from '../../../src/kube/rest.js';

function kubeConfigFor(port: number): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'loopback', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'loopback' }],
    contexts: [{ name: 'loopback', cluster: 'loopback', user: 'loopback' }],
    currentContext: 'loopback',
  });
  return kubeConfig;
}

function event(name: string, labels: Record<string, string>): string {
  const object = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'ns1', labels } };
  return `${JSON.stringify({ type: 'ADDED', object })}\n`;
}

describe('runtime REST transport: watch stream', () => {
  it('decodes a multi-byte character split across chunks of the stream (é, and a four-byte emoji)', async () => {
    // 'é' is two bytes (C3 A9) and the satellite four (F0 9F 9B B0): each chunk but the last ends inside one.
    const lines = [event('a', { plain: 'ascii' }), event('b', { greeting: 'café' }), event('c', { emoji: 'sat 🛰' })];
    const wire = Buffer.from(lines.join(''));
    const cuts = [wire.indexOf(Buffer.from('é')) + 1, wire.indexOf(Buffer.from('🛰')) + 2];
    const chunks = [wire.subarray(0, cuts[0]), wire.subarray(cuts[0], cuts[1]), wire.subarray(cuts[1])];
    let response: ServerResponse | undefined;
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(chunks[0]);
      response = res;
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const rest = new RestClient(kubeConfigFor((server.address() as AddressInfo).port), { qps: 100, burst: 100 });
    const abort = new AbortController();
    const events: WatchEvent[] = [];
    try {
      const watch = rest.watch({
        path: '/api/v1/namespaces/ns1/configmaps',
        query: {},
        signal: abort.signal,
        inactivityTimeoutMs: 60_000,
      });
      for await (const received of watch) {
        events.push(received);
        // The next chunk goes out only once the previous one has been decoded and its whole line handed over, so
        // the halves of a character reach the decoder as separate chunks however TCP segments the stream.
        if (events.length === 1) response!.write(chunks[1]);
        if (events.length === 2) response!.end(chunks[2]);
      }
    } finally {
      abort.abort();
      rest.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    const labels = events.map((received) => (received.object.metadata as { labels: Record<string, string> }).labels);
    expect(labels).to.deep.equal([{ plain: 'ascii' }, { greeting: 'café' }, { emoji: 'sat 🛰' }]);
  });

  it('drops a 2xx body unread when asked (discardBody), and still reads an error body into the ApiError', async () => {
    // Not JSON: parsing it would throw or keep a string; a dropped body is never looked at.
    const server = createServer((req, res) => {
      if (req.url?.startsWith('/ok')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(`{"not json${'x'.repeat(100_000)}`);
        return;
      }
      res.writeHead(409, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', code: 409, reason: 'Conflict', message: 'held by another manager' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const rest = new RestClient(kubeConfigFor((server.address() as AddressInfo).port), { qps: 100, burst: 100 });
    try {
      expect(await rest.request({ method: 'PATCH', path: '/ok', body: {}, discardBody: true })).to.equal(undefined);
      expect(await rest.request({ method: 'PATCH', path: '/ok', body: {} })).to.be.a('string');
      const error = await rest
        .request({ method: 'PATCH', path: '/conflict', body: {}, discardBody: true })
        .catch((e) => e);
      expect(error).to.be.instanceOf(ApiError);
      expect(error).to.include({ status: 409, reason: 'Conflict' });
      expect(String(error)).to.contain('held by another manager');
    } finally {
      rest.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("reads a pod's log as text, a line of JSON included, with the log's query; an error is still an ApiError", async () => {
    // The worker's shard output is one JSON line at the end of its log: parsed as the body, it would be lost.
    const log = '{"format":"oracle-node/shard-output@1","chainId":"1"}';
    const urls: string[] = [];
    const server = createServer((req, res) => {
      urls.push(req.url ?? '');
      if (req.url?.includes('/pods/gone/')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound', message: 'pods "gone" not found' }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(log);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const rest = new RestClient(kubeConfigFor((server.address() as AddressInfo).port), { qps: 100, burst: 100 });
    const client = new RuntimeClient(rest, 'test');
    try {
      expect(await client.podLog({ namespace: 'ns1', name: 'w-0' }, { container: 'worker', tailLines: 5 })).to.equal(
        log,
      );
      expect(urls).to.deep.equal(['/api/v1/namespaces/ns1/pods/w-0/log?container=worker&tailLines=5']);
      const error = await client.podLog({ namespace: 'ns1', name: 'gone' }).catch((e) => e);
      expect(error).to.be.instanceOf(ApiError);
      expect(isNotFound(error)).to.equal(true);
    } finally {
      rest.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe("runtime REST transport: which failed requests are sent again (client-go's rule)", () => {
  // Every request the server received, as "METHOD path".
  let received: string[];
  let server: Server;
  let port: number;
  let handle: (req: IncomingMessage, res: ServerResponse, nth: number) => void;

  beforeEach(async () => {
    received = [];
    server = createServer((req, res) => {
      const seen = `${req.method} ${req.url}`;
      received.push(seen);
      req.resume();
      req.on('end', () => handle(req, res, received.filter((r) => r === seen).length));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterEach(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const status = (res: ServerResponse, code: number, headers: Record<string, string> = {}) => {
    res.writeHead(code, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify({ kind: 'Status', code, message: `answered ${code}` }));
  };

  async function send(method: RequestOptions['method'], options: { requestTimeoutMs?: number } = {}) {
    const rest = new RestClient(kubeConfigFor(port), {
      qps: 1000,
      burst: 1000,
      maxRetries: 2,
      retryInitialMs: 1,
      retryMaxMs: 5,
      ...options,
    });
    try {
      const body = method === 'GET' || method === 'DELETE' ? undefined : { kind: 'Job' };
      return await rest.request({ method, path: '/apis/batch/v1/namespaces/ns1/jobs', body }).catch((e: unknown) => e);
    } finally {
      rest.close();
    }
  }

  it('a 503 to a POST, PUT, PATCH or DELETE is one call (the write may have happened); a GET is retried', async () => {
    handle = (_req, res) => status(res, 503);
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE'] as const) {
      received = [];
      const error = await send(method);
      expect(error, method).to.be.instanceOf(ApiError).and.include({ status: 503 });
      expect(received, method).to.deep.equal([`${method} /apis/batch/v1/namespaces/ns1/jobs`]);
    }
    received = [];
    expect(await send('GET'))
      .to.be.instanceOf(ApiError)
      .and.include({ status: 503 });
    expect(received).to.have.length(3); // the first try and maxRetries (2) retries
  });

  it('a POST whose answer never comes is not sent again (a Job create would come back 409); a GET is', async () => {
    handle = () => {}; // holds every request: the client's request timeout ends it
    const error = await send('POST', { requestTimeoutMs: 100 });
    expect(error).to.be.instanceOf(ApiError).and.include({ status: 0 });
    expect(received).to.deep.equal(['POST /apis/batch/v1/namespaces/ns1/jobs']);
    received = [];
    await send('GET', { requestTimeoutMs: 100 });
    expect(received).to.have.length(3);
  });

  it('a POST refused with Retry-After (429 or 5xx: not processed) is sent again, as client-go does', async () => {
    for (const code of [429, 503]) {
      received = [];
      handle = (_req, res, nth) => (nth === 1 ? status(res, code, { 'retry-after': '0' }) : status(res, 201));
      expect(await send('POST'), String(code)).to.deep.include({ code: 201 });
      expect(received, String(code)).to.have.length(2);
    }
  });

  it('a POST whose connection is refused (never sent) is sent again', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve())); // nothing listens on it now
    const metrics = new RuntimeMetrics();
    const rest = new RestClient(kubeConfigFor(closedPort), {
      qps: 1000,
      burst: 1000,
      maxRetries: 2,
      retryInitialMs: 1,
      retryMaxMs: 5,
      metrics,
    });
    try {
      const error = await rest.request({ method: 'POST', path: '/x', body: {} }).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(ApiError).and.include({ status: 0 });
      const attempts = (await metrics.restRequests.get()).values.find((v) => v.labels['code'] === '<error>');
      expect(attempts?.value).to.equal(3);
    } finally {
      rest.close();
    }
  });
});
