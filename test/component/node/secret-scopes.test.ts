// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are ${NAME} secret references, not templates
// Each engine role starts and does its work with only the keys of the Secret the operator gives its pod
// (config/secret-scopes.ts): the worker and the coordinator on anvil with the real AirnodeRrpV0, as processes.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { secretScopes } from '../../../src/config/index.js';
import { ENV } from '../../../src/contract/pods.js';
import { planChainShards } from '../../../src/node/cycle.js';
import { apiRequestOf, apiShardInput } from '../../../src/node/executor.js';
import { silentLogger } from '../../../src/node/logger.js';
import { ORACLE_NODE_ARGS, repoRoot } from '../../support/binary.js';
import { startTestChain, waitForMined } from '../../support/chain.js';
import {
  type ApiServer,
  buildConfig,
  buildConfigJson,
  createSponsor,
  requestEvents,
  requestPrice,
  startApiServer,
  wallets,
} from '../../support/harness.js';

const run = promisify(execFile);

describe('engine roles with only their own keys (anvil, real AirnodeRrpV0)', function () {
  this.timeout(120_000);
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  let api: ApiServer;
  let dir: string;
  let all: Record<string, string>;
  let scopes: ReturnType<typeof secretScopes>;

  before(async () => {
    chain = await startTestChain();
    api = await startApiServer();
    dir = mkdtempSync(join(tmpdir(), 'secret-scopes-'));
    const { config, secrets } = buildConfigJson({
      providers: { anvil: chain.anvil.url },
      deployment: chain.deployment,
      apiUrl: api.url,
    });
    // Keys of other parts of the config: the heartbeat (the coordinator's) and a gateway setting (the gateway's).
    const settings = config['nodeSettings'] as Record<string, unknown>;
    settings['heartbeat'] = { enabled: true, url: '${HEARTBEAT_URL}', apiKey: '${HEARTBEAT_API_KEY}' };
    settings['httpGateway'] = { enabled: true, maxConcurrency: 8, corsOrigins: ['${CORS_ORIGIN}'] };
    // The API key of the OIS the request-response triggers call: the worker's one key.
    const ois = (config['ois'] as Record<string, unknown>[])[0]!;
    ois['apiSpecifications'] = {
      ...(ois['apiSpecifications'] as object),
      components: { securitySchemes: { key: { type: 'apiKey', in: 'query', name: 'key' } } },
      security: { key: [] },
    };
    config['apiCredentials'] = [
      { oisTitle: ois['title'], securitySchemeName: 'key', securitySchemeValue: '${API_KEY}' },
    ];
    all = {
      ...secrets,
      API_KEY: 'api-key-0123456789',
      HEARTBEAT_URL: `${api.url}/heartbeat`,
      HEARTBEAT_API_KEY: 'heartbeat-api-key-0123456789-abcdefghij',
      CORS_ORIGIN: 'https://app.example',
    };
    scopes = secretScopes(config);
    writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  });
  after(async () => {
    await api?.close();
    await chain?.anvil.stop();
  });

  /** The environment of a pod scoped to one workload: its keys and nothing else of the Secret. */
  const podEnv = (keys: string[], scope?: string) => {
    const env: NodeJS.ProcessEnv = { PATH: process.env['PATH'] };
    for (const key of keys) env[key] = all[key];
    if (scope) env[ENV.secretScope] = scope;
    return env;
  };
  const cli = (env: NodeJS.ProcessEnv, ...args: string[]) =>
    run(process.execPath, [...ORACLE_NODE_ARGS, ...args], { cwd: repoRoot, env });

  async function request(label: string, coin: string) {
    const sponsor = await createSponsor(chain.deployment, label);
    const requestId = await requestPrice(chain.deployment, sponsor, coin);
    return { sponsor, requestId };
  }

  it('the keys differ per workload: the worker holds only its API key, no mnemonic, provider, heartbeat or gateway key', () => {
    expect(scopes.worker).to.deep.equal(['API_KEY']);
    expect(scopes.coordinator).to.deep.equal(['HEARTBEAT_API_KEY', 'HEARTBEAT_URL', 'NODE_MNEMONIC', 'PROVIDER_URL_0']);
    expect(scopes.gateway).to.deep.equal(['CORS_ORIGIN']);
  });

  it("a worker given only its keys calls its shard's APIs", async () => {
    const { sponsor, requestId } = await request('scoped-worker', 'BTC');
    const config = buildConfig({
      providers: { anvil: chain.anvil.url },
      deployment: chain.deployment,
      apiUrl: api.url,
    });
    const { shards } = await planChainShards(config, config.chains[0]!, {
      executor: { run: async () => [] },
      logger: silentLogger,
      wallets,
    });
    const shard = shards.find((s) => s.sponsorWallet === sponsor.sponsorWallet)!;
    writeFileSync(join(dir, 'shard.json'), JSON.stringify(apiShardInput(shard, shard.apiCalls.map(apiRequestOf))));
    const args = ['worker', '--shard', join(dir, 'shard.json'), '-c', join(dir, 'config.json')];

    // Without the scope the engine wants every key of the config, and says which one is missing.
    const unscoped = await cli(podEnv(scopes.worker), ...args).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(unscoped?.code).to.equal(1);
    expect(unscoped?.stderr).to.include('HEARTBEAT_URL');
    expect(unscoped?.stderr).not.to.include(all['HEARTBEAT_API_KEY']!);

    const { stdout } = await cli(podEnv(scopes.worker, 'worker'), ...args);
    const results = JSON.parse(stdout).results as { id: string; result: { success: boolean } }[];
    expect(results.map((r) => [r.id, r.result.success])).to.deep.equal([[requestId, true]]);
  });

  it('a coordinator given only its keys runs a cycle and fulfils the request', async () => {
    const { requestId } = await request('scoped-coordinator', 'ETH');
    const { stdout } = await cli(
      podEnv(scopes.coordinator, 'coordinator'),
      'coordinator',
      '-c',
      join(dir, 'config.json'),
      '--cache-dir',
      join(dir, 'cache'),
    );
    // Its own request and the one whose API the worker above called (a worker sends nothing).
    expect(JSON.parse(stdout).transactions.fulfilled).to.equal(2);
    await waitForMined(chain.anvil.url);
    expect((await requestEvents(chain.deployment, requestId)).fulfilled).to.have.length(1);
  });

  it('a pod scoped to one workload still reports a key of its own that is missing', async () => {
    const env = podEnv(
      scopes.coordinator.filter((key) => key !== 'PROVIDER_URL_0'),
      'coordinator',
    );
    const failed = await cli(
      env,
      'coordinator',
      '-c',
      join(dir, 'config.json'),
      '--cache-dir',
      join(dir, 'cache'),
    ).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed?.code).to.equal(1);
    expect(failed?.stderr).to.include('PROVIDER_URL_0');
  });
});
