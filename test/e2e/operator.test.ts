// The product end to end on a real node: the operator installed from manifests/install.yaml (its image set to the
// local one) runs as a pod (in-cluster config through the `kubernetes` Service); the API server calls its
// admission webhook through the webhook Service; it reconciles an OracleNode into a gateway whose metrics port
// another pod scrapes, and a coordinator CronJob whose pod really runs a cycle against anvil and sends the
// heartbeat, worker Jobs really call the API stand-in, and an on-chain request is fulfilled. anvil, the API
// stand-in and the heartbeat receiver listen on the host's address on the pod bridge (REAL_NODE_GATEWAY), which
// the pods reach directly.

import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import {
  AdmissionregistrationV1Api,
  AppsV1Api,
  CustomObjectsApi,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
  type V1Job,
} from '@kubernetes/client-node';
import { expect } from 'chai';
import { verifyMessage } from 'ethers';
import { loadAll } from 'js-yaml';
import { GATEWAY_METRICS_PORT } from '../../src/contract/pods.js';
import { DEFAULT_PATH_KEY } from '../../src/gateway/server.js';
import { type Anvil, type Deployment, deployProtocol, rpc, startAnvil } from '../support/chain.js';
import {
  buildConfigJson,
  createSponsor,
  ENDPOINTS,
  NODE_ADDRESS,
  OIS_TITLE,
  requestEvents,
  requestPrice,
} from '../support/harness.js';
import {
  batch,
  core,
  installOperator,
  jobDone,
  kc,
  kubectl,
  kubectlWithInput,
  podsOf,
  type RealNode,
  realNode,
  recordTiming,
  repoRoot,
  requireRealNode,
  runNodeScript,
  uninstallOperator,
  useNamespace,
  waitFor,
} from './support.js';

const node = realNode();
const real = (): RealNode => requireRealNode(node);
const OPERATOR_NS = 'oracle-node-system';

const GATEWAY_BODY = JSON.stringify({ parameters: { coin: 'ETH' } });

/** The gateway's answer for ETH from the API stand-in. */
function expectPriceAnswer(status: number, answer: unknown): void {
  const body = answer as { rawValue?: unknown; encodedValue?: string; values?: string[] };
  expect(status, JSON.stringify(body)).to.equal(200);
  expect(body.rawValue).to.deep.equal({ price: 3000.25 });
  expect(body.values).to.deep.equal(['3000250000']);
  expect(body.encodedValue).to.match(/^0x[0-9a-f]{64}$/);
}
const MAX_CONCURRENCY = 2;
/** The operator's webhook configuration and Service, as manifests/install.yaml's flags name them. */
const WEBHOOK_CONFIGURATION = 'oracle-node-operator';
const WEBHOOK_SERVICE = 'oracle-node-operator-webhook';
const HEARTBEAT_API_KEY = 'e2e-heartbeat-api-key-0123456789abcdef';
const PUBLIC_URL = 'https://oracle.e2e.example';

type HeartbeatPost = { remoteAddress: string; path: string; headers: IncomingHttpHeaders; body: string };

/**
 * manifests/samples/minimal.yaml's OracleNode, broken by rules only the zod model knows (the CRD's schema checks
 * types and bounds): constantGasPrice not last, and a trigger naming an OIS that does not exist.
 */
function invalidNode(namespace: string): Record<string, unknown> {
  const docs = loadAll(readFileSync(resolve(repoRoot, 'manifests/samples/minimal.yaml'), 'utf8')) as {
    kind?: string;
    metadata: Record<string, unknown>;
    spec: { config: unknown };
  }[];
  const node = docs.find((doc) => doc?.kind === 'OracleNode');
  if (!node) throw new Error('manifests/samples/minimal.yaml has no OracleNode');
  node.metadata = { name: 'invalid', namespace };
  const config = node.spec.config as {
    chains: { options: Record<string, unknown> }[];
    triggers: { rrp: { oisTitle: string }[] };
  };
  config.chains[0]!.options.gasPriceOracle = [
    { gasPriceStrategy: 'constantGasPrice', gasPrice: { value: 10, unit: 'gwei' } },
    { gasPriceStrategy: 'providerRecommendedGasPrice', recommendedGasPriceMultiplier: 1.2 },
  ];
  config.triggers.rrp[0]!.oisTitle = 'Nope';
  return node as unknown as Record<string, unknown>;
}
/** The webhook's answer for invalidNode(): each error with its path. */
const INVALID_NODE_ERRORS = [
  'chains[0].options.gasPriceOracle: ConstantGasPrice strategy must be set as the last strategy in the array.',
  'triggers.rrp[0].oisTitle: No matching OIS for trigger with OIS title "Nope"',
] as const;

