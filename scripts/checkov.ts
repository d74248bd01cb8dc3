// What a platform team's policy scanner sees of this project (docs/security.md, "Policy scanners"): checkov's
// Kubernetes policies, offline, over manifests/install.yaml (the chart with its defaults, kept in step with it by
// check-manifests) and over the objects the operator and its coordinator create, built by their own pure builders:
// the children of an OracleNode with every gateway on (manifests/samples/full-multi-chain.yaml), both worker Jobs a
// coordinator creates from its template (per poll, and for a window), and the children of an AirnodeFeed, each with
// the defaults and hardened. It fails on any failed check, on a check skipped without a reason, and on a skip that
// docs/security.md does not list (or a listed one that no object skips any more).
// With helm, the chart hardened too (HARDENED_CHART_VALUES), where only the skips no value satisfies are left.
//   node --import tsx scripts/checkov.ts <checkov binary> [<helm binary>]   (scripts/checkov.sh installs checkov)
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { V1Job } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { buildWindowWorkerJob, buildWorkerJob, workerJobName } from '../src/contract/shard.js';
import { validateFeedConfig } from '../src/feed/validate.js';
import { buildChildren, buildWorkerTemplate } from '../src/operator/builders/index.js';
import { type AirnodeFeed, FEED_API_VERSION, FEED_KIND } from '../src/operator/feed/api.js';
import { buildFeedChildren } from '../src/operator/feed/builders.js';
import { DEFAULT_IMAGE, type OracleNode } from '../src/operator/resource.js';
import { buildFeedConfig } from '../test/support/feed.js';
import { inputFor } from '../test/unit/operator/builders/build-input.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const SECURITY_DOC = 'docs/security.md';
/** The heading of the section of SECURITY_DOC that lists every skipped check. */
export const SKIPS_HEADING = '## Policy scanners';
/** Where the scanned objects live: a namespace of their own, as the docs install them (never `default`). */
const NAMESPACE = 'oracle-nodes';

type Manifest = { file: string; objects: object[] };

/** An image pinned by digest, as a platform that pins every image would set it. */
const PINNED_IMAGE = `ghcr.io/oracle-node-operator/oracle-node@sha256:${'0'.repeat(64)}`;
const CPU_LIMIT = { limits: { cpu: '1' } };

/**
 * The objects the operator and the coordinator create, as the API server stores them (in their namespace): once with
 * the defaults and once hardened (the image pinned by digest, CPU limits, the keys as files), where every skip that a
 * setting satisfies is gone and its check must pass.
 */
export async function childManifests(): Promise<Manifest[]> {
  return [
    ...oracleNodeManifests('oracle-node', () => undefined),
    ...oracleNodeManifests('oracle-node-hardened', (node) => {
      node.metadata.name = 'hardened';
      node.spec.image = PINNED_IMAGE;
      node.spec.resources = { ...node.spec.resources, limits: { ...node.spec.resources?.limits, ...CPU_LIMIT.limits } };
      node.spec.secretRef = { name: node.spec.secretRef!.name, as: 'Files' };
    }),
    { file: 'airnode-feed.yaml', objects: await feedChildren('prices', {}) },
    {
      file: 'airnode-feed-hardened.yaml',
      objects: await feedChildren('pinned-prices', { image: PINNED_IMAGE, resources: CPU_LIMIT }),
    },
  ];
}

/** The children of the full sample (every gateway on) and both worker Jobs its coordinator creates. */
function oracleNodeManifests(file: string, edit: (node: OracleNode) => void): Manifest[] {
  const input = inputFor('full-multi-chain', (node) => {
    node.metadata.namespace = NAMESPACE;
    edit(node);
  });
  const template = buildWorkerTemplate(input);
  const inNamespace = (job: V1Job) => ({ ...job, metadata: { ...job.metadata, namespace: NAMESPACE } });
  const perPoll = buildWorkerJob(template, {
    name: workerJobName(template.namePrefix, 'c1'),
    shardCount: 2,
    concurrency: 2,
    chainId: '31337',
  });
  const window = buildWindowWorkerJob(template, {
    name: workerJobName(template.namePrefix, 'w1'),
    parallelism: 2,
    activeDeadlineSeconds: 70,
    coordinatorUrl: 'http://10.0.0.1:8090',
    credential: 'a-window-credential',
  });
  return [
    { file: `${file}.yaml`, objects: buildChildren(input).map((child) => child.object) },
    { file: `${file}-worker-jobs.yaml`, objects: [inNamespace(perPoll), inNamespace(window)] },
  ];
}

