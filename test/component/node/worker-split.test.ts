// The coordinator and its API workers on anvil (real AirnodeRrpV0, a real API server): the workers are real
// `oracle-node worker` processes that get only the API calls; the coordinator signs and sends from their results.
// A compromised worker is one of them whose output is tampered with: it can answer only what it was asked.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { signFulfillment } from '../../../src/chain/fulfillment.js';
import { MAX_ENCODED_PARAMETERS_BYTES } from '../../../src/chain/requests.js';
import { type Config, secretScopes, validateConfig } from '../../../src/config/index.js';
import { ENV } from '../../../src/contract/pods.js';
import type { ApiShardOutput } from '../../../src/contract/shard.js';
import { ApiError } from '../../../src/kube/api.js';
import { MemoryResponseCache } from '../../../src/node/cache.js';
import { type CycleSummary, runCycle } from '../../../src/node/cycle.js';
import { type ApiShardResult, type ApiWorkers, WorkerExecutor } from '../../../src/node/executor.js';
import type { ConfigMapStore } from '../../../src/node/kubernetes/config-map-store.js';
import { ConfigMapResponseCache } from '../../../src/node/kubernetes/response-cache.js';
import { silentLogger } from '../../../src/node/logger.js';
import { rpc, startTestChain, waitForMined } from '../../support/chain.js';
import {
  type ApiServer,
  buildConfigJson,
  createSponsor,
  ENDPOINTS,
  encodeCoin,
  int256,
  makeFullRequest,
  requestEvents,
  startApiServer,
  wallets,
  writeNodeFiles,
} from '../../support/harness.js';
import { capturingLogger } from '../../support/logs.js';
import { WorkerProcesses } from '../../support/worker-processes.js';

