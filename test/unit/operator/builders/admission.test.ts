import { expect } from 'chai';
import {
  buildCoordinatorFence,
  buildWebhookConfiguration,
  servingNames,
  webhookNamespaceSelector,
} from '../../../../src/operator/builders/admission.js';

describe('admission builders', () => {
  it('the webhook sees the watch namespaces, never the operator namespace or kube-system', () => {
    expect(webhookNamespaceSelector(['team-a', 'ops', 'team-b'], ['ops', 'kube-system'])).to.deep.equal({
      matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['team-a', 'team-b'] }],
    });
    expect(webhookNamespaceSelector([], ['ops', 'kube-system'])).to.deep.equal({
      matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'ops'] }],
    });
    expect(webhookNamespaceSelector(['ops'], ['ops', 'kube-system']).matchExpressions[0]!.operator).to.equal(
      'DoesNotExist',
    );
  });

  it('one configuration for a Service and for a URL, differing only in clientConfig', () => {
    const common = {
      name: 'ono',
      caBundle: 'PEM',
      failurePolicy: 'Fail' as const,
      timeoutSeconds: 5,
      watchNamespaces: [],
      exemptNamespaces: ['ops', 'kube-system'],
    };
    const service = buildWebhookConfiguration({
      ...common,
      target: { service: { namespace: 'ops', name: 'ono-webhook', port: 443 } },
    });
    const url = buildWebhookConfiguration({ ...common, target: { url: 'https://127.0.0.1:9443' } });
    const clientConfig = (c: typeof service) => c.webhooks[0]!.clientConfig as Record<string, unknown>;
    expect(clientConfig(service).service).to.deep.equal({
      namespace: 'ops',
      name: 'ono-webhook',
      port: 443,
      path: '/validate-oraclenode',
    });
    expect(clientConfig(url).url).to.equal('https://127.0.0.1:9443/validate-oraclenode');
    const { clientConfig: _a, ...serviceRest } = service.webhooks[0]!;
    const { clientConfig: _b, ...urlRest } = url.webhooks[0]!;
    expect(serviceRest).to.deep.equal(urlRest);
    expect(serviceRest).to.deep.include({ failurePolicy: 'Fail', timeoutSeconds: 5, sideEffects: 'None' });
  });

  it('serving names: the Service DNS names, or the URL host', () => {
    expect(servingNames({ service: { namespace: 'ops', name: 'w', port: 443 } }).dnsNames).to.include('w.ops.svc');
    expect(servingNames({ url: 'https://127.0.0.1:9443' })).to.deep.equal({
      dnsNames: [],
      ipAddresses: ['127.0.0.1'],
    });
    expect(servingNames({ url: 'https://[::1]:9443' }).ipAddresses).to.deep.equal(['::1']);
    expect(servingNames({ url: 'https://host.docker.internal:9443' }).dnsNames).to.deep.equal(['host.docker.internal']);
  });

  it('the fence: two policies with their bindings, each rule scoped to the coordinator of the OracleNode it is evaluated with', () => {
    const fence = buildCoordinatorFence('registry.example/oracle-node:1.0');
    expect(fence.map((o) => `${o.kind}/${o.metadata.name}`)).to.deep.equal([
      'ValidatingAdmissionPolicy/oracle-node-coordinator-jobs',
      'ValidatingAdmissionPolicyBinding/oracle-node-coordinator-jobs',
      'ValidatingAdmissionPolicy/oracle-node-coordinator-configmaps',
      'ValidatingAdmissionPolicyBinding/oracle-node-coordinator-configmaps',
    ]);
    for (const policy of fence.filter((o) => o.kind === 'ValidatingAdmissionPolicy')) {
      for (const validation of policy.spec.validations as { expression: string }[])
        expect(validation.expression.startsWith('!variables.mine || (')).to.equal(true);
      expect(policy.spec.paramKind).to.deep.equal({ apiVersion: 'oracle-node.io/v1alpha1', kind: 'OracleNode' });
      const image = (policy.spec.variables as { name: string; expression: string }[]).find((v) => v.name === 'image');
      expect(image?.expression).to.contain("'registry.example/oracle-node:1.0'");
    }
  });
});
