import {
  ApiextensionsV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { expect } from 'chai';
import { api, apply, expectStatus, statusOf, uniqueName, useNamespace, waitFor } from '../support/cluster.js';

// A CRD with a structural schema (types, required, enum, pattern, bounds, a CEL rule and a status
// subresource) installs, becomes Established, and the apiserver enforces every part of the schema.
describe('cluster: CustomResourceDefinition', function () {
  this.timeout(120_000);
  const ns = useNamespace('crd');
  // Cluster-scoped, so unique per run: suites may run concurrently against the same cluster.
  const group = `${uniqueName('t')}.integration.oracle-node.test`;
  const plural = 'widgets';
  const version = 'v1alpha1';
  const crdName = `${plural}.${group}`;
  const extensions = api(ApiextensionsV1Api);
  const custom = api(CustomObjectsApi);

  // Typed client-node models spell some schema keys differently (`_enum`, `_default`, `x_kubernetes_validations`);
  // the serializer maps them to the wire names and silently drops keys it does not know.
  const crd: V1CustomResourceDefinition = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: crdName },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural, singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: {
                  type: 'object',
                  required: ['endpoint', 'mode'],
                  properties: {
                    endpoint: { type: 'string', pattern: '^https://' },
                    mode: { type: 'string', _enum: ['pull', 'push'] },
                    minReplicas: { type: 'integer', minimum: 1, maximum: 5, _default: 1 },
                    maxReplicas: { type: 'integer', minimum: 1, maximum: 5 },
                    labels: { type: 'object', additionalProperties: { type: 'string' } },
                  },
                  x_kubernetes_validations: [
                    {
                      rule: '!has(self.maxReplicas) || self.minReplicas <= self.maxReplicas',
                      message: 'minReplicas must not exceed maxReplicas',
                    },
                  ],
                },
                status: { type: 'object', properties: { phase: { type: 'string' } } },
              },
            },
          },
        },
      ],
    },
  };

  const widget = (name: string, spec: Record<string, unknown>) => ({
    apiVersion: `${group}/${version}`,
    kind: 'Widget',
    metadata: { name, namespace: ns.name },
    spec,
  });
  const create = (body: object) =>
    custom.createNamespacedCustomObject({ group, version, namespace: ns.name, plural, body });
  const get = (name: string) =>
    custom.getNamespacedCustomObject({ group, version, namespace: ns.name, plural, name }) as Promise<{
      metadata: { name: string; generation: number };
      spec: Record<string, unknown>;
      status?: Record<string, unknown>;
    }>;

  before(async () => {
    await extensions.createCustomResourceDefinition({ body: crd });
    await waitFor(
      async () => {
        const current = await extensions.readCustomResourceDefinition({ name: crdName });
        return current.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
      },
      60_000,
      { description: `CRD ${crdName} Established` },
    );
    // Discovery of a brand-new group can lag a moment behind Established.
    await waitFor(
      async () => {
        await custom.listNamespacedCustomObject({ group, version, namespace: ns.name, plural });
        return true;
      },
      30_000,
      { description: `${plural}.${group} served` },
    );
  });

  after(async () => {
    try {
      await extensions.deleteCustomResourceDefinition({ name: crdName });
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
    }
  });

  it('round-trips an object: defaults applied, unknown fields pruned, everything else unchanged', async () => {
    await create(
      widget('good', {
        endpoint: 'https://api.example.test/v1',
        mode: 'pull',
        maxReplicas: 3,
        labels: { tier: 'gateway' },
        notInSchema: 'dropped by pruning',
      }),
    );
    const read = await get('good');
    expect(read.spec).to.deep.equal({
      endpoint: 'https://api.example.test/v1',
      mode: 'pull',
      minReplicas: 1,
      maxReplicas: 3,
      labels: { tier: 'gateway' },
    });
    expect(read.metadata.generation).to.equal(1);
  });

  it('updates through server-side apply and bumps the generation', async () => {
    await apply(widget('good', { endpoint: 'https://api.example.test/v2', mode: 'push', maxReplicas: 3 }));
    const read = await get('good');
    expect(read.spec).to.include({ endpoint: 'https://api.example.test/v2', mode: 'push', maxReplicas: 3 });
    // Fields this field manager never applied stay with their owner (the creating request).
    expect(read.spec['labels']).to.deep.equal({ tier: 'gateway' });
    expect(read.metadata.generation).to.equal(2);
  });

  it('keeps status apart from spec (status subresource)', async () => {
    await custom.patchNamespacedCustomObjectStatus(
      {
        group,
        version,
        namespace: ns.name,
        plural,
        name: 'good',
        body: [{ op: 'add', path: '/status', value: { phase: 'Ready' } }],
      },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
    const read = await get('good');
    expect(read.status).to.deep.equal({ phase: 'Ready' });
    expect(read.metadata.generation).to.equal(2);
  });

  const invalid: Array<[string, Record<string, unknown>, RegExp]> = [
    ['a missing required field', { endpoint: 'https://x.test' }, /spec\.mode: Required value/],
    ['a value outside the enum', { endpoint: 'https://x.test', mode: 'poll' }, /spec\.mode: Unsupported value/],
    ['a string not matching the pattern', { endpoint: 'http://x.test', mode: 'pull' }, /spec\.endpoint/],
    ['a wrong type', { endpoint: 'https://x.test', mode: 'pull', maxReplicas: 'three' }, /spec\.maxReplicas/],
    ['a number above the maximum', { endpoint: 'https://x.test', mode: 'pull', maxReplicas: 9 }, /spec\.maxReplicas/],
    [
      'a CEL rule violation',
      { endpoint: 'https://x.test', mode: 'pull', minReplicas: 4, maxReplicas: 2 },
      /minReplicas must not exceed maxReplicas/,
    ],
  ];
  for (const [what, spec, message] of invalid) {
    it(`rejects ${what} with 422 Invalid`, async () => {
      const err = await expectStatus(create(widget(uniqueName('bad'), spec)), 422);
      expect(JSON.stringify(err.body)).to.match(message);
    });
  }

  it('stored none of the rejected objects', async () => {
    const list = (await custom.listNamespacedCustomObject({ group, version, namespace: ns.name, plural })) as {
      items: Array<{ metadata: { name: string } }>;
    };
    expect(list.items.map((i) => i.metadata.name)).to.deep.equal(['good']);
  });
});
