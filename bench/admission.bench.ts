// Admission webhook benchmark against the test control plane (`make cluster-up`); skipped when none is running.
//   node --import tsx bench/admission.bench.ts [--applies N]
// Runs `oracle-node operator --webhook-port P --webhook-url https://127.0.0.1:P` as its own process (the real CLI:
// certificates, Secret, ValidatingWebhookConfiguration, HTTPS server) watching namespace A, so the API server
// calls the webhook for OracleNodes in A and not in B. Then N server-side applies in a row, alternating A and B,
// each changing the spec (the webhook's full validation runs every time), and reports p50/p99 per apply with and
// without the webhook and the difference. Results go to the "Admission webhook" section of docs/benchmarks.md.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CoreV1Api, type KubernetesObject, PatchStrategy } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import type { OracleNode } from '../src/operator/resource.js';
import { connectTestCluster, FIELD_MANAGER, freePort, installCrd, percentile, root, sleep } from './support/cluster.js';

const { values: args } = parseArgs({ options: { applies: { type: 'string' } } });
const APPLIES = Number(args.applies ?? 200);

async function main(): Promise<void> {
  const cluster = await connectTestCluster('admission');
  if (!cluster) return;
  const { kc, apply, objects, kubeconfigPath: path } = cluster;
  await installCrd(cluster);
  const core = kc.makeApiClient(CoreV1Api);
  const suffix = Date.now().toString(36);
  const [watched, unwatched, operatorNamespace] = ['a', 'b', 'op'].map((n) => `onode-admission-${n}-${suffix}`) as [
    string,
    string,
    string,
  ];
  for (const name of [watched, unwatched, operatorNamespace])
    await core.createNamespace({ body: { metadata: { name } } });
  const docs = yaml.loadAll(readFileSync(join(root, 'manifests/samples/minimal.yaml'), 'utf8')) as KubernetesObject[];
  const template = docs.find((d) => d.kind === 'OracleNode') as OracleNode;
  const nodeIn = (namespace: string, i: number): OracleNode => {
    const node = structuredClone(template);
    // Paused: the benchmark measures admission, not the controller's children.
    node.metadata = { name: 'bench', namespace, annotations: { 'oracle-node.io/paused': 'true' } };
    (node.spec.config.chains as { maxConcurrency: number }[])[0]!.maxConcurrency = 10 + (i % 50);
    return node;
  };

  const port = await freePort();
  const metricsPort = await freePort();
  const configuration = `oracle-node-bench-${suffix}`;
  const operator: ChildProcess = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(root, 'src/cli/index.ts'),
      'operator',
      `--kubeconfig=${path}`,
      `--namespaces=${watched}`,
      '--leader-elect=false',
      `--leader-election-namespace=${operatorNamespace}`,
      `--metrics-port=${metricsPort}`,
      '--health-port=0',
      `--webhook-port=${port}`,
      `--webhook-url=https://127.0.0.1:${port}`,
      `--webhook-configuration=${configuration}`,
      '--coordinator-fence=false',
      '--log-level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, POD_NAMESPACE: operatorNamespace } },
  );
  try {
    // Until the API server calls the webhook: an invalid dry run in the watched namespace is refused.
    const invalid = nodeIn(watched, 0);
    (invalid.spec.config.triggers as { rrp: { oisTitle: string }[] }).rrp[0]!.oisTitle = 'no such OIS';
    for (let attempt = 0; ; attempt++) {
      const refused = await objects
        .patch(invalid, undefined, 'All', FIELD_MANAGER, true, PatchStrategy.ServerSideApply)
        .then(() => false)
        .catch((error: Error) => String(error.message ?? error).includes('denied'));
      if (refused) break;
      if (attempt > 240) throw new Error('the webhook never answered');
      await sleep(500);
    }
    // Warm both paths (connections, caches), then alternate so drift hits both alike.
    for (let i = 0; i < 10; i++) {
      await apply(nodeIn(watched, i));
      await apply(nodeIn(unwatched, i));
    }
    const withWebhook: number[] = [];
    const without: number[] = [];
    for (let i = 0; i < APPLIES; i++) {
      let start = performance.now();
      await apply(nodeIn(watched, i + 1));
      withWebhook.push(performance.now() - start);
      start = performance.now();
      await apply(nodeIn(unwatched, i + 1));
      without.push(performance.now() - start);
    }
    withWebhook.sort((a, b) => a - b);
    without.sort((a, b) => a - b);
    const row = (label: string, values: number[]) =>
      `${label}: p50 ${percentile(values, 50).toFixed(1)} ms, p99 ${percentile(values, 99).toFixed(1)} ms`;
    console.log(`admission: ${APPLIES} server-side applies of a changed OracleNode spec, in a row`);
    console.log(`  ${row('through the webhook', withWebhook)}`);
    console.log(`  ${row('without a webhook  ', without)}`);
    console.log(
      `  added: p50 ${(percentile(withWebhook, 50) - percentile(without, 50)).toFixed(1)} ms, p99 ${(percentile(withWebhook, 99) - percentile(without, 99)).toFixed(1)} ms`,
    );
    // The webhook's own share: from the review arriving to the answer leaving (validation, no TLS or network).
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const total = (name: string) =>
      [...metrics.matchAll(new RegExp(`^${name}\\{[^}]*allowed="true"[^}]*\\} (\\S+)$`, 'gm'))].reduce(
        (sum, match) => sum + Number(match[1]),
        0,
      );
    const reviews = total('oracle_node_webhook_admission_duration_seconds_count');
    const seconds = total('oracle_node_webhook_admission_duration_seconds_sum');
    console.log(
      `  the webhook's own time per admitted review: mean ${((seconds / reviews) * 1000).toFixed(2)} ms over ${reviews}`,
    );
    console.log(`  1-minute load average at the end: ${loadavg()[0]!.toFixed(1)}`);
  } finally {
    operator.kill('SIGTERM');
    await new Promise((resolve) => operator.once('exit', resolve));
    await objects
      .delete({
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name: configuration },
      } as never)
      .catch(() => {});
    for (const name of [watched, unwatched, operatorNamespace]) await core.deleteNamespace({ name }).catch(() => {});
  }
}

await main();
