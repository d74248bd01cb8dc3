import type { KubernetesObject, V1ConfigMap, V1CronJob, V1Deployment, V1Service } from '@kubernetes/client-node';
import { expect } from 'chai';
import { ENV } from '../../../src/contract/pods.js';
import { ApiError } from '../../../src/kube/errors.js';
import { type ObjectCache, TerminalError } from '../../../src/kube/types.js';
import { clearSecrets, REDACTED, redact } from '../../../src/observability/index.js';
import { createOracleNodeReconciler, nodesReferencingSecret, WATCHES } from '../../../src/operator/controller.js';
import { API_VERSION, KIND, KINDS, type OracleNode } from '../../../src/operator/resource.js';
import { nodeWallet } from '../../../src/protocol/wallet.js';
import { FakeKube, loadSample } from './fake-kube.js';

// The public development mnemonic's first account (m/44'/60'/0'/0/0).
const DEV_ADDRESS = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';

function setup(sample: 'minimal' | 'full-multi-chain' | 'gateways-only', withSecret = true) {
  const kube = new FakeKube();
  const { node, secret } = loadSample(sample);
  kube.put(KINDS.oracleNode, node);
  if (withSecret) kube.put(KINDS.secret, secret);
  let clock = Date.parse('2026-01-01T00:00:00Z');
  const tick = () => {
    clock += 1000;
    return new Date(clock);
  };
  const reconciler = createOracleNodeReconciler({ now: tick });
  const key = { namespace: 'default', name: node.metadata.name };
  const reconcile = () => reconciler.reconcile(key, kube.context());
  const current = () => kube.get<OracleNode>(KINDS.oracleNode, key)!;
  const condition = (type: string) => current().status?.conditions?.find((c) => c.type === type);
  return { kube, node, secret, key, reconcile, current, condition };
}

const childWrites = (kube: FakeKube) => kube.writes.filter((w) => w.verb !== 'applyStatus');

