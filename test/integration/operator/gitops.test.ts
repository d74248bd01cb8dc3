// GitOps health against the real test control plane: the status of real OracleNodes, read by kstatus
// (sigs.k8s.io/cli-utils, what Flux's health checks use) and by the Argo CD health check and actions of
// manifests/argocd/argocd-cm-patch.yaml, run in gopher-lua as Argo CD runs them, over the states a node goes
// through. Both readers are the Go programs under test/tools/, built by test/cluster/build.sh.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatchV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { expect } from 'chai';
import yaml from 'js-yaml';
import { ANNOTATIONS, API_VERSION, KIND, type OracleNode } from '../../../src/operator/resource.js';
import { api, apply, useNamespace, waitFor } from '../support/cluster.js';
import { clusterBinDir } from '../support/kubectl.js';
import { condition, installCrd, type RunningOperator, readNode, sampleDocs, startOperator } from './support.js';

type KstatusResult = { status: string; message: string; conditions: { type: string; reason?: string }[] };
type ArgoHealth = { status: string; message: string };

const customizations = (
  yaml.load(readFileSync(new URL('../../../manifests/argocd/argocd-cm-patch.yaml', import.meta.url), 'utf8')) as {
    data: Record<string, string>;
  }
).data;
const actions = yaml.load(customizations['resource.customizations.actions.oracle-node.io_OracleNode']!) as {
  'discovery.lua': string;
  definitions: { name: string; 'action.lua': string }[];
};
const scripts = mkdtempSync(join(tmpdir(), 'argocd-lua-'));
function script(name: string, text: string): string {
  const path = join(scripts, name);
  writeFileSync(path, text);
  return path;
}
const HEALTH = script('health.lua', customizations['resource.customizations.health.oracle-node.io_OracleNode']!);
const DISCOVERY = script('discovery.lua', actions['discovery.lua']);
const action = (name: string) => script(`${name}.lua`, actions.definitions.find((d) => d.name === name)!['action.lua']);

