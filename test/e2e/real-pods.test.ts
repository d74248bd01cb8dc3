// Real pods on a real node: the kubelet (built from test/cluster/k8s) starts them in containerd + runc
// from the engine image that `make image` built offline and real-node.sh imported. Every container
// runs as uid 65532 with a read-only root filesystem and no capabilities, as the operator's will.

import { expect } from 'chai';
import { type Anvil, CHAIN_ID, startAnvil } from '../support/chain.js';
import {
  core,
  kubectl,
  logsOf,
  podStartMs,
  type RealNode,
  realNode,
  recordTiming,
  requireRealNode,
  restricted,
  runJob,
  runNodeScript,
  useNamespace,
  waitFor,
} from './support.js';

const node = realNode();
const real = (): RealNode => requireRealNode(node);

describe('e2e: real pods on a real node', function () {
  this.timeout(180_000);
  before(function () {
    if (typeof node === 'string') {
      console.log(`      skipped: ${node}`);
      this.skip();
    }
  });
  const ns = useNamespace('e2e-pods');

  it('the node is a kubelet on containerd, Ready', async () => {
    const n = await core().readNode({ name: real().nodeName });
    expect(n.status?.nodeInfo?.containerRuntimeVersion).to.match(/^containerd:\/\//);
    expect(n.status?.nodeInfo?.kubeletVersion).to.match(/^v1\.\d+\.\d+/);
    expect(n.status?.conditions?.find((c) => c.type === 'Ready')?.status).to.equal('True');
    expect(n.metadata?.labels?.['oracle-node-operator.test/real-node']).to.equal('true');
  });

  it('a Job with the engine image runs `oracle-node --version`; its logs show the version', async () => {
    const { pod, outcome, elapsedMs } = await runJob(ns.name, 'version', { args: ['--version'] });
    expect(outcome, JSON.stringify(pod.status?.containerStatuses)).to.equal('Complete');
    expect(pod.spec?.nodeName).to.equal(real().nodeName);
    expect(pod.status?.podIP, 'a pod IP from the CNI bridge').to.match(/^\d+\.\d+\.\d+\.\d+$/);
    expect((await logsOf(ns.name, pod)).trim()).to.match(/^\d+\.\d+\.\d+$/);
    // kubectl logs goes apiserver -> kubelet (127.0.0.1:10250) -> containerd's log file.
    expect((await kubectl('-n', ns.name, 'logs', `job/version`)).trim()).to.match(/^\d+\.\d+\.\d+$/);
    recordTiming('job_create_to_complete_ms', elapsedMs);
    const start = podStartMs(pod);
    if (start !== undefined) recordTiming('pod_create_to_container_start_ms(1s resolution)', start);
  });

  it('the image runs as uid 65532 in /app with a read-only root filesystem', async () => {
    const script = [
      'const fs = require("node:fs");',
      'let ro = false; try { fs.writeFileSync("/app/x", "x"); } catch (e) { ro = e.code === "EROFS"; }',
      'fs.writeFileSync("/tmp/ok", "ok");',
      'console.log(JSON.stringify({ uid: process.getuid(), gid: process.getgid(), cwd: process.cwd(), ro, node: process.version }));',
    ].join(' ');
    const seen = JSON.parse(await runNodeScript(ns.name, 'identity', script));
    expect(seen).to.deep.include({ uid: 65532, gid: 65532, cwd: '/app', ro: true });
    expect(seen.node).to.match(/^v24\./);
  });

  it('`oracle-node` is a command on PATH in the image (shebang via /usr/bin/env)', async () => {
    const { pod, outcome } = await runJob(ns.name, 'on-path', { command: ['oracle-node', 'help'] });
    expect(outcome).to.equal('Complete');
    expect(await logsOf(ns.name, pod)).to.match(/Usage: oracle-node <command>/);
  });

  it('a pod reaches the apiserver through the `kubernetes` Service with its ServiceAccount token', async () => {
    // What the operator pod does: in-cluster config (KUBERNETES_SERVICE_HOST/PORT, token, CA).
    const script = [
      'const https = require("node:https"); const fs = require("node:fs");',
      'const dir = "/var/run/secrets/kubernetes.io/serviceaccount";',
      'const req = https.request({ host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT,',
      '  path: "/api/v1/namespaces/" + fs.readFileSync(dir + "/namespace", "utf8") + "/serviceaccounts/default",',
      '  ca: fs.readFileSync(dir + "/ca.crt"), headers: { authorization: "Bearer " + fs.readFileSync(dir + "/token", "utf8") } },',
      '  (res) => { let b = ""; res.on("data", (c) => (b += c)); res.on("end", () => console.log(res.statusCode, b.length)); });',
      'req.on("error", (e) => { console.log("error", e.code || e.message); process.exitCode = 1; }); req.end();',
    ].join(' ');
    const log = await runNodeScript(ns.name, 'in-cluster', script);
    // 403: authenticated as system:serviceaccount:<ns>:default, which has no RBAC to read ServiceAccounts.
    expect(log).to.match(/^403 \d+$/);
  });

  it('a server pod answers through its pod IP from the host', async () => {
    const script =
      'require("node:http").createServer((q, s) => s.end(JSON.stringify({ path: q.url, pid: process.pid }))).listen(8080, () => console.log("listening"))';
    const t0 = Date.now();
    await core().createNamespacedPod({
      namespace: ns.name,
      body: {
        metadata: { name: 'server', labels: { app: 'server' } },
        spec: {
          securityContext: { runAsUser: 65532, runAsGroup: 65532 },
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: 'engine',
              image: real().image,
              imagePullPolicy: 'Never',
              command: ['node', '-e', script],
              ports: [{ containerPort: 8080 }],
              readinessProbe: { httpGet: { path: '/ready', port: 8080 }, periodSeconds: 1 },
              securityContext: restricted,
            },
          ],
        },
      },
    });
    const pod = await waitFor(
      async () => {
        const p = await core().readNamespacedPod({ name: 'server', namespace: ns.name });
        return p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? p : undefined;
      },
      120_000,
      'pod server Ready (its readiness probe passes: the kubelet reached the pod IP)',
    );
    recordTiming('server_pod_create_to_ready_ms', Date.now() - t0);
    const response = await fetch(`http://${pod.status?.podIP}:8080/hello`);
    expect(response.status).to.equal(200);
    expect(await response.json()).to.deep.include({ path: '/hello', pid: 1 });
  });

  it('a Service ClusterIP answers from the host, from another pod and from its own pod (kube-proxy)', async () => {
    // The `server` pod of the test before is the Service's only endpoint.
    const t0 = Date.now();
    const service = await core().createNamespacedService({
      namespace: ns.name,
      body: {
        metadata: { name: 'server' },
        spec: { selector: { app: 'server' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
      },
    });
    const ip = service.spec?.clusterIP ?? '';
    expect(ip, "a ClusterIP of the apiserver's --service-cluster-ip-range 10.96.0.0/16").to.match(/^10\.96\.\d+\.\d+$/);
    // Refused (kube-proxy's REJECT for a Service without endpoints) until the EndpointSlice has the ready pod and
    // kube-proxy has written the DNAT rules for it.
    const first = await waitFor(
      async () => {
        const r = await fetch(`http://${ip}/via-service`, { signal: AbortSignal.timeout(2000) });
        return r.ok ? ((await r.json()) as Record<string, unknown>) : undefined;
      },
      30_000,
      `an answer from the Service's ClusterIP ${ip}:80 on the host`,
    );
    recordTiming('service_create_to_host_answer_ms', Date.now() - t0);
    expect(first).to.deep.include({ path: '/via-service', pid: 1 });
    const t1 = Date.now();
    const again = await fetch(`http://${ip}/again`);
    expect(await again.json()).to.deep.include({ path: '/again', pid: 1 });
    recordTiming('service_clusterip_request_from_host_ms', Date.now() - t1);

    // From another pod, with the Service's environment variables the kubelet sets for pods created after it.
    const script = [
      'const host = process.env.SERVER_SERVICE_HOST;',
      'fetch("http://" + host + ":" + process.env.SERVER_SERVICE_PORT + "/from-pod").then((r) => r.json())',
      '.then((body) => console.log(JSON.stringify({ host, body })), (e) => { console.log("error", e.cause?.code || e.message); process.exitCode = 1; })',
    ].join(' ');
    const log = await runNodeScript(ns.name, 'via-service', script);
    const seen = JSON.parse(log) as { host: string; body: Record<string, unknown> };
    expect(seen.host).to.equal(ip);
    expect(seen.body).to.deep.include({ path: '/from-pod', pid: 1 });

    // Hairpin: the server pod reaches itself through its own Service (the bridge's hairpin mode + kube-proxy's
    // masquerade of hairpin traffic).
    const self = await kubectl(
      '-n',
      ns.name,
      'exec',
      'server',
      '--',
      'node',
      '-e',
      `fetch("http://${ip}/hairpin").then((r) => r.text()).then((t) => console.log(t))`,
    );
    expect(JSON.parse(self.trim())).to.deep.include({ path: '/hairpin', pid: 1 });
  });

  describe('the test chain', () => {
    let anvil: Anvil | undefined;
    let rpcUrl = '';
    before(async function () {
      if (typeof node === 'string') this.skip();
      // anvil on the host's address on the pod bridge: reachable by the host and the pods, nothing else.
      const port = 18545 + Math.floor(Math.random() * 1000);
      anvil = await startAnvil({ host: real().gateway, port });
      rpcUrl = anvil.url;
    });
    after(async () => {
      await anvil?.stop();
    });

    it('a pod reaches anvil on the host through the bridge and reads the chain id', async () => {
      const script = [
        `fetch(${JSON.stringify(rpcUrl)}, { method: "POST", headers: { "content-type": "application/json" },`,
        'body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }) })',
        '.then((r) => r.json()).then((j) => console.log(j.result), (e) => { console.log("error", e.cause?.code || e.message); process.exitCode = 1; })',
      ].join(' ');
      const log = await runNodeScript(ns.name, 'chain-id', script);
      expect(Number.parseInt(log, 16)).to.equal(CHAIN_ID);
    });
  });
});
