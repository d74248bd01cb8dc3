// A tiny in-memory Kubernetes API for ConfigMaps (list with pagination, watch with bookmarks and 410 after
// compaction, server-side apply as a merge, delete) plus Leases, on a loopback port. It lets the runtime's
// transport, informer and manager be tested in milliseconds; the real control plane tests live in
// test/integration/kube/.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

type Obj = {
  apiVersion?: string;
  kind?: string;
  metadata: Record<string, unknown> & { name: string; namespace?: string; resourceVersion?: string };
  [key: string]: unknown;
};
type HistoryEntry = { resource: string; rv: number; type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: Obj };

export type Injection = (req: IncomingMessage) => { status: number; headers?: Record<string, string> } | undefined;

export class FakeApiServer {
  private server: Server | undefined;
  private rv = 1;
  private compactedBefore = 0;
  readonly objects = new Map<string, Obj>(); // "resource/ns/name"
  private history: HistoryEntry[] = [];
  private watchers = new Set<{ resource: string; namespace?: string; res: ServerResponse }>();
  readonly requests: { method: string; path: string; contentType?: string }[] = [];
  inject: Injection | undefined;
  port = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    for (const watcher of this.watchers) watcher.res.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server: `http://127.0.0.1:${this.port}`, skipTLSVerify: true }],
      users: [{ name: 'fake' }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'fake' }],
      currentContext: 'fake',
    });
    return kc;
  }

  /** Drops history so watches from older resourceVersions get 410 Gone. */
  compact(): void {
    this.compactedBefore = this.rv;
    this.history = [];
  }

  /** Ends every open watch cleanly (as a server-side timeout would). */
  closeWatches(): void {
    for (const watcher of this.watchers) watcher.res.end();
    this.watchers.clear();
  }

  write(resource: string, type: 'ADDED' | 'MODIFIED' | 'DELETED', object: Obj): Obj {
    const key = `${resource}/${object.metadata.namespace ?? ''}/${object.metadata.name}`;
    const stored = JSON.parse(JSON.stringify(object)) as Obj;
    stored.metadata.resourceVersion = String(++this.rv);
    stored.metadata.uid ??= `uid-${key}`;
    stored.metadata.managedFields = [{ manager: 'fake', operation: 'Apply' }];
    if (type === 'DELETED') this.objects.delete(key);
    else this.objects.set(key, stored);
    this.history.push({ resource, rv: this.rv, type, object: stored });
    for (const watcher of this.watchers) {
      if (watcher.resource === resource && (!watcher.namespace || watcher.namespace === stored.metadata.namespace)) {
        watcher.res.write(`${JSON.stringify({ type, object: stored })}\n`);
      }
    }
    return stored;
  }

  upsert(resource: string, object: Obj): Obj {
    const key = `${resource}/${object.metadata.namespace ?? ''}/${object.metadata.name}`;
    return this.write(resource, this.objects.has(key) ? 'MODIFIED' : 'ADDED', object);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    this.requests.push({ method: req.method ?? '', path: url.pathname, contentType: req.headers['content-type'] });
    const injected = this.inject?.(req);
    if (injected) {
      res.writeHead(injected.status, { 'content-type': 'application/json', ...injected.headers });
      res.end(JSON.stringify({ kind: 'Status', code: injected.status, message: 'injected' }));
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const match =
      /^\/(?:api\/v1|apis\/([^/]+)\/([^/]+))(?:\/namespaces\/([^/]+))?\/([^/]+)(?:\/([^/]+))?(?:\/(status))?$/.exec(
        url.pathname,
      );
    if (!match) return this.send(res, 404, { kind: 'Status', code: 404, message: 'no route' });
    const [, , , namespace, resource, name] = match as unknown as [
      string,
      string,
      string,
      string | undefined,
      string,
      string | undefined,
    ];
    const key = `${resource}/${namespace ?? ''}/${name ?? ''}`;
    if (req.method === 'GET' && !name && url.searchParams.get('watch'))
      return this.watch(resource, namespace, url, res);
    if (req.method === 'GET' && !name) {
      const all = [...this.objects.entries()]
        .filter(([k]) => k.startsWith(`${resource}/${namespace ? `${namespace}/` : ''}`))
        .map(([, o]) => o)
        .filter((o) => this.matches(o, url.searchParams.get('labelSelector')));
      const limit = Number(url.searchParams.get('limit') ?? 0) || all.length;
      const start = Number(url.searchParams.get('continue') ?? 0);
      const page = all.slice(start, start + limit);
      const next = start + limit < all.length ? String(start + limit) : undefined;
      return this.send(res, 200, {
        kind: 'List',
        items: page,
        metadata: { resourceVersion: String(this.rv), continue: next },
      });
    }
    const existing = this.objects.get(key);
    if (req.method === 'GET')
      return existing ? this.send(res, 200, existing) : this.send(res, 404, { code: 404, message: 'not found' });
    if (req.method === 'DELETE') {
      if (!existing) return this.send(res, 404, { code: 404, message: 'not found' });
      this.write(resource, 'DELETED', existing);
      return this.send(res, 200, { kind: 'Status', status: 'Success' });
    }
    if (req.method === 'PATCH' || req.method === 'PUT' || req.method === 'POST') {
      if (req.method === 'PUT' && existing && body.metadata.resourceVersion !== existing.metadata.resourceVersion) {
        return this.send(res, 409, { code: 409, reason: 'Conflict', message: 'conflict' });
      }
      if (req.method === 'POST' && this.objects.has(`${resource}/${namespace ?? ''}/${body.metadata.name}`)) {
        return this.send(res, 409, { code: 409, reason: 'AlreadyExists', message: 'exists' });
      }
      const merged = {
        ...(existing ?? {}),
        ...body,
        metadata: { ...(existing?.metadata ?? {}), ...body.metadata, namespace },
      } as Obj;
      return this.send(res, req.method === 'POST' ? 201 : 200, this.upsert(resource, merged));
    }
    return this.send(res, 405, { code: 405 });
  }

  private matches(object: Obj, selector: string | null): boolean {
    if (!selector) return true;
    const labels = (object.metadata.labels ?? {}) as Record<string, string>;
    return selector.split(',').every((term) => {
      const [k, v] = term.split('=');
      return v === undefined ? k! in labels : labels[k!] === v;
    });
  }

  private watch(resource: string, namespace: string | undefined, url: URL, res: ServerResponse): void {
    const from = Number(url.searchParams.get('resourceVersion') ?? this.rv);
    res.writeHead(200, { 'content-type': 'application/json' });
    if (from < this.compactedBefore) {
      res.end(
        `${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } })}\n`,
      );
      return;
    }
    const watcher = { resource, namespace, res };
    for (const entry of this.history) {
      if (
        entry.resource === resource &&
        entry.rv > from &&
        (!namespace || entry.object.metadata.namespace === namespace)
      ) {
        res.write(`${JSON.stringify({ type: entry.type, object: entry.object })}\n`);
      }
    }
    if (url.searchParams.get('allowWatchBookmarks') === 'true') {
      res.write(
        `${JSON.stringify({ type: 'BOOKMARK', object: { kind: 'ConfigMap', metadata: { resourceVersion: String(this.rv) } } })}\n`,
      );
    }
    this.watchers.add(watcher);
    res.on('close', () => this.watchers.delete(watcher));
  }

  private send(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }
}
