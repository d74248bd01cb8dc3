// `oracle-node manifest` against the real test control plane: its output piped into `kubectl apply -f -` gives the
// same node as the manual path of docs/migrating.md (`kubectl create secret generic --from-env-file` and config.json
// wrapped in an OracleNode by hand), down to the children the operator builds.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { LABELS } from '../../../src/contract/pods.js';
import { ANNOTATIONS, API_VERSION, KIND } from '../../../src/operator/resource.js';
import { ORACLE_NODE_ARGS, repoRoot } from '../../support/binary.js';
import {
  condition,
  installCrd,
  type RunningOperator,
  readNode,
  sampleDocs,
  startOperator,
} from '../operator/support.js';
import { kubeconfigPath, useNamespace, waitFor } from '../support/cluster.js';
import { clusterBinDir, runKubectl } from '../support/kubectl.js';

const run = promisify(execFile);
const DEV_ADDRESS = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';
const CHILDREN = 'configmaps,serviceaccounts,roles,rolebindings,services,deployments,cronjobs';

describe('oracle-node manifest on the test control plane (integration)', function () {
  this.timeout(240_000);
  const manual = useNamespace('onode-manual');
  const generated = useNamespace('onode-manifest');
  const omitted = useNamespace('onode-omit');
  const suspended = useNamespace('onode-suspended');
  const operators: RunningOperator[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'oracle-node-manifest-'));
  const configPath = join(dir, 'config.json');
  const secretsPath = join(dir, 'secrets.env');

  before(async () => {
    await installCrd();
    operators.push(startOperator(manual.name), startOperator(generated.name), startOperator(suspended.name));
    // The existing deployment: the minimal sample's config.json and its Secret's values as secrets.env.
    const { node, secret } = sampleDocs('minimal', 'unused');
    writeFileSync(configPath, JSON.stringify(node.spec.config, null, 2));
    const values = (secret as { stringData: Record<string, string> }).stringData;
    writeFileSync(
      secretsPath,
      Object.entries(values)
        .map(([k, v]) => `${k}=${v}\n`)
        .join(''),
    );
  });
  after(async () => {
    await Promise.all(operators.map((operator) => operator.stop()));
  });

  const kubectl = async (input: string | undefined, ...args: string[]) => {
    const result = await runKubectl(input, ...args);
    expect(result.code, `kubectl ${args.join(' ')}: ${result.stderr}`).to.equal(0);
    return result.stdout;
  };
  const manifest = (...args: string[]) =>
    run(process.execPath, [...ORACLE_NODE_ARGS, 'manifest', '-c', configPath, '-s', secretsPath, ...args], {
      cwd: repoRoot,
      timeout: 60_000,
    });
  const readyNode = (namespace: string) =>
    waitFor(
      async () => {
        const node = await readNode(namespace, 'minimal');
        return condition(node, 'Ready')?.status === 'True' &&
          node?.status?.observedGeneration === node?.metadata.generation
          ? node
          : undefined;
      },
      120_000,
      { description: `OracleNode ${namespace}/minimal to be Ready`, intervalMs: 500 },
    );
  /**
   * The node's children as the operator wrote them, without what the apiserver adds; the namespace and the
   * OracleNode's uid (in owner references) replaced, and without the applied-hash annotation, a hash of the whole
   * desired object, namespace and uid included. The pod templates' hashes of the config and the Secret stay.
   */
  async function children(namespace: string) {
    const uid = (await readNode(namespace, 'minimal'))!.metadata.uid!;
    const list = JSON.parse(
      await kubectl(undefined, 'get', CHILDREN, '-n', namespace, '-l', `${LABELS.name}=minimal`, '-o', 'json'),
    ) as { items: { kind: string; metadata: Record<string, unknown>; status?: unknown }[] };
    return list.items
      .map(({ kind, metadata, status: _status, ...body }) => {
        const { name, labels, annotations } = metadata;
        const text = JSON.stringify({ kind, name, labels, annotations, ...body });
        const normalized = JSON.parse(text.replaceAll(namespace, 'NS').replaceAll(uid, 'UID'));
        delete normalized.annotations?.[ANNOTATIONS.appliedHash];
        return normalized;
      })
      .sort((a, b) => `${a.kind}/${a.name}`.localeCompare(`${b.kind}/${b.name}`));
  }
  const secretData = async (namespace: string, name: string) =>
    JSON.parse(await kubectl(undefined, 'get', 'secret', name, '-n', namespace, '-o', 'json')).data;

  it('piped into kubectl apply, gives a Ready node with the node address and the children of the manual path', async () => {
    // The manual path: the Secret by kubectl, config.json wrapped in an OracleNode by hand.
    await kubectl(
      undefined,
      'create',
      'secret',
      'generic',
      'minimal-secrets',
      `--from-env-file=${secretsPath}`,
      '-n',
      manual.name,
    );
    const wrapped = {
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name: 'minimal' },
      spec: { config: JSON.parse(readFileSync(configPath, 'utf8')), secretRef: { name: 'minimal-secrets' } },
    };
    await kubectl(JSON.stringify(wrapped), 'apply', '-f', '-', '-n', manual.name);
    // One command.
    const { stdout, stderr } = await manifest('--name', 'minimal', '-n', generated.name);
    expect(stderr).to.equal('');
    expect(await kubectl(stdout, 'apply', '-f', '-')).to.equal(
      `secret/minimal-secrets created\noraclenode.oracle-node.io/minimal created\n`,
    );

    const [byHand, byManifest] = await Promise.all([readyNode(manual.name), readyNode(generated.name)]);
    expect(byManifest.status?.nodeAddress).to.equal(DEV_ADDRESS);
    expect(byManifest.status?.nodeAddress).to.equal(byHand.status?.nodeAddress);
    expect(await secretData(generated.name, 'minimal-secrets')).to.deep.equal(
      await secretData(manual.name, 'minimal-secrets'),
    );
    const expected = await children(manual.name);
    expect(expected.map((c) => `${c.kind}/${c.name}`)).to.include.members([
      'ConfigMap/minimal-dev-config',
      'CronJob/minimal-dev-coordinator',
      'Role/minimal-dev-coordinator',
      'RoleBinding/minimal-dev-coordinator',
      'ServiceAccount/minimal-dev-coordinator',
    ]);
    const cronJob = expected.find((c) => c.kind === 'CronJob');
    expect(cronJob.spec.jobTemplate.spec.template.metadata.annotations).to.have.keys(
      ANNOTATIONS.configHash,
      ANNOTATIONS.secretHash,
    );
    expect(await children(generated.name)).to.deep.equal(expected);
  });

  it('--suspended: applied beside an old deployment, its coordinator is suspended; the patch it prints resumes it', async () => {
    const { stdout, stderr } = await manifest('--name', 'minimal', '-n', suspended.name, '--suspended');
    await kubectl(stdout, 'apply', '-f', '-');
    const cronJobSuspend = async () => {
      const result = await runKubectl(
        undefined,
        'get',
        'cronjob',
        'minimal-dev-coordinator',
        '-n',
        suspended.name,
        '-o',
        'jsonpath={.spec.suspend}',
      );
      return result.code === 0 ? result.stdout : undefined;
    };
    await waitFor(async () => ((await cronJobSuspend()) === 'true' ? true : undefined), 120_000, {
      description: 'the coordinator CronJob, suspended',
      intervalMs: 500,
    });
    // The node is the old deployment's (same mnemonic): what step 3 of docs/migrating.md checks before stopping it.
    const node = await waitFor(async () => (await readNode(suspended.name, 'minimal'))?.status?.nodeAddress, 120_000, {
      description: 'the node address in status',
      intervalMs: 500,
    });
    expect(node).to.equal(DEV_ADDRESS);
    const resume = stderr.split('\n').find((line) => line.trimStart().startsWith('kubectl patch oraclenode'));
    expect(resume, stderr).to.not.equal(undefined);
    await run('sh', ['-c', resume!], {
      env: { ...process.env, PATH: `${clusterBinDir}:${process.env.PATH}`, KUBECONFIG: kubeconfigPath },
    });
    await waitFor(async () => ((await cronJobSuspend()) === 'false' ? true : undefined), 120_000, {
      description: 'the coordinator CronJob, resumed',
      intervalMs: 500,
    });
  });

  it('--omit-secret: the kubectl command it prints on stderr creates the same Secret', async () => {
    const { stdout, stderr } = await manifest('--name', 'minimal', '-n', omitted.name, '--omit-secret');
    expect(stdout).to.not.include('kind: Secret');
    const command = stderr.split('\n').find((line) => line.trimStart().startsWith('kubectl create secret'));
    expect(command, stderr).to.not.equal(undefined);
    await run('sh', ['-c', command!], {
      env: { ...process.env, PATH: `${clusterBinDir}:${process.env.PATH}`, KUBECONFIG: kubeconfigPath },
    });
    expect(await secretData(omitted.name, 'minimal-secrets')).to.deep.equal(
      await secretData(generated.name, 'minimal-secrets'),
    );
  });
});
