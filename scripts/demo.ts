// `make demo`: the whole product on one machine, explained as it runs.
//   test control plane (make cluster-up) -> test chain with the real protocol contracts -> a price API on loopback
//   -> the CRDs -> the operator -> an OracleNode -> its coordinator and gateway run from the engine with exactly the
//   config and secrets the operator generated (as their pods would) -> an on-chain request fulfilled and a gateway
//   request answered -> the OracleNode's status and a metrics excerpt -> cleanup.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AppsV1Api,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
} from '@kubernetes/client-node';
import { AbiCoder } from 'ethers';
import { load } from 'js-yaml';
import { freePort, startTestChain } from '../test/support/chain.js';
import {
  buildConfigJson,
  createSponsor,
  ENDPOINTS,
  requestEvents,
  requestPrice,
  startApiServer,
} from '../test/support/harness.js';

const repoRoot = new URL('../', import.meta.url).pathname;
const cli = join(repoRoot, 'dist/cli/index.js');
const kubeconfigPath = process.env['KUBECONFIG'] ?? join(repoRoot, '.cache/cluster/run/admin.kubeconfig');
const namespace = 'oracle-node-demo';
const nodeName = 'demo';
const stage = 'demo';
const gatewayKey = '01234567-abcd-abcd-abcd-012345678abc';

const bold = (text: string) => (process.stdout.isTTY ? `\x1b[1m${text}\x1b[0m` : text);
let stepNumber = 0;
function step(text: string) {
  stepNumber++;
  console.log(`\n${bold(`[${stepNumber}] ${text}`)}`);
}
const say = (text: string) => console.log(`    ${text}`);

const children: ChildProcess[] = [];
function startEngine(args: string[], env: Record<string, string>, logFile: string): ChildProcess {
  const child = spawn(process.execPath, [cli, ...args], {
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const chunks: Buffer[] = [];
  child.stdout?.on('data', (c: Buffer) => chunks.push(c));
  child.stderr?.on('data', (c: Buffer) => chunks.push(c));
  child.on('exit', () => writeFileSync(logFile, Buffer.concat(chunks)));
  children.push(child);
  return child;
}

async function runEngine(args: string[], env: Record<string, string>): Promise<{ code: number; output: string }> {
  const child = spawn(process.execPath, [cli, ...args], {
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c) => {
    output += c;
  });
  child.stderr.on('data', (c) => {
    output += c;
  });
  const code = await new Promise<number>((resolve) => child.on('exit', (c) => resolve(c ?? 1)));
  return { code, output };
}

async function waitFor<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`timed out waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`);
}

type OracleNodeStatus = {
  nodeAddress?: string;
  gatewayUrls?: Record<string, string>;
  conditions?: { type: string; status: string; reason?: string; message?: string }[];
};

