import type { V1CronJob, V1Deployment, V1ServiceAccount } from '@kubernetes/client-node';
import { expect } from 'chai';
import {
  buildChildren,
  buildWorkerTemplate,
  type Child,
  DEFAULT_SETTINGS,
} from '../../../../src/operator/builders/index.js';
import { validateNodeConfig } from '../../../../src/operator/config.js';
import type { OracleNode } from '../../../../src/operator/resource.js';
import { loadSample } from '../fake-kube.js';

function inputFor(name: 'minimal' | 'full-multi-chain' | 'gateways-only', edit?: (node: OracleNode) => void) {
  const { node, secret } = loadSample(name);
  edit?.(node);
  const values = Object.fromEntries(
    Object.entries((secret as { data?: Record<string, string> }).data ?? {}).map(([k, v]) => [
      k,
      Buffer.from(v, 'base64').toString(),
    ]),
  );
  const result = validateNodeConfig(node.spec.config, values);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return {
    node,
    config: result.config,
    rawConfig: node.spec.config,
    secretName: secret.metadata!.name!,
    secretHash: 'h',
    settings: DEFAULT_SETTINGS,
  };
}

const objects = (children: { object: Child }[], kind: string) =>
  children.filter((child) => child.object.kind === kind).map((child) => child.object);
const deploymentOf = (children: { object: Child }[]) => objects(children, 'Deployment')[0] as V1Deployment;

describe('operator builders: gateway placement and identity', () => {
  it('the gateway runs under a ServiceAccount of its own, with no API token mounted', () => {
    const children = buildChildren(inputFor('full-multi-chain'));
    const pod = deploymentOf(children).spec!.template.spec!;
    expect(pod.serviceAccountName).to.equal('full-prod-a-gateway');
    expect(pod.automountServiceAccountToken).to.equal(false);
    const account = objects(children, 'ServiceAccount').find(
      (sa) => sa.metadata.name === 'full-prod-a-gateway',
    ) as V1ServiceAccount;
    expect(account.automountServiceAccountToken).to.equal(false);
    // No Role and no RoleBinding: the identity grants nothing.
    expect(objects(children, 'RoleBinding').map((binding) => binding.metadata.name)).not.to.include(
      'full-prod-a-gateway',
    );
    expect(objects(buildChildren(inputFor('minimal')), 'ServiceAccount').map((sa) => sa.metadata.name)).to.deep.equal([
      'minimal-dev-coordinator',
      'minimal-dev-worker',
    ]);
  });

  it('gateway replicas spread across nodes and zones, ScheduleAnyway, counted per revision', () => {
    const spread = deploymentOf(buildChildren(inputFor('full-multi-chain'))).spec!.template.spec!
      .topologySpreadConstraints!;
    expect(spread.map((constraint) => constraint.topologyKey)).to.deep.equal([
      'kubernetes.io/hostname',
      'topology.kubernetes.io/zone',
    ]);
    for (const constraint of spread) {
      expect(constraint).to.include({ maxSkew: 1, whenUnsatisfiable: 'ScheduleAnyway' });
      expect(constraint.labelSelector!.matchLabels).to.include({
        'oracle-node.io/name': 'full',
        'app.kubernetes.io/component': 'gateway',
      });
      expect(constraint.matchLabelKeys).to.deep.equal(['pod-template-hash']);
    }
  });

  it('spec.gateway.topologySpreadConstraints replaces the default spread; an empty list turns it off', () => {
    const zonesOnly = [
      {
        maxSkew: 2,
        topologyKey: 'topology.kubernetes.io/zone',
        whenUnsatisfiable: 'DoNotSchedule',
        labelSelector: { matchLabels: { 'oracle-node.io/name': 'full' } },
      },
    ];
    const custom = deploymentOf(
      buildChildren(
        inputFor('full-multi-chain', (node) => {
          node.spec.gateway = { ...node.spec.gateway, topologySpreadConstraints: zonesOnly };
        }),
      ),
    );
    expect(custom.spec!.template.spec!.topologySpreadConstraints).to.deep.equal(zonesOnly);
    const off = deploymentOf(
      buildChildren(
        inputFor('full-multi-chain', (node) => {
          node.spec.gateway = { ...node.spec.gateway, topologySpreadConstraints: [] };
        }),
      ),
    );
    expect(off.spec!.template.spec!).not.to.have.property('topologySpreadConstraints');
  });

  it('a PodDisruptionBudget whenever the gateway can run two or more replicas (fixed or autoscaled), none for one', () => {
    const pdbs = (edit: (node: OracleNode) => void) =>
      objects(buildChildren(inputFor('gateways-only', edit)), 'PodDisruptionBudget');
    expect(pdbs(() => undefined)).to.have.length(0);
    expect(pdbs((node) => (node.spec.gateway = { replicas: 2 }))).to.have.length(1);
    expect(pdbs((node) => (node.spec.gateway = { autoscaling: { maxReplicas: 1 } }))).to.have.length(0);
    expect(pdbs((node) => (node.spec.gateway = { autoscaling: { minReplicas: 1, maxReplicas: 4 } }))).to.have.length(1);
  });

  it('only the coordinator and the workers get an API token, each under its own ServiceAccount', () => {
    const input = inputFor('full-multi-chain');
    const cronJob = objects(buildChildren(input), 'CronJob')[0] as V1CronJob;
    expect(cronJob.spec!.jobTemplate.spec!.template.spec).to.include({
      serviceAccountName: 'full-prod-a-coordinator',
      automountServiceAccountToken: true,
    });
    expect(buildWorkerTemplate(input).template.spec).to.include({ serviceAccountName: 'full-prod-a-worker' });
  });
});
