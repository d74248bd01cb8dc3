import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import yaml from 'js-yaml';
import { configJsonSchema } from '../../../src/config/index.js';
import type { StructuralSchema } from '../../../src/operator/api/structural.js';
import { configJsonSchemaToStructural } from '../../../src/operator/api/v1alpha1.js';
import { buildCrd } from '../../../src/operator/crd.js';
import { renderCrdReference } from '../../../src/operator/crd-reference.js';

type Version = {
  name: string;
  subresources: { status: unknown };
  additionalPrinterColumns: { name: string; jsonPath: string }[];
  schema: { openAPIV3Schema: StructuralSchema };
};

const JUNCTORS = ['anyOf', 'oneOf', 'allOf', 'not'];
const FORBIDDEN = ['$ref', '$schema', '$defs', 'definitions', 'const', 'propertyNames', 'prefixItems', 'examples'];

/** The rules of a structural schema (Kubernetes "Specifying a structural schema"), plus our own: descriptions. */
function violations(schema: StructuralSchema, path: string, isProperty: boolean): string[] {
  const found: string[] = [];
  const node = schema as Record<string, unknown>;
  for (const key of [...JUNCTORS, ...FORBIDDEN]) if (key in node) found.push(`${path}: has ${key}`);
  const typed =
    schema.type !== undefined ||
    schema['x-kubernetes-preserve-unknown-fields'] === true ||
    schema['x-kubernetes-int-or-string'] === true;
  if (!typed) found.push(`${path}: no type`);
  if (schema.properties && schema.additionalProperties) found.push(`${path}: properties with additionalProperties`);
  if (isProperty && !schema.description && path !== 'metadata') found.push(`${path}: no description`);
  if (schema.enum && schema.type) {
    for (const value of schema.enum) {
      const ok =
        (schema.type === 'string' && typeof value === 'string') ||
        ((schema.type === 'integer' || schema.type === 'number') && typeof value === 'number') ||
        (schema.type === 'boolean' && typeof value === 'boolean');
      if (!ok) found.push(`${path}: enum value ${JSON.stringify(value)} is not a ${schema.type}`);
    }
  }
  if (schema.required) {
    for (const name of schema.required)
      if (!schema.properties?.[name]) found.push(`${path}: required ${name} is not a property`);
  }
  for (const [name, prop] of Object.entries(schema.properties ?? {}))
    found.push(...violations(prop, path ? `${path}.${name}` : name, true));
  if (schema.items) found.push(...violations(schema.items, `${path}[]`, false));
  if (schema.additionalProperties) found.push(...violations(schema.additionalProperties, `${path}.*`, false));
  return found;
}

