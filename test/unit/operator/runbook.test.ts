// docs/runbook.md is what an alert's runbook_url and a condition's reason lead to: every condition reason the
// operator can set (CONDITION_REASONS, which types every condition it sets) has a section under that exact name,
// and every alert of the chart's PrometheusRule has a section its runbook_url anchor reaches.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { FEED_CONDITION_REASONS } from '../../../src/operator/feed/api.js';
import { CONDITION_REASONS } from '../../../src/operator/resource.js';
import { repoRoot } from '../../support/binary.js';

const runbook = readFileSync(join(repoRoot, 'docs/runbook.md'), 'utf8');
const headings = (level: string) =>
  [...runbook.matchAll(new RegExp(`^${level} (\\S+)\\s*$`, 'gm'))].map((match) => match[1]!);

describe('docs/runbook.md', () => {
  it('has a section under the exact name of every condition reason the operator sets', () => {
    const sections = headings('###');
    const missing = CONDITION_REASONS.filter((reason) => !sections.includes(reason));
    expect(missing, 'reasons without a ### section').to.deep.equal([]);
    // And nothing documented that the code cannot set (a renamed reason leaves its old section behind).
    const conditionSections = runbook.slice(runbook.indexOf('## Condition reasons'));
    const documented = [...conditionSections.matchAll(/^### (\S+)\s*$/gm)].map((match) => match[1]!);
    expect(documented.filter((name) => !(CONDITION_REASONS as readonly string[]).includes(name))).to.deep.equal([]);
  });

  it('has a section under the exact name of every reason an AirnodeFeed condition takes', () => {
    const sections = headings('###');
    expect(FEED_CONDITION_REASONS.filter((reason) => !sections.includes(reason))).to.deep.equal([]);
  });

  it('has a section for every alert, and each alert links it with an absolute runbook_url', () => {
    const rule = readFileSync(join(repoRoot, 'charts/oracle-node-operator/templates/prometheusrule.yaml'), 'utf8');
    const alerts = [...rule.matchAll(/- alert: (\w+)/g)].map((match) => match[1]!);
    const anchors = [...rule.matchAll(/runbook_url: "\{\{ \$docs \}\}\/runbook\.md#([a-z0-9-]+)"/g)].map((m) => m[1]);
    expect(alerts.length).to.be.greaterThan(0);
    expect(anchors).to.deep.equal(alerts.map((alert) => alert.toLowerCase()));
    const sections = headings('##');
    expect(alerts.filter((alert) => !sections.includes(alert))).to.deep.equal([]);
    expect(rule).not.to.match(/\brunbook:/);
  });
});
