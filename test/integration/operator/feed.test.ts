// The AirnodeFeed controller against the real test control plane (apiserver, controller-manager's Deployment
// controller, scheduler, kwok playing the pods as Ready), run by the real runtime manager beside the OracleNode
// controller (one manager, two controllers, shared informers), with the feed's real validator.
// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} strings are secret references
import { type ChildProcess, execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CoreV1Api,
  KubeConfig,
  type KubernetesObject,
  type V1ConfigMap,
  type V1Deployment,
  type V1ServiceAccount,
} from '@kubernetes/client-node';
import { expect } from 'chai';
import yaml from 'js-yaml';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { LABELS } from '../../../src/contract/pods.js';
import { validateFeedConfig } from '../../../src/feed/validate.js';
import { createManager } from '../../../src/kube/manager.js';
import { createOracleNodeReconciler } from '../../../src/operator/controller.js';
import { type AirnodeFeed, FEED_API_VERSION, FEED_KIND } from '../../../src/operator/feed/api.js';
import { AirnodeFeedReconciler } from '../../../src/operator/feed/controller.js';
import { FIELD_MANAGER } from '../../../src/operator/resource.js';
import { ApiServer } from '../../component/ois/api-server.js';
import { spawnOracleNode } from '../../support/binary.js';
import { buildFeedConfig, type ReferenceProcess, startSignedApi } from '../../support/feed.js';
import { freePort } from '../../support/net.js';
import { api, apply, expectStatus, kc, useNamespace, waitFor } from '../support/cluster.js';
import { clusterBinDir } from '../support/kubectl.js';
import { installCrd, installFeedCrd, read, serviceAccountKubeConfigFile } from './support.js';

const DEV_ADDRESS = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';

