// JSON Schema of config.json / OIS, generated from the zod schemas (input side: what users write).
// `oracle-node schema` prints it; the CRD schema is generated from the same source.
import { z } from 'zod';
import { oisSchema } from './ois.js';
import { configSchema } from './schema.js';

export function configJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }) as Record<
    string,
    unknown
  >;
}

export function oisJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(oisSchema, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }) as Record<
    string,
    unknown
  >;
}
