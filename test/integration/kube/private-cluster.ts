// A second, private test control plane for the disruptive suites (the apiserver is stopped and restarted), so the
// shared cluster other suites use is never disturbed. It is test/cluster/cluster.sh with its own CLUSTER_RUN_DIR
// (own ports, PKI, etcd data); the apiserver is stopped by its recorded pid and restarted with the exact command
// line it was started with (read from /proc before stopping it).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, openSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { repoRoot } from './harness.js';

export class PrivateCluster {
  readonly runDir: string;
  private apiserverCommand: { exe: string; args: string[] } | undefined;

  constructor(name: string) {
    // One directory per test process: two runs at once (e.g. two checkouts' CI) get separate clusters.
    this.runDir = resolve(repoRoot, '.cache/cluster', `run-${name}-${process.pid}`);
  }

  get kubeconfig(): string {
    return resolve(this.runDir, 'admin.kubeconfig');
  }

  private script(command: 'up' | 'down'): void {
    const result = spawnSync(resolve(repoRoot, 'test/cluster/cluster.sh'), [command], {
      env: { ...process.env, CLUSTER_RUN_DIR: this.runDir },
      encoding: 'utf8',
      timeout: 300_000,
    });
    if (result.status !== 0)
      throw new Error(`cluster.sh ${command} failed (${result.status}):\n${result.stdout}\n${result.stderr}`);
  }

  up(): void {
    this.script('up');
  }

  /**
   * Stops the recorded processes first, then lets cluster.sh clean up. The processes it starts inherit its lock
   * file descriptor, so `cluster.sh down` alone would wait for that lock until they exit.
   */
  async down(): Promise<void> {
    for (const component of ['kwok', 'kube-scheduler', 'kube-controller-manager', 'kube-apiserver', 'etcd']) {
      const file = resolve(this.runDir, 'pids', component);
      if (!existsSync(file)) continue;
      const pid = Number(readFileSync(file, 'utf8').trim());
      let exe = '';
      try {
        exe = readlinkSync(`/proc/${pid}/exe`);
      } catch {
        continue; // not running
      }
      if (!exe.endsWith(`/${component}`)) continue; // the pid was reused by something else
      process.kill(pid, 'SIGTERM');
      for (let i = 0; i < 100 && existsSync(`/proc/${pid}`); i++) await new Promise((r) => setTimeout(r, 100));
      if (existsSync(`/proc/${pid}`)) process.kill(pid, 'SIGKILL');
    }
    this.script('down');
    rmSync(this.runDir, { recursive: true, force: true });
  }

  private pidFile(): string {
    return resolve(this.runDir, 'pids/kube-apiserver');
  }

  apiserverPid(): number {
    return Number(readFileSync(this.pidFile(), 'utf8').trim());
  }

  /** SIGTERM to the recorded apiserver, waiting for it to exit (SIGKILL after 15 s). */
  async stopApiserver(): Promise<void> {
    const pid = this.apiserverPid();
    const exe = readlinkSync(`/proc/${pid}/exe`);
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).slice(1);
    this.apiserverCommand = { exe, args };
    process.kill(pid, 'SIGTERM');
    for (let i = 0; i < 150 && existsSync(`/proc/${pid}`); i++) await new Promise((r) => setTimeout(r, 100));
    if (existsSync(`/proc/${pid}`)) process.kill(pid, 'SIGKILL');
  }

  /** Starts the apiserver again with the same command line and records its pid where cluster.sh expects it. */
  startApiserver(): void {
    if (!this.apiserverCommand) throw new Error('stopApiserver() first');
    const log = openSync(resolve(this.runDir, 'logs/kube-apiserver.log'), 'a');
    const child = spawn(this.apiserverCommand.exe, this.apiserverCommand.args, {
      detached: true,
      stdio: ['ignore', log, log],
    });
    child.unref();
    writeFileSync(this.pidFile(), `${child.pid}\n`);
  }
}