async function main() {
  const workDir = mkdtempSync(join(tmpdir(), 'oracle-node-demo-'));
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const batch = kc.makeApiClient(BatchV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const objects = KubernetesObjectApi.makeApiClient(kc);
  const cleanups: (() => Promise<unknown>)[] = [];
  let succeeded = false;

  try {
    step('The test control plane');
    const version = await kc.makeApiClient(CoreV1Api).listNode();
    say(`kube-apiserver at ${kc.getCurrentCluster()?.server}, nodes: ${version.items.map((n) => n.metadata?.name)}`);

    step('A test chain: anvil on 127.0.0.1 with the real AirnodeRrpV0, its DryRun and a requester contract');
    const { anvil, deployment } = await startTestChain();
    cleanups.push(() => anvil.stop());
    say(`chain ${deployment.chainId} at ${deployment.url}`);
    say(`AirnodeRrpV0 ${deployment.AirnodeRrpV0}, requester ${deployment.Requester}`);

    step('A price API on loopback (GET /price?coin=ETH -> {"price": 3000.25})');
    const api = await startApiServer();
    cleanups.push(() => api.close());
    say(`API at ${api.url}`);

    // Every CRD the operator serves: the OracleNode and the AirnodeFeed (docs/feeds.md).
    step('Install the CRDs (crds/oracle-node.io_oraclenodes.yaml, crds/oracle-node.io_airnodefeeds.yaml)');
    for (const plural of ['oraclenodes', 'airnodefeeds']) {
      const crd = load(readFileSync(join(repoRoot, `crds/oracle-node.io_${plural}.yaml`), 'utf8')) as {
        apiVersion: string;
        kind: string;
        metadata: { name: string };
      };
      await objects.patch(crd, undefined, undefined, 'oracle-node-demo', true, PatchStrategy.ServerSideApply);
      await waitFor(`the ${plural} CRD to be served`, 30_000, async () =>
        (await custom.listClusterCustomObject({ group: 'oracle-node.io', version: 'v1alpha1', plural }))
          ? true
          : undefined,
      );
    }
    say('kubectl get onode and kubectl get airnodefeed now work');

    const webhookPort = await freePort();
    step(
      `Start the operator (oracle-node operator --namespaces ${namespace} --webhook-port ${webhookPort} --webhook-url https://127.0.0.1:${webhookPort})`,
    );
    const metricsPort = await freePort();
    const healthPort = await freePort();
    startEngine(
      [
        'operator',
        `--kubeconfig=${kubeconfigPath}`,
        `--namespaces=${namespace}`,
        '--leader-elect=false',
        `--metrics-port=${metricsPort}`,
        `--health-port=${healthPort}`,
        // The admission webhook, reached by the API server at a loopback URL (the operator runs outside the cluster).
        `--webhook-port=${webhookPort}`,
        `--webhook-url=https://127.0.0.1:${webhookPort}`,
        '--webhook-configuration=oracle-node-demo',
        '--webhook-secret=oracle-node-demo-webhook-cert',
        '--coordinator-fence=false',
      ],
      { POD_NAMESPACE: 'default' },
      join(workDir, 'operator.log'),
    );
    cleanups.push(() =>
      objects
        .delete({
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'ValidatingWebhookConfiguration',
          metadata: { name: 'oracle-node-demo' },
        })
        .catch(() => undefined),
    );
    cleanups.push(() =>
      core
        .deleteNamespacedSecret({ namespace: 'default', name: 'oracle-node-demo-webhook-cert' })
        .catch(() => undefined),
    );
    await waitFor('the operator to be ready', 60_000, async () =>
      (await fetch(`http://127.0.0.1:${healthPort}/readyz`)).ok ? true : undefined,
    );
    say(`ready: /readyz on :${healthPort}, /metrics on :${metricsPort}`);

    step(`Apply a Secret and an OracleNode in namespace ${namespace}`);
    // A previous run's namespace may still be terminating: wait until it is gone, then start clean.
    await waitFor('the previous demo namespace to go', 120_000, async () =>
      (await core.readNamespace({ name: namespace }).catch(() => undefined)) ? undefined : true,
    ).catch(() => undefined);
    await core.createNamespace({ body: { metadata: { name: namespace } } }).catch(() => undefined);
    cleanups.push(() => core.deleteNamespace({ name: namespace }).catch(() => undefined));
    const { config, secrets } = buildConfigJson({ providers: { anvil: anvil.url }, deployment, apiUrl: api.url });
    const settings = config['nodeSettings'] as Record<string, unknown>;
    settings['stage'] = stage;
    settings['httpGateway'] = { enabled: true, maxConcurrency: 20, corsOrigins: [] };
    const triggers = config['triggers'] as { rrp: { endpointName: string }[]; http: unknown[] };
    triggers.http = [{ endpointId: ENDPOINTS.price, oisTitle: 'Test API', endpointName: 'price' }];
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: 'demo-secrets' }, stringData: secrets },
    });
    await custom.createNamespacedCustomObject({
      group: 'oracle-node.io',
      version: 'v1alpha1',
      namespace,
      plural: 'oraclenodes',
      body: {
        apiVersion: 'oracle-node.io/v1alpha1',
        kind: 'OracleNode',
        metadata: { name: nodeName },
        spec: { config, secretRef: { name: 'demo-secrets' } },
      },
    });
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the text names the config's placeholder syntax
    say('Secret demo-secrets holds NODE_MNEMONIC and PROVIDER_URL_0; the config refers to them as ${NAME}');

    step('kubectl apply --dry-run=server of a broken copy: the admission webhook refuses it, with the paths');
    const broken = structuredClone(config) as { triggers: { http: { oisTitle: string }[] } };
    broken.triggers.http[0]!.oisTitle = 'No such API';
    const refusal = await waitFor('the webhook to answer', 60_000, async () => {
      try {
        await custom.createNamespacedCustomObject({
          group: 'oracle-node.io',
          version: 'v1alpha1',
          namespace,
          plural: 'oraclenodes',
          dryRun: 'All',
          body: {
            apiVersion: 'oracle-node.io/v1alpha1',
            kind: 'OracleNode',
            metadata: { name: `${nodeName}-broken` },
            spec: { config: broken, secretRef: { name: 'demo-secrets' } },
          },
        });
        return undefined;
      } catch (error) {
        const body = (error as { body?: string }).body ?? '';
        return body.includes('denied the request') ? (JSON.parse(body) as { message: string }).message : undefined;
      }
    });
    say(refusal);

    step('The operator reconciles it into a ConfigMap, RBAC, a coordinator CronJob and a gateway Deployment');
    const base = `${nodeName}-${stage}`;
    const cronJob = await waitFor('the coordinator CronJob', 60_000, () =>
      batch.readNamespacedCronJob({ name: `${base}-coordinator`, namespace }).catch(() => undefined),
    );
    const gateway = await waitFor('the gateway Deployment', 60_000, () =>
      apps.readNamespacedDeployment({ name: `${base}-gateway`, namespace }).catch(() => undefined),
    );
    const configMap = await waitFor('the config ConfigMap', 60_000, () =>
      core.readNamespacedConfigMap({ name: `${base}-config`, namespace }).catch(() => undefined),
    );
    say(`CronJob ${cronJob.metadata?.name}: schedule "${cronJob.spec?.schedule}", ${cronJob.spec?.concurrencyPolicy}`);
    say(
      `Deployment ${gateway.metadata?.name}: ${gateway.spec?.replicas} replica(s), args ${JSON.stringify(
        gateway.spec?.template.spec?.containers[0]?.args,
      )}`,
    );
    const ready = await waitFor('Ready=True', 90_000, async () => {
      const node = (await custom.getNamespacedCustomObject({
        group: 'oracle-node.io',
        version: 'v1alpha1',
        namespace,
        plural: 'oraclenodes',
        name: nodeName,
      })) as { status?: OracleNodeStatus };
      return node.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True') ? node : undefined;
    });
    say(`OracleNode Ready; node address ${ready.status?.nodeAddress}`);

    step('Run the coordinator and the gateway from the engine, with the generated config and the Secret as env');
    const configFile = join(workDir, 'config.json');
    writeFileSync(configFile, configMap.data?.['config.json'] ?? '');
    const secret = await core.readNamespacedSecret({ name: 'demo-secrets', namespace });
    const podEnv: Record<string, string> = {};
    for (const [key, value] of Object.entries(secret.data ?? {})) podEnv[key] = Buffer.from(value, 'base64').toString();
    const gatewayPort = await freePort();
    startEngine(['gateway', '-c', configFile, '--port', String(gatewayPort)], podEnv, join(workDir, 'gateway.log'));
    await waitFor('the gateway to listen', 30_000, async () =>
      (await fetch(`http://127.0.0.1:${gatewayPort}/readyz`)).ok ? true : undefined,
    );
    say(`gateway pod stand-in on :${gatewayPort} (same args as the Deployment, secrets from the environment)`);

    step('An on-chain request: a sponsor sponsors the requester, which calls makeFullRequest for ETH');
    const sponsor = await createSponsor(deployment, 'demo');
    const requestId = await requestPrice(deployment, sponsor);
    say(`request ${requestId}`);
    say(`sponsor wallet ${sponsor.sponsorWallet} (derived from the node's xpub and the sponsor address)`);

    step('One coordinator cycle (what the CronJob runs every minute): read, authorize, call the API, fulfil');
    const cycle = await runEngine(['coordinator', '-c', configFile], podEnv);
    const summaryLine = cycle.output
      .split('\n')
      .reverse()
      .find((line) => line.trim().startsWith('{') && line.includes('"requests"'));
    say(`exit code ${cycle.code}; summary ${summaryLine?.trim().slice(0, 400) ?? cycle.output.slice(-400)}`);
    const events = await requestEvents(deployment, requestId);
    if (events.fulfilled.length !== 1) throw new Error(`request not fulfilled: ${JSON.stringify(events)}`);
    const [value] = AbiCoder.defaultAbiCoder().decode(['int256'], events.fulfilled[0]!.data);
    say(`FulfilledRequest on chain: ${value} (= 3000.25 x 10^6, _times 1000000)`);

    step('A gateway request: POST /http-data/<key>/<endpointId> {"parameters":{"coin":"BTC"}}');
    const answer = await fetch(`http://127.0.0.1:${gatewayPort}/http-data/${gatewayKey}/${ENDPOINTS.price}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ parameters: { coin: 'BTC' } }),
    });
    say(`HTTP ${answer.status}: ${await answer.text()}`);

    step('The OracleNode as kubectl shows it');
    const node = (await custom.getNamespacedCustomObject({
      group: 'oracle-node.io',
      version: 'v1alpha1',
      namespace,
      plural: 'oraclenodes',
      name: nodeName,
    })) as { status?: OracleNodeStatus };
    for (const c of node.status?.conditions ?? []) say(`${c.type}=${c.status} (${c.reason ?? ''}) ${c.message ?? ''}`);
    say(`status: ${JSON.stringify({ nodeAddress: node.status?.nodeAddress, gatewayUrls: node.status?.gatewayUrls })}`);

    step('Metrics excerpt (operator /metrics)');
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    for (const line of metrics.split('\n')) {
      if (/^(controller_runtime_reconcile_total|oracle_node_ready|workqueue_depth|leader_election)/.test(line))
        say(line);
    }
    console.log(`\n${bold('Demo complete.')}`);
    succeeded = true;
  } finally {
    step('Clean up');
    for (const child of children) child.kill('SIGTERM');
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    // Keep the engine processes' logs when something failed, to read what went wrong.
    if (succeeded && process.env['KEEP_DEMO_LOGS'] !== '1') rmSync(workDir, { recursive: true, force: true });
    else {
      say(`logs of the engine processes are in ${workDir}`);
      // CI keeps only this output: the end of each engine log says what went wrong.
      if (!succeeded)
        for (const log of readdirSync(workDir).filter((file) => file.endsWith('.log'))) {
          const lines = readFileSync(join(workDir, log), 'utf8').trimEnd().split('\n');
          say(`--- the last lines of ${log}`);
          for (const line of lines.slice(-15)) console.log(`    ${line.slice(0, 400)}`);
        }
    }
    say('stopped the engine processes, the API and the chain; deleted the namespace');
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(`\ndemo failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
