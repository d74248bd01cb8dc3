// What one request's size or one failed write does to the coordinator's Kubernetes side, on the real test control
// plane: the worker Jobs' input ConfigMaps (the apiserver refuses an object over 1 MiB) and the response cache
// ConfigMap. kwok completes the worker pods (they write no log); the fulfilment runs on anvil with real worker
// processes beside the control plane's cache ConfigMap.
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { BatchV1Api, CoreV1Api, type V1ConfigMap, type V1CronJob, type V1Job } from '@kubernetes/client-node';
import { expect } from 'chai';
import { AbiCoder } from 'ethers';
import { signFulfillment } from '../../../src/chain/fulfillment.js';
import { validateConfig } from '../../../src/config/index.js';
import { MAX_WORKER_INPUT_BYTES } from '../../../src/contract/shard.js';
import { runCycle } from '../../../src/node/cycle.js';
import { WorkerExecutor } from '../../../src/node/executor.js';
import { kubeConfigMapStore } from '../../../src/node/kubernetes/config-map-store.js';
import { ConfigMapResponseCache, MAX_RESPONSE_CACHE_BYTES } from '../../../src/node/kubernetes/response-cache.js';
import { silentLogger } from '../../../src/node/logger.js';
import { startTestChain, waitForMined } from '../../support/chain.js';
import {
  buildConfigJson,
  createSponsor,
  ENDPOINTS,
  makeFullRequest,
  requestEvents,
  startApiServer,
  wallets,
  writeNodeFiles,
} from '../../support/harness.js';
import { capturingLogger } from '../../support/logs.js';
import { WorkerProcesses } from '../../support/worker-processes.js';
import { api, apply, jobComplete, kubeClient, kubeconfigPath, useNamespace, waitFor } from '../support/cluster.js';
import { installCrd, type RunningOperator, read, sampleDocs, startOperator } from './support.js';

const run = promisify(execFile);

