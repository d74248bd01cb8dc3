import { AppsV1Api, CoreV1Api, type V1Deployment } from '@kubernetes/client-node';
import { expect } from 'chai';
import { api, apply, useNamespace, waitFor } from '../support/cluster.js';

// The scheduler binds pods to the kwok node and kwok plays the kubelet: a Deployment's pods become
// Running and Ready, so the Deployment reports them ready and available.
describe('cluster: Deployment with kwok pods', function () {
  this.timeout(120_000);
  const ns = useNamespace('deploy');
  const apps = api(AppsV1Api);
  const core = api(CoreV1Api);

  const deployment = (replicas: number): V1Deployment => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'gateway', namespace: ns.name, labels: { app: 'gateway' } },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'gateway' } },
      template: {
        metadata: { labels: { app: 'gateway' } },
        spec: {
          containers: [{ name: 'gateway', image: 'registry.invalid/gateway:1', ports: [{ containerPort: 8080 }] }],
        },
      },
    },
  });

  const readyReplicas = async (want: number) => {
    const d = await apps.readNamespacedDeployment({ name: 'gateway', namespace: ns.name });
    const s = d.status;
    return s?.observedGeneration === d.metadata?.generation &&
      s?.readyReplicas === want &&
      s?.availableReplicas === want &&
      s?.updatedReplicas === want &&
      (s?.replicas ?? 0) === want
      ? d
      : undefined;
  };

  it('gets all replicas ready', async () => {
    await apps.createNamespacedDeployment({ namespace: ns.name, body: deployment(2) });
    const d = await waitFor(() => readyReplicas(2), 90_000, { description: 'deployment gateway 2/2 ready' });
    const available = d.status?.conditions?.find((c) => c.type === 'Available');
    expect(available?.status).to.equal('True');
  });

  it('runs its pods on the kwok node as Running and Ready, with pod IPs', async () => {
    const pods = (await core.listNamespacedPod({ namespace: ns.name, labelSelector: 'app=gateway' })).items;
    expect(pods).to.have.length(2);
    for (const pod of pods) {
      expect(pod.spec?.nodeName).to.equal('kwok-node-0');
      expect(pod.status?.phase).to.equal('Running');
      expect(pod.status?.podIP).to.be.a('string').and.not.equal('');
      expect(pod.status?.conditions?.find((c) => c.type === 'Ready')?.status).to.equal('True');
      // Admission gave it the namespace's default ServiceAccount, as on a real cluster.
      expect(pod.spec?.serviceAccountName).to.equal('default');
    }
  });

  it('scales through server-side apply', async () => {
    await apply(deployment(3));
    await waitFor(() => readyReplicas(3), 90_000, { description: 'deployment gateway 3/3 ready' });
    const pods = (await core.listNamespacedPod({ namespace: ns.name, labelSelector: 'app=gateway' })).items;
    expect(pods.filter((p) => p.status?.phase === 'Running')).to.have.length(3);
  });
});
