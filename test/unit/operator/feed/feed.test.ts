// The AirnodeFeed kind: its builders (pure), its conditions and its CRD, with the feed's real config and validator.
// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} strings are secret references
import type { V1Role, V1RoleBinding } from '@kubernetes/client-node';
import { expect } from 'chai';
import { parseFeedReport } from '../../../../src/contract/feed-report.js';
import { validateFeedConfig } from '../../../../src/feed/validate.js';
import type { StructuralSchema } from '../../../../src/operator/api/structural.js';
import { childCacheTransform } from '../../../../src/operator/child-cache.js';
import {
  type AirnodeFeed,
  airnodeFeedSpecSchema,
  FEED_API_VERSION,
  FEED_KIND,
} from '../../../../src/operator/feed/api.js';
import {
  buildFeedChildren,
  buildFeedDeployment,
  type FeedBuildInput,
  feedSecretKeys,
} from '../../../../src/operator/feed/builders.js';
import { carriedStatus, feedConditions, signedApiStatus } from '../../../../src/operator/feed/controller.js';
import { buildFeedCrd } from '../../../../src/operator/feed/crd.js';
import { buildFeedConfig } from '../../../support/feed.js';

const MNEMONIC = 'test test test test test test test test test test test junk';
const b64 = (value: string) => Buffer.from(value, 'utf8').toString('base64');

function rawConfig(stage = 'test'): Record<string, unknown> {
  const config = buildFeedConfig({
    apiUrl: 'http://prices.example',
    assets: ['BTC', 'ETH'],
    fetchInterval: 5,
    signedApis: [
      { name: 'one', url: 'http://signed-api-one.example', authToken: '${SIGNED_API_TOKEN}' },
      { name: 'two', url: 'http://signed-api-two.example', authToken: null },
    ],
  });
  (config.nodeSettings as { stage: string }).stage = stage;
  return config;
}

const SECRET = {
  WALLET_MNEMONIC: MNEMONIC,
  API_KEY: 'secret-api-key-value',
  SIGNED_API_TOKEN: 'secret-token-value',
  UNRELATED: 'unrelated-value',
};
const secretData = (values: Record<string, string>) =>
  Object.fromEntries(Object.entries(values).map(([k, v]) => [k, b64(v)]));

function feedOf(config: Record<string, unknown>): AirnodeFeed {
  return {
    apiVersion: FEED_API_VERSION,
    kind: FEED_KIND,
    metadata: { name: 'prices', namespace: 'feeds', uid: 'uid-1', generation: 1 },
    spec: { config, secretRef: { name: 'prices-secrets' } },
  };
}

async function inputOf(config = rawConfig(), secret: Record<string, string> = SECRET): Promise<FeedBuildInput> {
  const validation = await validateFeedConfig(config, secret);
  if (!validation.ok) throw new Error(JSON.stringify(validation.errors));
  return {
    feed: feedOf(config),
    config: validation.config,
    rawConfig: config,
    secretName: 'prices-secrets',
    secretData: secretData(secret),
    defaultImage: 'oracle-node:test',
  };
}