describe('worker inputs and the response cache on the control plane', function () {
  this.timeout(180_000);
  const namespace = useNamespace('winputs');
  let operator: RunningOperator;
  const ns = () => namespace.name;

  before(async () => {
    await installCrd();
    operator = startOperator(namespace.name);
    const { node, secret } = sampleDocs('minimal', ns());
    await apply(secret);
    await apply(node);
    await waitFor(() => read<V1CronJob>('batch/v1', 'CronJob', ns(), 'minimal-dev-coordinator'), 120_000, {
      description: 'the coordinator CronJob',
      intervalMs: 500,
    });
    await waitFor(() => read<V1ConfigMap>('v1', 'ConfigMap', ns(), 'minimal-cache'), 60_000, {
      description: 'the response cache ConfigMap',
      intervalMs: 500,
    });
  });
  after(async () => {
    await operator?.stop();
  });

  it("one shard's oversized input fails that shard alone; the others' worker Jobs are created, fed and completed", async () => {
    // Shard 1 carries a 1.1 MB parameter (its input alone passes what a ConfigMap holds); 0, 2 and 3 carry 400 kB
    // each, together too much for one input ConfigMap.
    const { stdout } = await run(
      process.execPath,
      [
        '--import',
        'tsx',
        fileURLToPath(new URL('./run-executor.ts', import.meta.url)),
        ns(),
        'minimal-dev-coordinator',
        '4',
        '10',
        '400000,1100000,400000,400000',
      ],
      { env: { ...process.env, KUBECONFIG: kubeconfigPath }, timeout: 150_000, maxBuffer: 16 * 1024 * 1024 },
    );
    const { jobs, results } = JSON.parse(stdout.trim().split('\n').pop()!) as {
      jobs: string[];
      results: { ok: boolean; error?: string }[];
    };
    expect(results[1]!.error).to.match(
      new RegExp(`^shard input is \\d+ bytes, over the ${MAX_WORKER_INPUT_BYTES} a worker Job's input holds$`),
    );
    // The others ran: kwok's pods print nothing, so they end as "left no output", never as "could not start".
    for (const index of [0, 2, 3]) expect(results[index]!.error).to.match(/left no output$/);
    expect(jobs).to.have.length(2);
    const inputs = await Promise.all(jobs.map((job) => read<V1ConfigMap>('v1', 'ConfigMap', ns(), job)));
    expect(inputs.map((input) => Object.keys(input!.data!).length).sort()).to.deep.equal([1, 2]);
    for (const name of jobs) {
      const job: V1Job = await api(BatchV1Api).readNamespacedJob({ name, namespace: ns() });
      expect(job.spec!.suspend).to.equal(false);
      // The chain's maxConcurrency (10) shared by the two Jobs.
      expect(job.spec!.parallelism).to.equal(Math.min(5, job.spec!.completions!));
      expect(jobComplete(job)).to.equal(true);
    }
  });

  it('2,000 big answers never make the response cache ConfigMap write fail: it is pruned to its byte budget', async () => {
    // An (int256,uint256,string) answer with a 40-character string: 2,000 such entries were 1,038,000 bytes.
    const encodedValue = AbiCoder.defaultAbiCoder().encode(
      ['int256', 'uint256', 'string'],
      [-42n, 42n, 'x'.repeat(40)],
    );
    const store = kubeConfigMapStore(kubeClient(), ns(), 'minimal-cache');
    const cache = new ConfigMapResponseCache({ store });
    const id = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;
    for (let n = 0; n < 2000; n++) {
      await cache.set(id(n), { encodedValue, signature: signFulfillment(wallets.node, id(n), encodedValue) });
      // One write per batch of 100 (a cycle's shards); each must succeed.
      if (n % 100 === 99) await cache.flush?.();
    }
    expect(cache.writeFailures).to.equal(0);
    const stored = (await store.read())!;
    const bytes = Object.entries(stored.data ?? {}).reduce(
      (sum, [key, value]) => sum + Buffer.byteLength(key) + Buffer.byteLength(value),
      0,
    );
    expect(bytes).to.be.at.most(MAX_RESPONSE_CACHE_BYTES);
    const nextCycle = new ConfigMapResponseCache({ store });
    expect(await nextCycle.get(id(1999)), 'the newest entry').to.include({ encodedValue });
    expect(await nextCycle.get(id(0)), 'the oldest went first').to.equal(undefined);
  });

  it('a response cache ConfigMap that refuses the write (immutable) still lets the fulfilment go out, with a WARN', async () => {
    await api(CoreV1Api).createNamespacedConfigMap({
      namespace: ns(),
      body: { metadata: { name: 'frozen-cache' }, immutable: true, data: {} },
    });
    const chain = await startTestChain();
    const apiServer = await startApiServer();
    try {
      const built = buildConfigJson({
        providers: { anvil: chain.anvil.url },
        deployment: chain.deployment,
        apiUrl: apiServer.url,
        fulfillmentGasLimit: 200_000,
      });
      const files = writeNodeFiles(mkdtempSync(join(tmpdir(), 'worker-inputs-')), built);
      const validated = validateConfig(built.config, built.secrets);
      if (!validated.ok || !validated.config) throw new Error(JSON.stringify(validated.errors));
      const config = validated.config;
      const sponsor = await createSponsor(chain.deployment, 'frozen-cache');
      // The counter endpoint's trigger caches its responses.
      const requestId = await makeFullRequest(chain.deployment, {
        endpointId: ENDPOINTS.counter,
        sponsor: sponsor.address,
        sponsorWallet: sponsor.sponsorWallet,
        parameters: '0x',
      });
      const cache = new ConfigMapResponseCache({ store: kubeConfigMapStore(kubeClient(), ns(), 'frozen-cache') });
      const { logger, at } = capturingLogger();
      const executor = new WorkerExecutor({ config, wallets, logger, cache }, new WorkerProcesses(files.args, {}));
      const summary = await runCycle(config, { executor, logger: silentLogger, wallets, discoveryTimeoutMs: 10_000 });
      await waitForMined(chain.anvil.url);
      expect(summary.shards).to.deep.equal({ total: 1, failed: 0 });
      expect((await requestEvents(chain.deployment, requestId)).fulfilled).to.have.length(1);
      expect(cache.writeFailures).to.equal(1);
      const warning = at('WARN').find(
        (line) => line.msg === 'response cache not written; fulfilments go on without it',
      );
      expect(warning?.['err']).to.contain('immutable');
    } finally {
      await apiServer.close();
      await chain.anvil.stop();
    }
  });
});
