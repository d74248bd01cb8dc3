// `oracle-node gateway` holding the node key and no mnemonic, as the operator's gateway pods run it (the key in
// ORACLE_NODE_SIGNING_KEY or a file, the mnemonic a stand-in of the gateway's scope): its signed-data answers carry
// the same bytes as a gateway given the mnemonic, and recover to the node address.
import type { ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { getBytes, verifyMessage } from 'ethers';
import { ENV } from '../../../src/contract/pods.js';
import { DEFAULT_PATH_KEY } from '../../../src/gateway/server.js';
import { signedDataHash } from '../../../src/gateway/signing.js';
import { deriveTemplateIdV1 } from '../../../src/protocol/ids.js';
import { nodeWallet } from '../../../src/protocol/wallet.js';
import { spawnOracleNode } from '../../support/binary.js';
import {
  API_KEY,
  configJson,
  ENDPOINTS,
  type LoopbackApi,
  MNEMONIC,
  NODE_ADDRESS,
  startLoopbackApi,
} from './fixtures.js';

const NODE_KEY = nodeWallet(MNEMONIC).privateKey;
// The reference node reads the node key from its environment: its signWithTemplateId is the oracle of the bytes.
process.env.AIRNODE_WALLET_PRIVATE_KEY = NODE_KEY;
const reference = createRequire(import.meta.url)('@api3/airnode-node/dist/src/api/index.js') as {
  signWithTemplateId(templateId: string, timestamp: string, data: string): Promise<string>;
};
const TEMPLATE_ID = deriveTemplateIdV1(ENDPOINTS.stamped, '0x');
const OTHER_KEY = nodeWallet('legal winner thank year wave sausage worth useful legal winner thank yellow').privateKey;

/** Every process started, stopped after the tests. */
const children: ChildProcess[] = [];

type Started = { child: ChildProcess; output: () => string; port?: number; exitCode?: number | null };

/** Starts `oracle-node gateway` and waits until it serves (its port) or exits (its code). */
async function startGateway(args: string[], env: Record<string, string>): Promise<Started> {
  const child = spawnOracleNode(['gateway', ...args, '--port', '0', '--host', '127.0.0.1'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env['PATH'] ?? '', ...env },
  });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr!.on('data', (chunk) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let exitCode: number | null | undefined;
  void exited.then((code) => {
    exitCode = code;
  });
  const deadline = Date.now() + 30_000;
  let port: number | undefined;
  while (!port && exitCode === undefined && Date.now() < deadline) {
    port = Number(/"port":(\d+),[^\n]*gateway server running/.exec(output)?.[1]) || undefined;
    if (!port && exitCode === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  if (exitCode === undefined && !port) await exited;
  return { child, output: () => output, ...(port ? { port } : {}), ...(exitCode !== undefined ? { exitCode } : {}) };
}

describe('oracle-node gateway with the node key instead of the mnemonic (process)', function () {
  this.timeout(90_000);
  let api: LoopbackApi;
  let dir: string;
  const configPath = () => join(dir, 'config.json');
  /** What the operator's gateway pod has: its own keys, its scope, no mnemonic. */
  const podEnv = (extra: Record<string, string>) => ({ API_KEY, [ENV.secretScope]: 'gateway', ...extra });

  before(async () => {
    api = await startLoopbackApi();
    dir = await mkdtemp(join(tmpdir(), 'gateway-signing-key-'));
    await writeFile(configPath(), JSON.stringify(configJson(api.url, { logLevel: 'INFO' })));
    await writeFile(join(dir, 'secrets.env'), `NODE_WALLET_MNEMONIC=${MNEMONIC}\nAPI_KEY=${API_KEY}\n`);
  });
  after(async () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    await api.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function serving(args: string[], env: Record<string, string>): Promise<Started> {
    const started = await startGateway(args, env);
    expect(started.port, started.output()).to.be.a('number');
    return started;
  }

  /** A signed-data answer of the endpoint whose post-processing fixes the timestamp: the same bytes every time. */
  async function signedAnswer(port: number) {
    const response = await fetch(`http://127.0.0.1:${port}/http-signed-data/${DEFAULT_PATH_KEY}/${ENDPOINTS.stamped}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ encodedParameters: '0x' }),
    });
    expect(response.status).to.equal(200);
    return (await response.json()) as {
      templateId: string;
      timestamp: string;
      encodedValue: string;
      signature: string;
    };
  }

  it('signs with ORACLE_NODE_SIGNING_KEY alone: the bytes of the mnemonic-holding gateway, recovering the node address', async () => {
    const withMnemonic = await serving(['-c', configPath(), '-s', join(dir, 'secrets.env')], {});
    const withKey = await serving(['-c', configPath()], podEnv({ [ENV.signingKey]: NODE_KEY }));
    const expected = await signedAnswer(withMnemonic.port!);
    const answer = await signedAnswer(withKey.port!);
    expect(answer).to.deep.equal(expected);
    const digest = getBytes(signedDataHash(TEMPLATE_ID, answer.timestamp, answer.encodedValue));
    expect(verifyMessage(digest, answer.signature)).to.equal(NODE_ADDRESS);
    expect(answer.signature).to.equal(
      await reference.signWithTemplateId(TEMPLATE_ID, answer.timestamp, answer.encodedValue),
    );
    expect(withKey.output()).not.to.contain(NODE_KEY.slice(2));
  });

  it('reads the key from a file (--signing-key-file) or from the secrets directory, a final newline ignored', async () => {
    await writeFile(join(dir, 'node.key'), `${NODE_KEY}\n`, { mode: 0o400 });
    const fromFile = await serving(['-c', configPath(), '--signing-key-file', join(dir, 'node.key')], podEnv({}));
    // The operator's pods with spec.secretRef.as Files: every key, the node key too, a file of one directory.
    const secretsDir = join(dir, 'secrets');
    await mkdir(secretsDir);
    await writeFile(join(secretsDir, 'API_KEY'), API_KEY, { mode: 0o400 });
    await writeFile(join(secretsDir, ENV.signingKey), NODE_KEY, { mode: 0o400 });
    const fromDirectory = await serving(['-c', configPath()], {
      [ENV.secretScope]: 'gateway',
      [ENV.secretsDir]: secretsDir,
    });
    const expected = await signedAnswer(fromFile.port!);
    expect(
      verifyMessage(
        getBytes(signedDataHash(TEMPLATE_ID, expected.timestamp, expected.encodedValue)),
        expected.signature,
      ),
    ).to.equal(NODE_ADDRESS);
    expect(await signedAnswer(fromDirectory.port!)).to.deep.equal(expected);
  });

  it('refuses to start rather than sign as a stand-in: no key and no mnemonic, a malformed key, a key not the mnemonic’s', async () => {
    const noKey = await startGateway(['-c', configPath()], podEnv({}));
    expect(noKey.exitCode, noKey.output()).to.equal(1);
    expect(noKey.output()).to.contain(`need the node key: this gateway holds no mnemonic, so set ${ENV.signingKey}`);
    const malformed = await startGateway(
      ['-c', configPath()],
      podEnv({ [ENV.signingKey]: `${NODE_KEY.slice(0, 40)}zz` }),
    );
    expect(malformed.exitCode, malformed.output()).to.equal(1);
    expect(malformed.output()).to.contain(`${ENV.signingKey} is not a private key`);
    expect(malformed.output()).not.to.contain(NODE_KEY.slice(2, 40));
    const mismatched = await startGateway(['-c', configPath(), '-s', join(dir, 'secrets.env')], {
      [ENV.signingKey]: OTHER_KEY,
    });
    expect(mismatched.exitCode, mismatched.output()).to.equal(1);
    expect(mismatched.output()).to.contain(`${ENV.signingKey} is not the node key of nodeSettings.nodeWalletMnemonic`);
    expect(mismatched.output()).not.to.contain(OTHER_KEY.slice(2));
  });
});
