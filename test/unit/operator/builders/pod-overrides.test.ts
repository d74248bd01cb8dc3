import type { V1CronJob, V1Deployment, V1PodTemplateSpec, V1ServiceAccount } from '@kubernetes/client-node';
import { expect } from 'chai';
import { ENV, LABELS } from '../../../../src/contract/pods.js';
import { buildChildren, buildWorkerTemplate } from '../../../../src/operator/builders/index.js';
import type { OracleNode } from '../../../../src/operator/resource.js';
import { ANNOTATIONS } from '../../../../src/operator/resource.js';
import { inputFor } from './build-input.js';

function build(edit: (node: OracleNode) => void) {
  const input = inputFor('full-multi-chain', edit, 'h');
  const children = buildChildren(input).map((c) => c.object);
  const cronJob = children.find((c) => c.kind === 'CronJob') as unknown as V1CronJob;
  const deployment = children.find((c) => c.kind === 'Deployment') as unknown as V1Deployment;
  const templates: Record<'coordinator' | 'gateway' | 'worker', V1PodTemplateSpec> = {
    coordinator: cronJob.spec!.jobTemplate.spec!.template,
    gateway: deployment.spec!.template,
    worker: buildWorkerTemplate(input).template,
  };
  const accounts = Object.fromEntries(
    children
      .filter((c) => c.kind === 'ServiceAccount')
      .map((c) => [c.metadata.labels[LABELS.component], c as unknown as V1ServiceAccount]),
  );
  return { children, templates, accounts, cronJob, workerJobLabels: buildWorkerTemplate(input).labels };
}

