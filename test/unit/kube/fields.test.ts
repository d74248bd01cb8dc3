import type { KubernetesObject } from '@kubernetes/client-node';
import { expect } from 'chai';
import { ownedFields, projectFields, projectToFieldManager } from '../../../src/kube/fields.js';
import { childCacheTransform } from '../../../src/operator/child-cache.js';

const OPERATOR = 'oracle-node-operator';

/** A Deployment as the apiserver returns it: our apply, the apiserver's defaults, an HPA's replicas, a sidecar. */
function deployment(): KubernetesObject & Record<string, unknown> {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'n-dev-gateway',
      namespace: 'ns',
      labels: { 'oracle-node.io/name': 'n' },
      annotations: { 'oracle-node.io/applied-hash': 'h1', 'deployment.kubernetes.io/revision': '1' },
      managedFields: [
        {
          manager: OPERATOR,
          operation: 'Apply',
          fieldsType: 'FieldsV1',
          fieldsV1: {
            'f:metadata': { 'f:labels': { 'f:oracle-node.io/name': {} } },
            'f:spec': {
              'f:selector': {},
              'f:template': {
                'f:spec': {
                  'f:containers': {
                    'k:{"name":"gateway"}': { '.': {}, 'f:name': {}, 'f:image': {}, 'f:args': {} },
                  },
                },
              },
            },
          },
        },
        {
          manager: 'kube-controller-manager',
          operation: 'Update',
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:spec': { 'f:replicas': {} } },
        },
        {
          manager: 'someone-else',
          operation: 'Apply',
          fieldsType: 'FieldsV1',
          fieldsV1: {
            'f:spec': { 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"sidecar"}': { '.': {} } } } } },
          },
        },
      ],
    },
    spec: {
      replicas: 3,
      progressDeadlineSeconds: 600,
      selector: { matchLabels: { app: 'gw' } },
      template: {
        spec: {
          dnsPolicy: 'ClusterFirst',
          containers: [
            { name: 'sidecar', image: 'other' },
            {
              name: 'gateway',
              image: 'oracle-node:1',
              args: ['gateway', '--port', '8080'],
              terminationMessagePath: '/dev/termination-log',
            },
          ],
        },
      },
    },
    status: { availableReplicas: 3 },
  };
}

describe('cache transforms: projection onto a field manager (fieldsV1)', () => {
  it('keeps the fields the manager owns (leaves whole, list items by key), metadata and status; drops the rest', () => {
    const projected = projectToFieldManager(deployment(), { manager: OPERATOR }) as Record<string, unknown>;
    expect(projected).to.deep.equal({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: deployment().metadata,
      spec: {
        selector: { matchLabels: { app: 'gw' } },
        template: {
          spec: { containers: [{ name: 'gateway', image: 'oracle-node:1', args: ['gateway', '--port', '8080'] }] },
        },
      },
      status: { availableReplicas: 3 },
    });
  });

  it('keeps the paths asked for whatever their owner', () => {
    const projected = projectToFieldManager(deployment(), {
      manager: OPERATOR,
      keep: () => [
        ['spec', 'replicas'],
        ['spec', 'missing', 'deep'],
      ],
    }) as { spec: Record<string, unknown> };
    expect(projected.spec['replicas']).to.equal(3);
    expect(projected.spec).to.not.have.property('missing');
    expect(projected.spec).to.have.property('template');
  });

  it('leaves an object without managedFields as it is, and merges the entries of one manager', () => {
    const bare = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { a: '1' } };
    expect(projectToFieldManager(bare, { manager: OPERATOR })).to.equal(bare);
    const object = {
      metadata: {
        managedFields: [
          { manager: OPERATOR, operation: 'Apply', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { 'f:a': {} } } },
          { manager: OPERATOR, operation: 'Update', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { 'f:b': {} } } },
        ],
      },
    } as KubernetesObject;
    expect(ownedFields(object, OPERATOR)).to.deep.equal({ 'f:data': { 'f:a': {}, 'f:b': {} } });
    expect(ownedFields(object, 'nobody')).to.equal(undefined);
  });

  it('projects set items (v:), indexed items (i:) and keeps a list whose keys it cannot read', () => {
    expect(projectFields(['a', 'b', 'c'], { 'v:"b"': {} })).to.deep.equal(['b']);
    expect(projectFields([{ x: 1, y: 2 }, { x: 3 }], { 'i:0': { 'f:x': {} } })).to.deep.equal([{ x: 1 }]);
    expect(projectFields([1, 2], { 'k:{broken': {} })).to.deep.equal([1, 2]);
    expect(projectFields('scalar', { 'f:x': {} })).to.equal('scalar');
  });
});

describe('the operator child cache (childCacheTransform)', () => {
  it("keeps a Deployment's replica count (an HPA's) and drops apiserver defaults and other writers' fields", () => {
    const cached = childCacheTransform(deployment()) as ReturnType<typeof deployment>;
    const spec = cached['spec'] as { replicas: number; template: { spec: { containers: { name: string }[] } } };
    expect(spec.replicas).to.equal(3);
    expect(spec).to.not.have.property('progressDeadlineSeconds');
    expect(spec.template.spec.containers.map((c) => c.name)).to.deep.equal(['gateway']);
  });

  const configMap = (component: string) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: `n-${component}`,
      labels: { 'app.kubernetes.io/component': component },
      managedFields: [
        {
          manager: OPERATOR,
          operation: 'Apply',
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:metadata': { 'f:labels': {} } },
        },
        { manager: 'oracle-node', operation: 'Update', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': {} } },
      ],
    },
    data: { 'cycle.json': '{"job":"j"}', 'responses.json': '{"big":"cache"}' },
  });

  it('keeps the cycle report the coordinator writes, and not the response cache entries', () => {
    expect((childCacheTransform(configMap('cycle')) as { data?: unknown }).data).to.deep.equal(configMap('cycle').data);
    expect(childCacheTransform(configMap('cache'))).to.not.have.property('data');
  });
});