describe('operator controller (reconcile against an in-memory cluster)', () => {
  it('creates every child, then a resync with nothing changed makes zero writes', async () => {
    const { kube, reconcile, current, condition } = setup('minimal');
    await reconcile();
    expect(childWrites(kube).map((w) => `${w.kind}/${w.name}`)).to.have.length(8);
    const status = current().status!;
    expect(status).to.include({ observedGeneration: 1, nodeAddress: DEV_ADDRESS, stage: 'dev', chains: 1 });
    expect(condition('Ready')).to.include({ status: 'True' });
    expect(condition('ConfigValid')).to.include({ status: 'True' });
    expect(condition('Degraded')).to.include({ status: 'False' });
    kube.writes.length = 0;
    await reconcile();
    await reconcile();
    expect(kube.writes).to.deep.equal([]);
  });

  it('a config edit re-applies the ConfigMap and the CronJob (new hash) and nothing else', async () => {
    const { kube, key, reconcile, current } = setup('minimal');
    await reconcile();
    const before = kube.get<V1CronJob>(KINDS.cronJob, { namespace: 'default', name: 'minimal-dev-coordinator' })!;
    const hash = before.spec!.jobTemplate.spec!.template.metadata!.annotations!['oracle-node.io/config-hash'];
    kube.writes.length = 0;
    kube.editNode(
      key,
      (node) => ((node.spec.config.nodeSettings as { logLevel: string }).logLevel = 'DEBUG'),
      KINDS.oracleNode,
    );
    await reconcile();
    expect(childWrites(kube).map((w) => w.name)).to.deep.equal(['minimal-dev-config', 'minimal-dev-coordinator']);
    const after = kube.get<V1CronJob>(KINDS.cronJob, { namespace: 'default', name: 'minimal-dev-coordinator' })!;
    expect(after.spec!.jobTemplate.spec!.template.metadata!.annotations!['oracle-node.io/config-hash']).not.to.equal(
      hash,
    );
    expect(current().status!.observedGeneration).to.equal(2);
  });

  it('registers every value of the Secret it reads with the log redactor before anything is logged', async () => {
    const { kube, secret, reconcile } = setup('minimal');
    const value = 'http://rpc-user:operator-secret-9Xk2@10.0.0.5:8545';
    (secret as { data: Record<string, string> }).data.PROVIDER_URL = Buffer.from(value).toString('base64');
    kube.put(KINDS.secret, secret);
    try {
      await reconcile();
      expect(redact(`provider ${value} failed`)).to.equal(`provider ${REDACTED} failed`);
    } finally {
      clearSecrets();
    }
  });

  it("the gateway's derived node key never reaches status or Events, even quoted by a refused apply", async () => {
    const { kube, reconcile, condition } = setup('full-multi-chain');
    const key = nodeWallet('test test test test test test test test test test test junk').privateKey;
    const encoded = Buffer.from(key).toString('base64');
    kube.refuseApply = (kind) =>
      kind === KINDS.secret
        ? new ApiError(`Secret "full-signing-key" is invalid: data: ${encoded} (${key})`, 422, 'Invalid')
        : undefined;
    try {
      const failure = await reconcile().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure).to.be.instanceOf(TerminalError);
      const message = condition('Degraded')!.message!;
      expect(message).to.contain('Secret "full-signing-key" is invalid').and.contain(REDACTED);
      const written = JSON.stringify([message, (failure as Error).message, kube.events]);
      expect(written).not.to.contain(key.slice(2)).and.not.to.contain(encoded);
    } finally {
      clearSecrets();
    }
  });

  it("the gateway's node key is applied before the gateway: a refused key leaves the gateway's template as it was", async () => {
    const { kube, key, secret, reconcile } = setup('full-multi-chain');
    await reconcile();
    kube.writes.length = 0;
    const rotated = structuredClone(secret) as { data: Record<string, string> };
    rotated.data.NODE_WALLET_MNEMONIC = Buffer.from(
      'legal winner thank year wave sausage worth useful legal winner thank yellow',
    ).toString('base64');
    kube.put(KINDS.secret, rotated as KubernetesObject);
    // Another identity: only with a new stage.
    kube.editNode(
      key,
      (node) => ((node.spec.config.nodeSettings as { stage: string }).stage = 'next'),
      KINDS.oracleNode,
    );
    kube.refuseApply = (kind) =>
      kind === KINDS.secret ? new ApiError('etcdserver: request timed out', 500) : undefined;
    try {
      await reconcile().catch(() => undefined);
      // Neither the gateway nor the coordinator rolled onto a key that is not there yet.
      expect(childWrites(kube).map((w) => w.kind)).to.deep.equal([]);
      kube.refuseApply = undefined;
      await reconcile();
      const order = childWrites(kube).map((w) => w.kind);
      expect(order[0]).to.equal('Secret');
      expect(order).to.include('Deployment');
    } finally {
      clearSecrets();
    }
  });

  it("never applies over an object it did not create: the user's Secret named like the node key is left alone", async () => {
    const { kube, node, secret, reconcile, condition } = setup('full-multi-chain');
    const users = structuredClone(secret);
    users.metadata = { name: 'full-signing-key', namespace: 'default' };
    kube.put(KINDS.secret, users);
    node.spec.secretRef = { name: 'full-signing-key' };
    kube.put(KINDS.oracleNode, node);
    await reconcile();
    expect(childWrites(kube)).to.deep.equal([]);
    const kept = kube.get<KubernetesObject & { data?: unknown }>(KINDS.secret, {
      namespace: 'default',
      name: 'full-signing-key',
    })!;
    expect(kept.metadata!.ownerReferences).to.equal(undefined);
    expect(kept.data).to.deep.equal((users as { data?: unknown }).data);
    expect(condition('ConfigValid')).to.include({ status: 'False', reason: 'NameConflict' });
    expect(condition('ConfigValid')!.message).to.contain(
      'Secret full-signing-key (no controller: not created by the operator)',
    );
    expect(condition('Stalled')).to.include({ status: 'True', reason: 'NameConflict' });
    expect(kube.events.map((e) => e.reason)).to.include('NameConflict');
  });

  it('a child another OracleNode controls is reported with its owner and not applied (node a stage b-c, node a-b stage c)', async () => {
    const { kube, node } = setup('minimal');
    (node.spec.config.nodeSettings as { stage: string }).stage = 'b-c';
    node.metadata = { ...node.metadata, name: 'a', uid: 'uid-a' };
    kube.put(KINDS.oracleNode, node);
    const reconciler = createOracleNodeReconciler();
    await reconciler.reconcile({ namespace: 'default', name: 'a' }, kube.context());
    const second = structuredClone(node);
    (second.spec.config.nodeSettings as { stage: string }).stage = 'c';
    second.metadata = { ...second.metadata, name: 'a-b', uid: 'uid-a-b' };
    kube.put(KINDS.oracleNode, second);
    kube.writes.length = 0;
    await reconciler.reconcile({ namespace: 'default', name: 'a-b' }, kube.context());
    expect(childWrites(kube)).to.deep.equal([]);
    const conflict = kube
      .get<OracleNode>(KINDS.oracleNode, { namespace: 'default', name: 'a-b' })!
      .status!.conditions!.find((c) => c.type === 'ConfigValid')!;
    expect(conflict.reason).to.equal('NameConflict');
    expect(conflict.message).to.contain('ConfigMap a-b-c-config (controlled by OracleNode a)');
  });

  it('a mnemonic rotated without a new stage is not rolled: Stalled with both addresses, the coordinator held; a new stage rolls it', async () => {
    const { kube, key, secret, reconcile, current, condition } = setup('minimal');
    await reconcile();
    const cronJob = () =>
      kube.get<V1CronJob>(KINDS.cronJob, { namespace: 'default', name: 'minimal-dev-coordinator' })!;
    const template = JSON.stringify(cronJob().spec!.jobTemplate);
    const rotated = structuredClone(secret) as { data: Record<string, string> };
    const mnemonic = 'legal winner thank year wave sausage worth useful legal winner thank yellow';
    rotated.data.NODE_WALLET_MNEMONIC = Buffer.from(mnemonic).toString('base64');
    kube.put(KINDS.secret, rotated as KubernetesObject);
    kube.writes.length = 0;
    await reconcile();
    const rotatedAddress = nodeWallet(mnemonic).address;
    expect(condition('ConfigValid')).to.include({ status: 'False', reason: 'NodeAddressChanged' });
    expect(condition('ConfigValid')!.message).to.contain(rotatedAddress).and.contain(DEV_ADDRESS);
    expect(condition('Stalled')).to.include({ status: 'True', reason: 'NodeAddressChanged' });
    expect(current().status!.nodeAddress).to.equal(DEV_ADDRESS);
    expect(cronJob().spec!.suspend).to.equal(true);
    expect(JSON.stringify(cronJob().spec!.jobTemplate)).to.equal(template);
    expect(childWrites(kube).map((w) => `${w.kind}/${w.name}`)).to.deep.equal(['CronJob/minimal-dev-coordinator']);
    const event = kube.events.find((e) => e.reason === 'NodeAddressChanged')!;
    expect(event.message).to.contain(rotatedAddress).and.contain(DEV_ADDRESS);
    // The previous mnemonic back: the coordinator resumes as it was.
    kube.put(KINDS.secret, secret);
    await reconcile();
    expect(condition('ConfigValid')).to.include({ status: 'True' });
    expect(condition('Stalled')).to.equal(undefined);
    expect(cronJob().spec!.suspend).to.equal(false);
    expect(JSON.stringify(cronJob().spec!.jobTemplate)).to.equal(template);
    kube.put(KINDS.secret, rotated as KubernetesObject);
    await reconcile();
    expect(cronJob().spec!.suspend).to.equal(true);
    kube.editNode(
      key,
      (node) => ((node.spec.config.nodeSettings as { stage: string }).stage = 'next'),
      KINDS.oracleNode,
    );
    await reconcile();
    expect(current().status).to.include({ stage: 'next', nodeAddress: rotatedAddress });
    expect(condition('ConfigValid')).to.include({ status: 'True' });
    expect(kube.get(KINDS.cronJob, { namespace: 'default', name: 'minimal-next-coordinator' })).to.not.equal(undefined);
  });

  it('a Secret rotation rolls the pods (secret hash) without touching the ConfigMap', async () => {
    const { kube, secret, reconcile } = setup('minimal');
    await reconcile();
    kube.writes.length = 0;
    const rotated = structuredClone(secret);
    (rotated as { data: Record<string, string> }).data.PROVIDER_URL =
      Buffer.from('http://other:8545').toString('base64');
    kube.put(KINDS.secret, rotated);
    await reconcile();
    expect(childWrites(kube).map((w) => w.name)).to.deep.equal(['minimal-dev-coordinator']);
  });

  it('an invalid config sets ConfigValid=False with the path, records an Event and leaves the workloads alone', async () => {
    const { kube, key, reconcile, condition } = setup('minimal');
    await reconcile();
    const snapshot = JSON.stringify([...kube.objects.entries()].filter(([k]) => !k.startsWith('oraclenodes')));
    kube.writes.length = 0;
    kube.editNode(
      key,
      (node) => ((node.spec.config.chains as { maxConcurrency: number }[])[0]!.maxConcurrency = 0),
      KINDS.oracleNode,
    );
    await reconcile();
    expect(childWrites(kube)).to.deep.equal([]);
    expect(JSON.stringify([...kube.objects.entries()].filter(([k]) => !k.startsWith('oraclenodes')))).to.equal(
      snapshot,
    );
    expect(condition('ConfigValid')).to.include({ status: 'False', reason: 'ValidationFailed' });
    expect(condition('ConfigValid')!.message).to.contain('chains[0].maxConcurrency');
    expect(condition('Degraded')).to.include({ status: 'True', reason: 'ConfigInvalid' });
    expect(kube.events.some((e) => e.type === 'Warning' && e.reason === 'ValidationFailed')).to.equal(true);
    // Fixing it brings everything back to Ready, with ConfigValid's transition time moved once.
    const invalidSince = condition('ConfigValid')!.lastTransitionTime;
    kube.editNode(
      key,
      (node) => ((node.spec.config.chains as { maxConcurrency: number }[])[0]!.maxConcurrency = 10),
      KINDS.oracleNode,
    );
    await reconcile();
    expect(condition('ConfigValid')).to.include({ status: 'True' });
    expect(condition('ConfigValid')!.lastTransitionTime).not.to.equal(invalidSince);
    expect(condition('Ready')).to.include({ status: 'True' });
  });

  it('a missing Secret says SecretNotFound and recovers when the Secret appears', async () => {
    const { kube, secret, reconcile, condition } = setup('minimal', false);
    const result = await reconcile();
    expect(condition('ConfigValid')).to.include({ status: 'False', reason: 'SecretNotFound' });
    expect(condition('ConfigValid')!.message).to.contain('minimal-secrets');
    expect(childWrites(kube)).to.deep.equal([]);
    expect(result).to.have.property('requeueAfterMs').that.is.a('number');
    kube.put(KINDS.secret, secret);
    await reconcile();
    expect(condition('ConfigValid')).to.include({ status: 'True' });
    expect(childWrites(kube)).to.have.length(8);
  });

  it('a Secret without a key the config uses says which key and where', async () => {
    const { kube, secret, reconcile, condition } = setup('minimal', false);
    const partial = structuredClone(secret) as { data: Record<string, string> };
    delete partial.data.PROVIDER_URL;
    kube.put(KINDS.secret, partial as never);
    await reconcile();
    expect(condition('ConfigValid')).to.include({ status: 'False', reason: 'SecretKeyMissing' });
    expect(condition('ConfigValid')!.message).to.contain('PROVIDER_URL').and.contain('chains[0].providers.local.url');
  });

  it('the pause annotation stops reconciliation and says so', async () => {
    const { kube, key, reconcile, condition } = setup('minimal');
    await reconcile();
    kube.writes.length = 0;
    kube.editNode(
      key,
      (node) => {
        node.metadata.annotations = { 'oracle-node.io/paused': 'true' };
        (node.spec.config.nodeSettings as { logLevel: string }).logLevel = 'DEBUG';
      },
      KINDS.oracleNode,
    );
    await reconcile();
    expect(childWrites(kube)).to.deep.equal([]);
    expect(condition('Progressing')).to.include({ status: 'False', reason: 'Paused' });
  });

  it('drift is repaired: an edited child is re-applied, a deleted one re-created, nothing else written', async () => {
    const { kube, reconcile } = setup('full-multi-chain');
    await reconcile();
    const cronJobKey = { namespace: 'default', name: 'full-prod-a-coordinator' };
    kube.get<V1CronJob>(KINDS.cronJob, cronJobKey)!.spec!.schedule = '*/5 * * * *';
    kube.remove(KINDS.service, { namespace: 'default', name: 'full-gateway' });
    kube.writes.length = 0;
    await reconcile();
    expect(
      childWrites(kube)
        .map((w) => `${w.kind}/${w.name}`)
        .sort(),
    ).to.deep.equal(['CronJob/full-prod-a-coordinator', 'Service/full-gateway']);
    expect(kube.get<V1CronJob>(KINDS.cronJob, cronJobKey)!.spec!.schedule).to.equal('* * * * *');
  });

  it('an apply the apiserver refuses for a while is Degraded/ApplyFailed and thrown as a plain error, so it is retried', async () => {
    const { kube, reconcile, condition } = setup('minimal');
    kube.refuseApply = (kind) => (kind === KINDS.role ? new ApiError('etcdserver: request timed out', 500) : undefined);
    const failure = await reconcile().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).to.be.instanceOf(ApiError);
    expect(failure).to.not.be.instanceOf(TerminalError);
    expect(condition('Degraded')).to.include({ status: 'True', reason: 'ApplyFailed' });
    expect(kube.events.map((e) => e.reason)).to.include('ApplyFailed');
    kube.refuseApply = undefined;
    await reconcile();
    expect(condition('Degraded')).to.include({ status: 'False' });
  });

  it('an apply the apiserver refuses as invalid (422) is a terminal error: the same spec would be refused again', async () => {
    const { kube, reconcile, condition } = setup('minimal');
    kube.refuseApply = (kind) =>
      kind === KINDS.cronJob ? new ApiError('CronJob.batch "x" is invalid: spec.schedule', 422, 'Invalid') : undefined;
    const failure = await reconcile().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).to.be.instanceOf(TerminalError);
    expect((failure as TerminalError).message).to.contain('spec.schedule');
    expect(condition('Degraded')).to.include({ status: 'True', reason: 'ApplyFailed' });
    expect(condition('Degraded')!.message).to.contain('spec.schedule');
  });

  it('children the spec no longer asks for are deleted (gateways disabled, one replica: no PDB)', async () => {
    const { kube, key, reconcile, current } = setup('full-multi-chain');
    await reconcile();
    const names = (kind: typeof KINDS.service) => kube.list(kind, 'default').map((o) => o.metadata!.name);
    expect(names(KINDS.podDisruptionBudget)).to.deep.equal(['full-prod-a-gateway']);
    // A worker Job's shard input carries the node's labels but belongs to the Job: never pruned.
    kube.put(KINDS.configMap, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'full-prod-a-worker-abc',
        namespace: 'default',
        labels: { 'oracle-node.io/name': 'full', 'oracle-node.io/stage': 'prod-a' },
        ownerReferences: [
          { apiVersion: 'batch/v1', kind: 'Job', name: 'full-prod-a-worker-abc', uid: 'job', controller: true },
        ],
      },
    });
    kube.editNode(key, (node) => (node.spec.gateway!.replicas = 1), KINDS.oracleNode);
    await reconcile();
    expect(names(KINDS.podDisruptionBudget)).to.deep.equal([]);
    kube.editNode(
      key,
      (node) => {
        const settings = node.spec.config.nodeSettings as Record<string, { enabled: boolean }>;
        for (const gateway of ['httpGateway', 'httpSignedDataGateway', 'oevGateway'])
          settings[gateway] = { enabled: false };
        node.spec.config.triggers = { ...(node.spec.config.triggers as object), http: [], httpSignedData: [] };
      },
      KINDS.oracleNode,
    );
    await reconcile();
    expect(current().status!.conditions!.find((c) => c.type === 'ConfigValid')).to.include({ status: 'True' });
    expect(names(KINDS.deployment)).to.deep.equal([]);
    expect(names(KINDS.service)).to.deep.equal([]);
    expect(names(KINDS.cronJob)).to.deep.equal(['full-prod-a-coordinator']);
    expect(names(KINDS.configMap)).to.include('full-prod-a-worker-abc');
  });

  it('an upgrade prunes the worker Role and RoleBinding an earlier operator made: workers call no Kubernetes API', async () => {
    const { kube, key, reconcile } = setup('minimal');
    await reconcile();
    // What an operator whose workers read the response cache left: the coordinator's objects' shape, for the worker.
    for (const kind of [KINDS.role, KINDS.roleBinding]) {
      const coordinator = kube.get<KubernetesObject>(kind, { namespace: 'default', name: 'minimal-dev-coordinator' })!;
      const worker = structuredClone(coordinator);
      worker.metadata!.name = 'minimal-dev-worker';
      worker.metadata!.labels = { ...worker.metadata!.labels, 'app.kubernetes.io/component': 'worker' };
      kube.put(kind, worker);
    }
    kube.editNode(
      key,
      (node) => (node.metadata.annotations = { ...node.metadata.annotations, edited: 'x' }),
      KINDS.oracleNode,
    );
    await reconcile();
    const names = (kind: typeof KINDS.role) => kube.list(kind, 'default').map((o) => o.metadata!.name);
    expect(names(KINDS.role)).to.deep.equal(['minimal-dev-coordinator']);
    expect(names(KINDS.roleBinding)).to.deep.equal(['minimal-dev-coordinator']);
    expect(kube.list(KINDS.serviceAccount, 'default').map((o) => o.metadata!.name)).to.include('minimal-dev-worker');
  });

  it('gateways are reported by URL, and Ready waits for the gateway Deployment', async () => {
    const { kube, reconcile, current, condition } = setup('gateways-only');
    await reconcile();
    expect(condition('Ready')).to.include({ status: 'False', reason: 'GatewayNotReady' });
    expect(current().status!.gatewayUrls).to.deep.equal({
      httpGateway: 'http://gateways-gateway.default.svc.cluster.local:3000',
      httpSignedDataGateway: 'http://gateways-gateway.default.svc.cluster.local:3000',
    });
    const deployment = kube.get<V1Deployment>(KINDS.deployment, {
      namespace: 'default',
      name: 'gateways-dev-gateway',
    })!;
    deployment.status = {
      observedGeneration: 1,
      replicas: 1,
      updatedReplicas: 1,
      availableReplicas: 1,
      readyReplicas: 1,
    };
    await reconcile();
    expect(condition('Ready')).to.include({ status: 'True' });
    expect(condition('Progressing')).to.include({ status: 'False' });
    // A new revision rolling out while the old pods serve: Progressing, and still Ready.
    deployment.metadata!.generation = 2;
    await reconcile();
    expect(condition('Progressing')).to.include({ status: 'True', reason: 'GatewayRollingOut' });
    expect(condition('Ready')).to.include({ status: 'True' });
  });

  it("a stage rollout switches the node's gateway Service to the new stage only once its gateway is Ready, then removes the old one", async () => {
    const { kube, key, reconcile, condition } = setup('gateways-only');
    const ready = (name: string) => {
      const deployment = kube.get<V1Deployment>(KINDS.deployment, { namespace: 'default', name })!;
      deployment.status = {
        observedGeneration: deployment.metadata!.generation ?? 1,
        updatedReplicas: 1,
        availableReplicas: 1,
      };
    };
    const service = () => kube.get<V1Service>(KINDS.service, { namespace: 'default', name: 'gateways-gateway' })!;
    await reconcile();
    ready('gateways-dev-gateway');
    await reconcile();
    const uid = service().metadata!.uid;
    expect(service().spec!.selector).to.include({ 'oracle-node.io/stage': 'dev' });
    kube.editNode(
      key,
      (node) => ((node.spec.config.nodeSettings as { stage: string }).stage = 'next'),
      KINDS.oracleNode,
    );
    await reconcile();
    await reconcile();
    expect(service().spec!.selector).to.include({ 'oracle-node.io/stage': 'dev' });
    expect(condition('Progressing')!.message).to.contain('waiting for gateway gateways-next-gateway to be Ready');
    expect(kube.get(KINDS.deployment, { namespace: 'default', name: 'gateways-dev-gateway' })).to.not.equal(undefined);
    ready('gateways-next-gateway');
    await reconcile();
    expect(service().spec!.selector).to.include({ 'oracle-node.io/stage': 'next' });
    expect(service().metadata!.uid).to.equal(uid);
    expect(kube.get(KINDS.deployment, { namespace: 'default', name: 'gateways-dev-gateway' })).to.equal(undefined);
  });

  it('says why it is not Ready in status.notReadyReason (a printer column), and nothing once Ready', async () => {
    const { kube, reconcile, current } = setup('gateways-only');
    await reconcile();
    expect(current().status!.notReadyReason).to.equal('GatewayNotReady');
    const deployment = kube.get<V1Deployment>(KINDS.deployment, {
      namespace: 'default',
      name: 'gateways-dev-gateway',
    })!;
    deployment.status = { observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1 };
    await reconcile();
    expect(current().status).not.to.have.property('notReadyReason');
  });

  it('gives the coordinator the public gateway URL: spec.gateway.publicUrl, else the load-balancer address', async () => {
    const { kube, node, reconcile, current } = setup('gateways-only');
    const coordinatorEnv = () =>
      kube
        .get<V1CronJob>(KINDS.cronJob, { namespace: 'default', name: 'gateways-dev-coordinator' })!
        .spec!.jobTemplate.spec!.template.spec!.containers[0]!.env!.find((e) => e.name === ENV.gatewayUrl)?.value;
    await reconcile();
    // ClusterIP and no publicUrl: no URL callers could use, so none (never localhost or an in-cluster name).
    expect(coordinatorEnv()).to.equal(undefined);
    node.spec.gateway = { service: { type: 'LoadBalancer', port: 8080 } };
    kube.put(KINDS.oracleNode, node);
    await reconcile();
    expect(coordinatorEnv()).to.equal(undefined);
    // The node's Service (one per node, whatever the stage) is the one callers reach.
    const service = kube.get<V1Service>(KINDS.service, { namespace: 'default', name: 'gateways-gateway' })!;
    service.status = { loadBalancer: { ingress: [{ ip: '203.0.113.7' }] } };
    await reconcile();
    expect(coordinatorEnv()).to.equal('http://203.0.113.7:8080');
    expect(current().status!.publicGatewayUrl).to.equal('http://203.0.113.7:8080');
    node.spec.gateway = { ...node.spec.gateway, publicUrl: 'https://oracle.example.org/' };
    kube.put(KINDS.oracleNode, node);
    await reconcile();
    expect(coordinatorEnv()).to.equal('https://oracle.example.org');
  });

  it('keeps the last cycles in status.cycles and turns a new report into Events once', async () => {
    const { kube, node, reconcile, current } = setup('minimal');
    await reconcile();
    const requestId = `0x${'ab'.repeat(32)}`;
    const report = (job: string, extra: Record<string, unknown> = {}) => {
      const cycle = kube.get<V1ConfigMap>(KINDS.configMap, {
        namespace: 'default',
        name: `${node.metadata.name}-cycle`,
      })!;
      cycle.data = {
        'cycle.json': JSON.stringify({
          job,
          outcome: 'Completed',
          startTime: '2026-01-01T00:00:00.000Z',
          durationMs: 2500,
          counts: { fulfilled: 3, failed: 1, overChainLimit: 2, providersDown: 1 },
          providers: [{ chainId: '1', provider: 'a', ok: true, currentBlock: 100 }],
          ...extra,
        }),
      };
    };
    report('c-1', {
      heartbeat: 'Failed',
      failedRequests: [{ chainId: '1', requestId, reason: 'Fulfillment reverted' }],
    });
    await reconcile();
    expect(current().status!.cycles).to.deep.equal([
      {
        job: 'c-1',
        startTime: '2026-01-01T00:00:00Z',
        durationSeconds: 2.5,
        outcome: 'Completed',
        fulfilled: 3,
        failed: 1,
        dropped: 2,
        errors: { providersDown: 1, heartbeat: 1 },
        blocks: [{ chainId: '1', provider: 'a', block: 100 }],
        heartbeat: 'Failed',
      },
    ]);
    const warnings = () => kube.events.filter((e) => e.reason === 'RequestFailed' || e.reason === 'HeartbeatFailed');
    expect(warnings().map((e) => e.reason)).to.deep.equal(['RequestFailed', 'HeartbeatFailed']);
    expect(warnings()[0]!.message).to.include(requestId).and.to.include('Fulfillment reverted');
    expect(current().status!.recentFailedRequests).to.deep.equal([
      { chainId: '1', requestId, reason: 'Fulfillment reverted', job: 'c-1' },
    ]);
    // The same report again: no new entry, no new Event.
    await reconcile();
    expect(current().status!.cycles).to.have.length(1);
    expect(warnings()).to.have.length(2);
    // Bounded: the 10 newest, newest first.
    for (let i = 2; i <= 12; i++) {
      report(`c-${i}`);
      await reconcile();
    }
    expect(current().status!.cycles!.map((c) => c.job)).to.deep.equal(
      Array.from({ length: 10 }, (_, i) => `c-${12 - i}`),
    );
  });

  it('stage rollout: new stage up, old coordinator suspended and drained, gateway Ready, then old stage removed', async () => {
    const { kube, key, reconcile, current, condition } = setup('full-multi-chain');
    const cronJob = (stage: string) =>
      kube.get<V1CronJob>(KINDS.cronJob, { namespace: 'default', name: `full-${stage}-coordinator` });
    const deployment = (stage: string) =>
      kube.get<V1Deployment>(KINDS.deployment, { namespace: 'default', name: `full-${stage}-gateway` });
    const ready = (stage: string) => {
      deployment(stage)!.status = { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 2 };
    };
    /** The two coordinators are never both able to run. */
    const assertExclusive = () => {
      const running = ['prod-a', 'prod-b'].filter((s) => cronJob(s) && cronJob(s)!.spec!.suspend !== true);
      expect(running.length, `running coordinators: ${running}`).to.be.at.most(1);
    };
    await reconcile();
    ready('prod-a');
    // The old coordinator has a cycle in flight.
    cronJob('prod-a')!.status = { active: [{ name: 'full-prod-a-coordinator-1', namespace: 'default' }] };
    await reconcile();
    expect(condition('Ready')).to.include({ status: 'True' });

    kube.editNode(
      key,
      (node) => ((node.spec.config.nodeSettings as { stage: string }).stage = 'prod-b'),
      KINDS.oracleNode,
    );
    await reconcile();
    assertExclusive();
    expect(cronJob('prod-b')!.spec!.suspend).to.equal(true);
    expect(cronJob('prod-a')!.spec!.suspend).to.equal(true);
    expect(deployment('prod-a')).to.not.equal(undefined);
    expect(condition('Progressing')).to.include({ status: 'True', reason: 'StageRollout' });
    expect(current().status).to.include({ stage: 'prod-b', previousStage: 'prod-a' });

    await reconcile();
    assertExclusive();
    expect(condition('Progressing')!.message).to.contain('active Jobs of full-prod-a-coordinator');
    expect(deployment('prod-a')).to.not.equal(undefined);
    // Both stages' windows send only under the node's coordinator Lease: with the old CronJob suspended, the new one
    // is released while the old window still runs (its next run waits for the Lease, so polls go on).
    expect(cronJob('prod-b')!.spec!.suspend).to.equal(false);

    // The old cycle ends; the new gateway is not Ready yet: the old stage stays.
    cronJob('prod-a')!.status = {};
    await reconcile();
    assertExclusive();
    expect(condition('Progressing')!.message).to.contain('gateway full-prod-b-gateway');
    expect(deployment('prod-a')).to.not.equal(undefined);

    ready('prod-b');
    await reconcile();
    assertExclusive();
    expect(deployment('prod-a')).to.equal(undefined);
    expect(cronJob('prod-a')).to.equal(undefined);
    expect(kube.list(KINDS.configMap, 'default').map((c) => c.metadata!.name)).to.not.include('full-prod-a-config');
    // The cache and the cycle report are the node's, not the stage's: they stay.
    expect(kube.list(KINDS.configMap, 'default').map((c) => c.metadata!.name)).to.include('full-cache');

    await reconcile();
    assertExclusive();
    expect(cronJob('prod-b')!.spec!.suspend).to.equal(false);
    expect(condition('Ready')).to.include({ status: 'True' });
    expect(current().status!.previousStage).to.equal(undefined);
    kube.writes.length = 0;
    await reconcile();
    expect(kube.writes).to.deep.equal([]);
  });

  it('stage rollout without the Lease (pollInterval 0, one cycle per tick): the new coordinator stays suspended until the old Jobs are done', async () => {
    const { kube, key, reconcile } = setup('full-multi-chain');
    const cronJob = (stage: string) =>
      kube.get<V1CronJob>(KINDS.cronJob, { namespace: 'default', name: `full-${stage}-coordinator` });
    kube.editNode(
      key,
      (node) => (node.spec.coordinator = { ...node.spec.coordinator, pollInterval: 0 }),
      KINDS.oracleNode,
    );
    await reconcile();
    cronJob('prod-a')!.status = { active: [{ name: 'full-prod-a-coordinator-1', namespace: 'default' }] };
    kube.editNode(
      key,
      (node) => ((node.spec.config.nodeSettings as { stage: string }).stage = 'prod-b'),
      KINDS.oracleNode,
    );
    await reconcile();
    await reconcile();
    expect(cronJob('prod-a')!.spec!.suspend).to.equal(true);
    expect(cronJob('prod-b')!.spec!.suspend).to.equal(true);
    // An old stage from before windows (no Lease) holds a windowed new stage the same way.
    kube.editNode(
      key,
      (node) => (node.spec.coordinator = { ...node.spec.coordinator, pollInterval: 1 }),
      KINDS.oracleNode,
    );
    await reconcile();
    expect(cronJob('prod-b')!.spec!.jobTemplate.spec!.template.spec!.containers[0]!.args).to.include(
      '--handover-lease',
    );
    expect(cronJob('prod-b')!.spec!.suspend).to.equal(true);
  });

  it('stage rollout: objects of the old stage owned by its worker Jobs (kept until their TTL) do not hold the new coordinator', async () => {
    const { kube, key, reconcile, condition } = setup('full-multi-chain');
    const cronJob = (stage: string) =>
      kube.get<V1CronJob>(KINDS.cronJob, { namespace: 'default', name: `full-${stage}-coordinator` });
    const ready = (stage: string) => {
      kube.get<V1Deployment>(KINDS.deployment, { namespace: 'default', name: `full-${stage}-gateway` })!.status = {
        observedGeneration: 1,
        replicas: 2,
        updatedReplicas: 2,
        availableReplicas: 2,
      };
    };
    await reconcile();
    ready('prod-a');
    // The shard ConfigMap of a finished worker Job of the old stage: labelled like the stage's children, but owned by
    // the Job (which the coordinator created), so it only goes when the Job's TTL removes the Job.
    kube.put(KINDS.configMap, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'full-prod-a-worker-1-shards',
        namespace: 'default',
        labels: {
          'app.kubernetes.io/managed-by': 'oracle-node-operator',
          'oracle-node.io/name': 'full',
          'oracle-node.io/stage': 'prod-a',
          'oracle-node.io/component': 'worker',
        },
        ownerReferences: [
          { apiVersion: 'batch/v1', kind: 'Job', name: 'full-prod-a-worker-1', uid: 'job-uid', controller: true },
        ],
      },
      data: { 'shard-0.json': '{}' },
    } as KubernetesObject);
    kube.editNode(
      key,
      (node) => ((node.spec.config.nodeSettings as { stage: string }).stage = 'prod-b'),
      KINDS.oracleNode,
    );
    for (let i = 0; i < 5; i++) {
      await reconcile();
      if (cronJob('prod-a') === undefined && cronJob('prod-b')?.spec?.suspend === false) break;
      ready('prod-b');
    }
    expect(cronJob('prod-a')).to.equal(undefined);
    expect(cronJob('prod-b')!.spec!.suspend).to.equal(false);
    // The pass after the old stage's deletions reach the cache finds the rollout done.
    await reconcile();
    expect(condition('Ready')).to.include({ status: 'True' });
  });
});