describe('AirnodeFeed', () => {
  it('runs `oracle-node feed` in one restricted pod with probes on /healthz and /readyz and the metrics port', async () => {
    const deployment = buildFeedDeployment(await inputOf());
    expect(deployment.spec!.replicas).to.equal(1);
    expect(deployment.spec!.strategy).to.deep.equal({
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
    });
    const pod = deployment.spec!.template.spec!;
    const [container] = pod.containers;
    expect(container!.image).to.equal('oracle-node:test');
    expect(container!.args).to.deep.equal(['feed', '-c', '/etc/oracle-node/config.json', '--metrics-port', '9090']);
    expect(container!.ports).to.deep.equal([{ name: 'metrics', containerPort: 9090, protocol: 'TCP' }]);
    expect(container!.livenessProbe!.httpGet).to.deep.equal({ path: '/healthz', port: 'metrics' });
    expect(container!.readinessProbe!.httpGet).to.deep.equal({ path: '/readyz', port: 'metrics' });
    expect(container!.securityContext).to.include({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
    expect(pod.securityContext).to.include({ runAsNonRoot: true });
    // The kubelet's short-lived projected token, for the report ConfigMap only (the Role's test below).
    expect(pod.automountServiceAccountToken).to.equal(true);
    expect(pod.serviceAccountName).to.equal('prices-feed');
    expect(container!.env!.filter((variable) => variable.value !== undefined)).to.deep.equal([
      { name: 'POD_NAMESPACE', value: 'feeds' },
      { name: 'ORACLE_NODE_FEED_REPORT_CONFIGMAP', value: 'prices-feed-report' },
    ]);
  });

  it('hands spec.apiLimits to its one pod whole, as --api-rate-limit (a per-minute budget with its burst)', async () => {
    const input = await inputOf();
    input.feed.spec.apiLimits = [
      { ois: 'Mock API', callsPerMinute: 120, burst: 5 },
      { ois: 'Mock API', endpoint: 'price', callsPerSecond: 2 },
    ];
    expect(buildFeedDeployment(input).spec!.template.spec!.containers[0]!.args!.slice(5)).to.deep.equal([
      '--api-rate-limit',
      'Mock API=120/m',
      '--api-rate-limit',
      'Mock API=5/s',
      '--api-rate-limit',
      'Mock API/price=2/s',
    ]);
  });

  it("lets the feed's ServiceAccount get and update only its own report ConfigMap, which the operator's cache keeps", async () => {
    const input = await inputOf();
    const children = buildFeedChildren(input);
    const role = children.find(({ object }) => object.kind === 'Role')!.object as unknown as V1Role;
    expect(role.rules).to.deep.equal([
      {
        apiGroups: [''],
        resources: ['configmaps'],
        resourceNames: ['prices-feed-report'],
        verbs: ['get', 'update', 'patch'],
      },
    ]);
    const binding = children.find(({ object }) => object.kind === 'RoleBinding')!.object as unknown as V1RoleBinding;
    expect(binding.roleRef).to.include({ kind: 'Role', name: 'prices-feed' });
    expect(binding.subjects).to.deep.equal([{ kind: 'ServiceAccount', name: 'prices-feed', namespace: 'feeds' }]);
    const report = children.find(({ object }) => object.metadata.name === 'prices-feed-report')!.object;
    expect(report).not.to.have.property('data');
    const live = { ...report, data: { 'report.json': '{}' } };
    expect(childCacheTransform(live)).to.have.nested.property('data.report\\.json', '{}');
  });

  it('status.signedApis: every Signed API of the config by name, with what the report says of it', () => {
    const report = parseFeedReport({
      'report.json': JSON.stringify({
        time: '2026-01-01T00:00:10Z',
        signedApis: [
          { name: 'main', lastPushTime: '2026-01-01T00:00:09Z', lastPushOutcome: 'ok', pushesOk: 3 },
          { name: 'gone', lastPushOutcome: 'failed' },
        ],
      }),
    });
    expect(signedApiStatus(['main', 'backup'], report)).to.deep.equal([
      { name: 'main', lastPushTime: '2026-01-01T00:00:09Z', lastPushOutcome: 'ok', pushesOk: 3 },
      { name: 'backup' },
    ]);
    expect(signedApiStatus(['main'], undefined)).to.deep.equal([{ name: 'main' }]);
  });

  it("a refusal keeps the last status.signedApis, but not an older operator's list of names", () => {
    const feed = (signedApis: unknown) =>
      ({ status: { stage: 'test', signedApis } }) as unknown as Parameters<typeof carriedStatus>[0];
    expect(carriedStatus(feed([{ name: 'main', lastPushOutcome: 'ok' }]))).to.deep.equal({
      stage: 'test',
      signedApis: [{ name: 'main', lastPushOutcome: 'ok' }],
    });
    expect(carriedStatus(feed(['main']))).to.deep.equal({ stage: 'test' });
  });

  it('gives the pod only the keys its config references, each by secretKeyRef, never a value', async () => {
    const input = await inputOf();
    expect(feedSecretKeys(input)).to.deep.equal(['API_KEY', 'SIGNED_API_TOKEN', 'WALLET_MNEMONIC']);
    const env = buildFeedDeployment(input).spec!.template.spec!.containers[0]!.env!;
    const secretEnv = env.filter((variable) => variable.valueFrom);
    expect(secretEnv.map((variable) => variable.name)).to.deep.equal([
      'API_KEY',
      'SIGNED_API_TOKEN',
      'WALLET_MNEMONIC',
    ]);
    for (const variable of secretEnv) {
      expect(variable.value).to.equal(undefined);
      expect(variable.valueFrom!.secretKeyRef).to.deep.equal({ name: 'prices-secrets', key: variable.name });
    }
    const serialized = JSON.stringify(buildFeedChildren(input));
    for (const value of Object.values(SECRET)) expect(serialized).not.to.include(value);
  });

  it('rolls the pod when a key it holds rotates, not when another key of the Secret does', async () => {
    const template = async (secret: Record<string, string>) =>
      buildFeedDeployment(await inputOf(rawConfig(), secret)).spec!.template.metadata!.annotations!;
    const before = await template(SECRET);
    expect(await template({ ...SECRET, UNRELATED: 'rotated' })).to.deep.equal(before);
    expect(await template({ ...SECRET, SIGNED_API_TOKEN: 'rotated' })).not.to.deep.equal(before);
  });

  it('a stage edit changes the pod template (its stage label and config hash): the Deployment rolls', async () => {
    const test = buildFeedDeployment(await inputOf(rawConfig('test'))).spec!.template.metadata!;
    const prod = buildFeedDeployment(await inputOf(rawConfig('prod'))).spec!.template.metadata!;
    expect(test.labels!['oracle-node.io/stage']).to.equal('test');
    expect(prod.labels!['oracle-node.io/stage']).to.equal('prod');
    expect(prod.annotations!['oracle-node.io/config-hash']).not.to.equal(
      test.annotations!['oracle-node.io/config-hash'],
    );
  });

  it('puts the config as written (placeholders kept) in its ConfigMap, and owns every child', async () => {
    const input = await inputOf();
    const children = buildFeedChildren(input);
    expect(children.map(({ object }) => `${object.kind}/${object.metadata.name}`)).to.deep.equal([
      'ConfigMap/prices-feed-config',
      'ConfigMap/prices-feed-report',
      'ServiceAccount/prices-feed',
      'Role/prices-feed',
      'RoleBinding/prices-feed',
      'Deployment/prices-feed',
    ]);
    const configMap = children[0]!.object as unknown as { data: Record<string, string> };
    expect(JSON.parse(configMap.data['config.json']!)).to.deep.equal(input.rawConfig);
    expect(configMap.data['config.json']).to.include('${WALLET_MNEMONIC}');
    for (const { object } of children) {
      expect(object.metadata.labels['oracle-node.io/feed']).to.equal('prices');
      expect(object.metadata.labels['oracle-node.io/name']).to.equal(undefined);
      expect((object.metadata as { ownerReferences: unknown[] }).ownerReferences).to.deep.equal([
        {
          apiVersion: 'oracle-node.io/v1alpha1',
          kind: 'AirnodeFeed',
          name: 'prices',
          uid: 'uid-1',
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
    }
    expect((children[2]!.object as { automountServiceAccountToken?: boolean }).automountServiceAccountToken).to.equal(
      false,
    );
  });

  it('merges spec.resources over the defaults and takes the image and scheduling of the spec', async () => {
    const input = await inputOf();
    input.feed.spec = {
      ...input.feed.spec,
      image: 'registry.example/oracle-node:1.2.3',
      resources: { limits: { memory: '1Gi' } },
      nodeSelector: { pool: 'feeds' },
      podMetadata: { annotations: { team: 'data' } },
    };
    const deployment = buildFeedDeployment(input);
    const container = deployment.spec!.template.spec!.containers[0]!;
    expect(container.image).to.equal('registry.example/oracle-node:1.2.3');
    expect(container.resources).to.deep.equal({
      requests: { cpu: '100m', memory: '192Mi' },
      limits: { memory: '1Gi' },
    });
    expect(deployment.spec!.template.spec!.nodeSelector).to.deep.equal({ pool: 'feeds' });
    expect(deployment.spec!.template.metadata!.annotations!.team).to.equal('data');
  });

  it('conditions: Stalled for a config only an edit fixes, Reconciling while not ready, neither when Ready', () => {
    const now = '2026-01-01T00:00:00Z';
    const invalid = feedConditions(
      undefined,
      [
        { type: 'Ready', status: 'False', reason: 'ValidationFailed', message: 'templates: bad' },
        { type: 'ConfigValid', status: 'False', reason: 'ValidationFailed', message: 'templates: bad' },
      ],
      now,
      3,
    );
    expect(invalid.map((c) => [c.type, c.status, c.observedGeneration])).to.deep.equal([
      ['Ready', 'False', 3],
      ['ConfigValid', 'False', 3],
      ['Stalled', 'True', 3],
    ]);
    const missingSecret = feedConditions(
      undefined,
      [
        { type: 'Ready', status: 'False', reason: 'SecretNotFound', message: 'x' },
        { type: 'ConfigValid', status: 'False', reason: 'SecretNotFound', message: 'x' },
      ],
      now,
      1,
    );
    expect(missingSecret.map((c) => c.type)).to.deep.equal(['Ready', 'ConfigValid', 'Reconciling']);
    const ready = feedConditions(
      invalid,
      [
        { type: 'Ready', status: 'True', reason: 'Ready', message: 'ok' },
        { type: 'ConfigValid', status: 'True', reason: 'Valid', message: 'ok' },
      ],
      '2026-01-01T00:01:00Z',
      4,
    );
    expect(ready.map((c) => c.type)).to.deep.equal(['Ready', 'ConfigValid']);
    expect(ready[0]!.lastTransitionTime).to.equal('2026-01-01T00:01:00Z');
    const again = feedConditions(
      ready,
      [{ type: 'Ready', status: 'True', reason: 'Ready', message: 'ok' }],
      'later',
      5,
    );
    expect(again[0]!.lastTransitionTime).to.equal('2026-01-01T00:01:00Z');
  });

  it('the CRD: spec from the zod schema (config free-form), status defaulted to observedGeneration 0', () => {
    const crd = buildFeedCrd();
    type Schema = StructuralSchema;
    const version = (crd.spec.versions as { schema: { openAPIV3Schema: Schema } }[])[0]!;
    const { spec, status } = version.schema.openAPIV3Schema.properties as Record<string, Schema>;
    const specFields = spec!.properties!;
    expect(specFields.config!['x-kubernetes-preserve-unknown-fields']).to.equal(true);
    expect(specFields.secretRef!.properties!.name!.type).to.equal('string');
    expect(specFields.imagePullPolicy!.enum).to.deep.equal(['Always', 'IfNotPresent', 'Never']);
    expect(status!.default).to.deep.equal({ observedGeneration: 0 });
    expect(crd.metadata.name).to.equal('airnodefeeds.oracle-node.io');
    expect(airnodeFeedSpecSchema.safeParse({ config: {}, imagePullPolicy: 'Sometimes' }).success).to.equal(false);
  });
});
