// The coordinator window hand-over (issue 36, item 1; docs/chain-cycle.md, "The hand-over"): consecutive windows
// overlap and the node's coordinator Lease on the real apiserver keeps exactly one of them sending. kwok runs no real
// processes, so the coordinators run as `oracle-node coordinator` processes on the host with the environment of the
// operator's live CronJob and its ServiceAccount's token (so the Role's Lease rules are what is tested), against
// anvil with the real AirnodeRrpV0. Their API calls run in-process (without the worker template: kwok would run no
// worker either). Each process reaches the chain through its own recording proxy: its calls and their times say when
// it polled and what it sent.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi, type V1CronJob } from '@kubernetes/client-node';
import { expect } from 'chai';
import { ENV } from '../../../src/contract/pods.js';
import { HANDOVER_LEASE_DURATION_MS } from '../../../src/node/kubernetes/handover.js';
import { API_VERSION, GROUP, KIND, type OracleNode, PLURAL, VERSION } from '../../../src/operator/resource.js';
import { ORACLE_NODE_ARGS, repoRoot } from '../../support/binary.js';
import { rpc, setBalance, startTestChain } from '../../support/chain.js';
import {
  type ApiServer,
  buildConfigJson,
  createSponsor,
  NODE_ADDRESS,
  requestEvents,
  requestPrice,
  startApiServer,
  writeNodeFiles,
} from '../../support/harness.js';
import { type RecordingProxy, startRecordingProxy } from '../../support/rpc-proxy.js';
import { FaultProxy } from '../kube/harness.js';
import { api, apply, serviceAccountKubeConfig, sleep, useNamespace, waitFor } from '../support/cluster.js';
import {
  installCrd,
  type RunningOperator,
  read,
  sampleDocs,
  serviceAccountKubeConfigFile,
  startOperator,
} from './support.js';

const POLL_SECONDS = 0.5;
/** The bound of the issue: polls never stop for longer than about twice the poll interval plus one second. */
const GAP_BOUND_MS = 2 * POLL_SECONDS * 1000 + 1000;
/** This machine runs five test suites at once: the gap is asserted with that much room on top of the bound. */
const LOADED_MACHINE_TOLERANCE_MS = 2000;

type Coordinator = {
  name: string;
  child: ChildProcess;
  proxy: RecordingProxy;
  /** Every chain call the process made, with its time. */
  calls: { method: string; at: number }[];
  stderr: () => string;
  exited: Promise<number | null>;
};