describe('operator controller: which OracleNodes a Secret change wakes', () => {
  const node = (namespace: string, name: string, secret?: string) =>
    ({ metadata: { namespace, name }, spec: secret ? { secretRef: { name: secret } } : {} }) as unknown as OracleNode;
  const nodes = [
    node('a', 'n1', 's'),
    node('a', 'n2', 'other'),
    node('a', 'n3', 's'),
    node('b', 'n4', 's'),
    node('a', 'n5'),
  ];
  const cache: ObjectCache = {
    get: () => undefined,
    list: <T extends KubernetesObject>(kind: { kind: string }, namespace?: string) =>
      (kind.kind === KINDS.oracleNode.kind
        ? nodes.filter((n) => n.metadata.namespace === namespace)
        : []) as unknown as T[],
  };

  it('maps a Secret to the nodes of its namespace whose secretRef names it', () => {
    const secret = { metadata: { namespace: 'a', name: 's' } };
    expect(nodesReferencingSecret(secret, cache)).to.deep.equal([
      { namespace: 'a', name: 'n1' },
      { namespace: 'a', name: 'n3' },
    ]);
    expect(nodesReferencingSecret({ metadata: { namespace: 'c', name: 's' } }, cache)).to.deep.equal([]);
    expect(nodesReferencingSecret({ metadata: { name: 's' } }, cache)).to.deep.equal([]);
  });

  it("maps the gateway's derived node key to the OracleNode that controls it, so an edit or deletion is put right", () => {
    const owned = (uid: string, kind = KIND) => ({
      metadata: {
        namespace: 'a',
        name: 'n2-signing-key',
        ownerReferences: [{ apiVersion: API_VERSION, kind, name: 'n2', uid, controller: true }],
      },
    });
    const withUids: ObjectCache = {
      ...cache,
      list: <T extends KubernetesObject>(kind: { kind: string }, namespace?: string) =>
        cache
          .list<OracleNode>(kind as never, namespace)
          .map((n) => ({ ...n, metadata: { ...n.metadata, uid: `uid-${n.metadata.name}` } })) as unknown as T[],
    };
    expect(nodesReferencingSecret(owned('uid-n2'), withUids)).to.deep.equal([{ namespace: 'a', name: 'n2' }]);
    expect(nodesReferencingSecret(owned('uid-n2', 'Deployment'), withUids)).to.deep.equal([]);
    expect(nodesReferencingSecret(owned('uid-unknown'), withUids)).to.deep.equal([]);
  });

  it('watches Secrets through that map, and only as a referenced kind (never cached in full)', () => {
    expect(WATCHES.referenced?.map((r) => r.kind.kind)).to.deep.equal(['Secret']);
    expect(WATCHES.owned.map((o) => o.kind.kind)).to.not.include('Secret');
  });
});
