import { KubeConfig } from '@kubernetes/client-node';
import { expect } from 'chai';
import { WORKER_TEMPLATE_ENV } from '../../../src/operator/builders/worker.js';
import { kubernetesCoordinatorDeps, kubernetesWorkerCache } from '../../../src/operator/job-executor.js';
import { secretsForConfig, secretsFromEnvironment } from '../../../src/operator/pod-environment.js';

const placeholder = (name: string) => `$${'{'}${name}}`;

describe('operator pod environment', () => {
  it('reads the placeholders the config uses from the environment, and only those', () => {
    const text = JSON.stringify({
      a: placeholder('PROVIDER_URL'),
      b: `x-${placeholder('KEY')}`,
      c: placeholder('MISSING'),
    });
    const env = { PROVIDER_URL: 'http://p', KEY: 'k', PATH: '/bin', ORACLE_NODE_SECRETS: 'env' };
    expect(secretsForConfig(text, env)).to.deep.equal({ PROVIDER_URL: 'http://p', KEY: 'k' });
    expect(secretsFromEnvironment(env)).to.equal(true);
    expect(secretsFromEnvironment({})).to.equal(false);
  });

  it('builds the coordinator and worker Kubernetes dependencies only inside operator-made pods', () => {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    expect(kubernetesCoordinatorDeps(kubeConfig, {})).to.equal(undefined);
    const template = {
      namePrefix: 'n-dev-worker',
      labels: {},
      ownerReferences: [],
      activeDeadlineSeconds: 50,
      ttlSecondsAfterFinished: 300,
      template: {},
    };
    const deps = kubernetesCoordinatorDeps(kubeConfig, {
      [WORKER_TEMPLATE_ENV]: JSON.stringify(template),
      POD_NAMESPACE: 'ns',
      ORACLE_NODE_CACHE_CONFIGMAP: 'n-cache',
      ORACLE_NODE_CYCLE_CONFIGMAP: 'n-cycle',
    });
    expect(deps?.executor).to.not.equal(undefined);
    expect(deps?.cache).to.not.equal(undefined);
    expect(kubernetesWorkerCache(kubeConfig, {})).to.equal(undefined);
    expect(
      kubernetesWorkerCache(kubeConfig, { POD_NAMESPACE: 'ns', ORACLE_NODE_CACHE_CONFIGMAP: 'n-cache' }),
    ).to.not.equal(undefined);
  });
});