describe('operator CRD', () => {
  const crd = buildCrd(configJsonSchema());
  const version = (crd.spec.versions as Version[])[0]!;
  const root = version.schema.openAPIV3Schema;

  it('names the resource as the issue says', () => {
    expect(crd.metadata.name).to.equal('oraclenodes.oracle-node.io');
    expect(crd.spec.group).to.equal('oracle-node.io');
    expect(crd.spec.scope).to.equal('Namespaced');
    expect(crd.spec.names).to.include({ kind: 'OracleNode', plural: 'oraclenodes' });
    expect((crd.spec.names as { shortNames: string[] }).shortNames).to.deep.equal(['onode']);
    expect(version.name).to.equal('v1alpha1');
    expect(version.subresources).to.deep.equal({ status: {} });
    expect(version.additionalPrinterColumns.map((c) => c.name)).to.deep.equal([
      'Ready',
      'Reason',
      'Stage',
      'Last cycle',
      'Fulfilled',
      'Failed',
      'Address',
      'Chains',
      'Age',
    ]);
  });

  it('is a structural schema with a description on every field', () => {
    expect(violations(root, '', false)).to.deep.equal([]);
  });

  it('types spec.config from the config model (not free-form)', () => {
    const config = root.properties!.spec!.properties!.config!;
    expect(config.type).to.equal('object');
    expect(config['x-kubernetes-preserve-unknown-fields']).to.equal(undefined);
    expect(config.required).to.include.members(['chains', 'nodeSettings', 'triggers', 'ois']);
    const chain = config.properties!.chains!.items!;
    expect(chain.properties!.maxConcurrency!.type).to.equal('integer');
    const settings = config.properties!.nodeSettings!;
    expect(settings.properties!.logLevel!.enum).to.deep.equal(['DEBUG', 'INFO', 'WARN', 'ERROR']);
  });

  it('checks the stage format with CEL and keeps free-form values free-form', () => {
    const settings = root.properties!.spec!.properties!.config!.properties!.nodeSettings!;
    const stage = settings.properties!.stage!;
    expect(stage.maxLength).to.equal(16);
    expect(stage['x-kubernetes-validations']![0]!.rule).to.contain("matches('^[a-z0-9-]{1,16}$')");
    const endpoint = root.properties!.spec!.properties!.config!.properties!.ois!.items!.properties!.endpoints!.items!;
    const fixedValue = endpoint.properties!.fixedOperationParameters!.items!.properties!.value!;
    expect(fixedValue['x-kubernetes-preserve-unknown-fields']).to.equal(true);
  });

  it('leaves string patterns to the operator, since any string may be a secret placeholder', () => {
    const text = JSON.stringify(root.properties!.spec!.properties!.config);
    expect(text).not.to.contain('"pattern"');
    expect(text).not.to.contain('"format"');
  });

  it('has the workload knobs with defaults', () => {
    const spec = root.properties!.spec!.properties!;
    for (const knob of [
      'secretRef',
      'image',
      'imagePullPolicy',
      'resources',
      'nodeSelector',
      'tolerations',
      'affinity',
    ])
      expect(spec, knob).to.have.property(knob);
    expect(spec.coordinator!.properties!.schedule!.default).to.equal('* * * * *');
    expect(spec.gateway!.properties!.service!.properties!.type!.enum).to.deep.equal([
      'ClusterIP',
      'NodePort',
      'LoadBalancer',
    ]);
    const podOverrides = [
      'podMetadata',
      'nodeSelector',
      'tolerations',
      'affinity',
      'priorityClassName',
      'imagePullSecrets',
      'volumes',
      'volumeMounts',
      'envFrom',
      'serviceAccountTemplate',
    ];
    expect(spec.worker!.properties).to.have.keys([
      'resources',
      'activeDeadlineSeconds',
      'ttlSecondsAfterFinished',
      ...podOverrides,
    ]);
    for (const workload of ['coordinator', 'gateway'] as const)
      expect(spec[workload]!.properties, workload).to.include.keys(podOverrides);
    for (const knob of ['inheritedMetadata', ...podOverrides.filter((k) => k !== 'podMetadata')])
      expect(spec, knob).to.have.property(knob);
  });

  it('is what crds/ holds (make generate was run)', () => {
    const committed = readFileSync(new URL('../../../crds/oracle-node.io_oraclenodes.yaml', import.meta.url), 'utf8');
    const stale = 'the config model changed: run `make generate` and commit crds/ and docs/crd-reference.md';
    expect(yaml.load(committed), stale).to.deep.equal(JSON.parse(JSON.stringify(crd)));
    const reference = readFileSync(new URL('../../../docs/crd-reference.md', import.meta.url), 'utf8');
    expect(reference === renderCrdReference(crd), stale).to.equal(true);
  });

  describe('JSON Schema to structural conversion', () => {
    const convert = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
      configJsonSchemaToStructural({ type: 'object', properties, ...extra }).properties!;

    it('merges unions of objects into one object (required intersected)', () => {
      const out = convert({
        strategy: {
          oneOf: [
            { type: 'object', properties: { kind: { const: 'a' }, x: { type: 'integer' } }, required: ['kind', 'x'] },
            { type: 'object', properties: { kind: { const: 'b' }, y: { type: 'string' } }, required: ['kind'] },
          ],
        },
      });
      expect(out.strategy!.type).to.equal('object');
      expect(out.strategy!.properties!.kind!.enum).to.deep.equal(['a', 'b']);
      expect(out.strategy!.required).to.deep.equal(['kind']);
      expect(violations(out.strategy!, 'strategy', false)).to.deep.equal([]);
    });

    it('turns mixed unions into free-form, int-or-string into x-kubernetes-int-or-string, null into nullable', () => {
      const out = convert({
        mixed: { anyOf: [{ type: 'boolean' }, { type: 'object', properties: {} }] },
        intOrString: { anyOf: [{ type: 'integer' }, { type: 'string' }] },
        maybe: { anyOf: [{ type: 'string' }, { type: 'null' }] },
      });
      expect(out.mixed!['x-kubernetes-preserve-unknown-fields']).to.equal(true);
      expect(out.intOrString!['x-kubernetes-int-or-string']).to.equal(true);
      expect(out.maybe).to.include({ type: 'string', nullable: true });
    });

    it('inlines $ref and stops at recursion', () => {
      const out = convert(
        { tree: { $ref: '#/$defs/node' } },
        {
          $defs: {
            node: { type: 'object', properties: { name: { type: 'string' }, child: { $ref: '#/$defs/node' } } },
          },
        },
      );
      expect(out.tree!.properties!.name!.type).to.equal('string');
      expect(out.tree!.properties!.child!['x-kubernetes-preserve-unknown-fields']).to.equal(true);
    });

    it('keeps maps as additionalProperties and loose objects as preserve-unknown-fields', () => {
      const out = convert({
        map: { type: 'object', additionalProperties: { type: 'string' } },
        loose: { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: {} },
        anything: {},
      });
      expect(out.map!.additionalProperties).to.deep.equal({ type: 'string' });
      expect(out.loose!['x-kubernetes-preserve-unknown-fields']).to.equal(true);
      expect(out.anything!['x-kubernetes-preserve-unknown-fields']).to.equal(true);
    });

    it('without a config schema, spec.config is a free-form object', () => {
      const free = buildCrd(undefined);
      const spec = (free.spec.versions as Version[])[0]!.schema.openAPIV3Schema.properties!.spec!;
      expect(spec.properties!.config).to.include({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
    });
  });
});