async function feedChildren(name: string, spec: Partial<AirnodeFeed['spec']>): Promise<object[]> {
  const config = buildFeedConfig({
    apiUrl: 'https://prices.example.com',
    assets: ['BTC', 'ETH'],
    fetchInterval: 5,
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a secret reference of the config
    signedApis: [{ name: 'main', url: 'https://signed-api.example.com', authToken: '${SIGNED_API_TOKEN}' }],
  });
  const secret = {
    WALLET_MNEMONIC: 'test test test test test test test test test test test junk',
    API_KEY: 'an-api-key',
    SIGNED_API_TOKEN: 'a-signed-api-token',
  };
  const validation = await validateFeedConfig(config, secret);
  if (!validation.ok) throw new Error(`the feed config is invalid: ${JSON.stringify(validation.errors)}`);
  const children = buildFeedChildren({
    feed: {
      apiVersion: FEED_API_VERSION,
      kind: FEED_KIND,
      metadata: { name, namespace: NAMESPACE, uid: `uid-${name}`, generation: 1 },
      spec: { config, secretRef: { name: `${name}-secrets` }, ...spec },
    },
    config: validation.config,
    rawConfig: config,
    secretName: `${name}-secrets`,
    secretData: Object.fromEntries(Object.entries(secret).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
    defaultImage: DEFAULT_IMAGE,
  });
  return children.map((child) => child.object);
}

type CheckovCheck = {
  check_id: string;
  check_name: string;
  file_path: string;
  resource: string;
  check_result: { result: string; suppress_comment?: string };
};
export type CheckovReport = {
  check_type: string;
  results?: {
    passed_checks?: CheckovCheck[];
    failed_checks?: CheckovCheck[];
    skipped_checks?: CheckovCheck[];
    parsing_errors?: string[];
  };
};

/** The check ids the section SKIPS_HEADING of docs/security.md lists. */
export function documentedSkips(markdown: string): Set<string> {
  const start = markdown.indexOf(`\n${SKIPS_HEADING}\n`);
  if (start < 0) return new Set();
  const rest = markdown.slice(start + SKIPS_HEADING.length + 2);
  const end = rest.search(/^## /m);
  return new Set((end < 0 ? rest : rest.slice(0, end)).match(/\bCKV2?_K8S_\d+\b/g) ?? []);
}

/** checkov's word for an annotation without `=<reason>`. */
const NO_REASON = 'No comment provided';

/**
 * What is wrong in a scan: a failed check, a file checkov could not read, a skip without a reason or not listed in
 * docs/security.md, a listed skip that no object makes any more, or no check run at all. Empty when all is well.
 */
export function scanProblems(reports: CheckovReport | CheckovReport[], documented: Set<string>): string[] {
  const all = Array.isArray(reports) ? reports : [reports];
  const problems: string[] = [];
  const where = (check: CheckovCheck) => `${check.file_path.replace(/^\//, '')} ${check.resource}`;
  const skipped = new Set<string>();
  let passed = 0;
  for (const report of all) {
    const results = report.results ?? {};
    passed += results.passed_checks?.length ?? 0;
    for (const file of results.parsing_errors ?? []) problems.push(`${file}: checkov could not parse it`);
    for (const check of results.failed_checks ?? [])
      problems.push(`${where(check)}: ${check.check_id} failed (${check.check_name})`);
    for (const check of results.skipped_checks ?? []) {
      skipped.add(check.check_id);
      const reason = check.check_result.suppress_comment?.trim() ?? '';
      if (reason === '' || reason === NO_REASON)
        problems.push(`${where(check)}: ${check.check_id} is skipped without a reason`);
      if (!documented.has(check.check_id))
        problems.push(`${where(check)}: ${check.check_id} is skipped but ${SECURITY_DOC} does not list it`);
    }
  }
  for (const id of documented)
    if (!skipped.has(id)) problems.push(`${SECURITY_DOC} lists ${id}, which no scanned object skips any more`);
  if (passed === 0) problems.push('checkov ran no check: nothing was scanned');
  return problems;
}

function summary(reports: CheckovReport[]): string {
  const count = (key: 'passed_checks' | 'skipped_checks') =>
    reports.reduce((sum, report) => sum + (report.results?.[key]?.length ?? 0), 0);
  return `${count('passed_checks')} checks pass, ${count('skipped_checks')} are skipped with their reasons, none fails`;
}

/**
 * The chart as a platform that hardens it installs it: the image pinned by digest, a CPU limit and both
 * NetworkPolicies on (in a namespace of its own, so that its policies select only its own pods).
 */
export const HARDENED_CHART_VALUES = [
  `image.digest=sha256:${'0'.repeat(64)}`,
  'resources.limits.cpu=1',
  'networkPolicy.operator.enabled=true',
  'networkPolicy.workloads.enabled=true',
  `networkPolicy.workloads.namespaces={${NAMESPACE}}`,
];

function hardenedChart(helm: string): string {
  const args = ['template', 'oracle-node-operator', join(ROOT, 'charts/oracle-node-operator')];
  args.push('--namespace', 'oracle-node-hardened', ...HARDENED_CHART_VALUES.flatMap((value) => ['--set', value]));
  return execFileSync(helm, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

async function main(): Promise<number> {
  const [checkov, helm] = process.argv.slice(2);
  if (!checkov) {
    console.error('usage: node --import tsx scripts/checkov.ts <checkov binary> [<helm binary>]');
    return 2;
  }
  const dir = mkdtempSync(join(tmpdir(), 'ono-checkov-'));
  try {
    copyFileSync(join(ROOT, 'manifests/install.yaml'), join(dir, 'install.yaml'));
    if (helm) writeFileSync(join(dir, 'install-hardened.yaml'), hardenedChart(helm));
    else console.log('checkov: no helm given: the hardened chart is not scanned (make cluster-bins builds helm)');
    for (const manifest of await childManifests()) {
      const text = manifest.objects.map((object) => yaml.dump(object, { noRefs: true, lineWidth: -1 })).join('---\n');
      writeFileSync(join(dir, manifest.file), text);
    }
    // One run over one directory: checkov's start-up is most of its time.
    const run = spawnSync(
      checkov,
      ['--framework', 'kubernetes', '--directory', dir, '--output', 'json', '--skip-download'],
      { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, env: { ...process.env, LOG_LEVEL: 'WARNING' } },
    );
    let parsed: CheckovReport | CheckovReport[];
    try {
      parsed = JSON.parse(run.stdout) as CheckovReport | CheckovReport[];
    } catch {
      console.error(`checkov gave no report (exit ${run.status ?? run.signal}):\n${run.stderr}${run.stdout}`);
      return 1;
    }
    const reports = Array.isArray(parsed) ? parsed : [parsed];
    const problems = scanProblems(reports, documentedSkips(readFileSync(join(ROOT, SECURITY_DOC), 'utf8')));
    if (problems.length > 0) {
      console.error(`checkov: ${problems.length} unexplained finding(s):\n  ${problems.join('\n  ')}`);
      console.error(
        `Fix the object, or skip the check with its reason (checkov.io/skipN) and list it in ${SECURITY_DOC}.`,
      );
      return 1;
    }
    console.log(`checkov ${version(checkov)}: ${summary(reports)}`);
    return 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function version(checkov: string): string {
  return spawnSync(checkov, ['--version'], { encoding: 'utf8' }).stdout.trim();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = await main();
