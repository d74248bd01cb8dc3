// spec.secretRef.as Files: a pod's keys as the files of a Secret volume (ORACLE_NODE_SECRETS_DIR) give the engine
// exactly the config the same keys give as environment variables.
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { scopedSecretsFromEnvironment, validateConfig, WITHHELD_MNEMONIC } from '../../../src/config/index.js';
import { ENV } from '../../../src/contract/pods.js';
import { ConfigLoadError, loadConfig, secretsEnvironment } from '../../../src/node/config-loader.js';
import { API_KEY, configJson, MNEMONIC } from '../../component/gateway/fixtures.js';

const KEYS = { NODE_WALLET_MNEMONIC: MNEMONIC, API_KEY };

describe('engine: keys from a secrets directory', () => {
  let dir: string;
  let secretsDir: string;
  const configText = JSON.stringify(configJson('http://127.0.0.1:9'));

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'secrets-dir-'));
    await writeFile(join(dir, 'config.json'), configText);
    // The layout the kubelet writes for a Secret volume: each key a link into the current ..data directory.
    secretsDir = join(dir, 'secrets');
    const version = join(secretsDir, '..2026_11_28_04_00_00.000000001');
    await mkdir(version, { recursive: true });
    for (const [name, value] of Object.entries(KEYS)) await writeFile(join(version, name), value, { mode: 0o400 });
    await symlink('..2026_11_28_04_00_00.000000001', join(secretsDir, '..data'));
    for (const name of Object.keys(KEYS)) await symlink(join('..data', name), join(secretsDir, name));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('each file is the value of its name, the volume’s own entries skipped, over the environment', async () => {
    const env = await secretsEnvironment({ [ENV.secretsDir]: secretsDir, API_KEY: 'from the environment', OTHER: 'x' });
    expect(env).to.include({ ...KEYS, OTHER: 'x' });
    expect(Object.keys(env).filter((name) => name.startsWith('..'))).to.deep.equal([]);
    // Without the variable the environment is as it was.
    const plain = { API_KEY: 'a' };
    expect(await secretsEnvironment(plain)).to.equal(plain);
  });

  it('gives the same interpolated config as the same keys in variables, scoped or not', async () => {
    for (const scope of [undefined, 'gateway', 'coordinator'] as const) {
      const fromFiles = scopedSecretsFromEnvironment(
        configText,
        scope,
        await secretsEnvironment({ [ENV.secretsDir]: secretsDir }),
      );
      const fromVariables = scopedSecretsFromEnvironment(configText, scope, { ...KEYS });
      expect(fromFiles, String(scope)).to.deep.equal(fromVariables);
      const a = validateConfig(configText, fromFiles);
      expect(a.ok, JSON.stringify(a.errors)).to.equal(true);
      expect(a.config).to.deep.equal(validateConfig(configText, fromVariables).config);
    }
    // A name the scope withholds is taken as given when the pod holds it anyway, else it is a stand-in.
    expect(
      scopedSecretsFromEnvironment(configText, 'gateway', await secretsEnvironment({ [ENV.secretsDir]: secretsDir })),
    ).to.include({ NODE_WALLET_MNEMONIC: MNEMONIC });
    expect(scopedSecretsFromEnvironment(configText, 'gateway', { API_KEY })).to.include({
      NODE_WALLET_MNEMONIC: WITHHELD_MNEMONIC,
    });
  });

  it('loadConfig reads ORACLE_NODE_SECRETS_DIR as it reads the environment; an unreadable directory is named', async () => {
    const saved = process.env[ENV.secretsDir];
    try {
      process.env[ENV.secretsDir] = secretsDir;
      const config = await loadConfig(join(dir, 'config.json'));
      expect(config).to.deep.equal(validateConfig(configText, KEYS).config);
      process.env[ENV.secretsDir] = join(dir, 'missing');
      const error = await loadConfig(join(dir, 'config.json')).catch((caught: unknown) => caught);
      expect(error).to.be.instanceOf(ConfigLoadError);
      expect((error as ConfigLoadError).message).to.equal(
        `Cannot read secrets directory file ${join(dir, 'missing')}: ENOENT`,
      );
    } finally {
      if (saved === undefined) delete process.env[ENV.secretsDir];
      else process.env[ENV.secretsDir] = saved;
    }
  });
});
