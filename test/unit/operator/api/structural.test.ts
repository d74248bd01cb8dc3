import { expect } from 'chai';
import { z } from 'zod';
import { CHECKS_KEYWORD, toStructural } from '../../../../src/operator/api/structural.js';

const structural = (schema: z.ZodType, checks: 'all' | 'enums' | 'types') =>
  toStructural(z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>, checks);

describe('JSON Schema to structural OpenAPI, by how much the apiserver checks', () => {
  const field = z
    .string()
    .min(1)
    .max(8)
    .regex(/^https?:\/\/x$/)
    .meta({ description: 'A URL.' });
  const port = z.int().min(1).max(65535).default(80).meta({ description: 'A port.', format: 'int32' });
  const kind = z.enum(['A', 'B']).meta({ description: 'A kind.' });

  it("'all' keeps lengths, patterns, formats and defaults, in one key order whatever the declaration order", () => {
    const out = structural(z.object({ field, port, kind }), 'all');
    expect(out.properties!.field).to.deep.equal({
      description: 'A URL.',
      type: 'string',
      minLength: 1,
      maxLength: 8,
      pattern: '^https?://x$',
    });
    expect(Object.keys(out.properties!.port!)).to.deep.equal([
      'description',
      'type',
      'format',
      'minimum',
      'maximum',
      'default',
    ]);
    expect(out.properties!.kind).to.deep.equal({ description: 'A kind.', type: 'string', enum: ['A', 'B'] });
  });

  it("'enums' (strings that may be placeholders) keeps only types and closed sets", () => {
    const out = structural(z.object({ field, kind }), 'enums');
    expect(out.properties!.field).to.deep.equal({ description: 'A URL.', type: 'string' });
    expect(out.properties!.kind).to.include({ type: 'string' }).and.to.have.property('enum');
  });

  it("'types' keeps types and required fields only, and a subtree can ask for more", () => {
    const schema = z.object({
      kind,
      field: field.optional(),
      strict: z.object({ kind }).meta({ [CHECKS_KEYWORD]: 'all' }),
    });
    const out = structural(schema, 'types');
    expect(out.required).to.deep.equal(['kind', 'strict']);
    expect(out.properties!.kind).to.deep.equal({ description: 'A kind.', type: 'string' });
    expect(out.properties!.field).to.deep.equal({ description: 'A URL.', type: 'string' });
    expect(out.properties!.strict!.properties!.kind).to.have.property('enum');
    expect(JSON.stringify(out)).to.not.contain(CHECKS_KEYWORD);
  });

  it("'all' carries x-kubernetes extensions and int-or-string given with .meta()", () => {
    const schema = z.object({
      list: z
        .array(z.object({ type: z.string() }))
        .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] }),
      quantity: z.union([z.string(), z.number()]).meta({ 'x-kubernetes-int-or-string': true, pattern: '^[0-9]+$' }),
      free: z.object({}).meta({ 'x-kubernetes-preserve-unknown-fields': true }),
      ruled: z.object({ a: z.int() }).meta({ 'x-kubernetes-validations': [{ rule: 'self.a > 0', message: 'a > 0' }] }),
    });
    const out = structural(schema, 'all').properties!;
    expect(out.list).to.include({ 'x-kubernetes-list-type': 'map' });
    expect(out.list!['x-kubernetes-list-map-keys']).to.deep.equal(['type']);
    expect(out.quantity).to.deep.equal({ 'x-kubernetes-int-or-string': true, pattern: '^[0-9]+$' });
    expect(out.free).to.deep.equal({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
    expect(out.ruled!['x-kubernetes-validations']).to.deep.equal([{ rule: 'self.a > 0', message: 'a > 0' }]);
  });
});
