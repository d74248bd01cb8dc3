// Runs the coordinator's Kubernetes executor as its own process, with the environment the operator gives the
// coordinator pod (read from the live CronJob), the way `oracle-node coordinator` does inside that pod.
//   node --import tsx test/integration/operator/run-executor.ts <namespace> <cronjob> <shards> <concurrency> [sizes]
//     [hard end]
// Without sizes (or with "-") each shard is empty; `sizes` (comma-separated, one per shard) gives shard i one request
// whose parameters hold a string of that many bytes (0: no request). With a hard end (seconds from now), the run's
// deadline as `oracle-node coordinator --window` gives it.
import type { V1CronJob } from '@kubernetes/client-node';
import { BatchV1Api, KubeConfig } from '@kubernetes/client-node';
import { type ApiShardInput, SHARD_FORMAT } from '../../../src/contract/shard.js';
import { WorkDeadline } from '../../../src/node/deadline.js';
import { coordinatorKubernetes } from '../../../src/node/kubernetes/index.js';

const [namespace, cronJobName, shardCount, concurrency, sizes, hardEndSeconds] = process.argv.slice(2);
const kubeConfig = new KubeConfig();
kubeConfig.loadFromDefault();
const cronJob: V1CronJob = await kubeConfig
  .makeApiClient(BatchV1Api)
  .readNamespacedCronJob({ name: cronJobName!, namespace: namespace! });
const env: NodeJS.ProcessEnv = { POD_NAMESPACE: namespace };
for (const variable of cronJob.spec!.jobTemplate.spec!.template.spec!.containers[0]!.env ?? [])
  if (variable.value !== undefined) env[variable.name] = variable.value;
const deps = await coordinatorKubernetes(env);
if (!deps) throw new Error('the CronJob does not carry the worker template');
const parameterBytes = sizes === undefined || sizes === '-' ? [] : sizes.split(',').map(Number);
const word = (digit: string, length: number) => `0x${digit.repeat(length)}`;
const shards = Array.from(
  { length: Number(shardCount) },
  (_, index): ApiShardInput => ({
    format: SHARD_FORMAT,
    chainId: '31337',
    requests: parameterBytes[index]
      ? [
          {
            id: `0x${index.toString(16).padStart(64, '0')}`,
            endpointId: word('c', 64),
            oisTitle: 'o',
            endpointName: 'e',
            parameters: { note: 'x'.repeat(parameterBytes[index]) },
            requester: word('4', 40),
            sponsor: word('1', 40),
            sponsorWallet: word('2', 40),
          },
        ]
      : [],
  }),
);
const deadline = hardEndSeconds ? WorkDeadline.after(Number(hardEndSeconds) * 1000) : undefined;
const results = await deps.workers.run(shards, { concurrency: Number(concurrency), ...(deadline ? { deadline } : {}) });
deadline?.stop('done');
process.stdout.write(`${JSON.stringify({ jobs: deps.workers.jobs, results })}\n`);