describe('e2e: the operator reconciles an OracleNode into real workloads', function () {
  this.timeout(720_000);
  let anvil: Anvil | undefined;
  let api: Server | undefined;
  let apiCalls = 0;
  let deployment: Deployment;
  let apiUrl = '';
  let heartbeatReceiver: Server | undefined;
  let heartbeatUrl = '';
  const heartbeats: HeartbeatPost[] = [];

  before(async function () {
    if (typeof node === 'string') {
      console.log(`      skipped: ${node}`);
      this.skip();
    }
    this.timeout(180_000);
    const gw = real().gateway;
    const port = 19545 + Math.floor(Math.random() * 1000);
    anvil = await startAnvil({ host: gw, port });
    deployment = await deployProtocol(anvil.url);

    api = createServer((req, res) => {
      apiCalls++;
      const url = new URL(req.url ?? '/', 'http://x');
      res.setHeader('content-type', 'application/json');
      if (url.pathname === '/price')
        res.end(JSON.stringify({ price: url.searchParams.get('coin') === 'BTC' ? 65000.5 : 3000.25 }));
      else {
        res.statusCode = 500;
        res.end('{"error":"broken on purpose"}');
      }
    });
    await new Promise<void>((r) => api?.listen(0, gw, r));
    apiUrl = `http://${gw}:${(api.address() as AddressInfo).port}`;

    // The heartbeat's monitoring endpoint: records every POST with where it came from.
    heartbeatReceiver = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => {
        body += chunk;
      });
      req.on('end', () => {
        heartbeats.push({
          remoteAddress: req.socket.remoteAddress ?? '',
          path: `${req.method} ${req.url}`,
          headers: req.headers,
          body,
        });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => heartbeatReceiver?.listen(0, gw, r));
    heartbeatUrl = `http://${gw}:${(heartbeatReceiver.address() as AddressInfo).port}/heartbeat`;

    await installOperator();
  });

  after(async () => {
    await anvil?.stop();
    api?.closeAllConnections();
    api?.close();
    heartbeatReceiver?.closeAllConnections();
    heartbeatReceiver?.close();
    await uninstallOperator();
  });

  const ns = useNamespace('e2e-operator');
  /** The node's Jobs of one component (coordinator, worker), as the apiserver lists them now. */
  const componentJobs = async (component: string) =>
    (
      await batch().listNamespacedJob({
        namespace: ns.name,
        labelSelector: `app.kubernetes.io/component=${component}`,
      })
    ).items;
  let requestId = '';
  let appliedAt = 0;

  it('the operator Deployment from manifests/install.yaml becomes available on the real node, its webhook reachable', async () => {
    const t0 = Date.now();
    const apps = kc().makeApiClient(AppsV1Api);
    await waitFor(
      async () => {
        const d = await apps.readNamespacedDeployment({ name: 'oracle-node-operator', namespace: OPERATOR_NS });
        return (d.status?.availableReplicas ?? 0) >= 1;
      },
      180_000,
      { description: 'deployment oracle-node-operator available', intervalMs: 1000 },
    );
    recordTiming('operator_deployment_available_ms', Date.now() - t0);
    const pods = await podsOf(OPERATOR_NS, 'app.kubernetes.io/name=oracle-node-operator');
    expect(pods.some((p) => p.spec?.nodeName === real().nodeName && p.status?.phase === 'Running')).to.equal(true);
    // The operator registers its webhook (failurePolicy Fail) as soon as it serves, but the API server reaches it
    // only once the webhook Service has a ready endpoint and kube-proxy follows: until then every OracleNode write
    // is refused (`connection refused`), as right after any install. Wait until a dry run gets the webhook's answer.
    const t1 = Date.now();
    await waitFor(
      async () => {
        const result = await kubectlWithInput(
          JSON.stringify(invalidNode(ns.name)),
          'apply',
          '--dry-run=server',
          '-f',
          '-',
        );
        return result.code !== 0 && result.stderr.includes(INVALID_NODE_ERRORS[1]);
      },
      120_000,
      { description: "the API server to reach the operator's webhook", intervalMs: 1000 },
    );
    recordTiming('operator_available_to_webhook_answering_ms', Date.now() - t1);
  });

  it("the API server calls the operator's admission webhook through its Service: an invalid OracleNode is refused with its paths, --dry-run=server too", async () => {
    // The operator creates its own configuration (pointing at the webhook Service, with its CA) once it serves.
    const admission = kc().makeApiClient(AdmissionregistrationV1Api);
    const configuration = await waitFor(
      async () => {
        const c = await admission
          .readValidatingWebhookConfiguration({ name: WEBHOOK_CONFIGURATION })
          .catch(() => undefined);
        return c?.webhooks?.[0]?.clientConfig?.caBundle ? c : undefined;
      },
      120_000,
      { description: `ValidatingWebhookConfiguration ${WEBHOOK_CONFIGURATION} with a CA bundle`, intervalMs: 1000 },
    );
    const webhook = configuration.webhooks?.[0];
    expect(webhook?.clientConfig?.service, 'reached through the Service, not a URL').to.deep.include({
      namespace: OPERATOR_NS,
      name: WEBHOOK_SERVICE,
    });
    expect(webhook?.clientConfig?.url).to.equal(undefined);
    expect(webhook?.failurePolicy).to.equal('Fail');
    const service = await core().readNamespacedService({ name: WEBHOOK_SERVICE, namespace: OPERATOR_NS });
    expect(service.spec?.clusterIP, 'a ClusterIP kube-proxy serves').to.match(/^10\.96\.\d+\.\d+$/);

    const manifest = JSON.stringify(invalidNode(ns.name));
    const dryRun = await kubectlWithInput(manifest, 'apply', '--dry-run=server', '-f', '-');
    const t1 = Date.now();
    const applied = await kubectlWithInput(manifest, 'apply', '-f', '-');
    recordTiming('kubectl_apply_refused_by_webhook_ms', Date.now() - t1);
    expect(dryRun.code, dryRun.stdout).to.not.equal(0);
    expect(applied.code, applied.stdout).to.not.equal(0);
    expect(applied.stderr).to.contain('The OracleNode "invalid" is invalid:');
    for (const path of INVALID_NODE_ERRORS) {
      expect(applied.stderr).to.contain(path);
      expect(dryRun.stderr).to.contain(path);
    }
    expect(dryRun.stderr).to.equal(applied.stderr);
    const stored = await kubectl('-n', ns.name, 'get', 'oraclenodes', '-o', 'name');
    expect(stored.trim(), 'nothing was stored').to.equal('');
    // The refusals came from the operator's pods: their admission metrics counted them (either replica answers).
    let refusals = 0;
    for (const pod of await podsOf(OPERATOR_NS, 'app.kubernetes.io/name=oracle-node-operator')) {
      const text = await (await fetch(`http://${pod.status?.podIP}:8080/metrics`)).text();
      for (const line of text.split('\n')) {
        const m = /^oracle_node_webhook_admission_duration_seconds_count\{(.*)\} (\d+)$/.exec(line);
        if (m?.[1]?.includes('allowed="false"')) refusals += Number(m[2]);
      }
    }
    expect(refusals, "refused reviews counted by the operator's pods").to.be.at.least(2);
  });

  it('reconciles an OracleNode: Ready, with the coordinator Role (the operator may grant only what it holds)', async () => {
    const { config, secrets } = buildConfigJson({
      providers: { anvil: deployment.url },
      deployment,
      apiUrl,
      maxConcurrency: MAX_CONCURRENCY,
    });
    const settings = config['nodeSettings'] as Record<string, unknown>;
    settings['logLevel'] = 'INFO';
    settings['httpGateway'] = { enabled: true, maxConcurrency: 10, corsOrigins: [] };
    // As a migrated Airnode reports to its monitoring: URL and key from the Secret.
    settings['heartbeat'] = { enabled: true, url: `\${HEARTBEAT_URL}`, apiKey: `\${HEARTBEAT_API_KEY}` };
    (config['triggers'] as Record<string, unknown>)['http'] = [
      { endpointId: ENDPOINTS.price, oisTitle: OIS_TITLE, endpointName: 'price' },
    ];
    await core().createNamespacedSecret({
      namespace: ns.name,
      body: {
        metadata: { name: 'e2e-secrets' },
        stringData: { ...secrets, HEARTBEAT_URL: heartbeatUrl, HEARTBEAT_API_KEY: HEARTBEAT_API_KEY },
      },
    });
    const sponsor = await createSponsor(deployment, 'e2e');
    requestId = await requestPrice(deployment, sponsor);
    appliedAt = Date.now();
    await kc()
      .makeApiClient(CustomObjectsApi)
      .createNamespacedCustomObject({
        group: 'oracle-node.io',
        version: 'v1alpha1',
        namespace: ns.name,
        plural: 'oraclenodes',
        body: {
          apiVersion: 'oracle-node.io/v1alpha1',
          kind: 'OracleNode',
          metadata: { name: 'e2e' },
          spec: {
            config,
            secretRef: { name: 'e2e-secrets' },
            image: real().image,
            imagePullPolicy: 'Never',
            gateway: { publicUrl: PUBLIC_URL },
          },
        },
      });
    const rbac = kc().makeApiClient(RbacAuthorizationV1Api);
    try {
      await waitFor(() => rbac.readNamespacedRole({ name: 'e2e-test-coordinator', namespace: ns.name }), 60_000, {
        description: 'Role e2e-test-coordinator',
        intervalMs: 1000,
      });
    } catch (err) {
      throw new Error(
        `${(err as Error).message}. The coordinator Role grants pods/log get; RBAC escalation prevention lets the operator ` +
          "create it only when the operator's ClusterRole holds pods/log get too (server-side apply then answers 404).",
      );
    }
  });

  it("the gateway Deployment's pods really start and answer a gateway request: pod IP, Service ClusterIP from host and pod", async () => {
    const apps = kc().makeApiClient(AppsV1Api);
    const name = 'e2e-test-gateway';
    await waitFor(
      async () =>
        ((await apps.readNamespacedDeployment({ name, namespace: ns.name })).status?.availableReplicas ?? 0) >= 1,
      180_000,
      { description: `deployment ${name} available (its readiness probe answers on the pod IP)`, intervalMs: 1000 },
    );
    // From the API's own timestamps (1 s resolution), so the Role check before does not count.
    const deploymentNow = await apps.readNamespacedDeployment({ name, namespace: ns.name });
    const available = deploymentNow.status?.conditions?.find((c) => c.type === 'Available')?.lastTransitionTime;
    const oracleNode = (await kc().makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
      group: 'oracle-node.io',
      version: 'v1alpha1',
      namespace: ns.name,
      plural: 'oraclenodes',
      name: 'e2e',
    })) as { metadata?: { creationTimestamp?: string } };
    const created = oracleNode.metadata?.creationTimestamp;
    if (available && created) {
      recordTiming(
        'apply_to_gateway_available_ms(1s resolution)',
        new Date(available).getTime() - new Date(created).getTime(),
      );
    }
    const pods = (await podsOf(ns.name, 'app.kubernetes.io/component=gateway')).filter((p) => p.status?.podIP);
    expect(pods.length).to.be.greaterThan(0);
    const path = `/http-data/${DEFAULT_PATH_KEY}/${ENDPOINTS.price}`;
    const request = { method: 'POST', headers: { 'content-type': 'application/json' }, body: GATEWAY_BODY };
    const response = await fetch(`http://${pods[0]?.status?.podIP}:3000${path}`, request);
    expectPriceAnswer(response.status, await response.json());
    const logs = await kubectl('-n', ns.name, 'logs', `deployment/${name}`);
    expect(logs.length, 'the gateway pod logs').to.be.greaterThan(0);

    // The same request through the node's gateway Service: its ClusterIP, DNAT-ed by kube-proxy on the node.
    const service = await core().readNamespacedService({ name: 'e2e-gateway', namespace: ns.name });
    const base = `http://${service.spec?.clusterIP}:${service.spec?.ports?.[0]?.port}`;
    expect(service.spec?.clusterIP, 'a ClusterIP of 10.96.0.0/16').to.match(/^10\.96\.\d+\.\d+$/);
    // Rules follow the EndpointSlice within kube-proxy's sync period (1 s): wait for the first answer (any HTTP
    // answer: the Service exposes the gateway port only, /readyz is on the pod's metrics port).
    await waitFor(
      async () =>
        fetch(`${base}/`, { signal: AbortSignal.timeout(2000) }).then(
          () => true,
          () => false,
        ),
      30_000,
      `the gateway Service ${base} answering`,
    );
    const t0 = Date.now();
    const viaService = await fetch(`${base}${path}`, request);
    expectPriceAnswer(viaService.status, await viaService.json());
    recordTiming('gateway_request_via_service_clusterip_from_host_ms', Date.now() - t0);
    // And from a pod, as in-cluster clients call the gateway.
    const script = [
      `fetch(${JSON.stringify(base + path)}, ${JSON.stringify(request)})`,
      '.then(async (r) => console.log(JSON.stringify({ status: r.status, body: await r.json() })),',
      '(e) => { console.log("error", e.cause?.code || e.message); process.exitCode = 1; })',
    ].join(' ');
    const log = await runNodeScript(ns.name, 'gateway-via-service', script);
    const fromPod = JSON.parse(log) as { status: number; body: unknown };
    expectPriceAnswer(fromPod.status, fromPod.body);
  });

  it("another pod scrapes the gateway's metrics port (pod IP, 9090); the gateway Service serves no /metrics", async () => {
    const [pod] = (await podsOf(ns.name, 'app.kubernetes.io/component=gateway')).filter((p) => p.status?.podIP);
    const container = pod?.spec?.containers?.[0];
    expect(container?.ports?.find((p) => p.name === 'metrics')?.containerPort).to.equal(GATEWAY_METRICS_PORT);
    const service = await core().readNamespacedService({ name: 'e2e-gateway', namespace: ns.name });
    const servicePorts = (service.spec?.ports ?? []).map((p) => [p.port, p.targetPort]);
    expect(servicePorts.flat(), 'the Service exposes the gateway port only').to.not.include.members([
      GATEWAY_METRICS_PORT,
      'metrics',
    ]);
    const scrapeUrl = `http://${pod?.status?.podIP}:${GATEWAY_METRICS_PORT}/metrics`;
    const serviceUrl = `http://${service.spec?.clusterIP}:${service.spec?.ports?.[0]?.port}/metrics`;
    // A scraper's view: another pod on the node, as Prometheus (through the PodMonitor) reaches the pod.
    const script = [
      'const get = (u) => fetch(u, { signal: AbortSignal.timeout(10000) })',
      '.then(async (r) => ({ status: r.status, type: r.headers.get("content-type"), body: await r.text() }),',
      '(e) => ({ error: String(e.cause?.code || e.message) }));',
      `Promise.all([get(${JSON.stringify(scrapeUrl)}), get(${JSON.stringify(serviceUrl)})])`,
      '.then(([scrape, service]) => console.log(JSON.stringify({ scrape, service })));',
    ].join(' ');
    const t0 = Date.now();
    const log = await runNodeScript(ns.name, 'scrape-gateway-metrics', script);
    recordTiming('gateway_metrics_scrape_job_ms', Date.now() - t0);
    const { scrape, service: viaService } = JSON.parse(log) as Record<
      'scrape' | 'service',
      { status?: number; type?: string; body?: string; error?: string }
    >;
    expect(scrape?.status, scrape?.error).to.equal(200);
    expect(scrape?.type).to.match(/^text\/plain/);
    // The request made through the pod IP and the Service before is counted, by endpoint and status class.
    const requests = (scrape?.body ?? '').split('\n').filter((l) => l.startsWith('gateway_requests_total{'));
    expect(requests.join('\n')).to.include(ENDPOINTS.price);
    for (const series of [
      'gateway_request_duration_seconds_bucket',
      'gateway_responses_total',
      'gateway_in_flight_requests',
    ]) {
      expect(scrape?.body, series).to.match(new RegExp(`^${series}`, 'm'));
    }
    // The caller-facing port answers, but not with metrics.
    expect(viaService?.status, viaService?.error).to.be.a('number');
    expect(viaService?.status).to.not.equal(200);
    expect(viaService?.body ?? '').to.not.include('gateway_requests_total');
  });

  it('the coordinator pod runs a cycle against the chain, worker Jobs call the API, the request is fulfilled', async () => {
    let fulfilled: Awaited<ReturnType<typeof requestEvents>>;
    try {
      fulfilled = await waitFor(
        async () => {
          const events = await requestEvents(deployment, requestId);
          return events.fulfilled.length + events.failed.length > 0 ? events : undefined;
        },
        300_000,
        {
          description: `request ${requestId} fulfilled on chain (the coordinator CronJob runs every minute)`,
          intervalMs: 2000,
        },
      );
    } catch (err) {
      const pods = await podsOf(ns.name, 'app.kubernetes.io/component=coordinator');
      const logs = await Promise.all(
        pods.map((p) => kubectl('-n', ns.name, 'logs', p.metadata?.name ?? '').catch((e) => String(e))),
      );
      throw new Error(`${(err as Error).message}; coordinator pods' logs:\n${logs.join('\n---\n').slice(-3000)}`);
    }
    recordTiming('apply_to_first_fulfilment_ms', Date.now() - appliedAt);
    expect(fulfilled.failed).to.have.length(0);
    expect(fulfilled.fulfilled).to.have.length(1);
    expect(apiCalls).to.be.greaterThan(0);

    // The cycle's Jobs finish a few seconds after the fulfilment transaction is mined.
    const coordinator = await waitFor(
      async () => (await componentJobs('coordinator')).find((j: V1Job) => jobDone(j) === 'Complete'),
      90_000,
      { description: 'a coordinator Job Complete', intervalMs: 1000 },
    );
    const coordinatorPods = await podsOf(ns.name, 'app.kubernetes.io/component=coordinator');
    expect(coordinatorPods.every((p) => p.spec?.nodeName === real().nodeName)).to.equal(true);
    // `kubectl logs` shows the engine's own log lines (JSON, as logFormat says).
    const logs = await kubectl('-n', ns.name, 'logs', `job/${coordinator.metadata?.name}`);
    expect(logs).to.include('"msg":"cycle finished"');
    // Worker Jobs really ran, never wider than the chain's maxConcurrency. The request, made before the node, is served
    // by the first cycle of the first window, before that window's workers are up: through a per-poll (Indexed) Job.
    const perPoll = (j: V1Job) => j.spec?.completionMode === 'Indexed';
    const workers = await waitFor(
      async () => {
        const list = await componentJobs('worker');
        return list.some((j) => perPoll(j) && jobDone(j) === 'Complete') ? list : undefined;
      },
      90_000,
      { description: 'a per-poll worker Job Complete', intervalMs: 1000 },
    );
    for (const w of workers) expect(w.spec?.parallelism ?? 1).to.be.at.most(MAX_CONCURRENCY);
    // A worker prints its API results (the coordinator signs and sends): the API answered, nothing was sent there.
    const done = workers.find((j) => perPoll(j) && jobDone(j) === 'Complete');
    const workerLog = await kubectl('-n', ns.name, 'logs', `job/${done?.metadata?.name}`);
    expect(workerLog).to.include('"format":"oracle-node/shard@2"');
    expect(workerLog).to.include('"outcome":"2xx"');
    expect(workerLog).to.not.include('txHash');
  });

  it('the coordinator pod sends the heartbeat after its cycle: API key header, payload signed by the node key', async () => {
    const post = await waitFor(async () => heartbeats[0], 90_000, {
      description: `a heartbeat POST at ${heartbeatUrl}`,
      intervalMs: 1000,
    });
    expect(post.path).to.equal('POST /heartbeat');
    // From a pod on the bridge (10.244.0.0/24), not from the host's 10.244.0.1.
    const coordinatorPodIps = (await podsOf(ns.name, 'app.kubernetes.io/component=coordinator')).map(
      (p) => p.status?.podIP,
    );
    expect(post.remoteAddress).to.match(/^10\.244\.0\.\d+$/);
    expect(post.remoteAddress).to.not.equal(real().gateway);
    if (coordinatorPodIps.some(Boolean)) expect(coordinatorPodIps).to.include(post.remoteAddress);
    expect(post.headers['airnode-heartbeat-api-key']).to.equal(HEARTBEAT_API_KEY);
    expect(post.headers['content-type']).to.equal('application/json');
    const body = JSON.parse(post.body) as { payload: string; signature: string };
    expect(Object.keys(body)).to.deep.equal(['payload', 'signature']);
    expect(verifyMessage(body.payload, body.signature), 'signed by the node address').to.equal(NODE_ADDRESS);
    const payload = JSON.parse(body.payload) as Record<string, unknown>;
    expect(Object.keys(payload)).to.deep.equal([
      'timestamp',
      'stage',
      'cloud_provider',
      'deployment_id',
      'http_gateway_url',
    ]);
    expect(payload['stage']).to.equal('test');
    // The URL callers use (spec.gateway.publicUrl), never localhost.
    expect(payload['http_gateway_url']).to.equal(`${PUBLIC_URL}/http-data`);
    expect(post.body).to.not.include('localhost');
    // The operator reads the coordinator's report: the last cycle's heartbeat was Sent; the key is nowhere in it.
    const stored = await waitFor(
      async () => {
        const text = await kubectl('-n', ns.name, 'get', 'oraclenode', 'e2e', '-o', 'json');
        const status = (JSON.parse(text) as { status?: { lastCycle?: { heartbeat?: string } } }).status;
        return status?.lastCycle?.heartbeat === 'Sent' ? text : undefined;
      },
      60_000,
      { description: "status.lastCycle.heartbeat 'Sent'", intervalMs: 1000 },
    );
    expect(stored).to.not.include(HEARTBEAT_API_KEY);
  });

  // Issue 26's and 36's real-pods figure: a request made while a coordinator window runs (the operator's CronJob runs
  // 45 s windows with 1 s polls) is served by that window through the window's worker pods, which started with the
  // window (docs/chain-cycle.md, "Worker pods that stay for the window"): no pod starts for the request.
  it("a request made during a coordinator window is fulfilled through the window's worker pods, no pod started for it", async () => {
    // A window with at least 25 s left whose workers are there (the coordinator logs when the first one asks).
    const window = await waitFor(
      async () => {
        for (const j of await componentJobs('coordinator')) {
          const started = j.status?.startTime ? new Date(j.status.startTime).getTime() : 0;
          if ((j.status?.active ?? 0) === 0 || Date.now() - started > 20_000) continue;
          const log = await kubectl('-n', ns.name, 'logs', `job/${j.metadata?.name}`).catch(() => '');
          if (log.includes('a worker of the window asks for work')) return j;
        }
        return undefined;
      },
      180_000,
      { description: 'a coordinator window that started a few seconds ago, its workers there', intervalMs: 500 },
    );
    const sponsor = await createSponsor(deployment, 'e2e-window');
    const made = await requestPrice(deployment, sponsor, 'SOL');
    const madeAt = Date.now();
    const events = await waitFor(
      async () => {
        const found = await requestEvents(deployment, made);
        return found.fulfilled.length + found.failed.length > 0 ? found : undefined;
      },
      90_000,
      { description: `request ${made} fulfilled`, intervalMs: 250 },
    );
    const fulfilledAt = Date.now();
    expect(events.fulfilled).to.have.length(1);
    // Served by the window that was running, not by the next tick's coordinator.
    const servedBy = (await componentJobs('coordinator')).filter((j: V1Job) => {
      const started = j.status?.startTime ? new Date(j.status.startTime).getTime() : 0;
      return started > 0 && started <= fulfilledAt;
    });
    expect(servedBy.map((j) => j.metadata?.name)).to.include(window.metadata?.name);
    const newest = servedBy.map((j) => new Date(j.status!.startTime!).getTime()).sort((a, b) => b - a)[0]!;
    expect(newest).to.equal(new Date(window.status!.startTime!).getTime());
    recordTiming('window_workers_request_mined_to_fulfilment_seen_ms', fulfilledAt - madeAt);
    // No worker Job was created for it: the window's worker Job, created before the request, answered it.
    const workers = await componentJobs('worker');
    const createdAt = (j: V1Job) => new Date(j.metadata?.creationTimestamp ?? 0).getTime();
    const perPollSince = workers.filter((j) => j.spec?.completionMode === 'Indexed' && createdAt(j) >= madeAt - 1000);
    expect(perPollSince.map((j) => j.metadata?.name)).to.deep.equal([]);
    const windowJobs = workers.filter((j) => j.spec?.completionMode !== 'Indexed' && createdAt(j) <= madeAt);
    expect(windowJobs).to.not.have.length(0);
    for (const j of windowJobs) expect(j.spec?.parallelism ?? 1).to.be.at.most(MAX_CONCURRENCY);
    const logs = await Promise.all(
      windowJobs.map((j) =>
        kubectl('-n', ns.name, 'logs', '--tail=-1', '-l', `batch.kubernetes.io/job-name=${j.metadata?.name}`),
      ),
    );
    expect(logs.join('\n').toLowerCase()).to.include(made.toLowerCase());
  });

  it("editing the stage rolls out: new gateway first, old stage removed, the new stage's coordinator takes the node's Lease from the old window, each request fulfilled by one transaction", async () => {
    const custom = kc().makeApiClient(CustomObjectsApi);
    const apps = kc().makeApiClient(AppsV1Api);
    const sponsor = await createSponsor(deployment, 'e2e-stage');
    const before = await requestPrice(deployment, sponsor, 'BTC');
    const t0 = Date.now();
    await custom.patchNamespacedCustomObject(
      {
        group: 'oracle-node.io',
        version: 'v1alpha1',
        namespace: ns.name,
        plural: 'oraclenodes',
        name: 'e2e',
        body: [{ op: 'replace', path: '/spec/config/nodeSettings/stage', value: 'prod' }],
      },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
    // Sample the coordinator Jobs that are running, per stage, until the new stage has served a request made while
    // both stages' coordinators ran, and the old stage's workloads are gone.
    let bothStagesAt = 0;
    let newGatewayAt = 0;
    let oldGatewayGoneAt = 0;
    let prodCoordinatorAt = 0;
    let during: { id: string; at: number } | undefined;
    let servedAt = 0;
    try {
      await waitFor(
        async () => {
          const active = (await componentJobs('coordinator'))
            .filter((j) => (j.status?.active ?? 0) > 0)
            .map((j) => j.metadata?.labels?.['oracle-node.io/stage']);
          if (!prodCoordinatorAt && active.includes('prod')) prodCoordinatorAt = Date.now();
          // Both stages' windows run: the old one holds the Lease, the new one waits for it. A request made now is
          // served across the hand-over between the stages.
          if (!bothStagesAt && active.includes('test') && active.includes('prod')) {
            bothStagesAt = Date.now();
            during = { id: await requestPrice(deployment, sponsor, 'ETH'), at: Date.now() };
          }
          const gw = await apps
            .readNamespacedDeployment({ name: 'e2e-prod-gateway', namespace: ns.name })
            .catch(() => undefined);
          if (!newGatewayAt && (gw?.status?.availableReplicas ?? 0) >= 1) newGatewayAt = Date.now();
          const old = await apps
            .readNamespacedDeployment({ name: 'e2e-test-gateway', namespace: ns.name })
            .catch(() => undefined);
          if (!oldGatewayGoneAt && !old) oldGatewayGoneAt = Date.now();
          if (during && !servedAt && (await requestEvents(deployment, during.id)).fulfilled.length > 0)
            servedAt = Date.now();
          return oldGatewayGoneAt && prodCoordinatorAt && servedAt ? true : undefined;
        },
        // The old window's end (up to 70 s), the next tick and a cycle, with margin.
        240_000,
        { description: 'a request made during the rollout served and the test stage removed', intervalMs: 500 },
      );
    } catch (err) {
      const node = (await custom.getNamespacedCustomObject({
        group: 'oracle-node.io',
        version: 'v1alpha1',
        namespace: ns.name,
        plural: 'oraclenodes',
        name: 'e2e',
      })) as { status?: { conditions?: { type: string; message: string }[] } };
      const progressing = node.status?.conditions?.find((c) => c.type === 'Progressing')?.message;
      const left = await kubectl(
        '-n',
        ns.name,
        'get',
        'jobs,configmaps,cronjobs',
        '-l',
        'oracle-node.io/stage=test',
        '-o',
        'name',
      );
      throw new Error(
        `${(err as Error).message}; Progressing: ${progressing}; test-stage objects left: ${left.trim().replace(/\n/g, ', ')}`,
      );
    }
    recordTiming('stage_edit_to_old_gateway_removed_ms', oldGatewayGoneAt - t0);
    recordTiming('stage_edit_to_first_prod_coordinator_ms', prodCoordinatorAt - t0);
    recordTiming('stage_rollout_request_during_both_stages_to_seen_fulfilled_ms', servedAt - during!.at);
    expect(newGatewayAt, 'the prod gateway was available').to.be.greaterThan(0);
    expect(newGatewayAt, 'prod gateway available before the test gateway was removed').to.be.at.most(oldGatewayGoneAt);
    const cron = await batch()
      .readNamespacedCronJob({ name: 'e2e-test-coordinator', namespace: ns.name })
      .catch(() => undefined);
    expect(cron, 'the test stage CronJob is gone').to.equal(undefined);
    // Exactly once across the stages: each request fulfilled once, by one transaction of the sponsor's wallet (its
    // mined transaction count: a second sender would have spent a nonce on a reverted or duplicate fulfilment).
    for (const id of [before, during!.id]) {
      const events = await requestEvents(deployment, id);
      expect(events.fulfilled, `${id} fulfilled once`).to.have.length(1);
      expect(events.failed, `${id} not failed`).to.have.length(0);
    }
    const mined = Number(
      await rpc<string>(deployment.url, 'eth_getTransactionCount', [sponsor.sponsorWallet, 'latest']),
    );
    expect(mined, "the sponsor wallet's transactions").to.equal(2);
  });
});
