// Shared pieces of the runtime's integration suites: a test CRD (Widget) and a tiny reconciler over it, a manager
// factory, an error-injecting loopback proxy in front of the apiserver, and a manager in a child process.
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { AddressInfo } from 'node:net';
import { dirname, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { type Logger, pino } from 'pino';
import { Registry } from 'prom-client';
import { createManager, type RuntimeManager, type RuntimeTuning } from '../../../src/kube/manager.js';
import type { ObjectKey, Reconciler, ResourceKind } from '../../../src/kube/types.js';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '../../..');

export const WIDGET: ResourceKind = {
  group: 'runtime-test.oracle-node.dev',
  version: 'v1',
  kind: 'Widget',
  plural: 'widgets',
  namespaced: true,
};
export const CONFIGMAP: ResourceKind = {
  group: '',
  version: 'v1',
  kind: 'ConfigMap',
  plural: 'configmaps',
  namespaced: true,
};
export const CHILD_LABEL = 'runtime-test.oracle-node.dev/managed';

export type Widget = KubernetesObject & {
  spec?: { value?: number };
  status?: { observedValue?: number; observedGeneration?: number };
};

export const WIDGET_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `widgets.${WIDGET.group}` },
  spec: {
    group: WIDGET.group,
    scope: 'Namespaced',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: { type: 'object', properties: { value: { type: 'integer' } } },
              status: {
                type: 'object',
                properties: { observedValue: { type: 'integer' }, observedGeneration: { type: 'integer' } },
              },
            },
          },
        },
      },
    ],
  },
};

export type ReconcileLog = { keys: string[]; byKey: Map<string, number>; inFlight: number; maxInFlightPerKey: number };

/**
 * The test controller: for each Widget, a child ConfigMap `<name>-child` (owner reference, managed label) holding
 * spec.value, then status.observedValue = spec.value. Deterministic names and server-side apply make it
 * idempotent, so a converged namespace has exactly one child per Widget.
 */
export function widgetReconciler(log?: ReconcileLog, options: { delayMs?: number } = {}): Reconciler {
  const active = new Map<string, number>();
  return {
    name: 'widget',
    watches: { primary: WIDGET, owned: [{ kind: CONFIGMAP, labelSelector: `${CHILD_LABEL}=true` }] },
    async reconcile(key: ObjectKey, context) {
      const id = `${key.namespace}/${key.name}`;
      if (log) {
        log.keys.push(id);
        log.byKey.set(id, (log.byKey.get(id) ?? 0) + 1);
        log.inFlight++;
        active.set(id, (active.get(id) ?? 0) + 1);
        log.maxInFlightPerKey = Math.max(log.maxInFlightPerKey, active.get(id)!);
      }
      try {
        const widget = context.cache.get<Widget>(WIDGET, key);
        if (!widget) return undefined; // deleted: the child goes by garbage collection
        if (options.delayMs) await new Promise((r) => setTimeout(r, options.delayMs));
        const value = widget.spec?.value ?? 0;
        const child = context.cache.get<KubernetesObject & { data?: Record<string, string> }>(CONFIGMAP, {
          namespace: key.namespace,
          name: `${key.name}-child`,
        });
        if (child?.data?.value !== String(value)) {
          await context.client.apply(CONFIGMAP, {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: {
              name: `${key.name}-child`,
              namespace: key.namespace,
              labels: { [CHILD_LABEL]: 'true' },
              ownerReferences: [
                {
                  apiVersion: `${WIDGET.group}/v1`,
                  kind: 'Widget',
                  name: key.name,
                  uid: widget.metadata!.uid!,
                  controller: true,
                },
              ],
            },
            data: { value: String(value) },
          } as KubernetesObject);
        }
        if (
          widget.status?.observedValue !== value ||
          widget.status?.observedGeneration !== widget.metadata?.generation
        ) {
          await context.client.applyStatus(WIDGET, {
            apiVersion: `${WIDGET.group}/v1`,
            kind: 'Widget',
            metadata: { name: key.name, namespace: key.namespace },
            status: { observedValue: value, observedGeneration: widget.metadata?.generation },
          } as Widget);
          context.logger.debug({ value }, 'status updated');
        }
        return undefined;
      } finally {
        if (log) {
          log.inFlight--;
          active.set(id, (active.get(id) ?? 1) - 1);
        }
      }
    },
  };
}

