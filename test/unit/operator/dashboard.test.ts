// The chart's Grafana dashboard: filtered by the namespace and node variables everywhere it shows an OracleNode's
// series, with a gateway row over the gateway metrics (src/gateway/metrics.ts).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { gatewayMetrics } from '../../../src/gateway/metrics.js';
import { repoRoot } from '../../support/binary.js';

type Panel = { type: string; title: string; targets?: { expr: string }[] };
const dashboard = JSON.parse(
  readFileSync(join(repoRoot, 'charts/oracle-node-operator/dashboards/oracle-node-operator.json'), 'utf8'),
) as { templating: { list: { name: string }[] }; panels: Panel[] };

describe('Grafana dashboard', () => {
  it('has namespace and node variables, and every per-node series is filtered by them', () => {
    expect(dashboard.templating.list.map((v) => v.name)).to.include.members(['datasource', 'namespace', 'node']);
    const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    const series = exprs.flatMap((expr) => [...expr.matchAll(/\b((?:oracle_node|gateway)_[a-z_]+)(\{[^}]*\})?/g)]);
    expect(series.length).to.be.greaterThan(10);
    for (const [whole, , selector] of series)
      expect(selector, whole).to.include('namespace=~"$namespace"').and.include('name=~"$node"');
  });

  it('has a gateway row over series the gateway really exports', () => {
    const titles = dashboard.panels.map((p) => `${p.type}:${p.title}`);
    expect(titles).to.include('row:Gateway');
    const exported = new Set(
      Object.values(gatewayMetrics(new Registry())).map((metric) => (metric as unknown as { name: string }).name),
    );
    const used = dashboard.panels
      .flatMap((p) => (p.targets ?? []).map((t) => t.expr))
      .flatMap((expr) => [...expr.matchAll(/\b(gateway_[a-z_]+?)(?:_bucket)?\{/g)].map((m) => m[1]!));
    expect(used.length).to.be.greaterThan(4);
    for (const name of used) expect(exported.has(name), name).to.equal(true);
  });

  it("has an API provider row: calls by outcome, deferrals, fulfilments per sponsor and the gateway's callers", () => {
    const row = dashboard.panels.findIndex((p) => p.type === 'row' && p.title === 'API provider');
    expect(row).to.be.greaterThan(-1);
    const below = dashboard.panels.slice(row + 1);
    const next = below.findIndex((p) => p.type === 'row');
    const exprs = (next === -1 ? below : below.slice(0, next)).flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    for (const name of [
      'oracle_node_api_calls_total',
      'oracle_node_api_deferrals_total',
      'oracle_node_sponsor_fulfilments_total',
      'gateway_caller_requests_total',
    ])
      expect(
        exprs.some((expr) => expr.includes(`${name}{`)),
        name,
      ).to.equal(true);
  });
});
