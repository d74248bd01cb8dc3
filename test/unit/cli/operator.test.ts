import { expect } from 'chai';
import { UsageError } from '../../../src/cli/args.js';
import { parseOperatorFlags } from '../../../src/cli/operator.js';

describe('oracle-node operator: flags and environment', () => {
  it('has production defaults', () => {
    const flags = parseOperatorFlags([], {});
    expect(flags).to.include({
      leaderElect: true,
      metricsPort: 8080,
      healthPort: 8081,
      workers: 2,
      qps: 20,
      burst: 30,
      logLevel: 'info',
    });
    expect(flags.namespaces).to.deep.equal([]);
    expect(flags.leaderElectionId).to.equal('oracle-node-operator');
  });

  it('reads every setting from ONO_* variables, and flags win over them', () => {
    const env = {
      ONO_NAMESPACES: 'a, b',
      ONO_LEADER_ELECT: 'false',
      ONO_LEADER_ELECTION_NAMESPACE: 'ops',
      ONO_METRICS_PORT: '9090',
      ONO_HEALTH_PORT: '0',
      ONO_WORKERS: '4',
      ONO_QPS: '5.5',
      ONO_BURST: '10',
      ONO_LOG_LEVEL: 'DEBUG',
      ONO_KUBECONFIG: '/tmp/kc',
    };
    const fromEnv = parseOperatorFlags([], env);
    expect(fromEnv).to.deep.include({
      namespaces: ['a', 'b'],
      leaderElect: false,
      leaderElectionNamespace: 'ops',
      metricsPort: 9090,
      healthPort: 0,
      workers: 4,
      qps: 5.5,
      burst: 10,
      logLevel: 'debug',
      kubeconfig: '/tmp/kc',
    });
    const flags = parseOperatorFlags(['--namespaces=c', '--leader-elect', '--workers', '8', '--kubeconfig', '/k'], env);
    expect(flags).to.deep.include({ namespaces: ['c'], leaderElect: true, workers: 8, kubeconfig: '/k' });
    expect(parseOperatorFlags(['--leader-elect=false'], {}).leaderElect).to.equal(false);
  });

  it('takes the leader election namespace from POD_NAMESPACE when not set', () => {
    expect(parseOperatorFlags([], { POD_NAMESPACE: 'pod-ns' }).leaderElectionNamespace).to.equal('pod-ns');
  });

  it('rejects bad values with a usage error', () => {
    expect(() => parseOperatorFlags(['--workers', '0'], {})).to.throw(UsageError);
    expect(() => parseOperatorFlags(['--qps', 'fast'], {})).to.throw(UsageError);
    expect(() => parseOperatorFlags(['--log-level', 'loud'], {})).to.throw(UsageError);
    expect(() => parseOperatorFlags(['--leader-elect=maybe'], {})).to.throw(UsageError);
    expect(() => parseOperatorFlags(['--unknown'], {})).to.throw();
  });

  it('webhook flags: one target, a Service or a URL, with defaults; off without a port', () => {
    expect(parseOperatorFlags([], {}).webhook).to.equal(undefined);
    const inCluster = parseOperatorFlags(['--webhook-port=9443', '--webhook-service=ops/ono-webhook'], {
      POD_NAMESPACE: 'ops',
    });
    expect(inCluster.operatorNamespace).to.equal('ops');
    expect(inCluster.webhook).to.deep.include({
      port: 9443,
      target: { service: { namespace: 'ops', name: 'ono-webhook', port: 443 } },
      configurationName: 'oracle-node-operator',
      secretName: 'oracle-node-operator-webhook-cert',
      certificates: 'self',
      failurePolicy: 'Fail',
      timeoutSeconds: 5,
    });
    const outside = parseOperatorFlags([], {
      ONO_WEBHOOK_PORT: '9443',
      ONO_WEBHOOK_URL: 'https://127.0.0.1:9443',
      ONO_WEBHOOK_FAILURE_POLICY: 'Ignore',
    });
    expect(outside.webhook?.target).to.deep.equal({ url: 'https://127.0.0.1:9443' });
    expect(outside.webhook?.failurePolicy).to.equal('Ignore');
  });

  it('keeps the coordinator fence by default, with or without the webhook', () => {
    expect(parseOperatorFlags([], {}).coordinatorFence).to.equal(true);
    expect(parseOperatorFlags(['--coordinator-fence=false'], {}).coordinatorFence).to.equal(false);
    expect(parseOperatorFlags([], { ONO_COORDINATOR_FENCE: 'false' }).coordinatorFence).to.equal(false);
    expect(parseOperatorFlags(['--webhook-owner-clusterrole=ono-webhook'], {}).ownerClusterRole).to.equal(
      'ono-webhook',
    );
  });

  it('webhook flags: refuses two targets, none, a plain-HTTP URL, a bad policy', () => {
    const port = '--webhook-port=9443';
    expect(() => parseOperatorFlags([port], {})).to.throw(UsageError, /exactly one/);
    expect(() => parseOperatorFlags([port, '--webhook-service=a/b', '--webhook-url=https://127.0.0.1:1'], {})).to.throw(
      UsageError,
      /exactly one/,
    );
    expect(() => parseOperatorFlags([port, '--webhook-url=http://127.0.0.1:1'], {})).to.throw(UsageError);
    expect(() => parseOperatorFlags([port, '--webhook-url=https://h:1/path'], {})).to.throw(UsageError);
    expect(() => parseOperatorFlags([port, '--webhook-service=just-a-name'], {})).to.throw(UsageError);
    expect(() => parseOperatorFlags([port, '--webhook-service=a/b', '--webhook-failure-policy=Maybe'], {})).to.throw(
      UsageError,
    );
    expect(() => parseOperatorFlags([port, '--webhook-service=a/b', '--webhook-timeout-seconds=31'], {})).to.throw(
      UsageError,
    );
  });
});