export function newReconcileLog(): ReconcileLog {
  return { keys: [], byKey: new Map(), inFlight: 0, maxInFlightPerKey: 0 };
}

export const quietLogger: Logger = pino({ level: process.env.RUNTIME_TEST_LOG_LEVEL ?? 'silent' });

export function testManager(
  kubeConfig: KubeConfig,
  namespace: string,
  options: {
    identity?: string;
    leaderElect?: boolean;
    workers?: number;
    qps?: number;
    burst?: number;
    metricsPort?: number;
    healthPort?: number;
    tuning?: RuntimeTuning;
  } = {},
): RuntimeManager {
  return createManager({
    kubeConfig,
    namespaces: [namespace],
    leaderElection: {
      enabled: options.leaderElect ?? false,
      namespace,
      leaseName: 'widget-operator',
      identity: options.identity ?? 'in-process',
    },
    workers: options.workers ?? 2,
    qps: options.qps ?? 50,
    burst: options.burst ?? 100,
    metricsPort: options.metricsPort ?? 0,
    healthPort: options.healthPort ?? 0,
    fieldManager: 'widget-operator',
    logger: quietLogger.child({ identity: options.identity ?? 'in-process' }),
    tuning: { registry: new Registry(), ...options.tuning },
  });
}

export async function metric(
  manager: RuntimeManager,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const found = manager.registry.getSingleMetric(name);
  if (!found) return 0;
  const { values } = await found.get();
  return values
    .filter((value) => Object.entries(labels).every(([key, expected]) => String(value.labels[key]) === expected))
    .filter((value) => !('metricName' in value) || !String(value.metricName).endsWith('_bucket'))
    .reduce((sum, value) => sum + value.value, 0);
}

// -------------------------------------------------------------------------------------------------------------
// an error-injecting proxy

export type ProxyMode = { status: number; retryAfterSeconds?: number } | undefined;

/**
 * A plain-HTTP loopback proxy in front of the apiserver: it authenticates upstream with the admin credentials and
 * either forwards (streaming, so watches work) or answers with an injected status. It counts every request.
 */
export class FaultProxy {
  mode: ProxyMode;
  /** Rewrites the query of the next matching watch request (e.g. a too-old resourceVersion). */
  rewriteNextWatch: ((url: URL) => void) | undefined;
  /**
   * Answers the next watch with the apiserver's own "too old resource version" ERROR event (410 Expired), as a
   * watch cache whose window has moved past the client's resourceVersion does.
   */
  expireNextWatch = false;
  readonly counts = { total: 0, injected: 0, forwarded: 0 };
  readonly log: { at: number; method: string; path: string; status: number }[] = [];
  private server: Server | undefined;
  private readonly upstream: URL;
  private tls: RequestOptions = {};
  private readonly open = new Set<{ destroy(): void }>();
  port = 0;

  constructor(private readonly kubeConfig: KubeConfig) {
    this.upstream = new URL(kubeConfig.getCurrentCluster()!.server);
  }

  async start(): Promise<void> {
    await this.kubeConfig.applyToHTTPSOptions(this.tls);
    this.server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
  }

  /** A kubeconfig for clients that should go through the proxy. */
  clientConfig(): KubeConfig {
    const config = new KubeConfig();
    config.loadFromOptions({
      clusters: [{ name: 'proxy', server: `http://127.0.0.1:${this.port}`, skipTLSVerify: true }],
      users: [{ name: 'proxy' }],
      contexts: [{ name: 'proxy', cluster: 'proxy', user: 'proxy' }],
      currentContext: 'proxy',
    });
    return config;
  }

  /** Drops every open connection (watches included), as a network blip would. */
  dropConnections(): void {
    for (const connection of this.open) connection.destroy();
    this.open.clear();
  }

  async stop(): Promise<void> {
    this.dropConnections();
    this.server?.closeAllConnections();
    await new Promise<void>((r) => this.server?.close(() => r()));
  }

