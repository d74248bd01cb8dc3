// spec.gateway.callers on the real apiserver: the CRD refuses a rate or caller name the engine would refuse, and the
// operator mounts the callers' Secret read-only in the gateway pods alone (the pods kwok runs), with their flags.
import { CoreV1Api } from '@kubernetes/client-node';
import { expect } from 'chai';
import { CALLERS_DIR } from '../../../src/contract/pods.js';
import { api, apply, expectStatus, waitFor } from '../support/cluster.js';
import { sampleDocs, useOperator } from './support.js';

describe('gateway callers on the real apiserver (integration)', function () {
  this.timeout(180_000);
  const suite = useOperator('onode-callers');

  it('refuses a rate or a caller name the engine would refuse, naming the field', async () => {
    for (const callers of [
      { secretRef: { name: 'c' }, defaultRate: '10/h' },
      { secretRef: { name: 'c' }, rates: { 'not a name': '1/s' } },
      { defaultRate: '1/s' },
    ]) {
      const { node } = sampleDocs('gateways-only', suite.namespace);
      node.metadata!.name = 'refused';
      node.spec.gateway = { ...node.spec.gateway, callers } as never;
      const refusal = await expectStatus(apply(node), 422);
      expect(String(refusal.body), JSON.stringify(callers)).to.include('spec.gateway.callers');
    }
  });

  it('mounts the callers Secret read-only in the gateway pods only, and passes the rates', async () => {
    const { node, secret } = sampleDocs('gateways-only', suite.namespace);
    await apply(secret);
    await api(CoreV1Api).createNamespacedSecret({
      namespace: suite.namespace,
      body: { metadata: { name: 'gateway-callers' }, stringData: { acme: 'acme-key-0123456789abcdef' } },
    });
    node.spec.gateway = {
      ...node.spec.gateway,
      callers: { secretRef: { name: 'gateway-callers' }, defaultRate: '5/s', rates: { acme: '600/m' } },
    } as never;
    await apply(node);
    const name = node.metadata!.name!;
    const stage = (node.spec.config as { nodeSettings: { stage: string } }).nodeSettings.stage;
    const deployment = await waitFor(() => suite.deployment(`${name}-${stage}-gateway`), 60_000, {
      description: 'the gateway Deployment',
    });
    const container = deployment.spec!.template.spec!.containers[0]!;
    expect(container.args).to.include.members(['--callers', CALLERS_DIR, 'acme=600/m', '5/s']);
    const pods = await waitFor(
      async () => {
        const found = (
          await api(CoreV1Api).listNamespacedPod({
            namespace: suite.namespace,
            labelSelector: `oracle-node.io/name=${name},app.kubernetes.io/component=gateway`,
          })
        ).items;
        return found.length ? found : undefined;
      },
      60_000,
      { description: 'a gateway pod' },
    );
    for (const pod of pods) {
      const volume = pod.spec!.volumes!.find((v) => v.name === 'callers');
      expect(volume?.secret).to.deep.include({ secretName: 'gateway-callers', defaultMode: 0o400 });
      expect(pod.spec!.containers[0]!.volumeMounts).to.deep.include({
        name: 'callers',
        mountPath: CALLERS_DIR,
        readOnly: true,
      });
    }
    // No other child of the node reads the callers' Secret.
    const cronJobs = await suite.cronJob(`${name}-${stage}-coordinator`);
    expect(JSON.stringify(cronJobs ?? {})).to.not.include('gateway-callers');
  });
});
