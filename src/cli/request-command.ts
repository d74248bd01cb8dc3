// `oracle-node request REQUEST_ID (--node NAME [-n NS] | -c config.json [-s secrets.env])`: where is my request?
// The timeline from the chain (its events, the contract's awaiting flag, authorizers, the sponsor wallet) and from
// what the node recorded: the request log of the `<name>-cycle` ConfigMap and status.recentFailedRequests for an
// OracleNode, the request log in the cache directory for a local run (src/contract/request-log.ts).

import type { V1ConfigMap } from '@kubernetes/client-node';
import { lookUpRequest, type RequestOnChain } from '../chain/request-lookup.js';
import { RpcClient } from '../chain/rpc.js';
import { type ChainConfig, DEFAULT_BLOCK_HISTORY_LIMIT, DEFAULT_MIN_CONFIRMATIONS } from '../chain/types.js';
import { errorMessage } from '../common/errors.js';
import type { Config } from '../config/index.js';
import { parseRequestLog, REQUEST_LOG_KEY, type RequestRecord } from '../contract/request-log.js';
import { FileRequestLog } from '../node/request-log.js';
import { childNames } from '../operator/builders/common.js';
import { KINDS } from '../operator/resource.js';
import { isBytes32 } from '../protocol/ids.js';
import { deriveNodeAddress } from '../protocol/node-key.js';
import { parseCommandArgs } from './args.js';
import { loadCommandConfig } from './command-config.js';
import { DEFAULT_CACHE_DIR } from './coordinator.js';
import {
  configOfOracleNode,
  connect,
  NODE_SOURCE_OPTIONS,
  readOracleNode,
  TARGET_OPTIONS_HELP,
} from './kube-target.js';
import { assembleTimeline, renderTimeline, type TimelineInput } from './request-timeline.js';
import type { Subcommand } from './subcommand.js';

const HELP = `Usage: oracle-node request REQUEST_ID --node NAME [-n NAMESPACE] [--chain ID] [--blocks N]
       oracle-node request REQUEST_ID -c config.json [-s secrets.env] [--cache-dir DIR] [--chain ID] [--blocks N]

Where is my request? Prints its timeline: the block it was made in, the cycle that saw it, authorization, the API
call (status class and duration), the fulfil or fail transaction, or why it is still waiting.
      --node        the OracleNode: its status, its request log (ConfigMap <name>-cycle, key ${REQUEST_LOG_KEY}) and
                    its config with the Secret's values (for the providers; without read access to the Secret,
                    only what the node recorded is shown)
${TARGET_OPTIONS_HELP}
  -c, --config      a local node's config.json (the chain, plus the request log a local run keeps in --cache-dir)
  -s, --secrets     secrets.env (default: the environment)
      --cache-dir   the local run's cache directory (default ${DEFAULT_CACHE_DIR})
      --chain       only this chain id (default: every chain of the config)
      --blocks      how many blocks back to search for the request's events (default: the chain's
                    blockHistoryLimit, what the node itself looks at)
`;

type Source = {
  config?: Config;
  /** Why the config (and so the chain) is not available. */
  unavailable?: string;
  nodeAddress?: string;
  records: RequestRecord[];
  failed: { chainId: string; requestId: string; reason: string; job?: string }[];
  recordSource: string;
};

type KubeValues = { node?: string; namespace?: string; kubeconfig?: string; context?: string };

async function fromOracleNode(values: KubeValues): Promise<Source | number> {
  const connection = await connect(values);
  if (typeof connection === 'number') return connection;
  const { client } = connection;
  const namespace = values.namespace ?? connection.contextNamespace;
  const name = values.node!;
  const node = await readOracleNode({ ...connection, namespace, name, values: {} });
  if (typeof node === 'number') return node;
  const cycleConfigMap = childNames(name, node.status?.stage ?? 'default').cycle;
  let records: RequestRecord[] = [];
  try {
    const configMap = await client.get<V1ConfigMap>(KINDS.configMap, { namespace, name: cycleConfigMap });
    records = parseRequestLog(configMap?.data?.[REQUEST_LOG_KEY]);
  } catch (error) {
    process.stderr.write(`Cannot read ConfigMap ${cycleConfigMap}: ${errorMessage(error)}\n`);
  }
  const source: Source = {
    records,
    failed: node.status?.recentFailedRequests ?? [],
    recordSource: `the request log of ConfigMap ${namespace}/${cycleConfigMap}`,
    ...(node.status?.nodeAddress ? { nodeAddress: node.status.nodeAddress } : {}),
  };
  // The providers' URLs are usually ${NAME} values of the Secret: the chain is read only with access to it.
  const read = await configOfOracleNode(client, namespace, node);
  return { ...source, ...read };
}

