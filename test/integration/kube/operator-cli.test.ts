// `oracle-node operator` as a process against the real control plane: flags from the environment, caches sync,
// /readyz and /metrics answer, the Lease is taken, and SIGTERM stops it cleanly with the Lease released.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import { expect } from 'chai';
import { load } from 'js-yaml';
import { FENCE_POLICY_NAMES } from '../../../src/operator/builders/admission.js';
import { ADMISSION_KINDS } from '../../../src/operator/webhook/admission.js';
import { spawnOracleNode } from '../../support/binary.js';
import { apply, kc, kubeconfigPath, useNamespace, waitFor } from '../support/cluster.js';
import { freePort, repoRoot } from './harness.js';
import { adminClient } from './runtime-client.js';

const LEASE = { group: 'coordination.k8s.io', version: 'v1', kind: 'Lease', plural: 'leases', namespaced: true };

describe('oracle-node operator (process, real control plane)', function () {
  this.timeout(180_000);
  const ns = useNamespace('rt-cli');
  const admin = adminClient(kc);

  before(async () => {
    const crd = load(
      readFileSync(resolve(repoRoot, 'crds/oracle-node.io_oraclenodes.yaml'), 'utf8'),
    ) as KubernetesObject;
    await apply(crd);
  });

  it('runs with ONO_* settings, becomes ready and leader, and releases the Lease on SIGTERM', async () => {
    const metricsPort = await freePort();
    const healthPort = await freePort();
    const stderr: string[] = [];
    const lines: string[] = [];
    const child = spawnOracleNode(['operator', '--kubeconfig', kubeconfigPath], {
      env: {
        ...process.env,
        ONO_NAMESPACES: ns.name,
        ONO_LEADER_ELECT: 'true',
        ONO_LEADER_ELECTION_NAMESPACE: ns.name,
        ONO_METRICS_PORT: String(metricsPort),
        ONO_HEALTH_PORT: String(healthPort),
        ONO_WORKERS: '3',
        ONO_LOG_LEVEL: 'info',
        POD_NAME: 'cli-test',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
    child.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      await waitFor(
        async () => (await fetch(`http://127.0.0.1:${healthPort}/readyz`).catch(() => undefined))?.status === 200,
        90_000,
        { description: `operator /readyz (stderr: ${stderr.join('').slice(-500)})` },
      );
      expect((await fetch(`http://127.0.0.1:${healthPort}/healthz`)).status).to.equal(200);
      const lease = await waitFor(
        async () => {
          const found = await admin.get<KubernetesObject & { spec?: { holderIdentity?: string } }>(LEASE, {
            namespace: ns.name,
            name: 'oracle-node-operator',
          });
          return found?.spec?.holderIdentity ? found : undefined;
        },
        60_000,
        { description: 'the Lease to be taken' },
      );
      expect(lease.spec?.holderIdentity).to.match(/^cli-test_/);
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      expect(metrics).to.match(/controller_runtime_max_concurrent_reconciles\{controller="[^"]+"\} 3/);
      expect(metrics).to.match(/leader_election_master_status\{name="oracle-node-operator"\} 1/);
      // Every log line is JSON; the manager announced its namespaces.
      const parsed = lines.map((line) => JSON.parse(line) as { msg?: string; namespaces?: string[] });
      expect(parsed.find((entry) => entry.msg === 'manager starting')?.namespaces).to.deep.equal([ns.name]);

      child.kill('SIGTERM');
      expect(await exited).to.equal(0);
      const released = await admin.get<
        KubernetesObject & { spec?: { holderIdentity?: string; leaseDurationSeconds?: number } }
      >(LEASE, {
        namespace: ns.name,
        name: 'oracle-node-operator',
      });
      expect(released?.spec?.holderIdentity).to.equal('');
      expect(released?.spec?.leaseDurationSeconds).to.equal(1);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });

  it('keeps the coordinator fence without the webhook (no --webhook-port)', async () => {
    // The fence is cluster-wide: take it away first, so only this operator can have put it back.
    const fence = Object.values(FENCE_POLICY_NAMES).flatMap((name) => [
      { kind: ADMISSION_KINDS.policy, name },
      { kind: ADMISSION_KINDS.policyBinding, name },
    ]);
    for (const { kind, name } of fence) await admin.delete(kind, { namespace: '', name });
    const healthPort = await freePort();
    const stderr: string[] = [];
    const child = spawnOracleNode(['operator', '--kubeconfig', kubeconfigPath], {
      env: {
        ...process.env,
        ONO_NAMESPACES: ns.name,
        ONO_LEADER_ELECT: 'false',
        ONO_METRICS_PORT: '0',
        ONO_HEALTH_PORT: String(healthPort),
        ONO_LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      for (const { kind, name } of fence)
        await waitFor(() => admin.get(kind, { namespace: '', name }), 90_000, {
          description: `${kind.kind} ${name} kept by the operator (stderr: ${stderr.join('').slice(-500)})`,
        });
      child.kill('SIGTERM');
      expect(await exited).to.equal(0);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
