import { expect } from 'chai';
import { runSchema } from '../../../src/cli/schema-command.js';
import { capture } from './helpers.js';

type Node = { [key: string]: unknown };

/** Paths of object properties in a JSON Schema that have no description. */
function undocumented(schema: unknown, at = '#'): string[] {
  if (!schema || typeof schema !== 'object') return [];
  const node = schema as Node;
  const out: string[] = [];
  const properties = node['properties'] as Record<string, Node> | undefined;
  if (properties) {
    for (const [key, value] of Object.entries(properties)) if (!value['description']) out.push(`${at}/${key}`);
  }
  for (const [key, value] of Object.entries(node)) out.push(...undocumented(value, `${at}/${key}`));
  return out;
}

describe('oracle-node schema', () => {
  it('prints the config JSON Schema with a description on every field', async () => {
    const out = await capture(runSchema, []);
    expect(out.code).to.equal(0);
    const schema = JSON.parse(out.stdout);
    expect(schema.type).to.equal('object');
    expect(schema.required).to.include.members([
      'chains',
      'nodeSettings',
      'triggers',
      'templates',
      'ois',
      'apiCredentials',
    ]);
    expect(schema.additionalProperties).to.equal(false);
    expect(undocumented(schema)).to.deep.equal([]);
    // io: 'input' shows the defaults users may omit.
    const chain = schema.properties.chains.items;
    expect(chain.properties.blockHistoryLimit.default).to.equal(300);
    expect(chain.properties.minConfirmations.default).to.equal(0);
  });

  it('prints the OIS JSON Schema with --ois', async () => {
    const out = await capture(runSchema, ['--ois']);
    expect(out.code).to.equal(0);
    const schema = JSON.parse(out.stdout);
    expect(schema.properties.title.description).to.match(/64/);
    expect(undocumented(schema)).to.deep.equal([]);
  });

  it('rejects unknown options', async () => {
    expect((await capture(runSchema, ['--bogus'])).code).to.equal(2);
  });
});
