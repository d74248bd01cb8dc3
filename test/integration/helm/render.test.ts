// What `helm template` renders from the chart for the value combinations a platform review tries: no cluster needed
// (only the repository's helm build), so these run beside the installing suites and on their own.
import { execFile } from 'node:child_process';
import { BlockList } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { loadAll } from 'js-yaml';
import {
  admissionPermissions,
  grantedVerbs,
  leaderElectionPermissions,
  managedPermissions,
  type Permission,
  toRules,
} from '../../../src/operator/permissions.js';
import { repoRoot } from '../../support/binary.js';

const run = promisify(execFile);
const chart = join(repoRoot, 'charts/oracle-node-operator');
const helmBin = join(process.env['CLUSTER_BIN_DIR'] ?? join(repoRoot, '.cache/cluster/bin'), 'helm');

type Rule = { apiGroups?: string[]; resources?: string[]; resourceNames?: string[]; verbs: string[] };
type Manifest = {
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: Record<string, unknown>;
  rules?: Rule[];
};

/** "group/resource" -> sorted verbs, for a readable deep-equal. */
const verbTable = (rules: Rule[]) =>
  Object.fromEntries([...grantedVerbs(rules)].map(([resource, verbs]) => [resource, [...verbs].sort()]));
const tableOf = (permissions: Permission[]) => verbTable(toRules(permissions));

async function render(...sets: string[]): Promise<Manifest[]> {
  const { stdout } = await run(
    helmBin,
    ['template', 'ono', chart, '--namespace', 'ono-system', ...sets.flatMap((s) => ['--set', s])],
    { maxBuffer: 32 * 1024 * 1024, env: { ...process.env, HELM_CACHE_HOME: join(repoRoot, '.cache/helm') } },
  );
  return (loadAll(stdout) as (Manifest | null)[]).filter((m): m is Manifest => m !== null);
}

/** helm's error text when rendering fails, '' when it renders. */
async function refusal(...sets: string[]): Promise<string> {
  return render(...sets).then(
    () => '',
    (err: Error & { stderr?: string }) => err.stderr ?? err.message,
  );
}

type IpBlock = { cidr: string; except?: string[] };
type EgressRule = { to?: { ipBlock?: IpBlock }[]; ports?: unknown[] };

/** Whether some egress rule lets `address` out: an ipBlock whose cidr holds it and whose except does not. */
function egressAllows(rules: EgressRule[], address: string): boolean {
  const family = address.includes(':') ? 'ipv6' : 'ipv4';
  const holds = (cidr: string) => {
    const [net, prefix] = cidr.split('/');
    const list = new BlockList();
    if (net!.includes(':') !== (family === 'ipv6')) return false;
    list.addSubnet(net!, Number(prefix), family);
    return list.check(address, family);
  };
  return rules.some((rule) =>
    (rule.to ?? []).some(
      (peer) => peer.ipBlock && holds(peer.ipBlock.cidr) && !(peer.ipBlock.except ?? []).some((cidr) => holds(cidr)),
    ),
  );
}

