// JSON Schema (as zod 4's z.toJSONSchema emits it) -> the "structural" OpenAPI v3 schema Kubernetes accepts in a
// CRD: no $ref, a type on every node, no types inside anyOf/oneOf, properties and additionalProperties never
// together. What cannot be expressed becomes x-kubernetes-preserve-unknown-fields and is left to the operator.
//
// How much the apiserver checks is chosen per subtree (CHECKS_KEYWORD, set with zod's .meta()):
// - 'all' (the API's own fields): formats, bounds, lengths, patterns, defaults and x-kubernetes-* extensions, with
//   keys in one order (API_KEY_ORDER) so the generated YAML reads the same wherever a field is declared;
// - 'enums' (spec.config): strings may be `${NAME}` placeholders resolved later, so only types and closed sets;
// - 'types' (status parts the operator parsed from a report before writing): types and required fields only.
export type JsonSchema = { [key: string]: unknown };
export type StructuralSchema = {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  description?: string;
  properties?: Record<string, StructuralSchema>;
  required?: string[];
  additionalProperties?: StructuralSchema;
  items?: StructuralSchema;
  enum?: unknown[];
  nullable?: boolean;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  minItems?: number;
  maxItems?: number;
  maxLength?: number;
  minLength?: number;
  pattern?: string;
  default?: unknown;
  format?: string;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-validations'?: { rule: string; message: string }[];
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: string;
};

/** How much the apiserver checks in a subtree (see the header). */
export type Checks = 'all' | 'enums' | 'types';
/** The JSON Schema keyword (set with zod's .meta()) that changes Checks for a subtree; never emitted. */
export const CHECKS_KEYWORD = 'x-oracle-node-checks';

/** The order of keys in a node checked 'all' or 'types'. */
const API_KEY_ORDER: (keyof StructuralSchema)[] = [
  'description',
  'x-kubernetes-int-or-string',
  'type',
  'format',
  'enum',
  'minimum',
  'exclusiveMinimum',
  'maximum',
  'exclusiveMaximum',
  'default',
  'minLength',
  'maxLength',
  'pattern',
  'required',
  'minItems',
  'maxItems',
  'items',
  'properties',
  'additionalProperties',
  'nullable',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-validations',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
];

/** Extensions the API may set on a field (with .meta()) that are copied as they are when it is checked 'all'. */
const EXTENSIONS = [
  'x-kubernetes-validations',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
] as const;

/** Written this way so it is not mistaken for a template literal. */
export const NAME_PLACEHOLDER = '$' + '{NAME}';

const PRESERVE = { 'x-kubernetes-preserve-unknown-fields': true } as const;

type ConvertOptions = {
  /** Root document, for resolving `$ref: #/$defs/...`. */
  root: JsonSchema;
  /** Refs being expanded on the current path: a recursive ref becomes free-form instead of looping. */
  expanding: Set<string>;
  path: string;
  checks: Checks;
};

function resolveRef(ref: string, root: JsonSchema): JsonSchema | undefined {
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = root;
  for (const part of ref.slice(2).split('/')) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Record<string, unknown>)[part.replaceAll('~1', '/').replaceAll('~0', '~')];
  }
  return typeof node === 'object' && node !== null ? (node as JsonSchema) : undefined;
}

const asSchemas = (value: unknown): JsonSchema[] =>
  Array.isArray(value) ? value.filter((v): v is JsonSchema => typeof v === 'object' && v !== null) : [];

function jsonTypes(schema: JsonSchema): string[] {
  if (Array.isArray(schema.type)) return schema.type.map(String);
  if (typeof schema.type === 'string') return [schema.type];
  if ('const' in schema) return [typeOfValue(schema.const)];
  if (Array.isArray(schema.enum)) return [...new Set(schema.enum.map(typeOfValue))];
  if (schema.properties || schema.additionalProperties !== undefined) return ['object'];
  if (schema.items || schema.prefixItems) return ['array'];
  return [];
}

function typeOfValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** Merges object branches of a union into one object: properties united, required intersected. */
function mergeObjectBranches(branches: StructuralSchema[], description: string | undefined): StructuralSchema {
  const properties: Record<string, StructuralSchema> = {};
  let required: string[] | undefined;
  let preserve = false;
  for (const branch of branches) {
    for (const [name, prop] of Object.entries(branch.properties ?? {})) {
      const existing = properties[name];
      properties[name] = existing ? mergeSchemas(existing, prop) : prop;
    }
    required = required ? required.filter((r) => branch.required?.includes(r)) : [...(branch.required ?? [])];
    if (branch['x-kubernetes-preserve-unknown-fields'] || branch.additionalProperties) preserve = true;
  }
  const merged: StructuralSchema = { type: 'object' };
  if (description) merged.description = description;
  if (Object.keys(properties).length > 0) merged.properties = properties;
  if (required && required.length > 0) merged.required = required;
  if (preserve) merged['x-kubernetes-preserve-unknown-fields'] = true;
  return merged;
}

