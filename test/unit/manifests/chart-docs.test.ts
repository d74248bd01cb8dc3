// The docs that tell a user how to set the chart up name its values as they are: a chart value a doc names exists
// in values.yaml, gateway scraping is described as the chart's PodMonitor does it, and the runbook says where the
// alerts' runbook links point and how to change that.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import yaml from 'js-yaml';
import { repoRoot } from '../../support/binary.js';

const read = (path: string) => readFileSync(join(repoRoot, path), 'utf8');
const values = yaml.load(read('charts/oracle-node-operator/values.yaml')) as Record<string, unknown>;

/** The value at a dotted path of values.yaml, or undefined. */
function valueAt(path: string): unknown {
  let node: unknown = values;
  for (const key of path.split('.')) {
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, key)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

describe('docs on the chart', () => {
  for (const doc of ['docs/gateways.md', 'docs/runbook.md']) {
    it(`${doc} names only chart values that exist`, () => {
      const named = [...read(doc).matchAll(/`(metrics\.[A-Za-z0-9.]+?)(?:=[^`]*)?`/g)].map((match) => match[1]!);
      expect(named.filter((path) => valueAt(path) === undefined)).to.deep.equal([]);
    });
  }

  it('docs/gateways.md describes gateway scraping by the chart (metrics.gatewayPodMonitor), nothing "not wired"', () => {
    const gateways = read('docs/gateways.md');
    expect(gateways).to.include('`metrics.gatewayPodMonitor.enabled=true`');
    expect(gateways).to.not.match(/not wired/i);
    expect(valueAt('metrics.gatewayPodMonitor.port')).to.equal('metrics');
  });

  it("docs/runbook.md explains the alerts' links: metrics.prometheusRule.docsBaseUrl, its default and when to change it", () => {
    const runbook = read('docs/runbook.md');
    const fallback = valueAt('metrics.prometheusRule.docsBaseUrl');
    expect(runbook).to.include('`metrics.prometheusRule.docsBaseUrl`');
    expect(runbook).to.include(`Its default, \`${fallback}\`,`);
  });
});