describe('the coordinator window hand-over through the node Lease (integration, anvil)', function () {
  this.timeout(240_000);
  const namespace = useNamespace('onode-handover');
  let operator: RunningOperator;
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  let apiServer: ApiServer;
  let dir: string;
  let kubeconfig: string;
  let podEnv: NodeJS.ProcessEnv;
  const running: Coordinator[] = [];

  before(async () => {
    await installCrd();
    operator = startOperator(namespace.name);
    chain = await startTestChain();
    apiServer = await startApiServer();
    await setBalance(chain.anvil.url, NODE_ADDRESS, 10n ** 20n);
    dir = mkdtempSync(join(tmpdir(), 'handover-'));
    // The operator's children of the node: its CronJob (suspended: kwok would only fake its runs) and the Role.
    const { node, secret } = sampleDocs('minimal', namespace.name);
    node.spec.coordinator = { ...node.spec.coordinator, suspend: true } as typeof node.spec.coordinator;
    await apply(secret);
    await apply(node);
    const cronJob = await waitFor(
      async () => read<V1CronJob>('batch/v1', 'CronJob', namespace.name, 'minimal-dev-coordinator'),
      60_000,
      { description: 'the coordinator CronJob', intervalMs: 300 },
    );
    const args = cronJob.spec!.jobTemplate.spec!.template.spec!.containers[0]!.args!;
    expect(args.slice(-2)).to.deep.equal(['--handover-lease', 'minimal-coordinator']);
    // The pod's plain variables, without the worker template (API calls in-process) and the mounted config path.
    podEnv = { [ENV.namespace]: namespace.name };
    for (const variable of cronJob.spec!.jobTemplate.spec!.template.spec!.containers[0]!.env ?? [])
      if (variable.value !== undefined && variable.name !== ENV.workerTemplate && variable.name !== ENV.configPath)
        podEnv[variable.name] = variable.value;
    await waitFor(
      () => api(CoreV1Api).readNamespacedServiceAccount({ namespace: namespace.name, name: 'minimal-dev-coordinator' }),
      60_000,
      'the coordinator ServiceAccount',
    );
    kubeconfig = await serviceAccountKubeConfigFile(namespace.name, 'minimal-dev-coordinator', join(dir, 'kubeconfig'));
  });
  afterEach(async () => {
    for (const coordinator of running.splice(0)) {
      coordinator.child.kill('SIGKILL');
      await coordinator.exited;
      await coordinator.proxy.close();
    }
  });
  after(async () => {
    await operator?.stop();
    await apiServer?.close();
    await chain?.anvil.stop();
  });

  /** `oracle-node coordinator --window <window> --poll-interval 0.5 --handover-lease minimal-coordinator`. */
  async function startCoordinator(name: string, windowSeconds: number, credentials = kubeconfig): Promise<Coordinator> {
    const proxy = await startRecordingProxy(chain.anvil.url);
    const calls: { method: string; at: number }[] = [];
    // No fault: the rule only stamps each call with its time.
    proxy.setFault(({ method }) => {
      calls.push({ method, at: Date.now() });
      return undefined;
    });
    const { config, secrets } = buildConfigJson({
      providers: { local: proxy.url },
      deployment: chain.deployment,
      apiUrl: apiServer.url,
    });
    (config.nodeSettings as Record<string, unknown>).logLevel = 'INFO';
    const files = writeNodeFiles(dir, { config, secrets }, `${name}-`);
    const child = spawn(
      process.execPath,
      [
        ...ORACLE_NODE_ARGS,
        'coordinator',
        ...files.args,
        '--cache-dir',
        join(dir, `${name}-cache`),
        '--window',
        String(windowSeconds),
        '--poll-interval',
        String(POLL_SECONDS),
        '--handover-lease',
        'minimal-coordinator',
      ],
      { cwd: repoRoot, stdio: 'pipe', env: { ...process.env, ...podEnv, KUBECONFIG: credentials } },
    );
    let stderr = '';
    child.stderr?.on('data', (chunk) => {
      stderr += chunk;
    });
    child.stdout?.resume();
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const coordinator = { name, child, proxy, calls, stderr: () => stderr, exited };
    running.push(coordinator);
    return coordinator;
  }
  const logged = (coordinator: Coordinator, message: string) =>
    waitFor(() => coordinator.stderr().includes(message), 60_000, {
      description: () => `${coordinator.name}: "${message}"\n${coordinator.stderr()}`,
      intervalMs: 50,
    });
  /** Up: waiting for the lease, or (were the lease not respected) already holding it. */
  const started = (coordinator: Coordinator) =>
    waitFor(
      () =>
        ['waiting for the coordinator lease', 'holds the coordinator lease'].some((m) =>
          coordinator.stderr().includes(m),
        ),
      60_000,
      { description: () => `${coordinator.name} up\n${coordinator.stderr()}`, intervalMs: 50 },
    );
  const polls = (coordinator: Coordinator) =>
    coordinator.calls.filter((call) => call.method === 'eth_blockNumber').map((call) => call.at);
  /** The longest time between two polls (head reads) of any of the coordinators, from the first to the last. */
  const longestGap = (...coordinators: Coordinator[]) => {
    const times = coordinators.flatMap(polls).sort((a, b) => a - b);
    let gap = 0;
    for (let i = 1; i < times.length; i++) gap = Math.max(gap, times[i]! - times[i - 1]!);
    return gap;
  };
  const sent = (coordinator: Coordinator) => coordinator.calls.filter((c) => c.method === 'eth_sendRawTransaction');

  it('the next run waits while the window polls, takes over when it ends, and a request made meanwhile is fulfilled once', async () => {
    const sponsor = await createSponsor(chain.deployment, 'handover');
    const first = await startCoordinator('first', 10);
    await logged(first, 'holds the coordinator lease');
    await waitFor(() => polls(first).length >= 3, 60_000, 'the first window polls');
    const second = await startCoordinator('second', 14);
    await started(second);
    // While the second waits, only the first reads the chain.
    expect(second.stderr()).not.to.include('holds the coordinator lease');
    expect(second.calls.filter((call) => call.method !== 'eth_chainId')).to.deep.equal([]);
    // Requests at moments spread over the hand-over, until the second has polled a few times.
    const requests: string[] = [];
    while (!second.stderr().includes('holds the coordinator lease') || polls(second).length < 3) {
      requests.push(await requestPrice(chain.deployment, sponsor));
      await sleep(300);
    }
    expect(await first.exited, first.stderr()).to.equal(0);
    // Exactly one sending at any moment: the first's last chain call comes before the second's first cycle.
    const firstEnd = Math.max(...first.calls.map((call) => call.at));
    const secondStart = Math.min(
      ...second.calls.filter((call) => call.method !== 'eth_chainId').map((call) => call.at),
    );
    expect(firstEnd).to.be.below(secondStart);
    expect(first.stderr()).to.include('released the lease');
    // Every request fulfilled exactly once, by one transaction each.
    await waitFor(
      async () => {
        for (const id of requests) if ((await requestEvents(chain.deployment, id)).fulfilled.length === 0) return false;
        return true;
      },
      60_000,
      'every request fulfilled',
    );
    for (const id of requests) expect(await requestEvents(chain.deployment, id)).to.deep.include({ failed: [] });
    for (const id of requests) expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
    expect(sent(first).length + sent(second).length).to.equal(requests.length);
    expect(
      Number(await rpc<string>(chain.anvil.url, 'eth_getTransactionCount', [sponsor.sponsorWallet, 'latest'])),
    ).to.equal(requests.length);
    const gap = longestGap(first, second);
    process.stdout.write(
      `      hand-over: longest time between two polls ${gap} ms (bound ${GAP_BOUND_MS} ms); ${requests.length} requests, ${sent(first).length} sent by the first, ${sent(second).length} by the second\n`,
    );
    expect(gap).to.be.below(GAP_BOUND_MS + LOADED_MACHINE_TOLERANCE_MS);
  });

  it('a killed holder is taken over once its lease runs out, and a request made meanwhile is fulfilled once', async () => {
    const sponsor = await createSponsor(chain.deployment, 'killed');
    const holder = await startCoordinator('holder', 60);
    await logged(holder, 'holds the coordinator lease');
    await waitFor(() => polls(holder).length >= 3, 60_000, 'the holder polls');
    const next = await startCoordinator('next', 60);
    await started(next);
    expect(next.stderr()).not.to.include('holds the coordinator lease');
    holder.child.kill('SIGKILL');
    await holder.exited;
    const killedAt = Date.now();
    const id = await requestPrice(chain.deployment, sponsor);
    await logged(next, 'holds the coordinator lease');
    await waitFor(async () => (await requestEvents(chain.deployment, id)).fulfilled.length === 1, 60_000, 'fulfilled');
    expect(await requestEvents(chain.deployment, id)).to.deep.include({ failed: [] });
    expect(sent(holder)).to.deep.equal([]);
    expect(sent(next)).to.have.length(1);
    // Not before the lease ran out by the waiting run's clock (it never trusts the holder's).
    const firstCycle = Math.min(...next.calls.filter((call) => call.method !== 'eth_chainId').map((call) => call.at));
    expect(firstCycle - killedAt).to.be.above(0);
    const gap = longestGap(holder, next);
    process.stdout.write(
      `      killed holder: longest time between two polls ${gap} ms (lease ${HANDOVER_LEASE_DURATION_MS} ms)\n`,
    );
    expect(gap).to.be.above(GAP_BOUND_MS);
    expect(gap).to.be.below(HANDOVER_LEASE_DURATION_MS + GAP_BOUND_MS + LOADED_MACHINE_TOLERANCE_MS);
    next.child.kill('SIGTERM');
    expect(await next.exited, next.stderr()).to.equal(0);
  });

  it('a holder stopped (SIGSTOP) past its Lease while a slow provider that refuses batches holds a send sends nothing more when it resumes beside the new holder', async () => {
    const sponsor = await createSponsor(chain.deployment, 'paused');
    const holder = await startCoordinator('paused', 60);
    await logged(holder, 'holds the coordinator lease');
    await waitFor(() => polls(holder).length >= 3, 60_000, 'the holder polls');
    const next = await startCoordinator('beside', 60);
    await started(next);
    // The holder's provider takes no batches and answers each transaction a second late; at the first one the holder
    // is stopped (the transaction reached the chain, its answer waits in the socket).
    holder.proxy.refuseBatches('per-entry');
    let stoppedAt: number | undefined;
    holder.proxy.setFault(({ method }) => {
      holder.calls.push({ method, at: Date.now() });
      if (method !== 'eth_sendRawTransaction') return undefined;
      if (stoppedAt === undefined) {
        stoppedAt = Date.now();
        holder.child.kill('SIGSTOP');
      }
      return { delayMs: 1_000 };
    });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await requestPrice(chain.deployment, sponsor));
    // The new holder takes over once the Lease has run out, and serves the three the stopped one had not sent.
    await logged(next, 'holds the coordinator lease');
    const servedBy = async (id: string) => (await requestEvents(chain.deployment, id)).fulfilled.length === 1;
    await waitFor(
      async () => {
        for (const id of ids) if (!(await servedBy(id))) return false;
        return true;
      },
      60_000,
      'every request fulfilled',
    );
    const sentBeforeResume = sent(holder).length;
    expect(sentBeforeResume).to.equal(1);
    // Resumed beside the new holder, its Lease long run out: it sends nothing more, reports and exits.
    holder.child.kill('SIGCONT');
    await logged(holder, 'lost the coordinator lease: nothing new is sent');
    expect(await holder.exited, holder.stderr()).to.equal(0);
    expect(sent(holder)).to.have.length(sentBeforeResume);
    for (const id of ids) expect(await requestEvents(chain.deployment, id)).to.deep.include({ failed: [] });
    for (const id of ids) expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
    expect(sent(next)).to.have.length(3);
    next.child.kill('SIGTERM');
    expect(await next.exited, next.stderr()).to.equal(0);
  });

  it('a window that cannot renew its lease stops sending at once; the next run takes over once it has run out', async () => {
    const sponsor = await createSponsor(chain.deployment, 'lost');
    // The holder reaches the apiserver through a proxy that forwards with the ServiceAccount's token until the test
    // has it refuse that token (401, what the apiserver answers once the ServiceAccount is gone). The proxy makes the
    // moment the test's: a deleted ServiceAccount's token is refused only once the apiserver's 10 s token cache lets
    // go of it, and not at all while its informer still lists the old ServiceAccount.
    const proxy = new FaultProxy(await serviceAccountKubeConfig(namespace.name, 'minimal-dev-coordinator'));
    await proxy.start();
    try {
      const proxied = join(dir, 'proxied.kubeconfig');
      writeFileSync(proxied, proxy.clientConfig().exportConfig());
      const holder = await startCoordinator('cut-off', 60, proxied);
      await logged(holder, 'holds the coordinator lease');
      await waitFor(() => polls(holder).length >= 3, 60_000, 'the holder polls');
      proxy.mode = { status: 401 };
      await logged(holder, 'lost the coordinator lease: nothing new is sent');
      const stoppedAt = Date.now();
      expect(await holder.exited, holder.stderr()).to.equal(0);
      // It stopped because its renewals were refused (its Lease calls got the 401), not for a reason of its own.
      expect(proxy.log.filter((call) => call.status === 401 && call.path.includes('/leases/'))).not.to.deep.equal([]);
      const id = await requestPrice(chain.deployment, sponsor);
      expect(holder.calls.filter((call) => call.at > stoppedAt && call.method === 'eth_blockNumber')).to.deep.equal([]);
      expect(sent(holder)).to.deep.equal([]);
      const next = await startCoordinator('after-loss', 60);
      await logged(next, 'holds the coordinator lease');
      await waitFor(
        async () => (await requestEvents(chain.deployment, id)).fulfilled.length === 1,
        60_000,
        'fulfilled',
      );
      expect(await requestEvents(chain.deployment, id)).to.deep.include({ failed: [] });
      expect(sent(next)).to.have.length(1);
      next.child.kill('SIGTERM');
      expect(await next.exited, next.stderr()).to.equal(0);
    } finally {
      await proxy.stop();
    }
  });

  it('the Lease the coordinators created is owned by the OracleNode and deleted with it', async () => {
    const lease = () =>
      api(CoordinationV1Api)
        .readNamespacedLease({ namespace: namespace.name, name: 'minimal-coordinator' })
        .catch(() => undefined);
    const node = await read<OracleNode>(API_VERSION, KIND, namespace.name, 'minimal');
    expect((await lease())?.metadata?.ownerReferences).to.deep.equal([
      { apiVersion: API_VERSION, kind: KIND, name: 'minimal', uid: node!.metadata.uid },
    ]);
    await api(CustomObjectsApi).deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: namespace.name,
      plural: PLURAL,
      name: 'minimal',
    });
    await waitFor(async () => ((await lease()) === undefined ? true : undefined), 60_000, {
      description: 'the Lease garbage-collected with its OracleNode',
      intervalMs: 300,
    });
  });
});
