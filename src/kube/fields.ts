// Cache transforms in the manner of controller-runtime's TransformFunc: what an informer keeps of each object.
// projectToFieldManager keeps of an object only the fields one field manager owns (read from metadata.managedFields,
// fieldsV1 format), plus metadata, status and the paths asked for. For a controller that applies its children with
// server-side apply under one field manager, that is exactly what its drift check compares, so defaulted fields,
// other writers' data (a response cache in a ConfigMap, a Job's pod template) never sit in its memory.
import type { KubernetesObject } from '@kubernetes/client-node';
import { isRecord } from '../common/json.js';

/** A fieldsV1 set: keys `f:<field>`, `k:<json keys>` (list item by key), `v:<json>` (set item), `i:<index>`, `.`. */
export type FieldSet = { [key: string]: FieldSet };

type ManagedFieldsEntry = { manager?: string; fieldsType?: string; fieldsV1?: unknown };

/** Union of the fieldsV1 sets of every managedFields entry of `manager` (Apply and Update alike). */
export function ownedFields(object: KubernetesObject, manager: string): FieldSet | undefined {
  const entries = (object.metadata?.managedFields ?? []) as ManagedFieldsEntry[];
  let owned: FieldSet | undefined;
  for (const entry of entries) {
    if (entry.manager !== manager || entry.fieldsType !== 'FieldsV1' || !isRecord(entry.fieldsV1)) continue;
    owned = mergeFieldSets(owned ?? {}, entry.fieldsV1 as FieldSet);
  }
  return owned;
}

function mergeFieldSets(a: FieldSet, b: FieldSet): FieldSet {
  const out: FieldSet = { ...a };
  for (const [key, value] of Object.entries(b)) out[key] = out[key] ? mergeFieldSets(out[key]!, value) : value;
  return out;
}

const isLeaf = (fields: FieldSet) => {
  for (const key in fields) if (key !== '.') return false;
  return true;
};

/** `value` reduced to the fields of `fields`; a leaf (no sub-fields) keeps its value whole. */
export function projectFields(value: unknown, fields: FieldSet): unknown {
  if (isLeaf(fields)) return value;
  if (Array.isArray(value)) return projectList(value, fields);
  if (!isRecord(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, sub] of Object.entries(fields)) {
    if (!key.startsWith('f:')) continue;
    const name = key.slice(2);
    if (Object.hasOwn(value, name)) out[name] = projectFields(value[name], sub);
  }
  return out;
}

/** The owned items of a list, in their order; an item matched by key is itself projected. */
function projectList(items: unknown[], fields: FieldSet): unknown[] {
  const byKey: { keys: Record<string, unknown>; fields: FieldSet }[] = [];
  const values: string[] = [];
  const byIndex = new Map<number, FieldSet>();
  for (const [key, sub] of Object.entries(fields)) {
    try {
      if (key.startsWith('k:')) byKey.push({ keys: JSON.parse(key.slice(2)) as Record<string, unknown>, fields: sub });
      else if (key.startsWith('v:')) values.push(canonical(JSON.parse(key.slice(2))));
      else if (key.startsWith('i:')) byIndex.set(Number(key.slice(2)), sub);
    } catch {
      return items; // a key this code cannot read: keep the list as it is rather than lose an owned item
    }
  }
  const out: unknown[] = [];
  items.forEach((item, index) => {
    const indexed = byIndex.get(index);
    if (indexed) {
      out.push(projectFields(item, indexed));
      return;
    }
    if (values.length > 0 && values.includes(canonical(item))) {
      out.push(item);
      return;
    }
    if (!isRecord(item)) return;
    const match = byKey.find(({ keys }) => Object.entries(keys).every(([k, v]) => canonical(item[k]) === canonical(v)));
    if (match) out.push(projectFields(item, match.fields));
  });
  return out;
}

const canonical = (value: unknown) => JSON.stringify(value);

export type ProjectionOptions = {
  /** Field manager whose fields are kept. */
  manager: string;
  /** Extra top-level paths kept whole whatever their owner, e.g. [['spec', 'replicas']]. */
  keep?: (object: KubernetesObject) => string[][];
};

/**
 * The object as a cache needs it: apiVersion, kind, metadata (without managedFields), status, the fields the
 * manager owns and the `keep` paths. An object without managedFields is returned as it is (nothing to go by).
 */
export function projectToFieldManager(object: KubernetesObject, options: ProjectionOptions): KubernetesObject {
  if (!object.metadata?.managedFields) return object;
  const owned = ownedFields(object, options.manager) ?? {};
  const record = object as unknown as Record<string, unknown>;
  const projected = projectFields(record, owned) as Record<string, unknown>;
  for (const key of ['apiVersion', 'kind', 'metadata', 'status']) {
    if (Object.hasOwn(record, key)) projected[key] = record[key];
  }
  for (const path of options.keep?.(object) ?? []) copyPath(record, projected, path);
  return projected as KubernetesObject;
}

function copyPath(from: Record<string, unknown>, to: Record<string, unknown>, path: string[]): void {
  let source: unknown = from;
  let target = to;
  for (let i = 0; i < path.length; i++) {
    const key = path[i]!;
    if (!isRecord(source) || !Object.hasOwn(source, key)) return;
    if (i === path.length - 1) {
      target[key] = source[key];
      return;
    }
    source = source[key];
    if (!isRecord(target[key])) target[key] = {};
    target = target[key] as Record<string, unknown>;
  }
}
