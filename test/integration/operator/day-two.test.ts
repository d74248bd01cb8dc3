// "What is my node doing?" against the real test control plane: the printer columns of `kubectl get onode`, the
// cycle history built from the coordinator's reports, the Warning Events of failed requests and heartbeats, and
// the CLI's `status` and `cycle` commands run as processes with the suite's kubeconfig.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BatchV1Api, CoreV1Api, type V1Job } from '@kubernetes/client-node';
import { expect } from 'chai';
import { kubeConfigMapStore } from '../../../src/node/kubernetes/config-map-store.js';
import { writeCycleReport } from '../../../src/node/kubernetes/cycle-report.js';
import { ORACLE_NODE_ARGS, repoRoot } from '../../support/binary.js';
import { recordLoadedModules } from '../../support/loaded-packages.js';
import { api, apply, kubeClient, kubeconfigPath, useNamespace, waitFor } from '../support/cluster.js';
import { condition, installCrd, type RunningOperator, readNode, sampleDocs, startOperator } from './support.js';

const run = promisify(execFile);
const binDir = process.env['CLUSTER_BIN_DIR'] ?? join(repoRoot, '.cache/cluster/bin');
const DEV_ADDRESS = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';
const REQUEST_ID = `0x${'ab'.repeat(32)}`;

