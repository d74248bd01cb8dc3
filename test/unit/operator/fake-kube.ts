// An in-memory stand-in for the runtime (cache + writer + events) and the samples, for the controller's unit tests.
// Apply replaces the stored object with the applied one (plus server-set metadata), like SSA by a sole manager.
import { readFileSync } from 'node:fs';
import type { KubernetesObject } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { pino } from 'pino';
import type {
  EventRecorder,
  KubeWriter,
  ObjectCache,
  ObjectKey,
  ReconcileContext,
  ResourceKind,
} from '../../../src/kube/types.js';
import type { OracleNode } from '../../../src/operator/resource.js';

export type Write = { verb: 'apply' | 'applyStatus' | 'delete'; kind: string; name: string };

const keyOf = (kind: ResourceKind, namespace: string | undefined, name: string) =>
  `${kind.plural}.${kind.group}/${namespace ?? ''}/${name}`;

export class FakeKube {
  readonly objects = new Map<string, KubernetesObject>();
  readonly writes: Write[] = [];
  readonly events: { type: string; reason: string; message: string }[] = [];
  /** The apiserver's answer to an apply, when a test makes it refuse one (undefined: accepted). */
  refuseApply: ((kind: ResourceKind, object: KubernetesObject) => Error | undefined) | undefined;
  private uid = 0;

  put(kind: ResourceKind, object: KubernetesObject): KubernetesObject {
    const stored = structuredClone(object);
    stored.metadata = { uid: `uid-${++this.uid}`, generation: 1, ...stored.metadata };
    this.objects.set(keyOf(kind, stored.metadata?.namespace, stored.metadata!.name!), stored);
    return stored;
  }

  get<T extends KubernetesObject>(kind: ResourceKind, key: ObjectKey): T | undefined {
    return this.objects.get(keyOf(kind, key.namespace, key.name)) as T | undefined;
  }

  remove(kind: ResourceKind, key: ObjectKey): void {
    this.objects.delete(keyOf(kind, key.namespace, key.name));
  }

  list<T extends KubernetesObject>(kind: ResourceKind, namespace?: string, labels?: Record<string, string>): T[] {
    const prefix = `${kind.plural}.${kind.group}/`;
    return [...this.objects.entries()]
      .filter(([key]) => key.startsWith(prefix))
      .map(([, object]) => object as T)
      .filter((o) => namespace === undefined || o.metadata?.namespace === namespace)
      .filter((o) => Object.entries(labels ?? {}).every(([k, v]) => o.metadata?.labels?.[k] === v));
  }

  /** Edits the spec of the stored OracleNode and bumps its generation, as the apiserver does. */
  editNode(key: ObjectKey, edit: (node: OracleNode) => void, kind: ResourceKind): void {
    const node = this.get<OracleNode>(kind, key)!;
    edit(node);
    node.metadata.generation = (node.metadata.generation ?? 1) + 1;
  }

  context(): ReconcileContext {
    const cache: ObjectCache = {
      get: (kind, key) => structuredClone(this.get(kind, key)),
      list: (kind, namespace, labels) => structuredClone(this.list(kind, namespace, labels)),
    };
    const client: KubeWriter = {
      apply: async (kind, object) => {
        const refusal = this.refuseApply?.(kind, object);
        if (refusal) throw refusal;
        this.writes.push({ verb: 'apply', kind: kind.kind, name: object.metadata!.name! });
        const existing = this.get(kind, { namespace: object.metadata!.namespace!, name: object.metadata!.name! });
        const stored = structuredClone(object) as KubernetesObject & { status?: unknown };
        stored.metadata = { ...stored.metadata, uid: existing?.metadata?.uid ?? `uid-${++this.uid}` };
        if (existing && 'status' in existing) stored.status = (existing as { status?: unknown }).status;
        this.objects.set(keyOf(kind, stored.metadata.namespace, stored.metadata.name!), stored);
      },
      applyStatus: async (kind, object) => {
        this.writes.push({ verb: 'applyStatus', kind: kind.kind, name: object.metadata!.name! });
        const existing = this.get(kind, { namespace: object.metadata!.namespace!, name: object.metadata!.name! });
        if (existing)
          (existing as { status?: unknown }).status = structuredClone((object as { status?: unknown }).status);
      },
      delete: async (kind, key) => {
        this.writes.push({ verb: 'delete', kind: kind.kind, name: key.name });
        this.remove(kind, key);
      },
      get: async <T extends KubernetesObject>(kind: ResourceKind, key: ObjectKey) =>
        structuredClone(this.get<T>(kind, key)),
      list: async <T extends KubernetesObject>(kind: ResourceKind, namespace: string) =>
        structuredClone(this.list<T>(kind, namespace)),
    };
    const events: EventRecorder = {
      record: (_object, type, reason, message) => this.events.push({ type, reason, message }),
    };
    return { logger: pino({ level: 'silent' }), cache, client, events, signal: new AbortController().signal };
  }
}

export type Sample = { node: OracleNode; secret: KubernetesObject & { stringData?: Record<string, string> } };

/** A sample manifest's OracleNode (namespaced, with a uid) and Secret (data base64-encoded, as the apiserver keeps it). */
export function loadSample(name: 'minimal' | 'full-multi-chain' | 'gateways-only', namespace = 'default'): Sample {
  const text = readFileSync(new URL(`../../../manifests/samples/${name}.yaml`, import.meta.url), 'utf8');
  const docs = yaml.loadAll(text) as (KubernetesObject & Record<string, unknown>)[];
  const node = docs.find((d) => d.kind === 'OracleNode') as unknown as OracleNode;
  const secret = docs.find((d) => d.kind === 'Secret') as Sample['secret'];
  node.metadata.namespace = namespace;
  node.metadata.uid = `uid-${name}`;
  node.metadata.generation = 1;
  secret.metadata!.namespace = namespace;
  const data = Object.fromEntries(
    Object.entries(secret.stringData ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
  );
  return { node, secret: { ...secret, stringData: undefined, data } as Sample['secret'] };
}
