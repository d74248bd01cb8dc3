// The admission webhook for AirnodeFeeds on the real control plane: the API server calls the host-run webhook (the
// operator's admission component with the feed's validator) at a loopback URL; a bad feed config is refused with
// the exact path and rule of each error, a valid one (its secrets as ${NAME} references) is admitted.
// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} strings are secret references
import { expect } from 'chai';
import { dump } from 'js-yaml';
import { validateFeedConfig } from '../../../src/feed/validate.js';
import { reviewAirnodeFeed } from '../../../src/operator/feed/admission.js';
import { FEED_API_VERSION, FEED_KIND } from '../../../src/operator/feed/api.js';
import { ADMISSION_KINDS, type AdmissionComponent } from '../../../src/operator/webhook/admission.js';
import { buildFeedConfig } from '../../support/feed.js';
import { installCrd, installFeedCrd } from '../operator/support.js';
import { createNamespace, deleteNamespace, objects, uniqueName, waitFor } from '../support/cluster.js';
import { freePort, kubectl, restClient, startAdmission } from './support.js';

function feedManifest(namespace: string, name: string, edit: (config: Record<string, unknown>) => void = () => {}) {
  const config = buildFeedConfig({
    apiUrl: 'http://prices.example',
    assets: ['BTC'],
    fetchInterval: 5,
    signedApis: [{ name: 'main', url: 'http://signed-api.example', authToken: '${SIGNED_API_TOKEN}' }],
  });
  edit(config);
  return {
    apiVersion: FEED_API_VERSION,
    kind: FEED_KIND,
    metadata: { name, namespace },
    spec: { config, secretRef: { name: `${name}-secrets` } },
  };
}

const badInterval = (config: Record<string, unknown>) => {
  (config.triggers as { signedApiUpdates: { fetchInterval: number }[] }).signedApiUpdates[0]!.fetchInterval = 0;
};
const INTERVAL_ERROR =
  'spec.config.triggers.signedApiUpdates[0].fetchInterval: fetchInterval must be a positive number of seconds';

describe('admission webhook for AirnodeFeeds (API server -> host-run webhook at a loopback URL)', function () {
  this.timeout(180_000);
  let namespace: string;
  let operatorNamespace: string;
  let configurationName: string;
  let admission: AdmissionComponent;

  before(async () => {
    await installCrd();
    await installFeedCrd();
    namespace = await createNamespace('feed-admission');
    operatorNamespace = await createNamespace('feed-admission-operator');
    configurationName = uniqueName('oracle-node-webhook');
    admission = startAdmission({
      reviewFeed: (request) => reviewAirnodeFeed(request, validateFeedConfig),
      port: await freePort(),
      configurationName,
      namespace: operatorNamespace,
      secretName: 'webhook-cert',
      watchNamespaces: [namespace],
    });
    await admission.ready();
    await waitFor(
      async () => {
        const manifest = dump(feedManifest(namespace, 'probe', badInterval));
        const result = await kubectl(manifest, 'apply', '--dry-run=server', '-f', '-');
        return result.code !== 0 && result.stderr.includes(INTERVAL_ERROR);
      },
      60_000,
      { description: 'the API server to call the webhook for AirnodeFeeds' },
    );
  });

  after(async () => {
    await admission?.stop();
    if (configurationName)
      await restClient().delete(ADMISSION_KINDS.webhookConfiguration, { namespace: '', name: configurationName });
    if (namespace) await deleteNamespace(namespace);
    if (operatorNamespace) await deleteNamespace(operatorNamespace);
  });

  it('refuses a bad feed config with the exact path and rule of every error, and stores nothing', async () => {
    const manifest = feedManifest(namespace, 'bad', (config) => {
      badInterval(config);
      const apis = config.signedApis as { name: string; url: string }[];
      apis.push({ ...apis[0]! });
    });
    const result = await kubectl(dump(manifest), 'apply', '-f', '-');
    expect(result.code).to.not.equal(0);
    expect(result.stderr).to.contain('The AirnodeFeed "bad" is invalid:');
    expect(result.stderr).to.contain(INTERVAL_ERROR);
    expect(result.stderr).to.contain('spec.config.signedApis: Signed API names must be unique');
    expect(await objects.read(manifest as never).catch(() => undefined)).to.equal(undefined);
  });

  it('admits a valid feed whose mnemonic, API key and token are ${NAME} references it never reads', async () => {
    const result = await kubectl(dump(feedManifest(namespace, 'good')), 'apply', '-f', '-');
    expect(result.code, result.stderr).to.equal(0);
  });

  it('refuses references without a Secret to resolve them, at spec.secretRef', async () => {
    const manifest = feedManifest(namespace, 'no-secret') as { spec: { secretRef?: unknown } };
    delete manifest.spec.secretRef;
    const result = await kubectl(dump(manifest), 'apply', '--dry-run=server', '-f', '-');
    expect(result.code).to.not.equal(0);
    expect(result.stderr).to.contain('spec.secretRef: the config has ${NAME} references but no Secret is named');
  });
});
