// Operator benchmark against the test control plane (`make cluster-up`); skipped when none is running.
//   node --import tsx bench/operator.bench.ts [--latency N] [--scale N]
// Runs `oracle-node operator` as its own process (the real CLI, runtime and controller) watching a fresh namespace
// and measures: latency from apply to all children created (p50/p99 over N resources, one at a time), the time for
// M OracleNodes applied at once to all be Ready and the operator's memory meanwhile, and the API writes the operator
// makes during a no-op resync (must be 0). Results go to the "Operator" section of docs/benchmarks.md.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CoreV1Api, type KubernetesObject, type KubernetesObjectApi, Watch } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import type { OracleNode } from '../src/operator/resource.js';
import { connectTestCluster, freePort, installCrd, percentile, root, sleep } from './support/cluster.js';

const { values: args } = parseArgs({ options: { latency: { type: 'string' }, scale: { type: 'string' } } });
const LATENCY_COUNT = Number(args.latency ?? 100);
const SCALE_COUNT = Number(args.scale ?? 500);

function rssMiB(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : 0;
}

async function scrape(port: number): Promise<{ writes: number; reconciles: number }> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  let writes = 0;
  let reconciles = 0;
  for (const line of text.split('\n')) {
    const match = /^(\w+)\{([^}]*)\} ([0-9.e+]+)$/.exec(line);
    if (!match) continue;
    const [, name, labels, value] = match;
    if (name === 'rest_client_requests_total' && /method="(POST|PUT|PATCH|DELETE)"/i.test(labels!))
      writes += Number(value);
    if (name === 'controller_runtime_reconcile_total') reconciles += Number(value);
  }
  return { writes, reconciles };
}

async function mapLimit<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

async function main(): Promise<void> {
  const cluster = await connectTestCluster('operator');
  if (!cluster) return;
  const { kc, apply, objects, kubeconfigPath: path } = cluster;

  // CRD, namespace, one shared Secret.
  await installCrd(cluster);
  const namespace = `onode-bench-${Date.now().toString(36)}`;
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
  const docs = yaml.loadAll(readFileSync(join(root, 'manifests/samples/minimal.yaml'), 'utf8')) as KubernetesObject[];
  const secret = docs.find((d) => d.kind === 'Secret')!;
  secret.metadata = { ...secret.metadata, namespace };
  await apply(secret);
  const template = docs.find((d) => d.kind === 'OracleNode') as OracleNode;
  const nodeNamed = (name: string): OracleNode => {
    const node = structuredClone(template);
    node.metadata = { name, namespace };
    // Suspended coordinators: the benchmark measures the operator, not hundreds of CronJobs firing every minute.
    node.spec.coordinator = { suspend: true };
    return node;
  };

  const metricsPort = await freePort();
  // The built binary, run as the image's ENTRYPOINT runs it (`node dist/cli/index.js`): under tsx the same
  // process carries the TypeScript compiler's memory too (idle RSS 232 MiB against ~150).
  const binary = join(root, 'dist/cli/index.js');
  if (!existsSync(binary)) throw new Error(`${binary} is missing: run make build first`);
  // With the environment the Helm chart gives the operator (operator.nodeOptions, operator.mallocArenaMax).
  const chartValues = yaml.load(readFileSync(join(root, 'charts/oracle-node-operator/values.yaml'), 'utf8')) as {
    operator?: { nodeOptions?: string; mallocArenaMax?: number };
  };
  const nodeOptions = chartValues.operator?.nodeOptions ?? '';
  const chartEnv: Record<string, string> = { NODE_OPTIONS: nodeOptions };
  if (chartValues.operator?.mallocArenaMax) chartEnv.MALLOC_ARENA_MAX = String(chartValues.operator.mallocArenaMax);
  chartEnvUsed = Object.entries(chartEnv)
    .filter(([, value]) => value)
    .map(([name, value]) => `${name}="${value}"`)
    .join(' ');
  const startOperator = (port: number): ChildProcess =>
    spawn(
      process.execPath,
      [
        binary,
        'operator',
        `--kubeconfig=${path}`,
        `--namespaces=${namespace}`,
        '--leader-elect=false',
        `--metrics-port=${port}`,
        '--health-port=0',
        '--workers=8',
        '--qps=300',
        '--burst=600',
        '--log-level=warn',
      ],
      { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, ...chartEnv } },
    );
  let operator: ChildProcess = startOperator(metricsPort);
  const results: string[] = [];
  try {
    await waitUntil(async () => scrape(metricsPort).then(() => true), 60_000);
    await sleep(2000);
    const idleRss = rssMiB(operator.pid!);

    // 1. Latency: one OracleNode at a time, from the apply to its CronJob (the last child applied) existing.
    const created = new Map<string, number>();
    const watch = new Watch(kc);
    const request = await watch.watch(
      `/apis/batch/v1/namespaces/${namespace}/cronjobs`,
      {},
      (phase, object: KubernetesObject) => {
        if (phase === 'ADDED') created.set(object.metadata!.name!, performance.now());
      },
      () => {},
    );
    const latencies: number[] = [];
    for (let i = 0; i < LATENCY_COUNT; i++) {
      const name = `lat-${i}`;
      const start = performance.now();
      await apply(nodeNamed(name));
      await waitUntil(async () => created.has(`${name}-dev-coordinator`), 60_000);
      latencies.push(created.get(`${name}-dev-coordinator`)! - start);
    }
    request.abort();
    latencies.sort((a, b) => a - b);
    const childCount = (await objects.list('v1', 'ConfigMap', namespace)).items.length;
    results.push(
      `| apply -> all children created (${LATENCY_COUNT} OracleNodes, one at a time) | p50 ${percentile(latencies, 50).toFixed(0)} ms, p99 ${percentile(latencies, 99).toFixed(0)} ms |`,
    );
    console.log(results.at(-1), `(${childCount} ConfigMaps)`);

    // 2. Scale: SCALE_COUNT more applied at once; time until every OracleNode is Ready; operator memory.
    const total = LATENCY_COUNT + SCALE_COUNT;
    const names = Array.from({ length: SCALE_COUNT }, (_, i) => `scale-${i}`);
    let peakRss = rssMiB(operator.pid!);
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, rssMiB(operator.pid!));
    }, 250);
    const start = performance.now();
    await mapLimit(names, 25, async (name) => {
      await apply(nodeNamed(name));
    });
    const applied = performance.now() - start;
    await waitUntil(async () => (await readyCount(objects, namespace)) >= total, 900_000, 1000);
    const converged = performance.now() - start;
    clearInterval(sampler);
    const settledRss = rssMiB(operator.pid!);
    results.push(
      `| ${SCALE_COUNT} OracleNodes applied at once (${total} in the namespace) -> all Ready | ${(converged / 1000).toFixed(1)} s (applies took ${(applied / 1000).toFixed(1)} s) |`,
      `| operator memory (RSS): idle with no OracleNode / peak during convergence / settled, ${total} OracleNodes, ${total * 10} children | ${idleRss.toFixed(0)} / ${peakRss.toFixed(0)} / ${settledRss.toFixed(0)} MiB |`,
      `| growth per OracleNode (10 children): (settled - idle) / ${total} | ${((1024 * (settledRss - idleRss)) / total).toFixed(0)} KiB |`,
    );
    console.log(results.slice(-3).join('\n'));

    // 3. No-op resync: a restarted operator lists everything and reconciles every OracleNode with nothing
    // changed (what the 10-minute periodic requeue also does); it must not write. Its memory once settled is
    // the steady state without the convergence burst.
    operator.kill('SIGTERM');
    await new Promise((resolve) => operator.once('exit', resolve));
    const restartPort = await freePort();
    operator = startOperator(restartPort);
    await waitUntil(async () => scrape(restartPort).then(() => true), 60_000);
    await waitUntil(async () => (await scrape(restartPort)).reconciles >= total, 400_000, 1000);
    await sleep(5000);
    const after = await scrape(restartPort);
    const restartedRss = rssMiB(operator.pid!);
    results.push(
      `| API writes by a restarted operator during its ${after.reconciles} no-op reconciles | ${after.writes} |`,
      `| operator memory (RSS) after a restart with the ${total} OracleNodes in place, settled | ${restartedRss.toFixed(0)} MiB |`,
    );
    console.log(results.slice(-2).join('\n'));
  } finally {
    operator.kill('SIGTERM');
    await kc
      .makeApiClient(CoreV1Api)
      .deleteNamespace({ name: namespace })
      .catch(() => {});
  }
  writeSection(results);
}

