// The day-two commands' pure parts: the Node.js version gate (also through the real binary, with a faked
// process.versions), shell completion, the status layout, the Job `cycle` creates, and which pods `logs` reads.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { V1CronJob, V1Job } from '@kubernetes/client-node';
import { expect } from 'chai';
import { subcommands } from '../../../src/cli/commands.js';
import { bashCompletion, zshCompletion } from '../../../src/cli/completion.js';
import { INSTANTIATE_ANNOTATION, jobFromCronJob } from '../../../src/cli/cycle-command.js';
import { latestJobs } from '../../../src/cli/logs-command.js';
import { MINIMUM_NODE_VERSION, unsupportedNode } from '../../../src/cli/node-version.js';
import { renderStatus } from '../../../src/cli/status-command.js';
import type { OracleNode } from '../../../src/operator/resource.js';

const ENTRY = fileURLToPath(new URL('../../../src/cli/index.ts', import.meta.url));

/** The real binary on this Node.js, told by a preloaded module that it runs on `version`. */
function binaryOn(version: string, args: string[]) {
  const fake = `data:text/javascript,Object.defineProperty(process.versions,"node",{value:${JSON.stringify(version)}})`;
  return spawnSync(process.execPath, ['--import', fake, '--import', 'tsx', ENTRY, ...args], {
    encoding: 'utf8',
    timeout: 60_000,
  });
}