describe('what is my node doing? (integration)', function () {
  this.timeout(180_000);
  const namespace = useNamespace('onode-day2');
  let operator: RunningOperator;
  const ns = () => namespace.name;

  before(async () => {
    await installCrd();
    operator = startOperator(namespace.name);
    const { node, secret } = sampleDocs('minimal', ns());
    // Cycles only when asked (`oracle-node cycle`), so the history holds exactly the reports this suite writes.
    node.spec.coordinator = { ...node.spec.coordinator, suspend: false, schedule: '0 0 31 2 *' };
    await apply(secret);
    await apply(node);
    await waitFor(async () => condition(await readNode(ns(), 'minimal'), 'Ready')?.status === 'True', 120_000, {
      description: 'minimal to be Ready',
      intervalMs: 500,
    });
  });
  after(async () => {
    await operator?.stop();
  });

  const oracleNode = (...args: string[]) =>
    run(process.execPath, [...ORACLE_NODE_ARGS, ...args, '-n', ns(), '--kubeconfig', kubeconfigPath], {
      cwd: repoRoot,
      timeout: 60_000,
    });
  /** The command's output and whether it loaded @kubernetes/client-node (the suite's user has a certificate). */
  async function oracleNodeLoading(...args: string[]) {
    const recorder = recordLoadedModules();
    try {
      const { stdout } = await run(
        process.execPath,
        [...recorder.nodeArgs, ...ORACLE_NODE_ARGS, ...args, '-n', ns(), '--kubeconfig', kubeconfigPath],
        { cwd: repoRoot, timeout: 60_000 },
      );
      return { stdout, clientNode: recorder.packages().has('@kubernetes/client-node') };
    } finally {
      recorder.remove();
    }
  }
  const kubectl = async (...args: string[]) =>
    (await run(join(binDir, 'kubectl'), ['--kubeconfig', kubeconfigPath, '-n', ns(), ...args])).stdout;

  async function report(job: string, extra: Record<string, unknown> = {}) {
    await writeCycleReport(kubeConfigMapStore(kubeClient(), ns(), 'minimal-cycle'), {
      job,
      outcome: 'Completed',
      startTime: new Date().toISOString(),
      durationMs: 4200,
      counts: { discovered: 4, fulfilled: 2, failed: 1, overChainLimit: 1, providersDown: 0 },
      providers: [{ chainId: '31337', provider: 'local', ok: true, currentBlock: 4321 }],
      ...extra,
    });
    return waitFor(
      async () => {
        const node = await readNode(ns(), 'minimal');
        return node?.status?.cycles?.[0]?.job === job ? node : undefined;
      },
      60_000,
      { description: `status.cycles to start with ${job}`, intervalMs: 300 },
    );
  }

  it('keeps the reported cycles in status.cycles, newest first, and shows the last one in kubectl get', async () => {
    await report('minimal-cycle-a', { heartbeat: 'Sent' });
    const node = await report('minimal-cycle-b', {
      heartbeat: 'Failed',
      failedRequests: [{ chainId: '31337', requestId: REQUEST_ID, reason: 'API call failed with status code 429' }],
    });
    expect(node.status!.cycles!.map((c) => c.job)).to.deep.equal(['minimal-cycle-b', 'minimal-cycle-a']);
    expect(node.status!.cycles![0]).to.deep.include({
      durationSeconds: 4.2,
      fulfilled: 2,
      failed: 1,
      dropped: 1,
      errors: { heartbeat: 1 },
      blocks: [{ chainId: '31337', provider: 'local', block: 4321 }],
      heartbeat: 'Failed',
    });

    const [header, row] = (await kubectl('get', 'onode', 'minimal')).trimEnd().split('\n');
    const names = header!.split(/\s{2,}/);
    expect(names).to.deep.equal([
      'NAME',
      'READY',
      'REASON',
      'STAGE',
      'LAST CYCLE',
      'FULFILLED',
      'FAILED',
      'ADDRESS',
      'AGE',
    ]);
    // Cells by the header's column positions: an empty cell (Reason while Ready) leaves only spaces.
    const starts: number[] = [];
    for (const name of names) starts.push(header!.indexOf(name, starts.at(-1) ?? 0));
    const cell = (name: string) => {
      const i = names.indexOf(name);
      return row!.slice(starts[i], starts[i + 1]).trim();
    };
    expect([cell('NAME'), cell('READY'), cell('REASON'), cell('STAGE')]).to.deep.equal(['minimal', 'True', '', 'dev']);
    expect(cell('LAST CYCLE')).to.match(/^\d+s$/);
    expect([cell('FULFILLED'), cell('FAILED'), cell('ADDRESS')]).to.deep.equal(['2', '1', DEV_ADDRESS]);
    // The wide output adds the number of chains.
    expect(await kubectl('get', 'onode', 'minimal', '-o', 'wide')).to.match(/CHAINS/);
  });

  it('records a Warning Event per failed request (with its id and reason) and one for a failed heartbeat', async () => {
    const core = api(CoreV1Api);
    const events = await waitFor(
      async () => {
        const list = await core.listNamespacedEvent({ namespace: ns() });
        const found = list.items.filter((e) => e.reason === 'RequestFailed' || e.reason === 'HeartbeatFailed');
        return found.length >= 2 ? found : undefined;
      },
      60_000,
      { description: 'RequestFailed and HeartbeatFailed Events', intervalMs: 500 },
    );
    const failed = events.find((e) => e.reason === 'RequestFailed')!;
    expect(failed.type).to.equal('Warning');
    expect(failed.involvedObject).to.include({ kind: 'OracleNode', name: 'minimal' });
    expect(failed.message).to.include(REQUEST_ID).and.include('API call failed with status code 429');
    expect(events.find((e) => e.reason === 'HeartbeatFailed')!.message).to.include('minimal-cycle-b');
  });

  it('`oracle-node status` shows conditions, the last cycles, providers and the failed requests', async () => {
    const { stdout, clientNode } = await oracleNodeLoading('status', 'minimal');
    // src/kube's client, not @kubernetes/client-node (~0.6 s and ~90 MiB to load).
    expect(clientNode).to.equal(false);
    expect(stdout).to.include(`OracleNode ${ns()}/minimal`);
    expect(stdout).to.match(/Ready: True/);
    expect(stdout).to.match(/Ready +True +Ready/);
    expect(stdout).to.match(/4\.2s +2 +1 +1 +Failed +heartbeat=1 +minimal-cycle-b/);
    expect(stdout).to.include(REQUEST_ID);
    const json = JSON.parse((await oracleNode('status', 'minimal', '-o', 'json')).stdout) as {
      status: { cycles: unknown[] };
    };
    expect(json.status.cycles).to.have.length(2);
    const missing = await oracleNode('status', 'no-such-node').catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(missing).to.include({ code: 1 });
    expect((missing as { stderr: string }).stderr).to.equal(`OracleNode ${ns()}/no-such-node not found\n`);
  });

  it('`oracle-node request --node` shows what the node recorded (request log, failed requests) when the chain cannot be read', async () => {
    const txHash = `0x${'cd'.repeat(32)}`;
    await writeCycleReport(
      kubeConfigMapStore(kubeClient(), ns(), 'minimal-cycle'),
      { job: 'minimal-cycle-c', outcome: 'Completed' },
      [
        {
          chainId: '31337',
          requestId: REQUEST_ID,
          state: 'failed',
          reason: 'API call failed with status code 429',
          lastSeen: { job: 'minimal-cycle-c', time: '2026-11-25T10:00:00.000Z' },
          madeInBlock: 4300,
          headBlock: 4321,
          api: { outcome: '4xx', durationMs: 87 },
          transaction: { hash: txHash, nonce: 3, provider: 'local' },
        },
      ],
    );
    // The sample's provider (anvil.default.svc) does not resolve here: the chain part is unavailable.
    const result = await oracleNode('request', REQUEST_ID, '--node', 'minimal').catch(
      (error: { code: number; stdout: string }) => error,
    );
    expect(result).to.include({ code: 1 });
    const { stdout } = result as { stdout: string };
    expect(stdout.split('\n')).to.deep.equal([
      `Request ${REQUEST_ID} on chain 31337`,
      '  Seen       by cycle minimal-cycle-c at 2026-11-25T10:00:00.000Z, head block 4321 (21 confirmations)',
      '  API call   HTTP 4xx in 87 ms',
      `  Submitted  fail transaction ${txHash} (nonce 3, provider local): API call failed with status code 429`,
      '  Failed     API call failed with status code 429 (cycle minimal-cycle-b)',
      stdout.split('\n').at(-2),
      '',
    ]);
    expect(stdout.split('\n').at(-2)).to.match(
      /^Status: unknown: the chain could not be read \(no provider of chain 31337 answered .*\); the node's records say: failed \(API call failed with status code 429\)$/,
    );
    // The provider URL is a Secret value: never printed.
    expect(stdout).to.not.include('anvil.default.svc');
  });

  it('`oracle-node cycle` refuses while a cycle runs (one cycle per tick), then creates a Job from the CronJob; with windows it does not refuse', async () => {
    const batch = api(BatchV1Api);
    const setPollInterval = async (pollInterval: number, policy: string) => {
      const { node } = sampleDocs('minimal', ns());
      node.spec.coordinator = {
        ...node.spec.coordinator,
        suspend: false,
        schedule: '0 0 31 2 *',
        pollInterval,
      } as typeof node.spec.coordinator;
      await apply(node);
      await waitFor(
        async () =>
          (await batch.readNamespacedCronJob({ name: 'minimal-dev-coordinator', namespace: ns() })).spec
            ?.concurrencyPolicy === policy,
        60_000,
        { description: `the CronJob's concurrencyPolicy ${policy}`, intervalMs: 300 },
      );
    };
    // One cycle per tick: no Lease, so a second coordinator must not start beside a running one.
    await setPollInterval(0, 'Forbid');
    // A coordinator Job that does not finish (suspended): a cycle is running.
    const blocker: V1Job = {
      metadata: {
        name: 'minimal-running-cycle',
        labels: { 'oracle-node.io/name': 'minimal', 'app.kubernetes.io/component': 'coordinator' },
      },
      spec: {
        suspend: true,
        template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'none' }] } },
      },
    };
    await batch.createNamespacedJob({ namespace: ns(), body: blocker });
    const refused = await oracleNode('cycle', 'minimal').catch((error: { code: number; stderr: string }) => error);
    expect(refused).to.include({ code: 1 });
    expect((refused as { stderr: string }).stderr).to.include('A cycle is running (Job minimal-running-cycle)');
    // Windows hand over through the coordinator Lease: the new run waits for it.
    await setPollInterval(1, 'Allow');
    const waiting = await oracleNode('cycle', 'minimal');
    expect(waiting.stdout.trim()).to.match(/^job\.batch\/\S+ created$/);
    expect(waiting.stderr).to.include('hands over the coordinator Lease');
    const waitingJob = /^job\.batch\/(\S+) created$/.exec(waiting.stdout.trim())![1]!;
    expect(
      (await batch.readNamespacedJob({ name: waitingJob, namespace: ns() })).spec!.template.spec!.containers[0]!.args,
    ).to.include('--handover-lease');
    await batch.deleteNamespacedJob({ name: waitingJob, namespace: ns(), propagationPolicy: 'Background' });
    await setPollInterval(0, 'Forbid');
    await batch.deleteNamespacedJob({
      name: 'minimal-running-cycle',
      namespace: ns(),
      propagationPolicy: 'Background',
    });
    await waitFor(
      async () =>
        (await batch.listNamespacedJob({ namespace: ns() })).items.every(
          (j) => j.metadata?.name !== blocker.metadata!.name,
        ),
      30_000,
      { description: 'the blocking Job to be gone' },
    );

    const { stdout } = await oracleNode('cycle', 'minimal');
    const name = /^job\.batch\/(\S+) created$/.exec(stdout.trim())?.[1];
    expect(name, stdout).to.be.a('string');
    const job: V1Job = await batch.readNamespacedJob({ name: name!, namespace: ns() });
    expect(job.metadata!.ownerReferences![0]).to.include({ kind: 'CronJob', name: 'minimal-dev-coordinator' });
    expect(job.metadata!.labels).to.include({ 'app.kubernetes.io/component': 'coordinator' });
    expect(job.spec!.template.spec!.containers[0]!.args).to.include('coordinator');

    // `logs` finds that newest coordinator Job and reads its pod (kwok's pods have no log to give).
    const logs = await oracleNode('logs', 'minimal');
    expect(logs.stdout).to.match(new RegExp(`^==> Job ${name}(:|,)`, 'm'));
  });
});