async function readyCount(objects: KubernetesObjectApi, namespace: string): Promise<number> {
  const list = (await objects.list('oracle-node.io/v1alpha1', 'OracleNode', namespace)) as unknown as {
    items: OracleNode[];
  };
  return list.items.filter(
    (node) =>
      node.status?.observedGeneration === node.metadata.generation &&
      node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  ).length;
}

async function waitUntil(condition: () => Promise<boolean>, timeoutMs: number, intervalMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await condition()) return;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms`);
    await sleep(intervalMs);
  }
}

let chartEnvUsed = '';
const loadAtStart = loadavg()[0]!;

function writeSection(rows: string[]): void {
  const file = join(root, 'docs/benchmarks.md');
  const existing = existsSync(file) ? readFileSync(file, 'utf8') : '# Benchmarks\n';
  const section = [
    '## Operator',
    '',
    `Measured by \`bench/operator.bench.ts\` on ${new Date().toISOString().slice(0, 10)} against the test control plane ` +
      '(`make cluster-up`: etcd, kube-apiserver, controller-manager, scheduler and kwok as local processes) on a ' +
      `2-core machine; the operator ran as \`node dist/cli/index.js operator --workers=8 --qps=300 --burst=600\` (the built binary, as the image runs it) with the chart's environment (\`${chartEnvUsed || 'none'}\`) in its own process. ` +
      'The OracleNodes are the minimal sample (10 children each) with their coordinator suspended. ' +
      `The machine was shared with other work (1-minute load average ${loadAtStart.toFixed(1)} at the start of the run, ${loadavg()[0]!.toFixed(1)} at the end), ` +
      'so the times are an upper bound.',
    '',
    '| Measure | Result |',
    '|---|---|',
    ...rows,
    '',
  ].join('\n');
  const pattern = /## Operator\n[\s\S]*?(?=\n## |$)/;
  const next = pattern.test(existing) ? existing.replace(pattern, section) : `${existing.trimEnd()}\n\n${section}`;
  writeFileSync(file, next.endsWith('\n') ? next : `${next}\n`);
  console.log('wrote the Operator section of docs/benchmarks.md');
}

await main();
