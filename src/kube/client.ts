// The KubeWriter: server-side apply with one field manager, status apply through the /status subresource, delete
// tolerant of 404, live get and paginated list; and for the CLI and the pods, which own no objects by apply: create,
// replace (optimistic concurrency on resourceVersion), merge patch and a pod's log. Everything goes through the
// RestClient (QPS/burst limit, metrics, retries), and works the same for built-in kinds and CRDs because it only
// needs a ResourceKind.
import type { KubernetesObject } from '@kubernetes/client-node';
import { isNotFound } from './errors.js';
import { collectionPath, keyOf, objectPath } from './paths.js';
import type { RestClient } from './rest.js';
import type { ApplyOptions, KubeWriter, ObjectKey, ResourceKind } from './types.js';

const APPLY_CONTENT_TYPE = 'application/apply-patch+yaml'; // PatchStrategy.ServerSideApply; JSON is valid YAML
const MERGE_PATCH_CONTENT_TYPE = 'application/merge-patch+json';
const PODS: ResourceKind = { group: '', version: 'v1', kind: 'Pod', plural: 'pods', namespaced: true };

export type PodLogOptions = {
  container?: string;
  /** Only the last lines of the log. */
  tailLines?: number;
  /** At most this many bytes of the log (the server cuts it; a line may be cut in the middle). */
  limitBytes?: number;
};

export type ListResult<T> = { items: T[]; metadata?: { resourceVersion?: string; continue?: string } };

export class RuntimeClient implements KubeWriter {
  constructor(
    readonly rest: RestClient,
    readonly fieldManager: string,
    private readonly pageSize = 500,
  ) {}

  private requireKey(kind: ResourceKind, object: KubernetesObject, verb = 'apply'): ObjectKey {
    const key = keyOf(object);
    if (!key.name) throw new Error(`${verb} ${kind.kind}: metadata.name is required`);
    if (kind.namespaced && !key.namespace)
      throw new Error(`${verb} ${kind.kind} ${key.name}: metadata.namespace is required`);
    if (!object.apiVersion || !object.kind)
      throw new Error(`${verb} ${kind.kind} ${key.name}: apiVersion and kind are required`);
    return key;
  }

  async apply<T extends KubernetesObject>(kind: ResourceKind, object: T, options: ApplyOptions = {}): Promise<void> {
    const key = this.requireKey(kind, object);
    await this.rest.request({
      method: 'PATCH',
      path: objectPath(kind, key),
      query: {
        fieldManager: this.fieldManager,
        force: options.force ?? true,
        dryRun: options.dryRun ? 'All' : undefined,
      },
      body: object,
      contentType: APPLY_CONTENT_TYPE,
      discardBody: true,
    });
  }

  async applyStatus<T extends KubernetesObject>(kind: ResourceKind, object: T): Promise<void> {
    const key = this.requireKey(kind, object);
    await this.rest.request({
      method: 'PATCH',
      path: `${objectPath(kind, key)}/status`,
      query: { fieldManager: this.fieldManager, force: true },
      body: object,
      contentType: APPLY_CONTENT_TYPE,
      discardBody: true,
    });
  }

  async delete(
    kind: ResourceKind,
    key: ObjectKey,
    options: { propagationPolicy?: 'Background' | 'Foreground' } = {},
  ): Promise<void> {
    try {
      await this.rest.request({
        method: 'DELETE',
        path: objectPath(kind, key),
        body: { apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy: options.propagationPolicy ?? 'Background' },
      });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }

  /** Creates the object in its metadata.namespace; an existing one is an ApiError 409 (AlreadyExists). */
  async create<T extends KubernetesObject>(kind: ResourceKind, object: T): Promise<T> {
    const key = this.requireKey(kind, object, 'create');
    return await this.rest.request<T>({
      method: 'POST',
      path: collectionPath(kind, kind.namespaced ? key.namespace : undefined),
      query: { fieldManager: this.fieldManager },
      body: object,
    });
  }

  /** Replaces the object; a stale metadata.resourceVersion is an ApiError 409 (Conflict). */
  async replace<T extends KubernetesObject>(kind: ResourceKind, object: T): Promise<T> {
    const key = this.requireKey(kind, object, 'replace');
    return await this.rest.request<T>({
      method: 'PUT',
      path: objectPath(kind, key),
      query: { fieldManager: this.fieldManager },
      body: object,
    });
  }

  /** A JSON merge patch (RFC 7386): the fields given replace the object's, null removes one. */
  async mergePatch(kind: ResourceKind, key: ObjectKey, patch: object): Promise<void> {
    await this.rest.request({
      method: 'PATCH',
      path: objectPath(kind, key),
      query: { fieldManager: this.fieldManager },
      body: patch,
      contentType: MERGE_PATCH_CONTENT_TYPE,
      discardBody: true,
    });
  }

  /** A pod's log as text (one container's when the pod has several). */
  async podLog(key: ObjectKey, options: PodLogOptions = {}): Promise<string> {
    return await this.rest.request<string>({
      method: 'GET',
      path: `${objectPath(PODS, key)}/log`,
      query: { container: options.container, tailLines: options.tailLines, limitBytes: options.limitBytes },
      accept: 'text/plain, */*',
      text: true,
    });
  }

  async get<T extends KubernetesObject>(kind: ResourceKind, key: ObjectKey): Promise<T | undefined> {
    try {
      return await this.rest.request<T>({ method: 'GET', path: objectPath(kind, key) });
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  async list<T extends KubernetesObject>(kind: ResourceKind, namespace: string, labelSelector?: string): Promise<T[]> {
    return (await this.listPaged<T>(kind, namespace, labelSelector)).items;
  }

  /**
   * Lists every page; returns the items and the resourceVersion of the list to watch from. `each` turns an item
   * into what is kept as its page arrives (an informer's cache form), so a large list never sits in memory whole
   * as the server sent it, only one page of it.
   */
  async listPaged<T extends KubernetesObject, U = T>(
    kind: ResourceKind,
    namespace: string | undefined,
    labelSelector?: string,
    signal?: AbortSignal,
    accept?: string,
    each: (item: T) => U = (item) => item as unknown as U,
  ): Promise<{ items: U[]; resourceVersion: string }> {
    const items: U[] = [];
    let continueToken: string | undefined;
    let resourceVersion = '';
    do {
      const page: ListResult<T> = await this.rest.request<ListResult<T>>({
        method: 'GET',
        path: collectionPath(kind, namespace),
        query: { labelSelector: labelSelector || undefined, limit: this.pageSize, continue: continueToken },
        signal,
        ...(accept ? { accept } : {}),
      });
      for (const item of page.items ?? []) items.push(each(item));
      continueToken = page.metadata?.continue || undefined;
      resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
    } while (continueToken);
    return { items, resourceVersion };
  }
}