describe('Helm chart rendering (helm template)', function () {
  this.timeout(60_000);
  const workloadPolicy = async (...sets: string[]) => {
    const manifests = await render(
      'networkPolicy.workloads.enabled=true',
      'networkPolicy.workloads.namespaces={team-a}',
      ...sets,
    );
    const policy = manifests.find(
      (m) => m.kind === 'NetworkPolicy' && m.metadata.name === 'ono-oracle-node-operator-workloads',
    );
    expect(policy, 'workloads NetworkPolicy').to.not.equal(undefined);
    return (policy!.spec as { egress: EgressRule[] }).egress.filter((rule) => rule.to?.some((peer) => peer.ipBlock));
  };

  describe('workloads NetworkPolicy egress', () => {
    it('lets the workloads reach public addresses but not the cloud metadata endpoint or the link-local ranges', async () => {
      const rules = await workloadPolicy();
      for (const address of ['8.8.8.8', '203.0.113.7', '2001:db8::1', '10.1.2.3'])
        expect(egressAllows(rules, address), address).to.equal(true);
      for (const address of ['169.254.169.254', '169.254.0.1', 'fe80::1', 'fd00:ec2::254'])
        expect(egressAllows(rules, address), address).to.equal(false);
    });

    it('keeps private ranges out too when egressCidrs lists them under except, as docs/security.md shows', async () => {
      const rules = await workloadPolicy(
        'networkPolicy.workloads.egressCidrs[0].cidr=0.0.0.0/0',
        'networkPolicy.workloads.egressCidrs[0].except={169.254.0.0/16,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,100.64.0.0/10}',
        'networkPolicy.workloads.egressCidrs[1].cidr=::/0',
        'networkPolicy.workloads.egressCidrs[1].except={fe80::/10,fc00::/7}',
      );
      expect(egressAllows(rules, '8.8.8.8')).to.equal(true);
      for (const address of ['10.1.2.3', '172.16.0.9', '192.168.1.1', '100.64.0.1', '169.254.169.254', 'fd00::1'])
        expect(egressAllows(rules, address), address).to.equal(false);
    });

    it('still takes bare CIDR strings as ipBlocks without exceptions', async () => {
      const rules = await workloadPolicy('networkPolicy.workloads.egressCidrs={203.0.113.0/24}');
      expect(egressAllows(rules, '203.0.113.9')).to.equal(true);
      expect(egressAllows(rules, '8.8.8.8')).to.equal(false);
    });
  });

  describe('unsafe combinations are refused with a message that says why', () => {
    it('refuses more than one replica with leader election off (two reconcilers)', async () => {
      const message = await refusal('replicaCount=2', 'leaderElection.enabled=false');
      expect(message).to.include('replicaCount=2 with leaderElection.enabled=false').and.include('reconcilers');
      expect(await refusal('replicaCount=1', 'leaderElection.enabled=false')).to.equal('');
    });

    it('replaces pods instead of rolling them when leader election is off, so two never reconcile together', async () => {
      const deployment = (await render('replicaCount=1', 'leaderElection.enabled=false')).find(
        (m) => m.kind === 'Deployment',
      );
      expect(deployment?.spec?.['strategy']).to.deep.equal({ type: 'Recreate' });
      const rolling = (await render()).find((m) => m.kind === 'Deployment');
      expect(rolling?.spec?.['strategy']).to.equal(undefined);
    });

    it("refuses to bind the operator's RBAC to the namespace's default ServiceAccount", async () => {
      const message = await refusal('serviceAccount.create=false');
      expect(message).to.include('serviceAccount.create=false without serviceAccount.name');
      expect(await refusal('serviceAccount.create=false', 'serviceAccount.name=ono-operator')).to.equal('');
    });

    it('refuses a PodDisruptionBudget that would never let an operator pod be evicted', async () => {
      const message = await refusal('replicaCount=2', 'podDisruptionBudget.minAvailable=2');
      expect(message).to.include('podDisruptionBudget.minAvailable=2 with replicaCount=2');
      expect(await refusal('replicaCount=3', 'podDisruptionBudget.minAvailable=2')).to.equal('');
      expect(await refusal('replicaCount=2', 'podDisruptionBudget.minAvailable=50%')).to.equal('');
    });
  });

  it('gives the operator container its own restricted securityContext', async () => {
    const deployment = (await render()).find((m) => m.kind === 'Deployment') as unknown as {
      spec: { template: { spec: { containers: { name: string; securityContext: Record<string, unknown> }[] } } };
    };
    const operator = deployment.spec.template.spec.containers.find((c) => c.name === 'operator');
    expect(operator?.securityContext).to.deep.include({
      runAsNonRoot: true,
      seccompProfile: { type: 'RuntimeDefault' },
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
  });

  describe("a policy scanner's skips (docs/security.md, Policy scanners): only while the value that passes the check is unset", () => {
    /** The checks `checkov.io/skipN: <check>=<reason>` skips on the named object, each with a reason. */
    const skips = (manifests: Manifest[], kind: string, suffix = '') => {
      const object = manifests.find((m) => m.kind === kind && m.metadata.name.endsWith(suffix)) as unknown as {
        metadata: { annotations?: Record<string, string> };
      };
      return Object.entries(object.metadata.annotations ?? {})
        .filter(([key]) => key.startsWith('checkov.io/skip'))
        .map(([, value]) => {
          const [check, reason, ...rest] = value.split('=');
          expect(rest, `${value}: checkov splits at every '='`).to.deep.equal([]);
          expect(reason?.trim(), check).to.not.equal('');
          return check;
        });
    };

    it("skips on the operator's Deployment the checks its defaults fail, and on the webhook ClusterRole its create", async () => {
      const manifests = await render();
      expect(skips(manifests, 'Deployment')).to.deep.equal([
        'CKV_K8S_11',
        'CKV_K8S_43',
        'CKV_K8S_15',
        'CKV_K8S_38',
        'CKV2_K8S_6',
      ]);
      expect(skips(manifests, 'ClusterRole', '-webhook')).to.deep.equal(['CKV_K8S_155']);
    });

    it('keeps only the token skip once the image is pinned, a CPU limit set and the NetworkPolicy on', async () => {
      const manifests = await render(
        `image.digest=sha256:${'0'.repeat(64)}`,
        'resources.limits.cpu=1',
        'networkPolicy.operator.enabled=true',
        'webhook.enabled=false',
      );
      expect(skips(manifests, 'Deployment')).to.deep.equal(['CKV_K8S_38']);
      expect(skips(manifests, 'ClusterRole', '-webhook')).to.deep.equal([]);
      expect(skips(await render('image.pullPolicy=Always'), 'Deployment'))
        .to.include('CKV_K8S_43')
        .and.not.include('CKV_K8S_15');
    });
  });

  it("mounts the operator's token in the operator's pod only, never in another pod running as its ServiceAccount", async () => {
    const manifests = (await render()) as unknown as {
      kind: string;
      automountServiceAccountToken?: boolean;
      spec?: { template: { spec: { automountServiceAccountToken?: boolean } } };
    }[];
    expect(manifests.find((m) => m.kind === 'ServiceAccount')?.automountServiceAccountToken).to.equal(false);
    expect(manifests.find((m) => m.kind === 'Deployment')?.spec?.template.spec.automountServiceAccountToken).to.equal(
      true,
    );
  });

  it("keeps the OracleNode's namespace label of the operator's series: the ServiceMonitor honors their labels", async () => {
    const monitor = (await render('metrics.serviceMonitor.enabled=true')).find((m) => m.kind === 'ServiceMonitor');
    const endpoints = monitor?.spec?.['endpoints'] as { port: string; honorLabels?: boolean }[];
    expect(endpoints.map((endpoint) => [endpoint.port, endpoint.honorLabels])).to.deep.equal([['metrics', true]]);
  });

  describe('RBAC: exactly the verbs of src/operator/permissions.ts', () => {
    const role = (manifests: Manifest[], kind: string, name: string, namespace?: string) => {
      const found = manifests.find(
        (m) =>
          m.kind === kind &&
          m.metadata.name === name &&
          (namespace === undefined || m.metadata.namespace === namespace),
      );
      expect(found, `${kind} ${name}`).to.not.equal(undefined);
      return found!.rules ?? [];
    };

    it('gives the ClusterRole and the leader-election Role the table verbs, nothing more', async () => {
      const manifests = await render();
      expect(verbTable(role(manifests, 'ClusterRole', 'ono-oracle-node-operator'))).to.deep.equal(
        tableOf(managedPermissions()),
      );
      expect(verbTable(role(manifests, 'Role', 'ono-oracle-node-operator-leader-election'))).to.deep.equal(
        tableOf(leaderElectionPermissions()),
      );
    });

    it("gives the webhook's Role and ClusterRole the table verbs, for both certificate sources", async () => {
      for (const certManager of [false, true]) {
        const manifests = await render(`webhook.certManager.enabled=${certManager}`);
        const expected = admissionPermissions({ selfSignedCertificates: !certManager, coordinatorFence: true });
        expect(verbTable(role(manifests, 'Role', 'ono-oracle-node-operator-webhook'))).to.deep.equal(
          tableOf(expected.namespaced),
        );
        expect(verbTable(role(manifests, 'ClusterRole', 'ono-oracle-node-operator-webhook'))).to.deep.equal(
          tableOf(expected.cluster),
        );
      }
    });

    it('with watchNamespaces, keeps nothing cluster-wide that reads Secrets: Roles in the watched namespaces only', async () => {
      const manifests = await render('watchNamespaces={team-a,team-b}');
      const clusterWide = manifests.filter((m) => m.kind === 'ClusterRole');
      for (const clusterRole of clusterWide)
        for (const rule of clusterRole.rules ?? [])
          expect(rule.resources ?? [], clusterRole.metadata.name).to.not.include.oneOf(['secrets', '*']);
      for (const namespace of ['team-a', 'team-b'])
        expect(verbTable(role(manifests, 'Role', 'ono-oracle-node-operator', namespace))).to.deep.equal(
          tableOf(managedPermissions()),
        );
    });

    it('keeps the coordinator fence, its RBAC and the flag that runs it, with the webhook off', async () => {
      const manifests = await render('webhook.enabled=false');
      expect(verbTable(role(manifests, 'ClusterRole', 'ono-oracle-node-operator-webhook'))).to.deep.equal(
        tableOf(
          admissionPermissions({ selfSignedCertificates: true, coordinatorFence: true }).cluster.filter(
            (p) => p.resource !== 'validatingwebhookconfigurations',
          ),
        ),
      );
      const deployment = manifests.find((m) => m.kind === 'Deployment') as unknown as {
        spec: { template: { spec: { containers: { args: string[] }[] } } };
      };
      const args = deployment.spec.template.spec.containers[0]!.args;
      expect(args).to.include('--coordinator-fence=true');
      expect(args).to.include('--webhook-owner-clusterrole=ono-oracle-node-operator-webhook');
      expect(args.filter((arg) => arg.startsWith('--webhook-port'))).to.deep.equal([]);
      expect(manifests.filter((m) => m.kind === 'Service').map((m) => m.metadata.name)).to.not.include(
        'ono-oracle-node-operator-webhook',
      );
    });
  });
});
