// `oracle-node status NAME [-n NS]` (also `kubectl oracle-node status`): what the node is doing, from its status
// and its gateway Deployment: conditions, stage, gateways' URLs and readiness, the last cycles, providers' health
// and block lag, sponsor wallet balances and the recent failed requests.
import type { V1Deployment } from '@kubernetes/client-node';
import { formatEther } from 'ethers';
import { errorMessage } from '../common/errors.js';
import { childNames } from '../operator/builders/common.js';
import { KINDS, type OracleNode } from '../operator/resource.js';
import { parseTarget, readOracleNode, TARGET_OPTIONS_HELP } from './kube-target.js';
import type { Subcommand } from './subcommand.js';

const HELP = `Usage: oracle-node status NAME [-n NAMESPACE] [-o text|json]

What an OracleNode is doing: conditions, stage, gateways' URLs and readiness, the last cycles, providers'
health and block lag, sponsor wallet balances and the recent failed requests.
${TARGET_OPTIONS_HELP}
  -o, --output      text (default) or json (the OracleNode's status and its gateway's readiness)
`;

export type GatewayReadiness = { name: string; ready: number; wanted: number };

/** A plain table: columns padded to their widest cell, two spaces apart. */
export function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows.map((row) =>
    row
      .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!)))
      .join('  ')
      .trimEnd(),
  );
}

/** "3m ago" style age of an ISO time, relative to now. */
export function age(iso: string | undefined, now: Date): string {
  if (!iso) return '-';
  const seconds = Math.max(0, Math.round((now.getTime() - Date.parse(iso)) / 1000));
  if (!Number.isFinite(seconds)) return '-';
  if (seconds < 120) return `${seconds}s ago`;
  if (seconds < 7200) return `${Math.round(seconds / 60)}m ago`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)}h ago`;
  return `${Math.round(seconds / 86_400)}d ago`;
}

/** A standby's line (spec.redundancy): whether its last cycle served requests the primary left open. */
function standbyState(node: OracleNode): string | undefined {
  const delay = node.spec.redundancy?.standbyDelayBlocks ?? 0;
  const last = node.status?.lastCycle;
  if (delay <= 0 && last?.role !== 'standby') return undefined;
  const served = last?.role === 'standby' ? (last.counts?.['standbyServed'] ?? 0) : 0;
  return served > 0
    ? `Role: standby (${delay} blocks): SERVING, ${served} request(s) in the last cycle: the primary is down`
    : `Role: standby (${delay} blocks): quiet, the primary serves`;
}

/** The text `oracle-node status` prints: pure, so the layout is tested without a cluster. */
export function renderStatus(node: OracleNode, gateway: GatewayReadiness | undefined, now: Date): string {
  const status = node.status ?? {};
  const out: string[] = [];
  const ready = status.conditions?.find((c) => c.type === 'Ready');
  out.push(`OracleNode ${node.metadata.namespace}/${node.metadata.name}`);
  out.push(
    `  Ready: ${ready?.status ?? 'Unknown'}${ready && ready.status !== 'True' ? ` (${ready.reason})` : ''}` +
      `   Stage: ${status.stage ?? '-'}${status.previousStage ? ` (replacing ${status.previousStage})` : ''}` +
      `   Address: ${status.nodeAddress ?? '-'}   Chains: ${(status.chainIds ?? []).join(', ') || '-'}`,
  );
  const standbyLine = standbyState(node);
  if (standbyLine) out.push(`  ${standbyLine}`);
  out.push('', 'Conditions:');
  if (status.conditions?.length)
    out.push(
      ...table([
        ['  TYPE', 'STATUS', 'REASON', 'SINCE', 'MESSAGE'],
        ...status.conditions.map((c) => [
          `  ${c.type}`,
          c.status,
          c.reason,
          age(c.lastTransitionTime, now),
          c.message.length > 120 ? `${c.message.slice(0, 117)}...` : c.message,
        ]),
      ]),
    );
  else out.push('  none yet (the operator has not reconciled it)');

  out.push('', 'Gateways:');
  const gateways = Object.entries(status.gatewayUrls ?? {});
  if (gateways.length === 0) out.push('  none enabled');
  else {
    const readiness = gateway ? `${gateway.ready}/${gateway.wanted} ready` : 'Deployment not found';
    out.push(
      ...table([
        ['  GATEWAY', 'IN-CLUSTER URL', 'PUBLIC URL', 'PODS'],
        ...gateways.map(([name, url]) => [`  ${name}`, url, status.publicGatewayUrl ?? '-', readiness]),
      ]),
    );
  }

  out.push('', 'Last cycles (newest first):');
  const cycles = status.cycles ?? [];
  if (cycles.length === 0) out.push('  none reported yet');
  else
    out.push(
      ...table([
        ['  STARTED', 'DURATION', 'FULFILLED', 'FAILED', 'DROPPED', 'HEARTBEAT', 'ERRORS', 'JOB'],
        ...cycles.map((c) => [
          `  ${age(c.startTime, now)}`,
          c.durationSeconds === undefined ? '-' : `${c.durationSeconds}s`,
          String(c.fulfilled),
          String(c.failed),
          String(c.dropped),
          c.heartbeat ?? '-',
          Object.entries(c.errors ?? {})
            .map(([kind, count]) => `${kind}=${count}`)
            .join(',') || '-',
          c.job,
        ]),
      ]),
    );

  const last = status.lastCycle;
  const blocks = new Map((cycles[0]?.blocks ?? []).map((b) => [`${b.chainId}/${b.provider}`, b.block]));
  out.push('', 'Providers (last cycle):');
  if (!last?.providers?.length) out.push('  none reported yet');
  else
    out.push(
      ...table([
        ['  CHAIN', 'PROVIDER', 'UP', 'BLOCK', 'LAG'],
        ...last.providers.map((p) => [
          `  ${p.chainId}`,
          p.provider,
          p.up ? 'yes' : p.fault ? `NO (${p.fault})` : 'NO',
          String(blocks.get(`${p.chainId}/${p.provider}`) ?? '-'),
          p.blockLag === undefined ? '-' : String(p.blockLag),
        ]),
      ]),
    );

  out.push('', 'Sponsor wallets (with open requests or sends in the last cycle):');
  if (!last?.sponsorWallets?.length) out.push('  none reported yet');
  else {
    // The wallets an operator must fund first: below their chain's threshold, most waiting requests first.
    const low = last.sponsorWallets
      .filter((w) => w.belowThreshold === true)
      .sort((a, b) => (b.openRequests ?? 0) - (a.openRequests ?? 0));
    if (low.length > 0)
      out.push(
        `  ${low.length} below the chain's low-balance threshold, with ${low.reduce((n, w) => n + (w.openRequests ?? 0), 0)} waiting requests: fund them first`,
      );
    out.push(
      ...table([
        ['  CHAIN', 'SPONSOR WALLET', 'BALANCE', 'OPEN REQUESTS', 'LOW'],
        ...[...low, ...last.sponsorWallets.filter((w) => w.belowThreshold !== true)].map((w) => [
          `  ${w.chainId}`,
          w.sponsorWallet,
          `${formatEther(BigInt(w.balanceWei))} (native)`,
          w.openRequests === undefined ? '-' : String(w.openRequests),
          w.belowThreshold === undefined ? '-' : w.belowThreshold ? 'YES' : 'no',
        ]),
      ]),
    );
  }
  if (last?.gasPrices?.length)
    out.push(
      '',
      `Gas price (last cycle): ${last.gasPrices.map((g) => `chain ${g.chainId} ${formatGwei(g.gasPriceWei)} gwei`).join(', ')}`,
    );

  out.push('', 'Recent failed requests (newest first):');
  const failed = status.recentFailedRequests ?? [];
  if (failed.length === 0) out.push('  none reported');
  else
    out.push(
      ...table([
        ['  CHAIN', 'REQUEST', 'CYCLE', 'REASON'],
        ...failed.map((f) => [`  ${f.chainId}`, f.requestId, f.job, f.reason]),
      ]),
      '  (older ones: kubectl get events --field-selector reason=RequestFailed)',
    );
  return `${out.join('\n')}\n`;
}

