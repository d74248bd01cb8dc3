import { expect } from 'chai';
import { parseOperatorFlags, UsageError } from '../../../../src/cli/operator.js';

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
});