/** Two schemas for the same field from different union branches. */
function mergeSchemas(a: StructuralSchema, b: StructuralSchema): StructuralSchema {
  const numeric = new Set(['integer', 'number']);
  if (a.type && b.type && a.type !== b.type && numeric.has(a.type) && numeric.has(b.type)) {
    const description = a.description ?? b.description;
    return { ...(description ? { description } : {}), type: 'number' };
  }
  if (a.type && a.type === b.type) {
    if (a.type === 'object') return mergeObjectBranches([a, b], a.description ?? b.description);
    const merged: StructuralSchema = { type: a.type };
    const description = a.description ?? b.description;
    if (description) merged.description = description;
    if (a.enum && b.enum) merged.enum = [...new Set([...a.enum, ...b.enum])];
    if (a.type === 'array') merged.items = a.items && b.items ? mergeSchemas(a.items, b.items) : { ...PRESERVE };
    return merged;
  }
  return freeForm(a.description ?? b.description);
}

function freeForm(description: string | undefined): StructuralSchema {
  return description ? { description, ...PRESERVE } : { ...PRESERVE };
}

function isNullSchema(schema: JsonSchema): boolean {
  return schema.type === 'null' || ('const' in schema && schema.const === null);
}

/** A JSON Schema as a structural schema, checked as `checks` says (a subtree may say otherwise). */
export function toStructural(schema: JsonSchema, checks: Checks): StructuralSchema {
  return convert(schema, { root: schema, expanding: new Set(), path: '', checks });
}

function convert(schema: JsonSchema, options: ConvertOptions): StructuralSchema {
  const checks = schema[CHECKS_KEYWORD];
  if ((checks === 'all' || checks === 'enums' || checks === 'types') && checks !== options.checks)
    return convert(schema, { ...options, checks });
  if (options.checks === 'enums') return convertNode(schema, options);
  return inApiOrder(convertNode(schema, options));
}

function inApiOrder(schema: StructuralSchema): StructuralSchema {
  const ordered: Record<string, unknown> = {};
  for (const key of API_KEY_ORDER) if (schema[key] !== undefined) ordered[key] = schema[key];
  return ordered as StructuralSchema;
}

