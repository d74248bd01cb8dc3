// `oracle-node usage (--node NAME [-n NS] | -c config.json [-s secrets.env]) [--chain ID] [--since 30d | --from-block
// N] [--to-block N] [-o table|json|csv]`: what each sponsor, requester and endpoint used over a range, and the gas
// the sponsor wallets paid for it, read from the chain (src/chain/usage.ts), for an API provider's billing.

import { RpcClient } from '../chain/rpc.js';
import { DEFAULT_BLOCK_HISTORY_LIMIT } from '../chain/types.js';
import { firstBlockAtOrAfter, readUsage, type UsageCounts, type UsageReport } from '../chain/usage.js';
import { errorMessage } from '../common/errors.js';
import type { Config } from '../config/index.js';
import { deriveNodeAddress } from '../protocol/node-key.js';
import { parseCommandArgs } from './args.js';
import { loadCommandConfig } from './command-config.js';
import {
  configOfOracleNode,
  connect,
  NODE_SOURCE_OPTIONS,
  readOracleNode,
  TARGET_OPTIONS_HELP,
} from './kube-target.js';
import type { Subcommand } from './subcommand.js';

const HELP = `Usage: oracle-node usage -c config.json [-s secrets.env] [--chain ID] [--since 30d | --from-block N] [--to-block N] [-o table|json|csv]
       oracle-node usage --node NAME [-n NAMESPACE] [same options]

Usage to bill from, read from the chain: per sponsor, per requester and per endpoint, the requests made to the node,
the ones fulfilled and failed, and the gas the sponsor wallets paid for them (gasUsed x effectiveGasPrice of each
fulfil or fail transaction, in wei). Requests count in the range they were made in, fulfilments, failures and gas in
the range of their transaction.
  -c, --config      the node's config.json (its chains, providers, AirnodeRrp and mnemonic)
  -s, --secrets     secrets.env (default: the environment)
      --node        an OracleNode: its config with the values of its Secret (needs read access to the Secret)
${TARGET_OPTIONS_HELP}
      --chain       only this chain id (default: every chain of the config)
      --since       a duration back from now: 30d, 12h, 90m (the first block at or after that time)
      --from-block  the first block (default: the chain's blockHistoryLimit back from the head)
      --to-block    the last block (default: the head)
  -o, --output      table (default), json ({chains: [{chainId, fromBlock, toBlock, sponsors, requesters, endpoints,
                    totals}]}, wei as decimal strings) or csv (chain,kind,id,requests,fulfilled,failed,gasPaidWei)
`;

const DURATION = /^(\d+)(d|h|m)$/;
/**
 * Blocks per eth_getLogs: a month of a busy chain in one call would be an answer over the RPC client's size cap;
 * ranges of this size are what most providers accept (a refusal still halves them).
 */
const USAGE_LOG_RANGE = 10_000;
const UNIT_SECONDS = { d: 86_400, h: 3_600, m: 60 } as const;

/** A duration like 30d, 12h or 90m in seconds; undefined when it is not one. */
export function durationSeconds(text: string): number | undefined {
  const match = DURATION.exec(text);
  if (!match) return undefined;
  const seconds = Number(match[1]) * UNIT_SECONDS[match[2] as keyof typeof UNIT_SECONDS];
  return seconds > 0 ? seconds : undefined;
}

type Row = { id: string } & UsageCounts;
const rowsOf = (report: UsageReport, kind: 'sponsors' | 'requesters' | 'endpoints'): Row[] =>
  report[kind].map((row) => {
    const { requests, fulfilled, failed, gasPaidWei } = row;
    const id = 'sponsor' in row ? row.sponsor : 'requester' in row ? row.requester : row.endpointId;
    return { id, requests, fulfilled, failed, gasPaidWei };
  });

/** Wei as decimal strings, for a billing system that must not lose precision. */
export function usageJson(reports: UsageReport[]): string {
  return `${JSON.stringify(
    { chains: reports },
    (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value),
    2,
  )}\n`;
}

export function usageCsv(reports: UsageReport[]): string {
  const lines = ['chain,kind,id,requests,fulfilled,failed,gasPaidWei'];
  for (const report of reports)
    for (const kind of ['sponsors', 'requesters', 'endpoints'] as const)
      for (const row of rowsOf(report, kind))
        lines.push(
          [report.chainId, kind.slice(0, -1), row.id, row.requests, row.fulfilled, row.failed, row.gasPaidWei].join(
            ',',
          ),
        );
  return `${lines.join('\n')}\n`;
}

const ether = (wei: bigint) => {
  const whole = wei / 10n ** 18n;
  const fraction = (wei % 10n ** 18n).toString().padStart(18, '0').slice(0, 6);
  return `${whole}.${fraction}`;
};