async function fromLocalConfig(
  configPath: string,
  secretsPath: string | undefined,
  cacheDir: string,
): Promise<Source | number> {
  const config = await loadCommandConfig(configPath, secretsPath);
  if (typeof config === 'number') return config;
  const log = new FileRequestLog(cacheDir);
  return {
    config,
    nodeAddress: deriveNodeAddress(config.nodeSettings.nodeWalletMnemonic),
    records: await log.read(),
    failed: [],
    recordSource: `the local request log ${log.path}`,
  };
}

/** The request on one chain, through the first provider that answers. */
async function onChain(
  chain: ChainConfig,
  source: Source & { config: Config; nodeAddress: string },
  requestId: string,
  blocks: number | undefined,
): Promise<RequestOnChain | { unavailable: string }> {
  const failures: string[] = [];
  for (const [name, provider] of Object.entries(chain.providers)) {
    try {
      return await lookUpRequest(new RpcClient(provider.url), {
        chain,
        nodeAddress: source.nodeAddress,
        requestId,
        blocks: blocks ?? chain.blockHistoryLimit ?? DEFAULT_BLOCK_HISTORY_LIMIT,
        localTemplates: source.config.templates,
      });
    } catch (error) {
      failures.push(`${name}: ${errorMessage(error)}`);
    }
  }
  return { unavailable: `no provider of chain ${chain.id} answered (${failures.join('; ')})` };
}

export const requestCommand: Subcommand = {
  async run(argv) {
    const parsed = parseCommandArgs(
      argv,
      {
        ...NODE_SOURCE_OPTIONS,
        'cache-dir': { type: 'string' },
        chain: { type: 'string' },
        blocks: { type: 'string' },
      },
      HELP,
      { allowPositionals: true },
    );
    if ('exitCode' in parsed) return parsed.exitCode;
    const { values, positionals } = parsed;
    const requestId = positionals[0]?.toLowerCase();
    if (positionals.length !== 1 || !isBytes32(requestId)) {
      process.stderr.write(`Expected one request id (0x and 64 hex digits)\n\n${HELP}`);
      return 2;
    }
    if ((values.node === undefined) === (values.config === undefined)) {
      process.stderr.write(`Give either --node NAME or -c config.json\n\n${HELP}`);
      return 2;
    }
    const blocks = values.blocks === undefined ? undefined : Number(values.blocks);
    if (blocks !== undefined && (!Number.isInteger(blocks) || blocks < 0)) {
      process.stderr.write('--blocks must be a non-negative integer\n');
      return 2;
    }
    const source =
      values.node !== undefined
        ? await fromOracleNode(values)
        : await fromLocalConfig(values.config!, values.secrets, values['cache-dir'] ?? DEFAULT_CACHE_DIR);
    if (typeof source === 'number') return source;
    const records = source.records.filter((r) => r.requestId === requestId);
    const failed = source.failed.filter((f) => f.requestId.toLowerCase() === requestId);
    const base = { requestId, records, failed, recordSource: source.recordSource };
    const { config, nodeAddress } = source;
    if (!config || !nodeAddress) {
      const unavailable = source.unavailable ?? 'the node address is not known yet';
      const timeline = assembleTimeline({
        ...base,
        chain: { unavailable },
        minConfirmations: DEFAULT_MIN_CONFIRMATIONS,
        blockHistoryLimit: DEFAULT_BLOCK_HISTORY_LIMIT,
      });
      process.stdout.write(renderTimeline(timeline));
      return 1;
    }
    const chains = config.chains.filter((c) => values.chain === undefined || c.id === values.chain);
    if (chains.length === 0) {
      process.stderr.write(`Chain ${values.chain} is not in the config\n`);
      return 2;
    }
    const inputs: TimelineInput[] = await Promise.all(
      chains.map(async (chain) => ({
        ...base,
        chain: await onChain(chain, { ...source, config, nodeAddress }, requestId, blocks),
        minConfirmations: chain.minConfirmations ?? DEFAULT_MIN_CONFIRMATIONS,
        blockHistoryLimit: chain.blockHistoryLimit ?? DEFAULT_BLOCK_HISTORY_LIMIT,
      })),
    );
    // The chain the request lives on: the one with its events, else the first the node recorded it on.
    const found =
      inputs.find((input) => !('unavailable' in input.chain) && (input.chain.made || input.chain.finished)) ??
      inputs.find((input) =>
        records.some((r) => !('unavailable' in input.chain) && r.chainId === input.chain.chainId),
      ) ??
      inputs[0]!;
    const timeline = assembleTimeline(found);
    process.stdout.write(renderTimeline(timeline));
    return timeline.state === 'not found' || timeline.state === 'unknown' ? 1 : 0;
  },
};