function formatGwei(wei: string): string {
  const value = BigInt(wei);
  const whole = value / 1_000_000_000n;
  const fraction = (value % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '').slice(0, 3);
  return fraction ? `${whole}.${fraction}` : String(whole);
}

export const statusCommand: Subcommand = {
  async run(argv) {
    const target = await parseTarget(argv, HELP, { output: { type: 'string', short: 'o' } });
    if (typeof target === 'number') return target;
    const output = target.values.output ?? 'text';
    if (output !== 'text' && output !== 'json') {
      process.stderr.write(`--output must be text or json\n\n${HELP}`);
      return 2;
    }
    const node = await readOracleNode(target);
    if (typeof node === 'number') return node;
    let gateway: GatewayReadiness | undefined;
    if (node.status?.stage && Object.keys(node.status.gatewayUrls ?? {}).length > 0) {
      const name = childNames(node.metadata.name, node.status.stage).gateway;
      try {
        const deployment = await target.client.get<V1Deployment>(KINDS.deployment, {
          namespace: target.namespace,
          name,
        });
        if (deployment)
          gateway = { name, ready: deployment.status?.readyReplicas ?? 0, wanted: deployment.spec?.replicas ?? 1 };
      } catch (error) {
        // The status is still worth showing; the readiness column says what is missing.
        process.stderr.write(`Cannot read Deployment ${name}: ${errorMessage(error)}\n`);
      }
    }
    if (output === 'json') process.stdout.write(`${JSON.stringify({ status: node.status ?? {}, gateway }, null, 2)}\n`);
    else process.stdout.write(renderStatus(node, gateway, new Date()));
    return 0;
  },
};
