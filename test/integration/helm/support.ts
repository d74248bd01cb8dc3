// Helm and kubectl, the repository's own builds from .cache/cluster/bin, against the test control plane.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { kubeconfigPath } from '../support/cluster.js';

const run = promisify(execFile);
export const repoRoot = new URL('../../../', import.meta.url).pathname;
const binDir = process.env['CLUSTER_BIN_DIR'] ?? join(repoRoot, '.cache/cluster/bin');
const helmBin = join(binDir, 'helm');
const kubectlBin = join(binDir, 'kubectl');
export const chartDir = join(repoRoot, 'charts/oracle-node-operator');
export const CRD_NAME = 'oraclenodes.oracle-node.io';

export function requireBinaries(): void {
  if (!existsSync(helmBin) || !existsSync(kubectlBin))
    throw new Error(`helm/kubectl missing in ${binDir}: run make cluster-bins`);
}

export async function helm(...args: string[]): Promise<string> {
  const { stdout } = await run(helmBin, args, {
    env: { ...process.env, KUBECONFIG: kubeconfigPath, HELM_CACHE_HOME: join(repoRoot, '.cache/helm') },
    maxBuffer: 32 * 1024 * 1024,
  });
  return stdout;
}

export async function kubectl(input: string | undefined, ...args: string[]): Promise<string> {
  const child = execFile(kubectlBin, ['--kubeconfig', kubeconfigPath, ...args], { maxBuffer: 32 * 1024 * 1024 });
  const output = new Promise<string>((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr?.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('close', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`kubectl ${args[0]}: ${stderr}`))));
  });
  child.stdin?.end(input ?? '');
  return output;
}

/**
 * Lets `release` take over an OracleNode CRD that exists without its Helm ownership metadata: one installed by an
 * earlier chart from crds/ (which Helm never owns), by kubectl, or kept by an uninstalled release. These are the
 * commands docs/upgrading.md gives for the move to a chart whose CRD is a template.
 */
export async function adoptCrd(release: string, namespace: string): Promise<void> {
  const exists = await kubectl(undefined, 'get', 'crd', CRD_NAME, '--ignore-not-found', '-o', 'name');
  if (exists.trim() === '') return;
  await kubectl(undefined, 'label', '--overwrite', 'crd', CRD_NAME, 'app.kubernetes.io/managed-by=Helm');
  await kubectl(
    undefined,
    'annotate',
    '--overwrite',
    'crd',
    CRD_NAME,
    `meta.helm.sh/release-name=${release}`,
    `meta.helm.sh/release-namespace=${namespace}`,
  );
}
