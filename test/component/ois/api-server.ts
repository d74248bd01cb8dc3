// A loopback HTTP server standing in for third-party APIs: each test registers route handlers.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Handler = (request: http.IncomingMessage, body: string, response: http.ServerResponse) => void;

export class ApiServer {
  private readonly server: http.Server;
  private readonly routes = new Map<string, Handler>();
  readonly requests: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
  url = '';

  constructor() {
    this.server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        this.requests.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, body });
        const path = new URL(request.url ?? '/', 'http://x').pathname;
        const handler = this.routes.get(path);
        if (!handler) {
          response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
          return;
        }
        handler(request, body, response);
      });
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  route(path: string, handler: Handler): this {
    this.routes.set(path, handler);
    return this;
  }

  json(path: string, value: unknown, status = 200): this {
    return this.route(path, (_request, _body, response) => {
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
    });
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
