// `oracle-node manifest --feed`: an existing Airnode feed deployment (config.json + secrets.env) as the Secret and
// an AirnodeFeed, validated by the feed's own validator; what it prints builds the feed's Deployment.
// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} strings are secret references
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import yaml from 'js-yaml';
import { runManifest } from '../../../src/cli/manifest-command.js';
import { validateFeedConfig } from '../../../src/feed/validate.js';
import type { AirnodeFeed } from '../../../src/operator/feed/api.js';
import { buildFeedDeployment } from '../../../src/operator/feed/builders.js';
import { repoRoot } from '../../support/binary.js';
import { buildFeedConfig, feedSecrets } from '../../support/feed.js';
import { capture } from './helpers.js';

const MNEMONIC = 'test test test test test test test test test test test junk';
const dir = mkdtempSync(join(tmpdir(), 'oracle-node-manifest-feed-'));
const write = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const config = buildFeedConfig({
  apiUrl: 'http://prices.example',
  assets: ['BTC'],
  fetchInterval: 5,
  signedApis: [{ name: 'main', url: 'http://signed-api.example', authToken: '${SIGNED_API_TOKEN}' }],
});
const CONFIG = write('airnode-feed.json', JSON.stringify(config, null, 2));
const SECRETS = write('secrets.env', `${feedSecrets(MNEMONIC, 'the-api-key')}SIGNED_API_TOKEN=the-token\n`);

type Doc = { apiVersion: string; kind: string; metadata: Record<string, string>; [key: string]: unknown };

describe('oracle-node manifest --feed', () => {
  it('takes the shipped example (examples/feed) as docs/feeds.md shows it', async () => {
    const out = await capture(runManifest, [
      '--feed',
      '-c',
      join(repoRoot, 'examples/feed/config.json'),
      '-s',
      join(repoRoot, 'examples/feed/secrets.env'),
      '--name',
      'prices',
    ]);
    expect(out.stderr).to.equal('');
    expect(out.code).to.equal(0);
    const kinds = (yaml.loadAll(out.stdout) as Doc[]).map((doc) => doc.kind);
    expect(kinds).to.deep.equal(['Secret', 'AirnodeFeed']);
  });

  it('prints the Secret and an AirnodeFeed with config.json as written; they make a valid feed', async () => {
    const out = await capture(runManifest, ['--feed', '-c', CONFIG, '-s', SECRETS, '--name', 'prices', '-n', 'feeds']);
    expect(out.stderr).to.equal('');
    expect(out.code).to.equal(0);
    const [secret, feed, ...rest] = yaml.loadAll(out.stdout) as Doc[];
    expect(rest).to.deep.equal([]);
    expect(secret).to.deep.include({ kind: 'Secret', metadata: { name: 'prices-secrets', namespace: 'feeds' } });
    expect(feed).to.deep.equal({
      apiVersion: 'oracle-node.io/v1alpha1',
      kind: 'AirnodeFeed',
      metadata: { name: 'prices', namespace: 'feeds' },
      spec: { secretRef: { name: 'prices-secrets' }, config },
    });
    const values = Object.fromEntries(
      Object.entries(secret!.data as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
    );
    expect(values).to.include({ SIGNED_API_TOKEN: 'the-token', API_KEY: 'the-api-key' });
    // What the operator does with them: the feed's validator accepts them, and the pod gets every key it references.
    const validation = await validateFeedConfig((feed as unknown as AirnodeFeed).spec.config, values);
    expect(validation.ok).to.equal(true);
    if (!validation.ok) return;
    const deployment = buildFeedDeployment({
      feed: { ...(feed as unknown as AirnodeFeed), metadata: { name: 'prices', namespace: 'feeds' } },
      config: validation.config,
      rawConfig: (feed as unknown as AirnodeFeed).spec.config,
      secretName: 'prices-secrets',
      secretData: secret!.data as Record<string, string>,
      defaultImage: 'oracle-node:test',
    });
    const names = deployment
      .spec!.template.spec!.containers[0]!.env!.filter((variable) => variable.valueFrom?.secretKeyRef)
      .map((variable) => variable.name);
    expect(names.sort()).to.deep.equal(['API_KEY', 'SIGNED_API_TOKEN', 'WALLET_MNEMONIC']);
  });

  it('refuses an invalid feed config with each error and its path, printing nothing', async () => {
    const bad = structuredClone(config) as { signedApis: { name: string }[] };
    bad.signedApis.push({ ...bad.signedApis[0]! });
    const out = await capture(runManifest, [
      '--feed',
      '-c',
      write('bad.json', JSON.stringify(bad)),
      '-s',
      SECRETS,
      '--name',
      'prices',
    ]);
    expect(out.code).to.equal(1);
    expect(out.stdout).to.equal('');
    expect(out.stderr).to.contain('  error signedApis: Signed API names must be unique');
  });

  it('--omit-secret: only the AirnodeFeed, and the kubectl command for the Secret on stderr', async () => {
    const out = await capture(runManifest, [
      '--feed',
      '-c',
      CONFIG,
      '-s',
      SECRETS,
      '--name',
      'prices',
      '--omit-secret',
    ]);
    expect(out.code).to.equal(0);
    expect((yaml.loadAll(out.stdout) as Doc[]).map((doc) => doc.kind)).to.deep.equal(['AirnodeFeed']);
    expect(out.stderr).to.contain('kubectl create secret generic prices-secrets');
    expect(out.stdout + out.stderr).not.to.contain('the-token');
  });
});
