// The oracle's own metrics through the real runtime: a reconciled OracleNode appears as oracle_node_ready, and its
// series go when it is deleted.
import { expect } from 'chai';
import { API_VERSION, KIND } from '../../../src/operator/resource.js';
import { apply, objects, useNamespace, waitFor } from '../support/cluster.js';
import { condition, installCrd, type RunningOperator, readNode, sampleDocs, startOperator } from './support.js';

async function readyValue(operator: RunningOperator, namespace: string, name: string) {
  const metric = operator.manager.registry.getSingleMetric('oracle_node_ready');
  const values = (await metric?.get())?.values ?? [];
  return values.find((v) => v.labels['namespace'] === namespace && v.labels['name'] === name)?.value;
}

describe('oracle_node_* metrics of the operator (integration)', function () {
  this.timeout(180_000);
  const namespace = useNamespace('onode-metrics');
  let operator: RunningOperator;

  before(async () => {
    await installCrd();
    operator = startOperator(namespace.name);
  });
  after(async () => {
    await operator?.stop();
  });

  it('publishes oracle_node_ready for a Ready node and removes it when the node is deleted', async () => {
    const { node, secret } = sampleDocs('minimal', namespace.name);
    await apply(secret);
    await apply(node);
    const name = node.metadata.name;
    await waitFor(async () => condition(await readNode(namespace.name, name), 'Ready')?.status === 'True', 120_000, {
      description: 'the minimal sample Ready',
    });
    expect(await waitFor(() => readyValue(operator, namespace.name, name), 30_000)).to.equal(1);

    await objects.delete({ apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace: namespace.name } });
    await waitFor(async () => (await readyValue(operator, namespace.name, name)) === undefined, 60_000, {
      description: 'oracle_node_ready removed after deletion',
    });
  });
});
