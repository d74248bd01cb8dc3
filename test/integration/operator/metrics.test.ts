// The oracle's own metrics through the real runtime: a reconciled OracleNode appears as oracle_node_ready, and its
// series go when it is deleted; only the leading `oracle-node operator` process publishes them; and every metric the
// chart's alert rules and dashboard read is on the /metrics of a running operator or gateway.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { dump, load } from 'js-yaml';
import { API_VERSION, KIND } from '../../../src/operator/resource.js';
import { API_KEY, configJson, MNEMONIC, startLoopbackApi } from '../../component/gateway/fixtures.js';
import { repoRoot, spawnOracleNode } from '../../support/binary.js';
import { buildFeedConfig, feedSecrets } from '../../support/feed.js';
import { freePort } from '../../support/net.js';
import { apply, kubeconfigPath, objects, useNamespace, waitFor } from '../support/cluster.js';
import { installCrd, type RunningOperator, sampleDocs, useOperator } from './support.js';

async function readyValue(operator: RunningOperator, namespace: string, name: string) {
  const metric = operator.manager.registry.getSingleMetric('oracle_node_ready');
  const values = (await metric?.get())?.values ?? [];
  return values.find((v) => v.labels['namespace'] === namespace && v.labels['name'] === name)?.value;
}

describe('oracle_node_* metrics of the operator (integration)', function () {
  this.timeout(180_000);
  const suite = useOperator('onode-metrics');

  it('publishes oracle_node_ready for a Ready node and removes it when the node is deleted', async () => {
    const name = (await suite.applySample('minimal')).metadata.name;
    await suite.readyNode(name);
    expect(await waitFor(() => readyValue(suite.operator, suite.namespace, name), 30_000)).to.equal(1);

    await objects.delete({ apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace: suite.namespace } });
    await waitFor(async () => (await readyValue(suite.operator, suite.namespace, name)) === undefined, 60_000, {
      description: 'oracle_node_ready removed after deletion',
    });
  });
});

type Process = { child: ChildProcess; output: () => string; stop(): Promise<void> };

function spawnLogged(args: string[], env: NodeJS.ProcessEnv = {}): Process {
  let output = '';
  const child = spawnOracleNode(args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return {
    child,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** `oracle-node operator` as the chart runs it, watching one namespace, electing its leader there. */
async function spawnOperator(namespace: string, identity: string) {
  const metricsPort = await freePort();
  const operator = spawnLogged(['operator', '--kubeconfig', kubeconfigPath], {
    ONO_NAMESPACES: namespace,
    ONO_LEADER_ELECT: 'true',
    ONO_LEADER_ELECTION_NAMESPACE: namespace,
    ONO_METRICS_PORT: String(metricsPort),
    ONO_HEALTH_PORT: '0',
    ONO_COORDINATOR_FENCE: 'false',
    POD_NAME: identity,
  });
  const metrics = async () => {
    const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).catch(() => undefined);
    return response?.ok ? response.text() : '';
  };
  return { ...operator, metrics, identity, port: metricsPort };
}

const leads = (text: string) => /leader_election_master_status\{name="oracle-node-operator"\} 1/.test(text);
const nodeSeries = (text: string) => text.split('\n').filter((line) => line.startsWith('oracle_node_'));

describe('oracle-node operator processes: only the leader publishes oracle_node_* series', function () {
  this.timeout(240_000);
  const ns = useNamespace('onode-metrics-leader');

  before(async () => {
    await installCrd();
  });

  it('a replica that never held the lease or lost it publishes none; the leader publishes every node', async () => {
    const { node, secret } = sampleDocs('minimal', ns.name);
    await apply(secret);
    await apply(node);
    const replicas = [await spawnOperator(ns.name, 'replica-a'), await spawnOperator(ns.name, 'replica-b')];
    try {
      const leader = await waitFor(
        async () => {
          for (const replica of replicas) if (leads(await replica.metrics())) return replica;
          return undefined;
        },
        90_000,
        { description: () => `a leader (output: ${replicas.map((r) => r.output().slice(-300)).join(' | ')})` },
      );
      const follower = replicas.find((replica) => replica !== leader)!;
      const ready = `oracle_node_ready{namespace="${ns.name}",name="${node.metadata.name}"}`;
      await waitFor(async () => (await leader.metrics()).includes(ready), 90_000, {
        description: 'the leader to publish the node',
      });
      expect(nodeSeries(await follower.metrics()), 'a replica that never led').to.deep.equal([]);

      // Another holder takes the Lease: the leader cannot renew it, steps down and drops every per-node series.
      const now = new Date().toISOString().replace('Z', '000Z');
      await apply({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: 'oracle-node-operator', namespace: ns.name },
        spec: { holderIdentity: 'intruder', leaseDurationSeconds: 3600, acquireTime: now, renewTime: now },
      });
      await waitFor(async () => !leads(await leader.metrics()), 60_000, { description: 'the leader to step down' });
      expect(nodeSeries(await leader.metrics()), 'a replica that lost the lease').to.deep.equal([]);
      expect(nodeSeries(await follower.metrics()), 'the replica still standing by').to.deep.equal([]);
    } finally {
      await Promise.all(replicas.map((replica) => replica.stop()));
    }
  });
});

/** Metric names in PromQL expressions (the families this project exports; functions and labels are not matched). */
function metricNames(expressions: string[]): string[] {
  const family =
    /\b((?:oracle_node|oracle_operator|gateway|leader_election|controller_runtime|workqueue|rest_client|process|nodejs|node|heartbeat)_[a-z0-9_]+)\b/g;
  return [...new Set(expressions.flatMap((expr) => [...expr.matchAll(family)].map((match) => match[1]!)))].sort();
}

/** Names in /metrics text: every `# TYPE` family, with the _bucket/_sum/_count series of histograms and summaries. */
function exportedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!);
    if (type === 'histogram' || type === 'summary')
      for (const suffix of ['_bucket', '_sum', '_count']) names.add(name! + suffix);
  }
  return names;
}