/** Runs one of the test tools with the object as JSON on stdin; resolves with its parsed JSON output. */
function tool<T>(name: string, args: string[], input: unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = execFile(join(clusterBinDir, name), args, { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${name} ${args.join(' ')}: ${stderr || error.message}`));
      else resolve(JSON.parse(stdout) as T);
    });
    child.stdin?.end(JSON.stringify(input));
  });
}
const kstatus = (object: unknown) => tool<KstatusResult>('kstatus', [], object);
const argoHealth = (object: unknown) => tool<ArgoHealth>('argocd-lua', ['health', HEALTH], object);

describe('GitOps health: kstatus and the Argo CD health check over the states of an OracleNode (integration)', function () {
  this.timeout(240_000);
  const namespace = useNamespace('onode-gitops');
  let operator: RunningOperator | undefined;
  const ns = () => namespace.name;

  before(async () => {
    await installCrd();
  });
  after(async () => {
    await operator?.stop();
  });

  /** The live object and what both readers make of it. */
  async function health(name: string) {
    const node = (await readNode(ns(), name))!;
    const [k, argo] = await Promise.all([kstatus(node), argoHealth(node)]);
    return { node, kstatus: k, argo };
  }
  async function editNode(name: string, edit: (node: OracleNode) => void) {
    const live = (await readNode(ns(), name))!;
    const desired = {
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name, namespace: ns(), annotations: live.metadata.annotations ?? {} },
      spec: live.spec,
    } as OracleNode;
    edit(desired);
    await apply(desired);
  }
  const settled = (name: string, predicate: (node: OracleNode) => boolean, description: string) =>
    waitFor(
      async () => {
        const node = await readNode(ns(), name);
        return node && node.status?.observedGeneration === node.metadata.generation && predicate(node)
          ? node
          : undefined;
      },
      120_000,
      { description: `${name}: ${description}`, intervalMs: 300 },
    );
  const readyNode = (name: string) => settled(name, (n) => condition(n, 'Ready')?.status === 'True', 'Ready');

  it('created, before the operator has seen it: kstatus InProgress (generation 1, observed 0), Argo CD Progressing', async () => {
    const { node, secret } = sampleDocs('minimal', ns());
    await apply(secret);
    await apply(node);
    const seen = await health('minimal');
    expect(seen.node.status).to.deep.equal({ observedGeneration: 0 });
    expect(seen.kstatus).to.deep.include({
      status: 'InProgress',
      message: 'OracleNode generation is 1, but latest observed generation is 0',
    });
    expect(seen.argo).to.deep.equal({
      status: 'Progressing',
      message: 'Waiting for the operator to reconcile the latest spec',
    });
  });

  it('ready: kstatus Current, Argo CD Healthy with the Ready message', async () => {
    operator = startOperator(ns());
    await readyNode('minimal');
    const seen = await health('minimal');
    const kstatusTypes = seen.node.status?.conditions?.filter((c) => c.type === 'Reconciling' || c.type === 'Stalled');
    expect(kstatusTypes).to.deep.equal([]);
    expect(seen.kstatus).to.deep.include({ status: 'Current', message: 'Resource is Ready' });
    expect(seen.argo).to.deep.equal({ status: 'Healthy', message: 'Stage dev is serving' });
  });

  it('progressing (a gateway that cannot become available): Reconciling, kstatus InProgress, Argo CD Progressing', async () => {
    const { node, secret } = sampleDocs('gateways-only', ns());
    node.spec.nodeSelector = { 'oracle-node.test/no-such-node': 'true' };
    await apply(secret);
    await apply(node);
    await settled('gateways', (n) => condition(n, 'Reconciling')?.status === 'True', 'Reconciling');
    const seen = await health('gateways');
    expect(condition(seen.node, 'Reconciling')).to.include({ reason: 'GatewayRollingOut' });
    expect(seen.kstatus).to.deep.include({
      status: 'InProgress',
      message: 'Gateway Deployment gateways-dev-gateway is rolling out',
    });
    expect(seen.argo).to.deep.equal({
      status: 'Progressing',
      message: 'Gateway Deployment gateways-dev-gateway is rolling out',
    });
    await editNode('gateways', (n) => {
      delete n.spec.nodeSelector;
    });
    await readyNode('gateways');
    expect((await health('gateways')).kstatus.status).to.equal('Current');
  });

  it('bad config: Stalled, kstatus Failed, Argo CD Degraded with the path; fixed, Current again', async () => {
    await editNode('minimal', (node) => {
      (node.spec.config.triggers as { rrp: { endpointName: string }[] }).rrp[0]!.endpointName = 'noSuchEndpoint';
    });
    await settled('minimal', (n) => condition(n, 'Stalled')?.status === 'True', 'Stalled');
    const seen = await health('minimal');
    expect(condition(seen.node, 'Stalled')).to.include({ reason: 'ValidationFailed' });
    expect(seen.kstatus.status).to.equal('Failed');
    expect(seen.kstatus.message).to.contain('triggers.rrp[0]');
    expect(seen.argo.status).to.equal('Degraded');
    expect(seen.argo.message).to.contain('triggers.rrp[0]');
    await editNode('minimal', (node) => {
      (node.spec.config.triggers as { rrp: { endpointName: string }[] }).rrp[0]!.endpointName = 'convertToUSD';
    });
    await readyNode('minimal');
    const fixed = await health('minimal');
    expect(condition(fixed.node, 'Stalled')).to.equal(undefined);
    expect([fixed.kstatus.status, fixed.argo.status]).to.deep.equal(['Current', 'Healthy']);
  });

  it('a Secret that does not exist yet: Reconciling, kstatus InProgress, Argo CD Progressing', async () => {
    const { node } = sampleDocs('minimal', ns());
    node.metadata.name = 'waiting';
    node.spec.secretRef = { name: 'not-yet-created' };
    await apply(node);
    await settled('waiting', (n) => condition(n, 'Reconciling')?.status === 'True', 'Reconciling');
    const seen = await health('waiting');
    expect(condition(seen.node, 'Reconciling')).to.include({ reason: 'SecretNotFound' });
    expect(seen.kstatus.status).to.equal('InProgress');
    expect(seen.argo.status).to.equal('Progressing');
  });

  it('stage rollout held by an in-flight cycle: kstatus InProgress, Argo CD Progressing; done, Current', async () => {
    // A coordinator cycle of the old stage still in flight (suspended, so it stays active until released).
    const blocker = await api(BatchV1Api).createNamespacedJob({
      namespace: ns(),
      body: {
        metadata: {
          name: 'minimal-dev-coordinator-inflight',
          labels: {
            'app.kubernetes.io/managed-by': 'oracle-node-operator',
            'oracle-node.io/name': 'minimal',
            'oracle-node.io/stage': 'dev',
            'app.kubernetes.io/component': 'coordinator',
          },
        },
        spec: {
          suspend: true,
          template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'oracle-node:0.1.0' }] } },
        },
      },
    });
    await editNode('minimal', (node) => {
      (node.spec.config.nodeSettings as { stage: string }).stage = 'prod';
    });
    await settled('minimal', (n) => condition(n, 'Reconciling')?.reason === 'StageRollout', 'the rollout waiting');
    const seen = await health('minimal');
    expect(seen.kstatus.status).to.equal('InProgress');
    expect(seen.kstatus.message).to.contain('minimal-dev-coordinator-inflight');
    expect(seen.argo.status).to.equal('Progressing');
    expect(seen.argo.message).to.contain('minimal-dev-coordinator-inflight');
    await api(BatchV1Api).patchNamespacedJob(
      { name: blocker.metadata!.name!, namespace: ns(), body: { spec: { suspend: false } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await settled('minimal', (n) => n.status?.stage === 'prod' && condition(n, 'Ready')?.status === 'True', 'prod');
    const done = await health('minimal');
    expect([done.kstatus.status, done.argo]).to.deep.equal([
      'Current',
      { status: 'Healthy', message: 'Stage prod is serving' },
    ]);
  });

  it('paused: Argo CD Suspended; kstatus Current until the spec changes, then InProgress (the change is not applied)', async () => {
    await editNode('minimal', (node) => {
      node.metadata.annotations = { ...node.metadata.annotations, [ANNOTATIONS.paused]: 'true' };
    });
    await settled('minimal', (n) => condition(n, 'Progressing')?.reason === 'Paused', 'Paused');
    const paused = await health('minimal');
    expect(paused.kstatus.status).to.equal('Current');
    expect(paused.argo).to.deep.equal({
      status: 'Suspended',
      message: 'Reconciliation is paused by the annotation oracle-node.io/paused=true',
    });
    await editNode('minimal', (node) => {
      node.spec.coordinator = { ...node.spec.coordinator, schedule: '*/5 * * * *' };
    });
    const edited = await waitFor(
      async () => {
        const node = await readNode(ns(), 'minimal');
        return node && node.metadata.generation! > node.status!.observedGeneration! ? node : undefined;
      },
      30_000,
      { description: 'the edit while paused' },
    );
    const [k, argo] = await Promise.all([kstatus(edited), argoHealth(edited)]);
    expect(k.status).to.equal('InProgress');
    expect(argo.status).to.equal('Suspended');
    await editNode('minimal', (node) => {
      delete node.metadata.annotations![ANNOTATIONS.paused];
    });
    await readyNode('minimal');
    expect((await health('minimal')).kstatus.status).to.equal('Current');
  });

  it('the Argo CD actions suspend and resume the coordinator through the spec; health says it is suspended', async () => {
    const live = (await readNode(ns(), 'minimal'))!;
    expect(await tool('argocd-lua', ['discovery', DISCOVERY], live)).to.deep.include({
      'suspend-coordinator': {
        iconClass: 'fa fa-fw fa-pause',
        displayName: 'Suspend the coordinator',
        disabled: false,
      },
      'resume-coordinator': { iconClass: 'fa fa-fw fa-play', displayName: 'Resume the coordinator', disabled: true },
    });
    // Argo CD patches the object with what the action returns; the spec is what it changes.
    const suspended = await tool<OracleNode>('argocd-lua', ['action', action('suspend-coordinator')], live);
    await editNode('minimal', (node) => {
      node.spec = suspended.spec;
    });
    const cronJobSuspended = async () =>
      (await api(BatchV1Api).readNamespacedCronJob({ name: 'minimal-prod-coordinator', namespace: ns() })).spec!
        .suspend;
    await waitFor(async () => (await cronJobSuspended()) === true, 60_000, { description: 'the CronJob suspended' });
    await readyNode('minimal');
    const seen = await health('minimal');
    expect(seen.argo).to.deep.equal({
      status: 'Healthy',
      message: 'Stage prod is serving; the coordinator is suspended (spec.coordinator.suspend)',
    });
    const discovered = await tool<Record<string, { disabled: boolean }>>(
      'argocd-lua',
      ['discovery', DISCOVERY],
      seen.node,
    );
    expect([discovered['suspend-coordinator']!.disabled, discovered['resume-coordinator']!.disabled]).to.deep.equal([
      true,
      false,
    ]);
    const resumed = await tool<OracleNode>('argocd-lua', ['action', action('resume-coordinator')], seen.node);
    expect(resumed.spec.coordinator?.suspend).to.equal(false);
    await editNode('minimal', (node) => {
      node.spec = resumed.spec;
    });
    await waitFor(async () => (await cronJobSuspended()) === false, 60_000, { description: 'the CronJob resumed' });
  });
});