function convertNode(schema: JsonSchema, options: ConvertOptions): StructuralSchema {
  const description = typeof schema.description === 'string' ? schema.description : undefined;
  const all = options.checks === 'all';

  if (typeof schema.$ref === 'string') {
    const ref = schema.$ref;
    const target = resolveRef(ref, options.root);
    if (!target || options.expanding.has(ref)) return freeForm(description);
    options.expanding.add(ref);
    const converted = convert({ ...target, ...(description ? { description } : {}) }, options);
    options.expanding.delete(ref);
    return converted;
  }

  if (all && schema['x-kubernetes-preserve-unknown-fields'] === true)
    return withDescription({ type: 'object', ...PRESERVE }, description);
  if (all && schema['x-kubernetes-int-or-string'] === true) {
    const intOrString: StructuralSchema = { 'x-kubernetes-int-or-string': true };
    if (typeof schema.pattern === 'string') intOrString.pattern = schema.pattern;
    return withDescription(intOrString, description);
  }

  const allOf = asSchemas(schema.allOf);
  if (allOf.length > 0) {
    const { allOf: _ignored, ...rest } = schema;
    const parts = [rest, ...allOf].map((part) => convert(part, options)).filter((p) => p.type || p.properties);
    if (parts.length === 1) return withDescription(parts[0]!, description);
    if (parts.every((p) => p.type === 'object')) return mergeObjectBranches(parts, description);
    return freeForm(description);
  }

  const union = [...asSchemas(schema.anyOf), ...asSchemas(schema.oneOf)];
  if (union.length > 0) {
    const nonNull = union.filter((branch) => !isNullSchema(branch));
    const nullable = nonNull.length < union.length;
    const branches = nonNull.map((branch) => convert(branch, options));
    let result: StructuralSchema;
    if (branches.length === 1) result = withDescription(branches[0]!, description);
    else if (branches.length > 0 && branches.every((b) => b.type === 'object'))
      result = mergeObjectBranches(branches, description);
    else if (branches.length > 0 && branches.every((b) => b.type && b.type === branches[0]!.type))
      result = withDescription(branches.reduce(mergeSchemas), description);
    else if (
      branches.length === 2 &&
      branches.some((b) => b.type === 'integer') &&
      branches.some((b) => b.type === 'string')
    )
      result = { ...(description ? { description } : {}), 'x-kubernetes-int-or-string': true };
    else result = freeForm(description);
    if (nullable && result.type) result.nullable = true;
    return result;
  }

  const types = jsonTypes(schema).filter((t) => t !== 'null');
  const nullable = jsonTypes(schema).includes('null');
  if (types.length !== 1) return freeForm(description);
  const type = types[0]!;
  const out: StructuralSchema = {};

  switch (type) {
    case 'object': {
      out.type = 'object';
      const properties = schema.properties as Record<string, JsonSchema> | undefined;
      if (properties && Object.keys(properties).length > 0) {
        out.properties = {};
        for (const [name, prop] of Object.entries(properties)) {
          out.properties[name] = convert(prop, { ...options, path: `${options.path}.${name}` });
        }
        const required = Array.isArray(schema.required) ? schema.required.map(String) : [];
        if (required.length > 0) out.required = required;
        // Known properties plus free-form extras: properties and additionalProperties cannot coexist.
        if (schema.additionalProperties !== undefined && schema.additionalProperties !== false)
          out['x-kubernetes-preserve-unknown-fields'] = true;
      } else if (typeof schema.additionalProperties === 'object' && schema.additionalProperties !== null) {
        const values = convert(schema.additionalProperties as JsonSchema, { ...options, path: `${options.path}.*` });
        out.additionalProperties = values;
      } else if (schema.additionalProperties !== false) {
        out['x-kubernetes-preserve-unknown-fields'] = true;
      }
      break;
    }
    case 'array': {
      out.type = 'array';
      if (typeof schema.items === 'object' && schema.items !== null && !Array.isArray(schema.items)) {
        out.items = convert(schema.items as JsonSchema, { ...options, path: `${options.path}[]` });
      } else if (Array.isArray(schema.prefixItems)) {
        // Tuples: one item schema must fit every position, so positions of different shapes stay free-form.
        const positions = asSchemas(schema.prefixItems).map((p) => convert(p, options));
        out.items = positions.length > 0 ? positions.reduce(mergeSchemas) : { ...PRESERVE };
      } else {
        out.items = { ...PRESERVE };
      }
      if (typeof schema.minItems === 'number') out.minItems = schema.minItems;
      if (typeof schema.maxItems === 'number') out.maxItems = schema.maxItems;
      break;
    }
    case 'string': {
      out.type = 'string';
      // Strings may be `${NAME}` placeholders resolved from the Secret, so patterns, formats and lengths are
      // checked after interpolation by the operator; only closed sets (enums) are checked by the apiserver.
      const values = 'const' in schema ? [schema.const] : schema.enum;
      if (Array.isArray(values) && options.checks !== 'types') out.enum = values.filter((v) => typeof v === 'string');
      if (all) {
        if (typeof schema.format === 'string') out.format = schema.format;
        if (typeof schema.minLength === 'number') out.minLength = schema.minLength;
        if (typeof schema.maxLength === 'number') out.maxLength = schema.maxLength;
        // RegExp.source escapes '/', which a pattern written as a string never needs.
        if (typeof schema.pattern === 'string') out.pattern = schema.pattern.replaceAll('\\/', '/');
      }
      break;
    }
    case 'integer':
    case 'number': {
      out.type = type;
      if (all && typeof schema.format === 'string') out.format = schema.format;
      if (typeof schema.minimum === 'number') out.minimum = schema.minimum;
      if (typeof schema.maximum === 'number') out.maximum = schema.maximum;
      if (typeof schema.exclusiveMinimum === 'number') {
        out.minimum = schema.exclusiveMinimum;
        out.exclusiveMinimum = true;
      }
      if (typeof schema.exclusiveMaximum === 'number') {
        out.maximum = schema.exclusiveMaximum;
        out.exclusiveMaximum = true;
      }
      // Number.MAX_SAFE_INTEGER and friends add nothing and trip some clients.
      if (out.minimum !== undefined && Math.abs(out.minimum) >= Number.MAX_SAFE_INTEGER) delete out.minimum;
      if (out.maximum !== undefined && Math.abs(out.maximum) >= Number.MAX_SAFE_INTEGER) delete out.maximum;
      if (out.minimum === undefined) delete out.exclusiveMinimum;
      if (out.maximum === undefined) delete out.exclusiveMaximum;
      const values = 'const' in schema ? [schema.const] : schema.enum;
      if (Array.isArray(values)) out.enum = values.filter((v) => typeof v === 'number');
      break;
    }
    case 'boolean': {
      out.type = 'boolean';
      if ('const' in schema && typeof schema.const === 'boolean') out.enum = [schema.const];
      break;
    }
    default:
      return freeForm(description);
  }
  if (nullable) out.nullable = true;
  if (all) {
    if (schema.default !== undefined) out.default = schema.default;
    for (const key of EXTENSIONS) if (schema[key] !== undefined) Object.assign(out, { [key]: schema[key] });
  }
  return withDescription(out, description);
}

function withDescription(schema: StructuralSchema, description: string | undefined): StructuralSchema {
  // Description first so the generated YAML reads naturally.
  return description ? { description, ...schema } : schema;
}

/** Fills a description on every property that has none, so `kubectl explain` always says something. */
export function fillDescriptions(schema: StructuralSchema, path: string): void {
  for (const [name, prop] of Object.entries(schema.properties ?? {})) {
    const propPath = path ? `${path}.${name}` : name;
    if (!prop.description) prop.description = `${propPath} (see docs/crd-reference.md and the config reference).`;
    fillDescriptions(prop, propPath);
  }
  if (schema.items) fillDescriptions(schema.items, `${path}[]`);
  if (schema.additionalProperties) fillDescriptions(schema.additionalProperties, `${path}.*`);
}
