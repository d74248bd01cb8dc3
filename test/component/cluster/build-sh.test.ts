// test/cluster/build.sh skips the Go build when control-plane binaries of the pinned versions are already on the
// machine (KUBEBUILDER_ASSETS as envtest users have them, then PATH), and says which binary it uses. The stand-ins
// below print what the real binaries print for --version; PATH holds no Go, so anything not adopted fails loudly.
import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';

const run = promisify(execFile);
const buildSh = new URL('../../../test/cluster/build.sh', import.meta.url).pathname;
const pinned = (module: string, path: string) =>
  readFileSync(new URL(`../../../test/cluster/${module}/go.mod`, import.meta.url), 'utf8').match(
    new RegExp(`${path.replaceAll('.', '\\.')} (v[^\\s]+)`),
  )?.[1] ?? '';
const K8S = pinned('k8s', 'k8s.io/kubernetes');
const ETCD = pinned('etcd', 'go.etcd.io/etcd/server/v3');

function standIn(dir: string, name: string, versionOutput: string) {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, name);
  writeFileSync(file, `#!/bin/sh\ncat <<'OUT'\n${versionOutput}\nOUT\n`);
  chmodSync(file, 0o755);
}

describe('test/cluster/build.sh: control-plane binaries already on the machine', () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cluster-bins-'));
    env = {
      HOME: dir,
      PATH: `${join(dir, 'path')}:/usr/bin:/bin`,
      CLUSTER_BIN_DIR: join(dir, 'bin'),
      CLUSTER_SHARED_BIN_DIR: '',
      KUBEBUILDER_ASSETS: join(dir, 'assets'),
    };
    mkdirSync(join(dir, 'path'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('pins real versions in the helper modules', () => {
    expect(K8S).to.match(/^v1\.\d+\.\d+$/);
    expect(ETCD).to.match(/^v3\.\d+\.\d+$/);
  });

  it('uses envtest assets and PATH binaries of the pinned versions and says which (path, version, origin)', async () => {
    standIn(join(dir, 'assets'), 'etcd', `etcd Version: ${ETCD.slice(1)}\nGit SHA: 0\nGo Version: go1.24`);
    standIn(join(dir, 'assets'), 'kube-apiserver', `Kubernetes ${K8S}`);
    standIn(join(dir, 'assets'), 'kubectl', `Client Version: ${K8S}\nKustomize Version: v5`);
    standIn(join(dir, 'path'), 'kube-controller-manager', `Kubernetes ${K8S}`);
    standIn(join(dir, 'path'), 'kube-scheduler', `Kubernetes ${K8S}`);
    const { stdout } = await run('bash', [buildSh, 'k8s', 'etcd'], { env });
    const bin = join(dir, 'bin');
    expect(stdout).to.include(
      `using ${bin}/etcd: etcd Version: ${ETCD.slice(1)} (from KUBEBUILDER_ASSETS ${dir}/assets/etcd)`,
    );
    expect(stdout).to.include(`using ${bin}/kube-apiserver: Kubernetes ${K8S} (from KUBEBUILDER_ASSETS`);
    expect(stdout).to.include(`using ${bin}/kubectl: Client Version: ${K8S} (from KUBEBUILDER_ASSETS`);
    expect(stdout).to.include(`using ${bin}/kube-scheduler: Kubernetes ${K8S} (from PATH ${dir}/path/kube-scheduler)`);
    expect(stdout).not.to.include('building');

    // A second run keeps what the first one copied in.
    const again = await run('bash', [buildSh, 'etcd'], { env });
    expect(again.stdout).to.include(`using ${bin}/etcd: etcd Version: ${ETCD.slice(1)} (kept)`);
  });

  it('ignores a binary of another version and, without Go, says what to do', async () => {
    standIn(join(dir, 'assets'), 'etcd', 'etcd Version: 3.5.0');
    const failure = await run('bash', [buildSh, 'etcd'], { env }).then(
      () => undefined,
      (err: { stdout: string; stderr: string }) => err,
    );
    expect(failure, 'build.sh must fail: no Go and no usable etcd').to.not.equal(undefined);
    expect(failure?.stdout).to.include(`etcd: ${dir}/assets/etcd (from KUBEBUILDER_ASSETS) is not the pinned version`);
    expect(failure?.stderr).to.include('go not found on PATH: etcd must be built');
  });

  it('keeps a test tool whose --version is its module checksum, and rebuilds one whose source changed', async () => {
    const toolsDir = new URL('../../../test/tools/', import.meta.url).pathname;
    const checksum = async (tool: string) =>
      (
        await run('sh', ['-c', `cat go.mod go.sum *.go | cksum | cut -d' ' -f1`], { cwd: join(toolsDir, tool) })
      ).stdout.trim();
    standIn(join(dir, 'bin'), 'kstatus', await checksum('kstatus'));
    standIn(join(dir, 'bin'), 'argocd-lua', await checksum('argocd-lua'));
    const { stdout } = await run('bash', [buildSh, 'tools'], { env });
    expect(stdout).to.include(`using ${join(dir, 'bin')}/kstatus: ${await checksum('kstatus')} (kept)`);
    expect(stdout).to.include(`using ${join(dir, 'bin')}/argocd-lua: ${await checksum('argocd-lua')} (kept)`);
    // A binary of other sources (here: another checksum) is not used; without Go, the build says what to do.
    standIn(join(dir, 'bin'), 'kstatus', '12345');
    const failure = await run('bash', [buildSh, 'tools'], { env }).then(
      () => '',
      (err: { stderr: string }) => err.stderr,
    );
    expect(failure).to.include('go not found on PATH: kstatus must be built');
  });

  it('CLUSTER_USE_HOST_BINS=0 turns the lookup off', async () => {
    standIn(join(dir, 'assets'), 'etcd', `etcd Version: ${ETCD.slice(1)}`);
    const failure = await run('bash', [buildSh, 'etcd'], { env: { ...env, CLUSTER_USE_HOST_BINS: '0' } }).then(
      () => '',
      (err: { stderr: string }) => err.stderr,
    );
    expect(failure).to.include('go not found on PATH: etcd must be built');
  });
});