export function usageTable(reports: UsageReport[]): string {
  const out: string[] = [];
  for (const report of reports) {
    out.push(`Chain ${report.chainId}, blocks ${report.fromBlock} to ${report.toBlock}`);
    const { requests, fulfilled, failed, gasPaidWei } = report.totals;
    out.push(`  ${requests} requests made, ${fulfilled} fulfilled, ${failed} failed, gas paid ${ether(gasPaidWei)}`);
    for (const kind of ['sponsors', 'requesters', 'endpoints'] as const) {
      const rows = rowsOf(report, kind);
      if (!rows.length) continue;
      out.push(`  ${kind.toUpperCase()}`.padEnd(70) + 'REQUESTS  FULFILLED  FAILED  GAS PAID');
      for (const row of rows)
        out.push(
          `  ${row.id.padEnd(68)}${String(row.requests).padStart(8)}  ${String(row.fulfilled).padStart(9)}  ` +
            `${String(row.failed).padStart(6)}  ${ether(row.gasPaidWei)}`,
        );
    }
  }
  return `${out.join('\n')}\n`;
}

async function configOf(values: {
  config?: string | undefined;
  secrets?: string | undefined;
  node?: string | undefined;
  namespace?: string | undefined;
}): Promise<Config | number> {
  if (values.config !== undefined) return loadCommandConfig(values.config, values.secrets);
  const connection = await connect(values);
  if (typeof connection === 'number') return connection;
  const namespace = values.namespace ?? connection.contextNamespace;
  const node = await readOracleNode({ ...connection, namespace, name: values.node!, values: {} });
  if (typeof node === 'number') return node;
  const read = await configOfOracleNode(connection.client, namespace, node);
  if ('unavailable' in read) {
    process.stderr.write(`Cannot read the chain of OracleNode ${namespace}/${values.node}: ${read.unavailable}\n`);
    return 1;
  }
  return read.config;
}

export const usageCommand: Subcommand = {
  async run(argv) {
    const parsed = parseCommandArgs(
      argv,
      {
        ...NODE_SOURCE_OPTIONS,
        chain: { type: 'string' },
        since: { type: 'string' },
        'from-block': { type: 'string' },
        'to-block': { type: 'string' },
        output: { type: 'string', short: 'o' },
      },
      HELP,
    );
    if ('exitCode' in parsed) return parsed.exitCode;
    const { values } = parsed;
    const refuse = (message: string) => {
      process.stderr.write(`${message}\n\n${HELP}`);
      return 2;
    };
    if ((values.node === undefined) === (values.config === undefined))
      return refuse('Give either --node NAME or -c config.json');
    const output = values.output ?? 'table';
    if (!['table', 'json', 'csv'].includes(output)) return refuse('-o must be table, json or csv');
    if (values.since !== undefined && values['from-block'] !== undefined)
      return refuse('Give --since or --from-block, not both');
    const since = values.since === undefined ? undefined : durationSeconds(values.since);
    if (values.since !== undefined && since === undefined)
      return refuse('--since takes a duration such as 30d, 12h or 90m');
    const block = (name: 'from-block' | 'to-block') => {
      const text = values[name];
      if (text === undefined) return undefined;
      const value = Number(text);
      return Number.isSafeInteger(value) && value >= 0 ? value : Number.NaN;
    };
    const fromBlock = block('from-block');
    const toBlock = block('to-block');
    if (Number.isNaN(fromBlock) || Number.isNaN(toBlock))
      return refuse('--from-block and --to-block take block numbers');
    if (fromBlock !== undefined && toBlock !== undefined && fromBlock > toBlock)
      return refuse('--from-block is after --to-block');

    const config = await configOf(values);
    if (typeof config === 'number') return config;
    const chains = config.chains.filter((chain) => values.chain === undefined || chain.id === values.chain);
    if (!chains.length) {
      process.stderr.write(`Chain ${values.chain} is not in the config\n`);
      return 2;
    }
    const nodeAddress = deriveNodeAddress(config.nodeSettings.nodeWalletMnemonic);
    const reports: UsageReport[] = [];
    for (const chain of chains) {
      const lookbackBlocks = chain.blockHistoryLimit ?? DEFAULT_BLOCK_HISTORY_LIMIT;
      const failures: string[] = [];
      let report: UsageReport | undefined;
      // The first provider that answers the whole range; a provider's failure is named, never its URL.
      for (const [name, provider] of Object.entries(chain.providers)) {
        try {
          const client = new RpcClient(provider.url);
          const head = Number(BigInt(await client.request<string>('eth_blockNumber', [])));
          const last = Math.min(toBlock ?? head, head);
          const first =
            since !== undefined
              ? await firstBlockAtOrAfter(client, Math.floor(Date.now() / 1000) - since, last)
              : (fromBlock ?? Math.max(0, last - lookbackBlocks));
          report = await readUsage(client, {
            chain,
            nodeAddress,
            fromBlock: first,
            toBlock: last,
            lookbackBlocks,
            localTemplates: config.templates,
            maxLogRange: USAGE_LOG_RANGE,
          });
          break;
        } catch (error) {
          failures.push(`${name}: ${errorMessage(error)}`);
        }
      }
      if (!report) {
        process.stderr.write(`No provider of chain ${chain.id} answered (${failures.join('; ')})\n`);
        return 1;
      }
      reports.push(report);
    }
    process.stdout.write(
      output === 'json' ? usageJson(reports) : output === 'csv' ? usageCsv(reports) : usageTable(reports),
    );
    return 0;
  },
};
