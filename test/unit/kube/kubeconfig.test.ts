// The operator's kubeconfig loader (runtime/kubeconfig.ts) against a real HTTPS server on loopback: a CA and a
// serving certificate for 127.0.0.1 issued by the webhook's certificate code, kubeconfig and service-account
// fixtures written to a temporary directory, and the runtime's RestClient making the request.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { expect } from 'chai';
import yaml from 'js-yaml';
import { microTimeIso } from '../../../src/common/time.js';
import {
  type ClientConfig,
  KubeConfigError,
  LeanKubeConfig,
  type LoadOptions,
  loadClientConfig,
  PluginClientConfig,
  parseKubeConfig,
  TOKEN_FILE_PERIOD_MS,
} from '../../../src/kube/kubeconfig.js';
import { RestClient } from '../../../src/kube/rest.js';
import {
  createCertificateAuthority,
  issueServingCertificate,
  type KeyPairPem,
} from '../../../src/operator/webhook/certificates.js';
import { recordLoadedModules } from '../../support/loaded-packages.js';

/** Credentials from @kubernetes/client-node's KubeConfig, behind the loader's edge. */
const isClientNodeKubeConfig = (config: object) => config instanceof PluginClientConfig;

type Seen = { authorization?: string; impersonate?: string; clientCertificate?: string };

const day = 24 * 3600 * 1000;
const validity = () => ({ notBefore: new Date(Date.now() - day), notAfter: new Date(Date.now() + day) });

