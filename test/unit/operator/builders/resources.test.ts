import type { V1CronJob, V1Deployment, V1ResourceRequirements } from '@kubernetes/client-node';
import { expect } from 'chai';
import {
  buildChildren,
  buildWorkerTemplate,
  DEFAULT_RESOURCES,
  DEFAULT_SETTINGS,
  mergeResources,
  quantityValue,
} from '../../../../src/operator/builders/index.js';
import { validateNodeConfig } from '../../../../src/operator/config.js';
import type { OracleNode } from '../../../../src/operator/resource.js';
import { loadSample } from '../fake-kube.js';

function containersOf(edit: (node: OracleNode) => void) {
  const { node, secret } = loadSample('full-multi-chain');
  delete node.spec.resources;
  delete node.spec.gateway?.resources;
  delete node.spec.worker?.resources;
  edit(node);
  const values = Object.fromEntries(
    Object.entries((secret as { data?: Record<string, string> }).data ?? {}).map(([k, v]) => [
      k,
      Buffer.from(v, 'base64').toString(),
    ]),
  );
  const result = validateNodeConfig(node.spec.config, values);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  const input = {
    node,
    config: result.config,
    rawConfig: node.spec.config,
    secretName: secret.metadata!.name!,
    secretHash: 'h',
    settings: DEFAULT_SETTINGS,
  };
  const children = buildChildren(input).map((child) => child.object);
  const cronJob = children.find((child) => child.kind === 'CronJob') as V1CronJob;
  const deployment = children.find((child) => child.kind === 'Deployment') as V1Deployment;
  return {
    coordinator: cronJob.spec!.jobTemplate.spec!.template.spec!.containers[0]!.resources!,
    gateway: deployment.spec!.template.spec!.containers[0]!.resources!,
    worker: buildWorkerTemplate(input).template.spec!.containers[0]!.resources!,
  };
}

describe('operator builders: container resources', () => {
  it('every container the operator creates has CPU and memory requests and a memory limit by default', () => {
    const containers = containersOf(() => undefined);
    for (const workload of ['coordinator', 'gateway', 'worker'] as const) {
      const resources = containers[workload];
      expect(resources, workload).to.deep.equal(DEFAULT_RESOURCES[workload]);
      expect(Object.keys(resources.requests!), workload).to.have.members(['cpu', 'memory']);
      expect(Object.keys(resources.limits!), workload).to.deep.equal(['memory']);
      expect(quantityValue(resources.requests!['memory'])).to.be.at.most(quantityValue(resources.limits!['memory'])!);
    }
  });

  it('a CPU limit alone on the workers keeps the default memory request and limit', () => {
    const { worker, gateway } = containersOf((node) => {
      node.spec.worker = { ...node.spec.worker, resources: { limits: { cpu: '500m' } } };
    });
    expect(worker).to.deep.equal({
      requests: DEFAULT_RESOURCES.worker.requests,
      limits: { memory: DEFAULT_RESOURCES.worker.limits.memory, cpu: '500m' },
    });
    expect(gateway).to.deep.equal(DEFAULT_RESOURCES.gateway);
  });

  it('spec.resources applies to every workload, and spec.<workload>.resources over it, key by key', () => {
    const { coordinator, gateway, worker } = containersOf((node) => {
      node.spec.resources = { requests: { cpu: '50m' }, limits: { memory: '1Gi' } };
      node.spec.gateway = { ...node.spec.gateway, resources: { requests: { memory: '256Mi' } } };
    });
    expect(coordinator).to.deep.equal({
      requests: { cpu: '50m', memory: DEFAULT_RESOURCES.coordinator.requests.memory },
      limits: { memory: '1Gi' },
    });
    expect(gateway).to.deep.equal({ requests: { cpu: '50m', memory: '256Mi' }, limits: { memory: '1Gi' } });
    expect(worker.requests).to.deep.equal({ cpu: '50m', memory: DEFAULT_RESOURCES.worker.requests.memory });
  });

  it('a memory limit set below the default request lowers that request to it; a request the user set is kept', () => {
    const defaults = { requests: { cpu: '100m', memory: '192Mi' }, limits: { memory: '512Mi' } };
    expect(mergeResources(defaults, { limits: { memory: '128Mi' } })).to.deep.equal({
      requests: { cpu: '100m', memory: '128Mi' },
      limits: { memory: '128Mi' },
    });
    expect(mergeResources(defaults, { limits: { cpu: '50m' } }).requests).to.deep.equal({
      cpu: '50m',
      memory: '192Mi',
    });
    const userSet: V1ResourceRequirements = { requests: { memory: '300Mi' }, limits: { memory: '128Mi' } };
    // The user's own contradiction is theirs to see: the apiserver refuses it with its own message.
    expect(mergeResources(defaults, userSet).requests!['memory']).to.equal('300Mi');
  });

  it('quantities compare by value across suffixes', () => {
    expect(quantityValue('512Mi')).to.equal(512 * 2 ** 20);
    expect(quantityValue('1G')).to.equal(1e9);
    expect(quantityValue('100m')).to.equal(0.1);
    expect(quantityValue('1.5')).to.equal(1.5);
    expect(quantityValue('2e3')).to.equal(2000);
    expect(quantityValue('lots')).to.equal(undefined);
  });
});
