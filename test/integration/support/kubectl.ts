// kubectl, the repository's own build from .cache/cluster/bin (or CLUSTER_BIN_DIR), with the admin kubeconfig of
// the test control plane: one runner for every suite.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from '../../support/binary.js';
import { kubeconfigPath } from './cluster.js';

export const clusterBinDir = process.env['CLUSTER_BIN_DIR'] ?? join(repoRoot, '.cache/cluster/bin');
export const kubectlBin = join(clusterBinDir, 'kubectl');

export type KubectlResult = { code: number; stdout: string; stderr: string };

/** kubectl with `input` on stdin; resolves with the exit code and both outputs (never rejects on exit code). */
export function runKubectl(input: string | undefined, ...args: string[]): Promise<KubectlResult> {
  const child = execFile(kubectlBin, ['--kubeconfig', kubeconfigPath, ...args], { maxBuffer: 32 * 1024 * 1024 });
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr?.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin?.end(input ?? '');
  });
}