describe('oracle-node day-two commands', function () {
  this.timeout(60_000);

  it('refuses a Node.js older than the minimum with one clear line', () => {
    expect(MINIMUM_NODE_VERSION).to.equal('22.19.0');
    expect(unsupportedNode('20.11.1')).to.equal('oracle-node needs Node.js 22.19.0 or newer; this is Node.js 20.11.1');
    expect(unsupportedNode('v22.18.9')).to.be.a('string');
    expect(unsupportedNode('22.19.0')).to.equal(undefined);
    expect(unsupportedNode('24.0.0')).to.equal(undefined);
    const old = binaryOn('20.11.1', ['operator', '--help']);
    expect(old.status).to.equal(1);
    expect(old.stdout).to.equal('');
    expect(old.stderr).to.equal('oracle-node needs Node.js 22.19.0 or newer; this is Node.js 20.11.1\n');
    const current = binaryOn('22.19.0', ['--version']);
    expect(current.status).to.equal(0);
  });

  it('status, logs and cycle answer an unreachable cluster with one line and exit 1, never a stack trace', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kubeconfig-'));
    const kubeconfig = join(dir, 'config');
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]',
        'users: [{name: u, user: {}}]',
        'contexts: [{name: x, context: {cluster: c, user: u, namespace: team-a}}]',
        'current-context: x',
      ].join('\n'),
    );
    for (const command of ['status', 'logs', 'cycle']) {
      const result = spawnSync(
        process.execPath,
        ['--import', 'tsx', ENTRY, command, 'eth', '--kubeconfig', kubeconfig],
        {
          encoding: 'utf8',
          timeout: 60_000,
        },
      );
      expect(result.status, `${command}: ${result.stderr}`).to.equal(1);
      expect(result.stderr.trim().split('\n'), command).to.have.length(1);
      // The namespace comes from the kubeconfig's context.
      expect(result.stderr, command).to.include('team-a').and.not.include('    at ');
    }
    const usage = spawnSync(process.execPath, ['--import', 'tsx', ENTRY, 'status'], { encoding: 'utf8' });
    expect(usage.status).to.equal(2);
    expect(usage.stderr).to.include('Expected exactly one OracleNode name');
  });

  it('prints bash and zsh completion for every command', () => {
    const bash = bashCompletion();
    const zsh = zshCompletion();
    for (const name of Object.keys(subcommands)) {
      expect(bash).to.include(name);
      expect(zsh).to.include(`'${name}:`);
    }
    const syntax = spawnSync('bash', ['-n'], { input: bash, encoding: 'utf8' });
    expect(syntax.status, syntax.stderr).to.equal(0);
    expect(bash).to.include('complete -F _oracle_node kubectl-oracle_node');
    expect(zsh.split('\n')[0]).to.equal('#compdef oracle-node kubectl-oracle_node');
  });

  it('creates the Job `kubectl create job --from=cronjob/...` would, owned by the CronJob', () => {
    const cronJob: V1CronJob = {
      metadata: { name: 'a'.repeat(60), uid: 'uid-1' },
      spec: {
        schedule: '* * * * *',
        jobTemplate: {
          metadata: { labels: { 'app.kubernetes.io/component': 'coordinator' } },
          spec: { backoffLimit: 0, template: { spec: { containers: [{ name: 'coordinator' }] } } },
        },
      },
    };
    const job = jobFromCronJob(cronJob, new Date('2026-11-24T00:00:00Z'));
    expect(job.metadata!.name!.length).to.be.at.most(63);
    expect(job.metadata!.labels).to.deep.equal({ 'app.kubernetes.io/component': 'coordinator' });
    expect(job.metadata!.annotations).to.deep.equal({ [INSTANTIATE_ANNOTATION]: 'manual' });
    expect(job.metadata!.ownerReferences![0]).to.include({ kind: 'CronJob', uid: 'uid-1', controller: true });
    expect(job.spec).to.deep.equal(cronJob.spec!.jobTemplate.spec);
  });

  it('reads the newest coordinator Job and the workers of its cycle', () => {
    const job = (name: string, time: string): V1Job => ({
      metadata: { name, creationTimestamp: new Date(time) },
      status: { startTime: new Date(time) },
    });
    const picked = latestJobs(
      [job('c-old', '2026-11-24T00:00:00Z'), job('c-new', '2026-11-24T00:01:00Z')],
      [job('w-old', '2026-11-24T00:00:05Z'), job('w-new', '2026-11-24T00:01:05Z')],
    );
    expect(picked.coordinator?.metadata?.name).to.equal('c-new');
    expect(picked.workers.map((w) => w.metadata?.name)).to.deep.equal(['w-new']);
    expect(latestJobs([], [job('w', '2026-11-24T00:00:00Z')])).to.deep.equal({ workers: [] });
  });

  it('shows conditions, gateways, cycles, providers, wallets and failed requests', () => {
    const requestId = `0x${'ab'.repeat(32)}`;
    const node = {
      apiVersion: 'oracle-node.io/v1alpha1',
      kind: 'OracleNode',
      metadata: { name: 'eth', namespace: 'oracles' },
      spec: { config: {} },
      status: {
        stage: 'dev',
        nodeAddress: '0xA30CA71Ba54E83127214D3271aEA8F5D6bD4Dace',
        chainIds: ['1'],
        conditions: [
          {
            type: 'Ready',
            status: 'False',
            reason: 'GatewayNotReady',
            message: 'Gateway Deployment eth-dev-gateway is rolling out',
            lastTransitionTime: '2026-11-24T00:00:00Z',
          },
        ],
        gatewayUrls: { httpGateway: 'http://eth-dev-gateway.oracles.svc.cluster.local:3000' },
        publicGatewayUrl: 'https://oracle.example.org',
        recentFailedRequests: [
          { chainId: '1', requestId, reason: 'API call failed with status code 429', job: 'eth-dev-coordinator-1' },
        ],
        cycles: [
          {
            job: 'eth-dev-coordinator-1',
            startTime: '2026-11-24T00:04:00Z',
            durationSeconds: 3.5,
            fulfilled: 4,
            failed: 1,
            dropped: 0,
            errors: { heartbeat: 1 },
            blocks: [{ chainId: '1', provider: 'main', block: 1234 }],
            heartbeat: 'Failed',
          },
        ],
        lastCycle: {
          job: 'eth-dev-coordinator-1',
          outcome: 'Succeeded',
          providers: [{ chainId: '1', provider: 'main', up: true, blockLag: 0 }],
          sponsorWallets: [
            {
              chainId: '1',
              sponsorWallet: '0x228A54F33E46fbb32a62ca650Fcc9eD3C730511d',
              balanceWei: '1500000000000000000',
            },
          ],
          gasPrices: [{ chainId: '1', gasPriceWei: '1100000000' }],
        },
      },
    } as OracleNode;
    const text = renderStatus(node, { name: 'eth-dev-gateway', ready: 0, wanted: 1 }, new Date('2026-11-24T00:05:00Z'));
    expect(text).to.include('Ready: False (GatewayNotReady)');
    expect(text).to.include('https://oracle.example.org').and.include('0/1 ready');
    expect(text).to.match(/60s ago +3\.5s +4 +1 +0 +Failed +heartbeat=1 +eth-dev-coordinator-1/);
    expect(text).to.match(/1 +main +yes +1234 +0/);
    expect(text).to.include('1.5 (native)');
    expect(text).to.include('chain 1 1.1 gwei');
    expect(text).to.include(requestId).and.include('API call failed with status code 429');
    expect(text).to.not.include('Role:');
    // A standby: quiet while the primary serves, serving (the primary is down) when its last cycle sent.
    const standby = (standbyServed: number) =>
      renderStatus(
        {
          ...node,
          spec: { ...node.spec, redundancy: { standbyDelayBlocks: 6 } },
          status: {
            ...node.status,
            lastCycle: {
              ...node.status!.lastCycle!,
              role: 'standby',
              counts: { fulfilled: standbyServed, standbyServed },
            },
          },
        } as OracleNode,
        undefined,
        new Date('2026-11-24T00:05:00Z'),
      );
    expect(standby(0)).to.include('Role: standby (6 blocks): quiet, the primary serves');
    expect(standby(2)).to.include(
      'Role: standby (6 blocks): SERVING, 2 request(s) in the last cycle: the primary is down',
    );
    // A node the operator has not seen yet still renders.
    expect(renderStatus({ ...node, status: {} }, undefined, new Date())).to.include('none yet');
  });
});
