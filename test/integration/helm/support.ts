// Helm and kubectl, the repository's own builds from .cache/cluster/bin, against the test control plane.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../../support/binary.js';
import { kubeconfigPath } from '../support/cluster.js';
import { clusterBinDir, kubectlBin, runKubectl } from '../support/kubectl.js';

const run = promisify(execFile);
const helmBin = join(clusterBinDir, 'helm');
export const chartDir = join(repoRoot, 'charts/oracle-node-operator');
export const CRD_NAME = 'oraclenodes.oracle-node.io';
export const FEED_CRD_NAME = 'airnodefeeds.oracle-node.io';

export function requireBinaries(): void {
  if (!existsSync(helmBin) || !existsSync(kubectlBin))
    throw new Error(`helm/kubectl missing in ${clusterBinDir}: run make cluster-bins`);
}

export async function helm(...args: string[]): Promise<string> {
  const { stdout } = await run(helmBin, args, {
    env: { ...process.env, KUBECONFIG: kubeconfigPath, HELM_CACHE_HOME: join(repoRoot, '.cache/helm') },
    maxBuffer: 32 * 1024 * 1024,
  });
  return stdout;
}

/** kubectl that resolves with stdout and rejects with stderr on a non-zero exit. */
export async function kubectl(input: string | undefined, ...args: string[]): Promise<string> {
  const { code, stdout, stderr } = await runKubectl(input, ...args);
  if (code !== 0) throw new Error(`kubectl ${args[0]}: ${stderr}`);
  return stdout;
}

/**
 * Lets `release` take over the OracleNode and AirnodeFeed CRDs that exist without its Helm ownership metadata: one installed by an
 * earlier chart from crds/ (which Helm never owns), by kubectl, or kept by an uninstalled release. These are the
 * commands docs/upgrading.md gives for the move to a chart whose CRD is a template.
 */
export async function adoptCrd(release: string, namespace: string): Promise<void> {
  for (const name of [CRD_NAME, FEED_CRD_NAME]) {
    const exists = await kubectl(undefined, 'get', 'crd', name, '--ignore-not-found', '-o', 'name');
    if (exists.trim() === '') continue;
    await kubectl(undefined, 'label', '--overwrite', 'crd', name, 'app.kubernetes.io/managed-by=Helm');
    await kubectl(
      undefined,
      'annotate',
      '--overwrite',
      'crd',
      name,
      `meta.helm.sh/release-name=${release}`,
      `meta.helm.sh/release-namespace=${namespace}`,
    );
  }
}