// The Argo CD health check of manifests/argocd, run as Argo CD runs it (test/tools/argocd-lua), and kstatus (Flux).
const HEALTH = join(mkdtempSync(join(tmpdir(), 'argocd-lua-')), 'feed-health.lua');
writeFileSync(
  HEALTH,
  (
    yaml.load(readFileSync(new URL('../../../manifests/argocd/argocd-cm-patch.yaml', import.meta.url), 'utf8')) as {
      data: Record<string, string>;
    }
  ).data['resource.customizations.health.oracle-node.io_AirnodeFeed']!,
);
function tool<T>(name: string, args: string[], input: unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = execFile(join(clusterBinDir, name), args, { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${name} ${args.join(' ')}: ${stderr || error.message}`));
      else resolve(JSON.parse(stdout) as T);
    });
    child.stdin?.end(JSON.stringify(input));
  });
}
async function health(feed: AirnodeFeed) {
  const [kstatus, argo] = await Promise.all([
    tool<{ status: string; message: string }>('kstatus', [], feed),
    tool<{ status: string; message: string }>('argocd-lua', ['health', HEALTH], feed),
  ]);
  return { kstatus: kstatus.status, argo: argo.status, argoMessage: argo.message };
}

function feedConfig(stage: string): Record<string, unknown> {
  const config = buildFeedConfig({
    apiUrl: 'http://prices.example',
    assets: ['BTC', 'ETH'],
    fetchInterval: 5,
    signedApis: [{ name: 'main', url: 'http://signed-api.example', authToken: '${SIGNED_API_TOKEN}' }],
  });
  (config.nodeSettings as { stage: string }).stage = stage;
  return config;
}

const condition = (feed: AirnodeFeed | undefined, type: string) =>
  feed?.status?.conditions?.find((c) => c.type === type);

describe('AirnodeFeed operator (integration)', function () {
  this.timeout(180_000);
  const namespace = useNamespace('afeed');
  let stop: () => Promise<void>;

  before(async () => {
    await installCrd();
    await installFeedCrd();
    const manager = createManager({
      kubeConfig: kc,
      namespaces: [namespace.name],
      leaderElection: { enabled: false, namespace: namespace.name, leaseName: 'oracle-node-operator', identity: 'it' },
      workers: 2,
      qps: 200,
      burst: 400,
      metricsPort: 0,
      healthPort: 0,
      fieldManager: FIELD_MANAGER,
      logger: pino({ level: process.env.OPERATOR_TEST_LOG_LEVEL ?? 'silent' }),
      tuning: { registry: new Registry(), ownerNameLabel: LABELS.name },
    });
    const feeds = new AirnodeFeedReconciler({
      validateConfig: validateFeedConfig,
      defaultImage: 'oracle-node:test',
      waitPollMs: 500,
    });
    const running = manager.run([createOracleNodeReconciler({ waitPollMs: 1000 }), feeds]);
    stop = async () => {
      await manager.stop();
      await running;
    };
  });
  after(async () => {
    await stop?.();
  });

  const readFeed = (name: string) => read<AirnodeFeed>(FEED_API_VERSION, FEED_KIND, namespace.name, name);
  const readDeployment = (name: string) => read<V1Deployment>('apps/v1', 'Deployment', namespace.name, name);
  const applyFeed = (name: string, config: Record<string, unknown>) =>
    apply({
      apiVersion: FEED_API_VERSION,
      kind: FEED_KIND,
      metadata: { name, namespace: namespace.name },
      spec: { config, secretRef: { name: `${name}-secrets` } },
    });
  const applySecret = (name: string, values: Record<string, string>) =>
    apply({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `${name}-secrets`, namespace: namespace.name },
      stringData: values,
    });
  const SECRET = {
    WALLET_MNEMONIC: 'test test test test test test test test test test test junk',
    API_KEY: 'integration-api-key',
    SIGNED_API_TOKEN: 'integration-token',
    UNRELATED: 'not-for-the-feed',
  };

  it('runs a feed as a Deployment holding only its keys, Ready with observedGeneration; a stage edit rolls it', async () => {
    await applySecret('prices', SECRET);
    await applyFeed('prices', feedConfig('test'));

    const ready = await waitFor(
      async () => {
        const feed = await readFeed('prices');
        return condition(feed, 'Ready')?.status === 'True' &&
          feed?.status?.observedGeneration === feed?.metadata?.generation
          ? feed
          : undefined;
      },
      120_000,
      'the feed to be Ready',
    );
    expect(ready.status).to.deep.include({
      airnode: DEV_ADDRESS,
      stage: 'test',
      templates: 2,
      signedApis: [{ name: 'main' }],
      readyReplicas: 1,
    });
    expect(condition(ready, 'ConfigValid')).to.include({ status: 'True', reason: 'Valid' });
    expect(ready.status?.conditions?.map((c) => c.type)).to.deep.equal(['Ready', 'ConfigValid']);
    expect(await health(ready)).to.deep.include({ kstatus: 'Current', argo: 'Healthy' });

    const deployment = (await readDeployment('prices-feed'))!;
    const container = deployment.spec!.template.spec!.containers[0]!;
    expect(container.args).to.deep.equal(['feed', '-c', '/etc/oracle-node/config.json', '--metrics-port', '9090']);
    const secretEnv = container.env!.filter((variable) => variable.valueFrom);
    expect(secretEnv.map((variable) => variable.name)).to.deep.equal([
      'API_KEY',
      'SIGNED_API_TOKEN',
      'WALLET_MNEMONIC',
    ]);
    expect(secretEnv.every((variable) => variable.valueFrom?.secretKeyRef?.name === 'prices-secrets')).to.equal(true);
    // The kubelet's short-lived projected token, for the report ConfigMap alone (the last test); the account's own
    // default stays off.
    expect(deployment.spec!.template.spec!.automountServiceAccountToken).to.equal(true);
    const serviceAccount = await read<V1ServiceAccount>('v1', 'ServiceAccount', namespace.name, 'prices-feed');
    expect(serviceAccount?.automountServiceAccountToken).to.equal(false);
    const configMap = await read<{ data: Record<string, string> } & KubernetesObject>(
      'v1',
      'ConfigMap',
      namespace.name,
      'prices-feed-config',
    );
    expect(configMap!.data['config.json']).to.include('${WALLET_MNEMONIC}');
    expect(JSON.stringify(ready.status)).not.to.include(SECRET.WALLET_MNEMONIC);

    // A rotation reaches the pod through the Secret watch (which key rolls it: test/unit/operator/feed).
    const secretHash = async () =>
      (await readDeployment('prices-feed'))!.spec!.template.metadata!.annotations!['oracle-node.io/secret-hash'];
    const hashBefore = await secretHash();
    await applySecret('prices', { ...SECRET, UNRELATED: 'rotated-unrelated' });
    await applySecret('prices', { ...SECRET, UNRELATED: 'rotated-unrelated', SIGNED_API_TOKEN: 'rotated-token' });
    const hashAfter = await waitFor(
      async () => {
        const hash = await secretHash();
        return hash !== hashBefore ? hash : undefined;
      },
      60_000,
      'the rotated token to roll the pod',
    );
    expect(hashAfter).to.be.a('string');

    // The stage edit: the pod template changes and the Deployment rolls; the feed is Ready on the new stage.
    await applyFeed('prices', feedConfig('prod'));
    await waitFor(
      async () => {
        const feed = await readFeed('prices');
        return (
          feed?.status?.stage === 'prod' &&
          condition(feed, 'Ready')?.status === 'True' &&
          feed.status.observedGeneration === feed.metadata?.generation
        );
      },
      120_000,
      'the feed Ready on stage prod',
    );
    const rolled = (await readDeployment('prices-feed'))!;
    expect(rolled.spec!.template.metadata!.labels!['oracle-node.io/stage']).to.equal('prod');
    expect(rolled.metadata!.generation).to.be.greaterThan(deployment.metadata!.generation!);
  });

  it('an invalid config is reported with its path (Stalled), and the running Deployment is left as it was', async () => {
    await applySecret('broken', SECRET);
    await applyFeed('broken', feedConfig('test'));
    await waitFor(
      async () => condition(await readFeed('broken'), 'Ready')?.status === 'True',
      120_000,
      'the feed to be Ready',
    );
    const before = (await readDeployment('broken-feed'))!;

    const bad = feedConfig('test');
    (bad.triggers as { signedApiUpdates: { fetchInterval: number }[] }).signedApiUpdates[0]!.fetchInterval = 0;
    await applyFeed('broken', bad);
    const rejected = await waitFor(
      async () => {
        const feed = await readFeed('broken');
        return condition(feed, 'ConfigValid')?.status === 'False' &&
          feed?.status?.observedGeneration === feed?.metadata?.generation
          ? feed
          : undefined;
      },
      60_000,
      'the config to be refused',
    );
    expect(condition(rejected, 'ConfigValid')).to.include({
      reason: 'ValidationFailed',
      message: 'triggers.signedApiUpdates[0].fetchInterval: fetchInterval must be a positive number of seconds',
    });
    expect(condition(rejected, 'Stalled')).to.include({ status: 'True', reason: 'ValidationFailed' });
    const rejectedHealth = await health(rejected);
    expect(rejectedHealth).to.deep.include({ kstatus: 'Failed', argo: 'Degraded' });
    expect(rejectedHealth.argoMessage).to.contain('triggers.signedApiUpdates[0].fetchInterval');
    const after = (await readDeployment('broken-feed'))!;
    expect(after.metadata!.generation).to.equal(before.metadata!.generation);

    // A key the config references that the Secret lacks: named, and the feed waits for it.
    const config = feedConfig('test');
    (config.signedApis as { authToken: string }[])[0]!.authToken = '${OTHER_TOKEN}';
    await applyFeed('broken', config);
    const missing = await waitFor(
      async () => {
        const feed = await readFeed('broken');
        return condition(feed, 'ConfigValid')?.reason === 'SecretKeyMissing' ? feed : undefined;
      },
      60_000,
      'the missing key to be reported',
    );
    expect(condition(missing, 'ConfigValid')!.message).to.equal(
      'signedApis[0].authToken: Secret "OTHER_TOKEN" is not a key of the Secret; it is used at: signedApis[0].authToken',
    );
  });

  it("reports the last push per Signed API in status.signedApis through the pod's report ConfigMap, which is all its token may touch", async () => {
    // kwok runs no process: the real `oracle-node feed` runs on the host with the pod's environment and a token of the
    // feed's ServiceAccount, pushing to the real Signed API on loopback and to a port that refuses.
    const prices = await new ApiServer()
      .route('/prices', (request, _body, response) => {
        if (request.headers['x-api-key'] !== SECRET.API_KEY) response.writeHead(401).end('{}');
        else response.writeHead(200, { 'content-type': 'application/json' }).end('{"prices":{"BTC":1,"ETH":2}}');
      })
      .start();
    let signedApi: ReferenceProcess | undefined;
    let child: ChildProcess | undefined;
    const dir = mkdtempSync(join(tmpdir(), 'feed-report-'));
    const DOWN_PASSWORD = 'down-url-password';
    try {
      signedApi = await startSignedApi(DEV_ADDRESS, SECRET.SIGNED_API_TOKEN);
      const config = buildFeedConfig({
        apiUrl: prices.url,
        assets: ['BTC', 'ETH'],
        fetchInterval: 1,
        signedApis: [
          { name: 'main', url: signedApi.url, authToken: '${SIGNED_API_TOKEN}' },
          { name: 'down', url: `http://reporter:${DOWN_PASSWORD}@127.0.0.1:${await freePort()}`, authToken: null },
        ],
      });
      await applySecret('reporting', SECRET);
      await applyFeed('reporting', config);
      const deployment = await waitFor(() => readDeployment('reporting-feed'), 60_000, 'the feed Deployment');
      const podEnv: Record<string, string> = {};
      for (const variable of deployment.spec!.template.spec!.containers[0]!.env ?? []) {
        const key = variable.valueFrom?.secretKeyRef?.key as keyof typeof SECRET | undefined;
        podEnv[variable.name] = key ? SECRET[key] : variable.value!;
      }
      expect(podEnv).to.include({
        POD_NAMESPACE: namespace.name,
        ORACLE_NODE_FEED_REPORT_CONFIGMAP: 'reporting-feed-report',
      });
      const configMap = (await read<V1ConfigMap>('v1', 'ConfigMap', namespace.name, 'reporting-feed-config'))!;
      writeFileSync(join(dir, 'config.json'), configMap.data!['config.json']!);
      const credentials = await serviceAccountKubeConfigFile(namespace.name, 'reporting-feed', join(dir, 'kubeconfig'));
      child = spawnOracleNode(['feed', '-c', join(dir, 'config.json'), '--metrics-port', '0', '--host', '127.0.0.1'], {
        env: { ...process.env, ...podEnv, KUBECONFIG: credentials },
      });
      let output = '';
      child.stdout?.on('data', (chunk) => {
        output += chunk;
      });
      child.stderr?.on('data', (chunk) => {
        output += chunk;
      });
      const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));

      const reported = await waitFor(
        async () => {
          const apis = (await readFeed('reporting'))?.status?.signedApis;
          const main = apis?.find((entry) => entry.name === 'main');
          const down = apis?.find((entry) => entry.name === 'down');
          return main?.lastPushOutcome === 'ok' && (main.valuesAccepted ?? 0) > 0 && down?.lastPushOutcome === 'failed'
            ? apis
            : undefined;
        },
        90_000,
        'status.signedApis with main ok and down failed',
      ).catch((error: Error) => {
        throw new Error(`${error.message}\n${output}`);
      });
      const [main, down] = ['main', 'down'].map((name) => reported.find((entry) => entry.name === name)!);
      expect(main).to.include({ lastPushOutcome: 'ok' });
      expect(main!.lastSuccessTime).to.equal(main!.lastPushTime);
      expect(main!.pushesOk).to.be.greaterThan(0);
      expect(down).to.include({ lastPushOutcome: 'failed' });
      expect(down!.lastSuccessTime).to.equal(undefined);
      expect(down!.lastError).to.be.a('string').and.not.be.empty;
      expect(down!.pushesFailed).to.be.greaterThan(0);
      const status = JSON.stringify((await readFeed('reporting'))?.status);
      for (const secret of [...Object.values(SECRET), DOWN_PASSWORD]) expect(status).not.to.include(secret);

      // The token reads and replaces its report ConfigMap and nothing else.
      const asFeed = new KubeConfig();
      asFeed.loadFromFile(credentials);
      const core = api(CoreV1Api, asFeed);
      await core.readNamespacedConfigMap({ namespace: namespace.name, name: 'reporting-feed-report' });
      await expectStatus(
        core.readNamespacedConfigMap({ namespace: namespace.name, name: 'reporting-feed-config' }),
        403,
      );
      await expectStatus(
        core.replaceNamespacedConfigMap({
          namespace: namespace.name,
          name: 'reporting-feed-config',
          body: { ...configMap, data: { 'config.json': '{}' } },
        }),
        403,
      );
      await expectStatus(core.listNamespacedConfigMap({ namespace: namespace.name }), 403);
      await expectStatus(core.readNamespacedSecret({ namespace: namespace.name, name: 'reporting-secrets' }), 403);

      child.kill('SIGTERM');
      expect(await exited, output).to.equal(0);
      child = undefined;
    } finally {
      child?.kill('SIGKILL');
      await signedApi?.stop();
      await prices.stop();
    }
  });
});