describe('operator runtime: kubeconfig loader (no @kubernetes/client-node)', () => {
  let dir: string;
  let ca: KeyPairPem;
  let client: KeyPairPem;
  let server: Server;
  let port: number;
  let seen: Seen[];
  let paths: string[];
  // Each request's Impersonate-* headers, every value of a repeated one.
  let impersonation: Record<string, string[]>[];

  before(async () => {
    ca = createCertificateAuthority({ commonName: 'kubeconfig-test-ca', ...validity() });
    const serving = issueServingCertificate(ca, { commonName: 'apiserver', ipAddresses: ['127.0.0.1'], ...validity() });
    // A second CA's certificate stands in for a client certificate: the server only records what it was shown.
    client = createCertificateAuthority({ commonName: 'kubeconfig-test-client', ...validity() });
    server = createServer(
      { cert: serving.certPem, key: serving.keyPem, requestCert: true, rejectUnauthorized: false },
      (req, res) => {
        const peer = (req.socket as TLSSocket).getPeerCertificate();
        seen.push({
          authorization: req.headers.authorization,
          impersonate: req.headers['impersonate-user'] as string | undefined,
          clientCertificate: peer?.subject?.CN as string | undefined,
        });
        paths.push(req.url ?? '');
        impersonation.push(
          Object.fromEntries(
            Object.entries(req.headersDistinct).filter(([name]) => name.startsWith('impersonate-')) as [
              string,
              string[],
            ][],
          ),
        );
        if (req.url === '/api') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"kind":"APIVersions"}');
          return;
        }
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end('{"kind":"Status","status":"Failure","reason":"NotFound","code":404}');
      },
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'kubeconfig-test-'));
    seen = [];
    paths = [];
    impersonation = [];
  });

  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const b64 = (text: string) => Buffer.from(text).toString('base64');

  function kubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown>, extra: object = {}): string {
    return yaml.dump({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'test', cluster: { server: `https://127.0.0.1:${port}`, ...cluster } }],
      users: [{ name: 'me', user }],
      contexts: [{ name: 'ctx', context: { cluster: 'test', user: 'me', namespace: 'team-a' } }],
      'current-context': 'ctx',
      ...extra,
    });
  }

  function write(name: string, text: string): string {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  }

  async function get(config: ClientConfig) {
    const rest = new RestClient(config, { qps: 100, burst: 100, maxRetries: 0 });
    try {
      return await rest.request({ method: 'GET', path: '/api' });
    } finally {
      rest.close();
    }
  }

  it('uses a token and certificate-authority-data, verifying the server against that CA', async () => {
    const path = write('config', kubeconfig({ 'certificate-authority-data': b64(ca.certPem) }, { token: 'tok-1' }));
    const config = await loadClientConfig({ path, env: {} });
    expect(config).to.be.instanceOf(LeanKubeConfig);
    expect(config.namespace).to.equal('team-a');
    expect(config.getCurrentCluster()?.server).to.equal(`https://127.0.0.1:${port}`);
    expect(await get(config)).to.deep.equal({ kind: 'APIVersions' });
    expect(seen).to.deep.equal([
      { authorization: 'Bearer tok-1', impersonate: undefined, clientCertificate: undefined },
    ]);
  });

  it('reads a CA file and a client certificate and key by paths relative to the kubeconfig', async () => {
    mkdirSync(join(dir, 'pki'));
    write('pki/ca.crt', ca.certPem);
    write('pki/client.crt', client.certPem);
    write('pki/client.key', client.keyPem);
    const path = write(
      'config',
      kubeconfig(
        { 'certificate-authority': 'pki/ca.crt' },
        { 'client-certificate': 'pki/client.crt', 'client-key': 'pki/client.key', as: 'someone-else' },
      ),
    );
    await get(await loadClientConfig({ path, env: {} }));
    expect(seen).to.deep.equal([
      { authorization: undefined, impersonate: 'someone-else', clientCertificate: 'kubeconfig-test-client' },
    ]);
  });

  it('takes client-certificate-data and client-key-data', async () => {
    const path = write(
      'config',
      kubeconfig(
        { 'certificate-authority-data': b64(ca.certPem) },
        { 'client-certificate-data': b64(client.certPem), 'client-key-data': b64(client.keyPem) },
      ),
    );
    await get(await loadClientConfig({ path, env: {} }));
    expect(seen[0]?.clientCertificate).to.equal('kubeconfig-test-client');
  });

  it('refuses a server its CA did not sign, unless insecure-skip-tls-verify is set', async () => {
    const other = createCertificateAuthority({ commonName: 'other-ca', ...validity() });
    const strict = write('strict', kubeconfig({ 'certificate-authority-data': b64(other.certPem) }, { token: 't' }));
    let error: unknown;
    await get(await loadClientConfig({ path: strict, env: {} })).catch((e) => {
      error = e;
    });
    expect(String(error)).to.match(/certificate/);
    expect(seen).to.deep.equal([]);
    const insecure = write('insecure', kubeconfig({ 'insecure-skip-tls-verify': true }, { token: 't' }));
    await get(await loadClientConfig({ path: insecure, env: {} }));
    expect(seen).to.have.length(1);
  });

  it('merges a KUBECONFIG list: current-context and each name from the first file that has them', async () => {
    const first = write(
      'first',
      yaml.dump({
        users: [{ name: 'me', user: { token: 'from-first' } }],
        'current-context': 'ctx',
      }),
    );
    mkdirSync(join(dir, 'second'));
    write('second/ca.crt', ca.certPem);
    const second = write(
      'second/config',
      kubeconfig({ 'certificate-authority': 'ca.crt' }, { token: 'from-second' }, { 'current-context': 'other' }),
    );
    const config = await loadClientConfig({ env: { KUBECONFIG: `${first}:${second}`, HOME: dir } });
    await get(config);
    expect(seen[0]?.authorization).to.equal('Bearer from-first');
  });

  /** One kubeconfig with two contexts: `ctx` (current, namespace team-a) and `other` (namespace team-b). */
  function twoContexts(otherUser: Record<string, unknown>): string {
    return yaml.dump({
      clusters: [
        {
          name: 'test',
          cluster: { server: `https://127.0.0.1:${port}`, 'certificate-authority-data': b64(ca.certPem) },
        },
      ],
      users: [
        { name: 'me', user: { token: 'tok-current' } },
        { name: 'someone', user: otherUser },
      ],
      contexts: [
        { name: 'ctx', context: { cluster: 'test', user: 'me', namespace: 'team-a' } },
        { name: 'other', context: { cluster: 'test', user: 'someone', namespace: 'team-b' } },
      ],
      'current-context': 'ctx',
    });
  }

  it('takes the context chosen (--context), its user and namespace, instead of current-context', async () => {
    const path = write('config', twoContexts({ token: 'tok-other' }));
    const current = await loadClientConfig({ path, env: {} });
    expect(current.namespace).to.equal('team-a');
    await get(current);
    const other = await loadClientConfig({ path, context: 'other', env: {} });
    expect(other.namespace).to.equal('team-b');
    await get(other);
    expect(seen.map((s) => s.authorization)).to.deep.equal(['Bearer tok-current', 'Bearer tok-other']);
    let error: unknown;
    await loadClientConfig({ path, context: 'missing', env: {} }).catch((e) => {
      error = e;
    });
    expect(error).to.be.instanceOf(KubeConfigError);
    expect((error as Error).message).to.equal('kubeconfig: context "missing" (--context) is not defined');
  });

  it("kubectl's order (prefer: kubeconfig): KUBECONFIG over the service account, which serves only without one", async () => {
    const account = join(dir, 'serviceaccount');
    mkdirSync(account);
    writeFileSync(join(account, 'token'), 'service-account-token');
    writeFileSync(join(account, 'ca.crt'), ca.certPem);
    writeFileSync(join(account, 'namespace'), 'operators');
    const kubeconfigFile = write(
      'config',
      kubeconfig({ 'certificate-authority-data': b64(ca.certPem) }, { token: 'tok-kc' }),
    );
    const inPod = { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: String(port), HOME: dir };
    const load = (env: NodeJS.ProcessEnv, options: Partial<LoadOptions> = {}) =>
      loadClientConfig({ env, serviceAccountDir: account, ...options });
    // The operator and its pods: the pod's own service account first.
    await get(await load({ ...inPod, KUBECONFIG: kubeconfigFile }));
    // The CLI: the kubeconfig first, as kubectl; in a pod without one, the service account.
    await get(await load({ ...inPod, KUBECONFIG: kubeconfigFile }, { prefer: 'kubeconfig' }));
    const fallback = await load(inPod, { prefer: 'kubeconfig' });
    expect(fallback.namespace).to.equal('operators');
    await get(fallback);
    expect(seen.map((s) => s.authorization)).to.deep.equal([
      'Bearer service-account-token',
      'Bearer tok-kc',
      'Bearer service-account-token',
    ]);
    // A context names an entry of a kubeconfig: the service account has none.
    let error: unknown;
    await load(inPod, { prefer: 'kubeconfig', context: 'ctx' }).catch((e) => {
      error = e;
    });
    expect(String(error)).to.match(/no kubeconfig to take context "ctx" from/);
  });

  it('in a cluster: the service account token, CA and namespace, the token file re-read once a minute', async () => {
    const account = join(dir, 'serviceaccount');
    mkdirSync(account);
    writeFileSync(join(account, 'token'), 'first-token\n');
    writeFileSync(join(account, 'ca.crt'), ca.certPem);
    writeFileSync(join(account, 'namespace'), 'operators');
    let now = 1_000_000;
    const config = await loadClientConfig({
      env: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: String(port), HOME: dir },
      serviceAccountDir: account,
      now: () => now,
    });
    expect(config.namespace).to.equal('operators');
    const rest = new RestClient(config, { qps: 100, burst: 100, maxRetries: 0 });
    try {
      await rest.request({ method: 'GET', path: '/api' });
      writeFileSync(join(account, 'token'), 'rotated-token\n'); // the kubelet rotates it
      now += TOKEN_FILE_PERIOD_MS - 1;
      await rest.request({ method: 'GET', path: '/api' });
      now += 1;
      await rest.request({ method: 'GET', path: '/api' });
      rmSync(join(account, 'token')); // a failed read keeps the last good token
      now += TOKEN_FILE_PERIOD_MS;
      await rest.request({ method: 'GET', path: '/api' });
    } finally {
      rest.close();
    }
    expect(seen.map((s) => s.authorization)).to.deep.equal([
      'Bearer first-token',
      'Bearer first-token',
      'Bearer rotated-token',
      'Bearer rotated-token',
    ]);
  });

  it('a tokenFile in a kubeconfig is read like the service account token, and wins over a token', async () => {
    write('token', 'from-file');
    const path = write(
      'config',
      kubeconfig({ 'certificate-authority-data': b64(ca.certPem) }, { token: 'inline', tokenFile: 'token' }),
    );
    await get(await loadClientConfig({ path, env: {} }));
    expect(seen[0]?.authorization).to.equal('Bearer from-file');
  });

  it('hands a user with an exec plugin to @kubernetes/client-node, which runs the plugin', async () => {
    const plugin = write(
      'plugin.mjs',
      `process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential',
        status: { token: 'from-exec-plugin' } }));`,
    );
    const path = write(
      'config',
      kubeconfig(
        { 'certificate-authority-data': b64(ca.certPem) },
        {
          exec: {
            apiVersion: 'client.authentication.k8s.io/v1',
            command: process.execPath,
            args: [plugin],
            interactiveMode: 'Never',
          },
        },
      ),
    );
    const config = await loadClientConfig({ path, env: {} });
    expect(isClientNodeKubeConfig(config)).to.equal(true);
    expect(config).not.to.be.instanceOf(LeanKubeConfig);
    expect(config.namespace).to.equal('team-a');
    await get(config);
    expect(seen[0]?.authorization).to.equal('Bearer from-exec-plugin');
  });

  const IMPERSONATION = {
    as: 'jane',
    'as-uid': 'uid-1',
    'as-groups': ['developers', 'system:authenticated'],
    'as-user-extra': { scopes: ['view', 'development'], 'acme.io/team': ['ops'] },
  };
  // What client-go sends for IMPERSONATION: a repeated header per group and per extra value, the extra key escaped.
  const IMPERSONATION_HEADERS = {
    'impersonate-user': ['jane'],
    'impersonate-uid': ['uid-1'],
    'impersonate-group': ['developers', 'system:authenticated'],
    'impersonate-extra-scopes': ['view', 'development'],
    'impersonate-extra-acme.io%2fteam': ['ops'],
  };

  it('impersonates as client-go does: as, as-uid, as-groups and as-user-extra become Impersonate-* headers', async () => {
    const path = write(
      'config',
      kubeconfig({ 'certificate-authority-data': b64(ca.certPem) }, { token: 'tok-1', ...IMPERSONATION }),
    );
    await get(await loadClientConfig({ path, env: {} }));
    expect(impersonation).to.deep.equal([IMPERSONATION_HEADERS]);
    expect(seen[0]?.authorization).to.equal('Bearer tok-1');
  });

  it('impersonates the same way for a user whose credentials come from an exec plugin (client-node sends only as)', async () => {
    const plugin = write(
      'plugin.mjs',
      `process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential',
        status: { token: 'from-exec-plugin' } }));`,
    );
    const exec = { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: [plugin] };
    const path = write(
      'config',
      kubeconfig({ 'certificate-authority-data': b64(ca.certPem) }, { exec, ...IMPERSONATION }),
    );
    const config = await loadClientConfig({ path, env: {} });
    expect(isClientNodeKubeConfig(config)).to.equal(true);
    await get(config);
    expect(impersonation).to.deep.equal([IMPERSONATION_HEADERS]);
    expect(seen[0]?.authorization).to.equal('Bearer from-exec-plugin');
  });

  it('refuses impersonation it cannot send as written, naming the field, instead of acting as the user itself', async () => {
    const load = async (user: Record<string, unknown>) => {
      const path = write('config', kubeconfig({}, { token: 'tok-1', ...user }));
      return await loadClientConfig({ path, env: {} }).then(
        () => 'loaded',
        (error: unknown) => {
          expect(error).to.be.instanceOf(KubeConfigError);
          return (error as Error).message;
        },
      );
    };
    const userAt = 'users[context "ctx"].user';
    expect(await load({ 'as-groups': ['developers'] })).to.equal(
      `kubeconfig: ${userAt}.as-groups without ${userAt}.as: impersonation needs the user to act as`,
    );
    expect(await load({ 'as-uid': 'uid-1', 'as-user-extra': { scopes: ['view'] } })).to.equal(
      `kubeconfig: ${userAt}.as-uid, as-user-extra without ${userAt}.as: impersonation needs the user to act as`,
    );
    expect(await load({ as: 'jane', 'as-groups': 'developers' })).to.equal(
      `kubeconfig: ${userAt}.as-groups must be a list of strings`,
    );
    expect(await load({ as: 'jane', 'as-user-extra': { scopes: 'view' } })).to.equal(
      `kubeconfig: ${userAt}.as-user-extra["scopes"] must be a list of strings`,
    );
    expect(await load({ as: 'jane', 'as-user-extra': ['view'] })).to.match(/as-user-extra must be a map/);
    expect(await load({ as: 'jane', 'as-uid': 7 })).to.equal(`kubeconfig: ${userAt}.as-uid must be a string`);
    expect(await load({ as: 'jane\nInjected: x' })).to.match(/\.as holds a control character/);
  });

  it('hands the chosen context to @kubernetes/client-node when only its user has an exec plugin', async () => {
    const plugin = write(
      'plugin.mjs',
      `process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential',
        status: { token: 'from-exec-plugin' } }));`,
    );
    const path = write(
      'config',
      twoContexts({
        exec: {
          apiVersion: 'client.authentication.k8s.io/v1',
          command: process.execPath,
          args: [plugin],
          interactiveMode: 'Never',
        },
      }),
    );
    expect(await loadClientConfig({ path, env: {} })).to.be.instanceOf(LeanKubeConfig);
    const config = await loadClientConfig({ path, context: 'other', env: {} });
    expect(isClientNodeKubeConfig(config)).to.equal(true);
    expect(config.namespace).to.equal('team-b');
    await get(config);
    expect(seen[0]?.authorization).to.equal('Bearer from-exec-plugin');
  });

  it("turns a credential plugin's failure into a KubeConfigError, cut short and not retried", async () => {
    const plugin = write('failing.mjs', `process.stderr.write('token expired: ' + 'x'.repeat(5000)); process.exit(1);`);
    const path = write(
      'config',
      kubeconfig(
        { 'certificate-authority-data': b64(ca.certPem) },
        { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: [plugin] } },
      ),
    );
    const config = await loadClientConfig({ path, env: {} });
    let error: unknown;
    await get(config).catch((e) => {
      error = e;
    });
    expect(error).to.be.instanceOf(KubeConfigError);
    const message = (error as Error).message;
    expect(message).to.match(/^kubeconfig: the credential plugin of context "ctx" failed: token expired: x+\.\.\.$/);
    expect(message.length).to.be.below(400);
    expect(seen).to.deep.equal([]);
  });

  it('hands a user with an auth-provider to @kubernetes/client-node', async () => {
    const path = write(
      'config',
      kubeconfig(
        { 'certificate-authority-data': b64(ca.certPem) },
        { 'auth-provider': { name: 'oidc', config: { 'id-token': 'x', 'client-id': 'y' } } },
      ),
    );
    expect(isClientNodeKubeConfig(await loadClientConfig({ path, env: {} }))).to.equal(true);
  });

  it('loads no @kubernetes/client-node (nor ethers) for a plain kubeconfig, and client-node for an exec plugin', () => {
    const plain = write('plain', kubeconfig({ 'certificate-authority-data': b64(ca.certPem) }, { token: 't' }));
    const exec = write(
      'exec',
      kubeconfig({}, { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: 'true' } }),
    );
    // A fresh process records every module it resolves while importing the operator's CLI and loading the config.
    const script = `
      import { registerHooks } from 'node:module';
      const resolved = [];
      registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); resolved.push(r.url); return r; } });
      await import('./src/cli/operator.ts');
      await import('./src/kube/manager.ts');
      await import('./src/operator/controller.ts');
      const { loadClientConfig } = await import('./src/kube/kubeconfig.ts');
      await loadClientConfig({ path: process.argv[1], env: {} });
      // Validating a config (a mnemonic, endpoint and template ids) must not load ethers either.
      const { validateConfig } = await import('./src/config/index.ts');
      validateConfig({});
      const loaded = (name) => resolved.some((url) => url.includes('/node_modules/' + name + '/'));
      console.log(JSON.stringify({ clientNode: loaded('@kubernetes/client-node'), ethers: loaded('ethers') }));`;
    const loaded = (path: string) =>
      JSON.parse(
        execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, path], {
          cwd: join(import.meta.dirname, '../../..'),
          encoding: 'utf8',
        }),
      );
    expect(loaded(plain)).to.deep.equal({ clientNode: false, ethers: false });
    expect(loaded(exec)).to.deep.equal({ clientNode: true, ethers: false });
  });

  it("the CLI's Kubernetes commands load no @kubernetes/client-node for a token kubeconfig, and it for an exec user", async function () {
    this.timeout(120_000);
    const plain = write('plain', kubeconfig({ 'certificate-authority-data': b64(ca.certPem) }, { token: 'tok-cli' }));
    const plugin = write(
      'plugin.mjs',
      `process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential',
        status: { token: 'from-exec-plugin' } }));`,
    );
    const exec = write(
      'exec',
      kubeconfig(
        { 'certificate-authority-data': b64(ca.certPem) },
        { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: [plugin] } },
      ),
    );
    // Each command runs as the binary does, against the loopback server, which answers 404 for the OracleNode and
    // every list: the command's whole path to the API (arguments, kubeconfig, client, request) runs.
    // Not spawnSync: the server answering the command runs in this process.
    const run = async (kubeconfigPath: string, args: string[]) => {
      const recorder = recordLoadedModules();
      try {
        const child = spawn(
          process.execPath,
          ['--import', 'tsx', ...recorder.nodeArgs, 'src/cli/index.ts', ...args, '--kubeconfig', kubeconfigPath],
          { cwd: join(import.meta.dirname, '../../..'), stdio: ['ignore', 'ignore', 'pipe'], timeout: 60_000 },
        );
        let stderr = '';
        child.stderr.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
        });
        const [status] = (await once(child, 'exit')) as [number | null];
        return { status, stderr, clientNode: recorder.packages().has('@kubernetes/client-node') };
      } finally {
        recorder.remove();
      }
    };
    const commands = [
      ['status', 'node-a'],
      ['logs', 'node-a'],
      ['cycle', 'node-a'],
      ['request', `0x${'ab'.repeat(32)}`, '--node', 'node-a'],
    ];
    for (const args of commands) {
      const result = await run(plain, args);
      expect(result.status, `${args[0]}: ${result.stderr}`).to.equal(1);
      expect(result.clientNode, `${args[0]} loaded @kubernetes/client-node`).to.equal(false);
    }
    expect(seen.every((s) => s.authorization === 'Bearer tok-cli')).to.equal(true);
    expect(paths).to.include('/apis/oracle-node.io/v1alpha1/namespaces/team-a/oraclenodes/node-a');
    expect(paths.some((p) => p.startsWith('/apis/batch/v1/namespaces/team-a/jobs?labelSelector='))).to.equal(true);
    expect(paths.some((p) => p.startsWith('/apis/batch/v1/namespaces/team-a/cronjobs?labelSelector='))).to.equal(true);
    seen = [];
    const withPlugin = await run(exec, ['status', 'node-a']);
    expect(withPlugin.status, withPlugin.stderr).to.equal(1);
    expect(withPlugin.stderr).to.contain('OracleNode team-a/node-a not found');
    expect(withPlugin.clientNode).to.equal(true);
    expect(seen.map((s) => s.authorization)).to.deep.equal(['Bearer from-exec-plugin']);
  });

  it("a coordinator pod's response cache reads its ConfigMap through src/kube's client, without @kubernetes/client-node", async function () {
    this.timeout(60_000);
    const plain = write('plain', kubeconfig({ 'certificate-authority-data': b64(ca.certPem) }, { token: 'tok-pod' }));
    // The pod's adapters as `oracle-node coordinator` builds them, in a fresh process; the kubeconfig stands in for
    // the service account (same loader, one step later in its order).
    const template = {
      namePrefix: 'n-dev-worker',
      labels: {},
      ownerReferences: [],
      activeDeadlineSeconds: 50,
      ttlSecondsAfterFinished: 300,
      template: { spec: { containers: [{ name: 'worker' }] } },
    };
    const script = `
      const { coordinatorKubernetes } = await import('./src/node/kubernetes/index.ts');
      const pod = await coordinatorKubernetes({
        POD_NAMESPACE: 'team-a',
        ORACLE_NODE_CACHE_CONFIGMAP: 'n-cache',
        ORACLE_NODE_CYCLE_CONFIGMAP: 'n-cycle',
        ORACLE_NODE_WORKER_TEMPLATE: ${JSON.stringify(JSON.stringify(template))},
      });
      const cached = await pod.cache.get('0x' + 'ab'.repeat(32));
      console.log(JSON.stringify({ cached: cached ?? null }));`;
    const recorder = recordLoadedModules();
    try {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', ...recorder.nodeArgs, '--input-type=module', '-e', script],
        {
          cwd: join(import.meta.dirname, '../../..'),
          env: { ...process.env, KUBECONFIG: plain, KUBERNETES_SERVICE_HOST: '' },
          stdio: ['ignore', 'pipe', 'pipe'],
          timeout: 60_000,
        },
      );
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      child.stderr.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      const [status] = (await once(child, 'exit')) as [number | null];
      expect(status, output).to.equal(0);
      expect(JSON.parse(output)).to.deep.equal({ cached: null });
      expect(recorder.packages().has('@kubernetes/client-node')).to.equal(false);
    } finally {
      recorder.remove();
    }
    expect(paths).to.deep.equal(['/api/v1/namespaces/team-a/configmaps/n-cache']);
    expect(seen.map((s) => s.authorization)).to.deep.equal(['Bearer tok-pod']);
  });

  describe('errors name the file and field, never a credential', () => {
    it('a YAML syntax error gives only its position', () => {
      const text = 'users:\n- name: me\n  user:\n    token: secret-token-value\n  : : bad\n';
      let error: unknown;
      try {
        parseKubeConfig(text, '/k/config');
      } catch (e) {
        error = e;
      }
      expect(error).to.be.instanceOf(KubeConfigError);
      expect(String(error)).to.match(/kubeconfig \/k\/config: not valid YAML \(line \d+, column \d+\)/);
      expect(String(error)).not.to.contain('secret-token-value');
    });

    it('a missing context, cluster, user, server or file', async () => {
      const load = async (text: string) => {
        const path = write('config', text);
        try {
          await loadClientConfig({ path, env: {} });
          return 'loaded';
        } catch (error) {
          expect(error).to.be.instanceOf(KubeConfigError);
          return (error as Error).message;
        }
      };
      expect(await load(kubeconfig({}, { token: 'secret-token-value' }, { 'current-context': 'nope' }))).to.equal(
        'kubeconfig: context "nope" (current-context) is not defined',
      );
      expect(await load(yaml.dump({ clusters: [{ cluster: {} }] }))).to.match(/clusters\[0\]\.name is missing/);
      expect(await load(kubeconfig({ server: '' }, {}))).to.equal(
        'kubeconfig: clusters["test"].cluster.server is missing',
      );
      expect(await load(kubeconfig({ 'proxy-url': 'http://proxy:3128' }, {}))).to.match(/proxy-url is not supported/);
      expect(await load(kubeconfig({}, { 'client-certificate-data': b64(client.certPem) }))).to.match(
        /client certificate without its key/,
      );
      expect(await load(kubeconfig({ 'certificate-authority': 'missing.crt' }, {}))).to.match(
        /clusters\["test"\]\.cluster\.certificate-authority: ENOENT/,
      );
      const message = await load(kubeconfig({}, { token: 'secret-token-value', tokenFile: 'missing-token' }));
      expect(message).to.match(/token file .*missing-token cannot be read/);
      expect(message).not.to.contain('secret-token-value');
    });

    it('no configuration at all', async () => {
      let error: unknown;
      await loadClientConfig({ env: { HOME: dir } }).catch((e) => {
        error = e;
      });
      expect(String(error)).to.match(/no Kubernetes cluster configured/);
    });
  });

  it('resolves relative file paths against each file, absolute ones as they are', () => {
    const document = parseKubeConfig(
      yaml.dump({
        clusters: [{ name: 'c', cluster: { server: 'https://x', 'certificate-authority': 'ca.crt' } }],
        users: [{ name: 'u', user: { 'client-certificate': '/abs/c.crt', 'client-key': 'k/c.key', tokenFile: 't' } }],
      }),
      '/etc/kube/config',
    );
    expect(document.clusters[0]?.cluster['certificate-authority']).to.equal('/etc/kube/ca.crt');
    expect(document.users[0]?.user).to.include({
      'client-certificate': '/abs/c.crt',
      'client-key': '/etc/kube/k/c.key',
      tokenFile: '/etc/kube/t',
    });
  });
});

describe('microTimeIso', () => {
  it('writes six fractional digits, as the API server wants for a Lease time', () => {
    expect(microTimeIso(Date.UTC(2026, 10, 24, 3, 4, 5, 678))).to.equal('2026-11-24T03:04:05.678000Z');
    expect(microTimeIso('2026-11-24T03:04:05.678912Z')).to.equal('2026-11-24T03:04:05.678000Z');
    expect(microTimeIso(new Date(0))).to.equal('1970-01-01T00:00:00.000000Z');
  });
});
