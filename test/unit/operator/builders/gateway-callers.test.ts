// spec.gateway.callers in the gateway Deployment (src/operator/builders/gateway.ts): the callers' flags, and their
// Secret as a read-only volume of the gateway pods alone.
import type { V1CronJob, V1Deployment, V1PodSpec } from '@kubernetes/client-node';
import { expect } from 'chai';
import { CALLERS_DIR } from '../../../../src/contract/pods.js';
import { oracleNodeSpecSchema } from '../../../../src/operator/api/v1alpha1.js';
import { buildChildren, buildWorkerTemplate, type Child } from '../../../../src/operator/builders/index.js';
import { inputFor } from './build-input.js';

const callers = {
  secretRef: { name: 'gateway-callers' },
  defaultRate: '10/s',
  rates: { zeta: '600/m', alpha: '5/s' },
};
const objects = (children: { object: Child }[], kind: string) =>
  children.filter((child) => child.object.kind === kind).map((child) => child.object);

describe('operator builders: gateway callers', () => {
  it('passes the callers flags and mounts their Secret read-only in the gateway pods', () => {
    const children = buildChildren(
      inputFor('gateways-only', (node) => {
        node.spec.gateway = { ...node.spec.gateway, callers } as never;
      }),
    );
    const deployment = objects(children, 'Deployment')[0] as V1Deployment;
    const pod = deployment.spec!.template.spec!;
    const container = pod.containers[0]!;
    expect(container.args!.slice(7)).to.deep.equal([
      '--callers',
      CALLERS_DIR,
      '--caller-rate',
      'alpha=5/s',
      '--caller-rate',
      'zeta=600/m',
      '--default-caller-rate',
      '10/s',
    ]);
    expect(container.volumeMounts).to.deep.include({ name: 'callers', mountPath: CALLERS_DIR, readOnly: true });
    expect(pod.volumes).to.deep.include({
      name: 'callers',
      secret: { secretName: 'gateway-callers', defaultMode: 0o400 },
    });
  });

  it('reaches no other pod, and a node without callers has no flag and no volume', () => {
    const withCallers = inputFor('full-multi-chain', (node) => {
      node.spec.gateway = { ...node.spec.gateway, callers } as never;
    });
    const children = buildChildren(withCallers);
    const coordinator = (objects(children, 'CronJob')[0] as V1CronJob).spec!.jobTemplate.spec!.template.spec!;
    const worker = buildWorkerTemplate(withCallers).template.spec as V1PodSpec;
    for (const pod of [coordinator, worker]) expect(JSON.stringify(pod)).to.not.include('gateway-callers');
    const plain = objects(buildChildren(inputFor('full-multi-chain')), 'Deployment')[0] as V1Deployment;
    expect(JSON.stringify(plain)).to.not.include('--callers');
    expect(plain.spec!.template.spec!.volumes!.map((volume) => volume.name)).to.not.include('callers');
  });

  it('the API refuses a rate or caller name the engine would refuse', () => {
    const spec = (gateway: unknown) => ({ config: {}, gateway });
    expect(oracleNodeSpecSchema.safeParse(spec({ callers })).success).to.equal(true);
    for (const bad of [
      { ...callers, defaultRate: '10/h' },
      { ...callers, defaultRate: '0/s' },
      { ...callers, rates: { 'has space': '1/s' } },
      { ...callers, rates: { ok: '1.5/s' } },
      { defaultRate: '1/s' },
    ])
      expect(oracleNodeSpecSchema.safeParse(spec({ callers: bad })).success, JSON.stringify(bad)).to.equal(false);
  });
});