describe('coordinator and API workers (anvil, real worker processes)', function () {
  this.timeout(60_000);
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  let api: ApiServer;
  let config: Config;
  let workerArgs: string[];
  let configPath: string;
  let rawConfig: Record<string, unknown>;
  let sponsorSeq = 0;

  before(async () => {
    chain = await startTestChain();
    api = await startApiServer();
    const built = buildConfigJson({
      providers: { anvil: chain.anvil.url },
      deployment: chain.deployment,
      apiUrl: api.url,
      fulfillmentGasLimit: 200_000,
    });
    const dir = mkdtempSync(join(tmpdir(), 'worker-split-'));
    const files = writeNodeFiles(dir, built);
    configPath = files.config;
    rawConfig = built.config;
    workerArgs = files.args;
    const validated = validateConfig(built.config, built.secrets);
    if (!validated.ok || !validated.config) throw new Error(JSON.stringify(validated.errors));
    config = validated.config;
  });
  after(async () => {
    await api?.close();
    await chain?.anvil.stop();
  });

  async function cycle(workers: ApiWorkers, cache = new MemoryResponseCache()): Promise<CycleSummary> {
    const executor = new WorkerExecutor({ config, wallets, logger: silentLogger, cache }, workers);
    const summary = await runCycle(config, { executor, logger: silentLogger, wallets, discoveryTimeoutMs: 10_000 });
    await waitForMined(chain.anvil.url);
    return summary;
  }

  async function request(endpointId: string = ENDPOINTS.price, parameters = encodeCoin('ETH')) {
    const sponsor = await createSponsor(chain.deployment, `split-${sponsorSeq++}`);
    const id = await makeFullRequest(chain.deployment, {
      endpointId,
      sponsor: sponsor.address,
      sponsorWallet: sponsor.sponsorWallet,
      parameters,
    });
    return { id, sponsor };
  }

  const transactionCount = async (address: string) =>
    Number(await rpc<string>(chain.anvil.url, 'eth_getTransactionCount', [address, 'latest']));

  it('fulfils from the results of worker processes that hold neither the mnemonic nor a provider URL', async () => {
    const { id } = await request();
    // A worker pod's environment: its keys of the Secret (none here: the API takes no key) and its scope, no -s.
    const keys = secretScopes(rawConfig).worker;
    expect(keys).to.deep.equal([]);
    const workers = new WorkerProcesses(['-c', configPath], { [ENV.secretScope]: 'worker' }, { only: true });
    const summary = await cycle(workers);
    expect(summary.shards).to.deep.equal({ total: 1, failed: 0 });
    const [fulfilled] = (await requestEvents(chain.deployment, id)).fulfilled;
    expect(fulfilled, 'fulfilled on chain').to.not.equal(undefined);
    expect(BigInt(fulfilled!.data) > 0n).to.equal(true);
    // The worker's input: the request's endpoint, parameters and public metadata, and nothing of the chain.
    expect(workers.inputs).to.have.length(1);
    expect(Object.keys(workers.inputs[0]!).sort()).to.deep.equal(['chainId', 'format', 'requests']);
    expect(Object.keys(workers.inputs[0]!.requests[0]!).sort()).to.deep.equal([
      'endpointId',
      'endpointName',
      'id',
      'oisTitle',
      'parameters',
      'requester',
      'sponsor',
      'sponsorWallet',
    ]);
  });

  it("ignores a worker's result for a request id it was not given, and signs nothing for it", async () => {
    const honest = await request();
    const victim = await request();
    const unknown = `0x${'7'.repeat(64)}`;
    const forged = int256(666n);
    const real = new WorkerProcesses(workerArgs, {});
    // A compromised worker: it answers the victim's request (given to another worker) and one nobody asked for,
    // and the victim's own worker leaves its request out.
    const compromised: ApiWorkers = {
      async run(shards, options): Promise<ApiShardResult[]> {
        const results = await real.run(shards, options);
        return results.map((result, i) => {
          if (!result.ok) return result;
          const ids = shards[i]!.requests.map((r) => r.id);
          const output: ApiShardOutput = {
            ...result.output,
            results: result.output.results.filter((r) => r.id !== victim.id),
          };
          if (ids.includes(honest.id))
            for (const id of [victim.id, unknown])
              output.results.push({
                id,
                result: { success: true, encodedValue: forged },
                api: { outcome: '2xx', durationMs: 1 },
              });
          return { ok: true, output };
        });
      },
    };
    const victimNonce = await transactionCount(victim.sponsor.sponsorWallet);
    const summary = await cycle(compromised);
    expect((await requestEvents(chain.deployment, honest.id)).fulfilled).to.have.length(1);
    expect((await requestEvents(chain.deployment, honest.id)).fulfilled[0]!.data).to.not.equal(forged);
    // The victim's request is failed as an API call without result: never fulfilled with the forged value.
    expect(await requestEvents(chain.deployment, victim.id)).to.deep.equal({
      fulfilled: [],
      failed: [{ message: 'API call failed: the worker gave no result' }],
    });
    expect(await transactionCount(victim.sponsor.sponsorWallet)).to.equal(victimNonce + 1);
    const outcomes = summary.results.flatMap((r) => (r.ok ? r.output.outcomes : []));
    expect(outcomes.map((o) => o.id)).to.not.include(unknown);
    expect(outcomes.find((o) => o.id === victim.id)).to.include({ outcome: 'failed' });
  });

  it('a worker that does not finish fails its shard: nothing is sent, and the next cycle serves the request once', async () => {
    const { id, sponsor } = await request();
    const nonce = await transactionCount(sponsor.sponsorWallet);
    const crashed: ApiWorkers = {
      async run(shards) {
        return shards.map(() => ({ ok: false, error: 'shard 0 of Job w did not succeed' }));
      },
    };
    const failed = await cycle(crashed);
    expect(failed.shards).to.deep.equal({ total: 1, failed: 1 });
    expect(await requestEvents(chain.deployment, id)).to.deep.equal({ fulfilled: [], failed: [] });
    expect(await transactionCount(sponsor.sponsorWallet)).to.equal(nonce);
    await cycle(new WorkerProcesses(workerArgs, {}));
    expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
    expect(await transactionCount(sponsor.sponsorWallet)).to.equal(nonce + 1);
  });

  // Near 1 MB: anvil refuses a JSON-RPC body over 2 MiB, and the transaction carries the parameters as hex.
  const PARAMETER_BYTES = 1_000_000;

  it('fails a request with 1 MB of parameters once, with the reason, and serves the honest requests of its cycle', async () => {
    const parameters = encodeCoin('ETH', [{ type: 'string', name: 'note', value: 'x'.repeat(PARAMETER_BYTES) }]);
    const big = await request(ENDPOINTS.price, parameters);
    // An honest request of the same sponsor wallet (the same shard) and one of another.
    const sameShard = await makeFullRequest(chain.deployment, {
      endpointId: ENDPOINTS.price,
      sponsor: big.sponsor.address,
      sponsorWallet: big.sponsor.sponsorWallet,
      parameters: encodeCoin('BTC'),
    });
    const other = await request();
    const workers = new WorkerProcesses(workerArgs, {});
    const summary = await cycle(workers);
    expect(summary.shards).to.deep.equal({ total: 2, failed: 0 });
    const reason = `Parameters are ${(parameters.length - 2) / 2} bytes, over the limit of ${MAX_ENCODED_PARAMETERS_BYTES}`;
    expect(await requestEvents(chain.deployment, big.id)).to.deep.equal({
      fulfilled: [],
      failed: [{ message: reason }],
    });
    expect((await requestEvents(chain.deployment, sameShard)).fulfilled).to.deep.equal([
      { data: int256(65000500000n) },
    ]);
    expect((await requestEvents(chain.deployment, other.id)).fulfilled).to.have.length(1);
    // No worker was given the oversized parameters.
    const dispatched = workers.inputs.flatMap((input) => input.requests.map((r) => r.id));
    expect(dispatched).to.have.members([sameShard, other.id]);
    // Failed once: the next cycle sends nothing for it.
    const nonce = await transactionCount(big.sponsor.sponsorWallet);
    await cycle(workers);
    expect(await transactionCount(big.sponsor.sponsorWallet)).to.equal(nonce);
    expect((await requestEvents(chain.deployment, big.id)).failed).to.have.length(1);
  });

  it('answers a cache hit in the coordinator without dispatching it, and caches what a worker answered', async () => {
    const cachedRequest = await request(ENDPOINTS.counter, '0x');
    const cache = new MemoryResponseCache();
    const encodedValue = int256(4242n);
    await cache.set(cachedRequest.id, {
      encodedValue,
      signature: signFulfillment(wallets.node, cachedRequest.id, encodedValue),
    });
    const counterCalls = api.calls.filter((c) => c.path === '/counter').length;
    const workers = new WorkerProcesses(workerArgs, {});
    await cycle(workers, cache);
    expect(workers.inputs, 'no worker for a shard the cache answered').to.deep.equal([]);
    expect(api.calls.filter((c) => c.path === '/counter').length).to.equal(counterCalls);
    expect((await requestEvents(chain.deployment, cachedRequest.id)).fulfilled).to.deep.equal([{ data: encodedValue }]);

    const dispatched = await request(ENDPOINTS.counter, '0x');
    await cycle(workers, cache);
    expect(workers.inputs.flatMap((input) => input.requests.map((r) => r.id))).to.deep.equal([dispatched.id]);
    const stored = await cache.get(dispatched.id);
    expect(stored, 'cached by the coordinator').to.not.equal(undefined);
    expect((await requestEvents(chain.deployment, dispatched.id)).fulfilled).to.deep.equal([
      { data: stored!.encodedValue },
    ]);
  });

  it('a response cache that cannot be written is a WARN, and the fulfilment goes out anyway', async () => {
    const { id } = await request(ENDPOINTS.counter, '0x');
    // The ConfigMap store of a coordinator whose cache ConfigMap refuses every update (made immutable, RBAC, ...).
    const store: ConfigMapStore = {
      read: async () => ({ metadata: { name: 'n-cache', resourceVersion: '1' }, data: {} }),
      replace: async () => {
        throw new ApiError('PUT configmaps/n-cache: 422 field is immutable when `immutable` is set', 422, 'Invalid');
      },
    };
    const cache = new ConfigMapResponseCache({ store });
    const { logger, at } = capturingLogger();
    const executor = new WorkerExecutor({ config, wallets, logger, cache }, new WorkerProcesses(workerArgs, {}));
    const summary = await runCycle(config, { executor, logger: silentLogger, wallets, discoveryTimeoutMs: 10_000 });
    await waitForMined(chain.anvil.url);
    expect(summary.shards).to.deep.equal({ total: 1, failed: 0 });
    expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
    expect(cache.writeFailures).to.equal(1);
    const warning = at('WARN').find((line) => line.msg === 'response cache not written; fulfilments go on without it');
    expect(warning?.['err']).to.contain('immutable');
  });
});