  private handle(req: IncomingMessage, res: import('node:http').ServerResponse): void {
    this.counts.total++;
    const url = new URL(req.url ?? '/', 'http://proxy');
    const mode = this.mode;
    if (mode) {
      this.counts.injected++;
      this.log.push({ at: Date.now(), method: req.method ?? '', path: url.pathname, status: mode.status });
      req.resume();
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (mode.retryAfterSeconds !== undefined) headers['retry-after'] = String(mode.retryAfterSeconds);
      res.writeHead(mode.status, headers);
      res.end(
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          code: mode.status,
          message: 'injected by the test proxy',
        }),
      );
      return;
    }
    if (url.searchParams.get('watch') === 'true' && this.expireNextWatch) {
      this.expireNextWatch = false;
      this.counts.injected++;
      const requested = url.searchParams.get('resourceVersion') ?? '';
      this.log.push({ at: Date.now(), method: req.method ?? '', path: url.pathname, status: 410 });
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' });
      const status = {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: `too old resource version: ${requested} (${Number(requested) + 1})`,
        reason: 'Expired',
        code: 410,
      };
      res.end(`${JSON.stringify({ type: 'ERROR', object: status })}\n`);
      return;
    }
    if (url.searchParams.get('watch') === 'true' && this.rewriteNextWatch) {
      this.rewriteNextWatch(url);
      this.rewriteNextWatch = undefined;
    }
    this.counts.forwarded++;
    const target = new URL(url.pathname + url.search, this.upstream);
    const headers = { ...req.headers, host: target.host, ...(this.tls.headers as Record<string, string>) };
    const upstream = (target.protocol === 'https:' ? httpsRequest : httpRequest)(
      target,
      { method: req.method, headers, ca: this.tls.ca, cert: this.tls.cert, key: this.tls.key },
      (upstreamRes) => {
        this.log.push({
          at: Date.now(),
          method: req.method ?? '',
          path: url.pathname,
          status: upstreamRes.statusCode ?? 0,
        });
        res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.headers);
        upstreamRes.pipe(res);
      },
    );
    const connection = {
      destroy: () => {
        upstream.destroy();
        res.destroy();
      },
    };
    this.open.add(connection);
    res.on('close', () => {
      this.open.delete(connection);
      upstream.destroy();
    });
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
    req.pipe(upstream);
  }
}

// -------------------------------------------------------------------------------------------------------------
// a manager in a child process (for SIGKILL)

export type ChildManager = {
  process: ChildProcess;
  lines: Record<string, unknown>[];
  isLeader(): boolean;
  reconciles(): number;
  exited: Promise<number | null>;
};

export function spawnChildManager(env: { kubeconfig: string; namespace: string; identity: string }): ChildManager {
  const child = spawn(process.execPath, ['--import', 'tsx', resolve(here, 'child-manager.ts')], {
    cwd: repoRoot,
    env: {
      ...process.env,
      KUBECONFIG: env.kubeconfig,
      RUNTIME_TEST_NAMESPACE: env.namespace,
      RUNTIME_TEST_IDENTITY: env.identity,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: Record<string, unknown>[] = [];
  let leader = false;
  let reconciles = 0;
  createInterface({ input: child.stdout! }).on('line', (line) => {
    try {
      const entry = JSON.parse(line) as Record<string, unknown>;
      lines.push(entry);
      if (entry.event === 'leading') leader = true;
      if (entry.event === 'stopped-leading') leader = false;
      if (entry.event === 'reconcile') reconciles++;
    } catch {
      // not ours
    }
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { process: child, lines, isLeader: () => leader, reconciles: () => reconciles, exited };
}

// -------------------------------------------------------------------------------------------------------------
// cluster helpers

/** Installs the Widget CRD once and waits until the apiserver serves it. */
export async function ensureWidgetCrd(
  applyObject: (object: KubernetesObject) => Promise<unknown>,
  listWidgets: () => Promise<unknown>,
): Promise<void> {
  await applyObject(WIDGET_CRD as KubernetesObject);
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      await listWidgets();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

export function widget(namespace: string, name: string, value: number): Widget {
  return { apiVersion: `${WIDGET.group}/v1`, kind: 'Widget', metadata: { name, namespace }, spec: { value } };
}

/** Heap in MB after a full GC when one can be forced. */
export async function heapUsedMb(): Promise<number> {
  const { setFlagsFromString } = await import('node:v8');
  const { runInNewContext } = await import('node:vm');
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  return Math.round((process.memoryUsage().heapUsed / 1024 / 1024) * 10) / 10;
}

export { freePort } from '../../support/net.js';