describe('pod overrides (spec and per workload)', () => {
  const csi = { name: 'secrets-store', csi: { driver: 'secrets-store.csi.k8s.io', readOnly: true } };
  const built = build((node) => {
    node.spec.inheritedMetadata = { labels: { 'cost-center': 'oracle' }, annotations: { team: 'data' } };
    node.spec.serviceAccountTemplate = {
      metadata: { annotations: { 'eks.amazonaws.com/role-arn': 'arn:aws:iam::1:role/all' } },
    };
    node.spec.nodeSelector = { pool: 'oracles' };
    node.spec.tolerations = [{ key: 'dedicated', operator: 'Equal', value: 'oracle', effect: 'NoSchedule' }];
    node.spec.priorityClassName = 'oracle-normal';
    node.spec.imagePullSecrets = [{ name: 'registry' }];
    node.spec.volumes = [csi];
    node.spec.volumeMounts = [{ name: 'secrets-store', mountPath: '/mnt/secrets-store', readOnly: true }];
    node.spec.envFrom = [{ configMapRef: { name: 'proxy-settings' } }];
    node.spec.gateway = {
      ...node.spec.gateway,
      podMetadata: {
        annotations: { 'vault.hashicorp.com/agent-inject': 'true' },
        labels: { tier: 'edge' },
      },
      serviceAccountTemplate: {
        metadata: { annotations: { 'eks.amazonaws.com/role-arn': 'arn:aws:iam::1:role/gateway' } },
      },
      nodeSelector: { edge: 'true' },
      priorityClassName: 'oracle-high',
      imagePullSecrets: [{ name: 'registry' }, { name: 'edge-registry' }],
      affinity: { nodeAffinity: {} },
    };
    node.spec.worker = { ...node.spec.worker, envFrom: [{ configMapRef: { name: 'worker-env' }, prefix: 'W_' }] };
  });

  it('reaches the pods of every workload: metadata, scheduling, pull secrets, volumes, mounts and environment', () => {
    for (const [workload, template] of Object.entries(built.templates)) {
      const spec = template.spec!;
      const engine = spec.containers[0]!;
      expect(template.metadata!.labels!['cost-center'], workload).to.equal('oracle');
      expect(template.metadata!.annotations!['team'], workload).to.equal('data');
      expect(spec.tolerations, workload).to.have.length(1);
      expect(
        spec.volumes!.map((v) => v.name),
        workload,
      ).to.include('secrets-store');
      expect(
        engine.volumeMounts!.map((m) => m.mountPath),
        workload,
      ).to.include('/mnt/secrets-store');
      expect(engine.envFrom![0], workload).to.deep.equal({ configMapRef: { name: 'proxy-settings' } });
    }
    const { gateway, coordinator, worker } = built.templates;
    expect(gateway.metadata!.annotations!['vault.hashicorp.com/agent-inject']).to.equal('true');
    expect(coordinator.metadata!.annotations!).to.not.have.property('vault.hashicorp.com/agent-inject');
    expect(gateway.spec!.nodeSelector).to.deep.equal({ pool: 'oracles', edge: 'true' });
    expect(coordinator.spec!.nodeSelector).to.deep.equal({ pool: 'oracles' });
    expect(gateway.spec!.priorityClassName).to.equal('oracle-high');
    expect(worker.spec!.priorityClassName).to.equal('oracle-normal');
    expect(gateway.spec!.imagePullSecrets).to.deep.equal([{ name: 'registry' }, { name: 'edge-registry' }]);
    expect(gateway.spec!.affinity).to.deep.equal({ nodeAffinity: {} });
    expect(worker.spec!.containers[0]!.envFrom).to.deep.equal([
      { configMapRef: { name: 'proxy-settings' } },
      { configMapRef: { name: 'worker-env' }, prefix: 'W_' },
    ]);
  });

  it('never removes what the operator builds: its labels, hash annotations, volumes, mounts, env and securityContext', () => {
    const plain = build(() => undefined);
    for (const [workload, template] of Object.entries(built.templates)) {
      const before = plain.templates[workload as keyof typeof plain.templates];
      for (const [key, value] of Object.entries(before.metadata!.labels!))
        expect(template.metadata!.labels![key], `${workload} label ${key}`).to.equal(value);
      for (const key of [ANNOTATIONS.configHash, ANNOTATIONS.secretHash])
        expect(template.metadata!.annotations![key], `${workload} ${key}`).to.equal(before.metadata!.annotations![key]);
      const [engine, plainEngine] = [template.spec!.containers[0]!, before.spec!.containers[0]!];
      // The same variables (the coordinator's worker template carries the worker's overrides, as it should).
      const own = (env: typeof engine.env) => env!.filter((v) => v.name !== ENV.workerTemplate);
      expect(own(engine.env), workload).to.deep.equal(own(plainEngine.env));
      expect(engine.securityContext, workload).to.deep.equal(plainEngine.securityContext);
      expect(engine.readinessProbe, workload).to.deep.equal(plainEngine.readinessProbe);
      expect(template.spec!.securityContext, workload).to.deep.equal(before.spec!.securityContext);
      expect(template.spec!.volumes!.slice(0, before.spec!.volumes!.length), workload).to.deep.equal(
        before.spec!.volumes,
      );
      expect(engine.volumeMounts!.slice(0, plainEngine.volumeMounts!.length), workload).to.deep.equal(
        plainEngine.volumeMounts,
      );
      expect(engine.env!.some((v) => v.name === ENV.secretScope)).to.equal(true);
    }
  });

  it('annotates each ServiceAccount for its cloud identity, the workload’s own over spec’s', () => {
    const roleOf = (workload: string) => built.accounts[workload]!.metadata!.annotations!['eks.amazonaws.com/role-arn'];
    expect(roleOf('gateway')).to.equal('arn:aws:iam::1:role/gateway');
    expect(roleOf('coordinator')).to.equal('arn:aws:iam::1:role/all');
    expect(roleOf('worker')).to.equal('arn:aws:iam::1:role/all');
    expect(built.accounts['worker']!.automountServiceAccountToken).to.equal(false);
  });

  it('puts spec.inheritedMetadata on every object made for the node and on the worker Jobs, under its own labels', () => {
    for (const child of built.children) {
      expect(child.metadata.labels['cost-center'], `${child.kind} ${child.metadata.name}`).to.equal('oracle');
      expect(child.metadata.labels[LABELS.managedBy], child.kind).to.be.a('string');
    }
    expect(built.cronJob.spec!.jobTemplate.metadata!.labels!['cost-center']).to.equal('oracle');
    expect(built.workerJobLabels['cost-center']).to.equal('oracle');
  });
});
