// `oracle-node worker --shard <file|-> -c config.json -s secrets.env`: calls the APIs of one shard (the requests
// of one sponsor wallet that the coordinator gave it) and prints their results as JSON. The shard carries no
// secrets; the worker reads its OIS's API credentials from its own config, and needs no key and no provider: the
// coordinator signs and sends.

import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { errorMessage } from '../common/errors.js';
import {
  type ApiShardInput,
  MAX_SHARD_INPUT_BYTES,
  parseShardInput,
  WINDOW_COORDINATOR_URL_ENV,
  WINDOW_CREDENTIAL_ENV,
  WORKER_DEADLINE_AT_ENV,
} from '../contract/shard.js';
import { callShardApis } from '../node/api-call.js';
import { budgetWaitWithin, callEndpointWaiting, workerTimeLeft } from '../node/budget-wait.js';
import { createNodeLogger } from '../node/logger.js';
import { serveWindowTasks } from '../node/window-worker.js';
import { registerSecret } from '../observability/index.js';
import { tracerFromEnvironment } from '../observability/tracing.js';
import {
  API_LIMIT_OPTIONS,
  API_LIMIT_OPTIONS_HELP,
  applyApiRateLimits,
  WORKER_BUDGET_WAIT_MS,
} from './api-limit-options.js';
import { parseCommandArgs } from './args.js';
import { engineEnvironment, loadCommandConfig } from './command-config.js';
import type { Subcommand } from './subcommand.js';

const HELP = `Usage: oracle-node worker --shard <file|-> -c config.json [-s secrets.env] [--api-rate-limit TITLE=N/s]...
       oracle-node worker --coordinator -c config.json [-s secrets.env] [--api-rate-limit TITLE=N/s]...

Without -s, the \${NAME} values of the config come from the environment.

With --shard: calls the APIs of one shard produced by the coordinator and prints their results as JSON.
With --coordinator: a worker of a coordinator window: takes shards from the coordinator at
$${WINDOW_COORDINATOR_URL_ENV} (with the window's credential in $${WINDOW_CREDENTIAL_ENV}), posts their results,
and exits 0 when the window is over.
${API_LIMIT_OPTIONS_HELP}
`;

/** The shard's text, read no further than one byte over the bound (parseShardInput refuses it then). */
async function readBounded(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    chunks.push(chunk as Buffer);
    size += (chunk as Buffer).length;
    if (size > MAX_SHARD_INPUT_BYTES) {
      stream.destroy();
      break;
    }
  }
  return Buffer.concat(chunks)
    .subarray(0, MAX_SHARD_INPUT_BYTES + 1)
    .toString('utf8');
}

export const command: Subcommand = {
  async run(argv) {
    const parsed = parseCommandArgs(
      argv,
      {
        shard: { type: 'string' },
        coordinator: { type: 'boolean' },
        config: { type: 'string', short: 'c' },
        secrets: { type: 'string', short: 's' },
        ...API_LIMIT_OPTIONS,
      },
      HELP,
    );
    if ('exitCode' in parsed) return parsed.exitCode;
    const { values } = parsed;
    const pod = engineEnvironment();
    const configPath = values.config ?? pod.configPath;
    if (values.coordinator) {
      if (!configPath) {
        process.stderr.write(`Missing -c\n\n${HELP}`);
        return 2;
      }
      return serveWindow(configPath, values.secrets, pod, values['api-rate-limit']);
    }
    if (!values.shard || !configPath) {
      process.stderr.write(`Missing --shard or -c\n\n${HELP}`);
      return 2;
    }
    let shard: ApiShardInput;
    try {
      const text = await readBounded(values.shard === '-' ? process.stdin : createReadStream(values.shard));
      const parsed = parseShardInput(text);
      if ('error' in parsed) {
        process.stderr.write(`Not a shard: ${parsed.error}\n`);
        return 2;
      }
      shard = parsed.shard;
    } catch (error) {
      process.stderr.write(`Cannot read the shard: ${errorMessage(error)}\n`);
      return 2;
    }
    const config = await loadCommandConfig(configPath, values.secrets, 'worker');
    if (typeof config === 'number') return config;
    if (!applyBudgets(values['api-rate-limit'], config)) return 2;
    // Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set; the shard names each request's trace.
    const tracer = tracerFromEnvironment(process.env, 'worker');
    // In a worker Job: a call over its API's budget waits for its turn only while its answer can still come back
    // before the Job's deadline; later it is deferred (its request stays open), not killed with the pod.
    const timeLeft = workerTimeLeft(process.env[WORKER_DEADLINE_AT_ENV]);
    try {
      const output = await callShardApis(shard, {
        config,
        tracer,
        ...(timeLeft ? { callEndpoint: callEndpointWaiting(budgetWaitWithin(timeLeft)) } : {}),
      });
      process.stdout.write(`${JSON.stringify(output)}\n`);
      return 0;
    } catch (error) {
      process.stderr.write(`Shard failed: ${errorMessage(error)}\n`);
      return 1;
    } finally {
      await tracer.flush();
    }
  },
};

/** `--coordinator`: the window's worker, with the coordinator's address and credential from the environment. */
async function serveWindow(
  configPath: string,
  secrets: string | undefined,
  pod: ReturnType<typeof engineEnvironment>,
  rateLimits: string[] | undefined,
): Promise<number> {
  const coordinatorUrl = process.env[WINDOW_COORDINATOR_URL_ENV];
  const credential = process.env[WINDOW_CREDENTIAL_ENV];
  if (!coordinatorUrl || !credential) {
    process.stderr.write(`--coordinator needs $${WINDOW_COORDINATOR_URL_ENV} and $${WINDOW_CREDENTIAL_ENV}\n`);
    return 2;
  }
  // Never in a log line: it lets its holder take and answer the window's tasks.
  registerSecret(credential);
  const config = await loadCommandConfig(configPath, secrets, 'worker');
  if (typeof config === 'number') return config;
  if (!applyBudgets(rateLimits, config)) return 2;
  const logger = createNodeLogger(config.nodeSettings, pod);
  const tracer = tracerFromEnvironment(process.env, 'worker');
  try {
    return await serveWindowTasks({
      coordinatorUrl,
      credential,
      config,
      tracer,
      logger,
      print: (line) => process.stdout.write(`${line}\n`),
    });
  } finally {
    await tracer.flush();
  }
}

/**
 * The pod's share of the APIs' budgets: a call over it waits for its turn within the window (whose deadline ends the
 * wait sooner, the request staying open), rather than being deferred at once. False, with the flag named, when wrong.
 */
function applyBudgets(
  flags: string[] | undefined,
  config: { ois: { title: string; endpoints: { name: string }[] }[] },
) {
  const applied = applyApiRateLimits(flags, config.ois, { defaultMaxWaitMs: WORKER_BUDGET_WAIT_MS });
  if ('error' in applied) process.stderr.write(`${applied.error}\n`);
  return !('error' in applied);
}
