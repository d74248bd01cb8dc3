// The chart README is generated from values.schema.json: every value needs a description, and the table shows the
// default from values.yaml next to it.
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import yaml from 'js-yaml';
import { renderReadme, type SchemaNode, valueRows } from '../../../scripts/generate-chart-readme.js';

const chartFile = (name: string) =>
  readFileSync(new URL(`../../../charts/oracle-node-operator/${name}`, import.meta.url), 'utf8');

describe('scripts/generate-chart-readme', () => {
  it('documents every value of the chart, with its default (the committed README is this output)', () => {
    const schema = JSON.parse(chartFile('values.schema.json')) as SchemaNode;
    const values = yaml.load(chartFile('values.yaml'));
    const rows = valueRows(schema, values);
    const byKey = new Map(rows.map((r) => [r.key, r]));
    expect(byKey.get('image.repository')?.default).to.equal('`"ghcr.io/oracle-node-operator/oracle-node"`');
    expect(byKey.get('crds.keep')?.default).to.equal('`true`');
    expect(byKey.get('networkPolicy.workloads.enabled')?.default).to.equal('`false`');
    const chart = yaml.load(chartFile('Chart.yaml')) as { name: string; version: string; appVersion: string };
    expect(chartFile('README.md'), 'run make manifests').to.equal(renderReadme(schema, values, chart));
  });

  it('refuses a value without a description, naming it', () => {
    const schema: SchemaNode = { properties: { a: { properties: { b: { type: 'string' } } } } };
    expect(() => valueRows(schema, {})).to.throw('a.b has no description');
  });

  it('escapes table separators and shows enums as types', () => {
    const schema: SchemaNode = { properties: { mode: { description: 'x | y', enum: ['a', 'b'] } } };
    const [row] = valueRows(schema, { mode: 'a' });
    expect(row).to.deep.include({ type: '"a" \\| "b"', default: '`"a"`' });
    expect(renderReadme(schema, { mode: 'a' }, { name: 'c', version: '1', appVersion: '1' })).to.include('x \\| y');
  });
});