describe('metric names of the alert rules and the dashboard, on a running operator, gateway and feed', function () {
  this.timeout(180_000);
  const ns = useNamespace('onode-metric-names');

  it('every name a PrometheusRule expression or a dashboard query uses is exported by the operator, the gateway or a feed', async () => {
    const rules = readFileSync(join(repoRoot, 'charts/oracle-node-operator/templates/prometheusrule.yaml'), 'utf8');
    const ruleExprs = [...rules.matchAll(/^\s+expr: (.+)$/gm)].map((match) => match[1]!);
    const dashboard = JSON.parse(
      readFileSync(join(repoRoot, 'charts/oracle-node-operator/dashboards/oracle-node-operator.json'), 'utf8'),
    ) as { panels: { targets?: { expr: string }[] }[] };
    const dashboardExprs = dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => target.expr));
    const used = metricNames([...ruleExprs, ...dashboardExprs]);
    expect(used.length).to.be.greaterThan(10);

    const api = await startLoopbackApi();
    const dir = await mkdtemp(join(tmpdir(), 'metric-names-'));
    const operator = await spawnOperator(ns.name, 'names');
    let gateway: Process | undefined;
    let feed: Process | undefined;
    try {
      // The port is read from the plain INFO line 'gateway server running'.
      const config = configJson(api.url, { logLevel: 'INFO' });
      config.nodeSettings.logFormat = 'plain';
      await writeFile(join(dir, 'config.json'), JSON.stringify(config));
      await writeFile(join(dir, 'secrets.env'), `NODE_WALLET_MNEMONIC=${MNEMONIC}\nAPI_KEY=${API_KEY}\n`);
      gateway = spawnLogged([
        'gateway',
        '-c',
        join(dir, 'config.json'),
        '-s',
        join(dir, 'secrets.env'),
        '--port',
        '0',
        '--host',
        '127.0.0.1',
      ]);
      const port = await waitFor(
        async () => Number(/gateway server running .*?port=(\d+)/.exec(gateway!.output())?.[1]) || undefined,
        60_000,
        { description: 'the gateway port' },
      );
      const gatewayText = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      const operatorText = await waitFor(async () => {
        const text = await operator.metrics();
        return leads(text) ? text : undefined;
      }, 90_000);
      // A feed (the AirnodeFeed's pod): its metrics are registered at start, before any fetch or push.
      const feedConfig = buildFeedConfig({
        apiUrl: api.url,
        assets: ['BTC'],
        fetchInterval: 60,
        signedApis: [{ name: 'main', url: 'http://127.0.0.1:9', authToken: null }],
      });
      await writeFile(join(dir, 'feed.json'), JSON.stringify(feedConfig));
      await writeFile(join(dir, 'feed.env'), feedSecrets(MNEMONIC, API_KEY));
      const feedPort = await freePort();
      feed = spawnLogged([
        'feed',
        '-c',
        join(dir, 'feed.json'),
        '-s',
        join(dir, 'feed.env'),
        '--metrics-port',
        String(feedPort),
        '--host',
        '127.0.0.1',
      ]);
      const feedText = await waitFor(
        async () => {
          const answer = await fetch(`http://127.0.0.1:${feedPort}/metrics`).catch(() => undefined);
          return answer?.ok ? answer.text() : undefined;
        },
        60_000,
        { description: 'the feed metrics' },
      );
      const exported = new Set([
        ...exportedNames(operatorText),
        ...exportedNames(gatewayText),
        ...exportedNames(feedText),
      ]);
      expect(used.filter((name) => !exported.has(name))).to.deep.equal([]);
    } finally {
      await Promise.all([operator.stop(), gateway?.stop(), feed?.stop()]);
      await api.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/** The chart's ServiceMonitor endpoint as `helm template` renders it. */
async function serviceMonitorEndpoint(): Promise<{ honorLabels?: boolean }> {
  const helmBin = join(process.env['CLUSTER_BIN_DIR'] ?? join(repoRoot, '.cache/cluster/bin'), 'helm');
  const { stdout } = await promisify(execFile)(helmBin, [
    'template',
    'ono',
    join(repoRoot, 'charts/oracle-node-operator'),
    '--set',
    'metrics.serviceMonitor.enabled=true',
    '--show-only',
    'templates/servicemonitor.yaml',
  ]);
  return (load(stdout) as { spec: { endpoints: { honorLabels?: boolean }[] } }).spec.endpoints[0]!;
}

describe('a real Prometheus scraping the operator as the chart ServiceMonitor does', function () {
  this.timeout(240_000);
  const ns = useNamespace('onode-metrics-scrape');

  it("keeps the OracleNode's namespace in `namespace` (not exported_namespace) beside the target's own labels", async () => {
    await installCrd();
    const { node, secret } = sampleDocs('minimal', ns.name);
    await apply(secret);
    await apply(node);
    const operator = await spawnOperator(ns.name, 'scraped');
    const dir = await mkdtemp(join(tmpdir(), 'prometheus-'));
    let prometheus: ChildProcess | undefined;
    try {
      const metricsPort = await waitFor(
        async () => ((await operator.metrics()).includes(`name="${node.metadata.name}"`) ? operator.port : undefined),
        120_000,
        { description: 'the leader to publish the node' },
      );
      // What the Prometheus Operator generates from a ServiceMonitor endpoint: honor_labels from honorLabels, and the
      // target labels namespace/service/pod of the scraped endpoint (the operator's own namespace here).
      const endpoint = await serviceMonitorEndpoint();
      await writeFile(
        join(dir, 'prometheus.yml'),
        dump({
          global: { scrape_interval: '1s', scrape_timeout: '1s' },
          scrape_configs: [
            {
              job_name: 'ono-oracle-node-operator-metrics',
              honor_labels: endpoint.honorLabels ?? false,
              static_configs: [
                {
                  targets: [`127.0.0.1:${metricsPort}`],
                  labels: { namespace: 'oracle-node-system', service: 'ono-metrics', pod: 'ono-0' },
                },
              ],
            },
          ],
        }),
      );
      const webPort = await freePort();
      prometheus = spawn(
        join(process.env['CLUSTER_BIN_DIR'] ?? join(repoRoot, '.cache/cluster/bin'), 'prometheus'),
        [
          `--config.file=${join(dir, 'prometheus.yml')}`,
          `--storage.tsdb.path=${join(dir, 'data')}`,
          `--web.listen-address=127.0.0.1:${webPort}`,
        ],
        { stdio: 'ignore' },
      );
      const query = `oracle_node_ready{name="${node.metadata.name}"}`;
      const series = await waitFor(
        async () => {
          const response = await fetch(
            `http://127.0.0.1:${webPort}/api/v1/query?query=${encodeURIComponent(query)}`,
          ).catch(() => undefined);
          if (!response?.ok) return undefined;
          const body = (await response.json()) as { data: { result: { metric: Record<string, string> }[] } };
          return body.data.result[0]?.metric;
        },
        60_000,
        { description: 'Prometheus to have scraped oracle_node_ready' },
      );
      expect(series['namespace']).to.equal(ns.name);
      expect(series).to.not.have.property('exported_namespace');
      expect(series).to.include({ service: 'ono-metrics', pod: 'ono-0', job: 'ono-oracle-node-operator-metrics' });
    } finally {
      prometheus?.kill('SIGTERM');
      await operator.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
