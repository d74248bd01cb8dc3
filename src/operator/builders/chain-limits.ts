// spec.chainLimits: per chain, the sponsor wallets' low-balance threshold (read by the status and the metrics) and
// the gas price ceiling (handed to the coordinator as `--max-gas-price`). Pure functions of the OracleNode.
import type { OracleNode } from '../resource.js';

/** A decimal amount of a chain's native token ("0.05") in wei; the CRD's pattern has already checked the text. */
export function nativeToWei(amount: string): bigint {
  const [whole, fraction = ''] = amount.split('.');
  return BigInt(whole!) * 10n ** 18n + BigInt(fraction.padEnd(18, '0').slice(0, 18));
}

/** Chain id -> the balance (wei) below which a sponsor wallet is reported below threshold. */
export function lowBalanceThresholds(node: OracleNode): Map<string, bigint> {
  const thresholds = new Map<string, bigint>();
  for (const limit of node.spec.chainLimits ?? [])
    if (limit.lowSponsorBalance !== undefined) thresholds.set(limit.chainId, nativeToWei(limit.lowSponsorBalance));
  return thresholds;
}

/** The coordinator's `--max-gas-price CHAIN_ID=GWEI` arguments, in the order of spec.chainLimits. */
export function gasPriceCeilingArgs(node: OracleNode): string[] {
  return (node.spec.chainLimits ?? []).flatMap((limit) =>
    limit.maxGasPriceGwei === undefined
      ? []
      : ['--max-gas-price', `${limit.chainId}=${Number(limit.maxGasPriceGwei.toFixed(9))}`],
  );
}

/** `--standby-delay-blocks N` of a standby (spec.redundancy.standbyDelayBlocks > 0); none for the primary. */
export function standbyArgs(node: OracleNode): string[] {
  const blocks = node.spec.redundancy?.standbyDelayBlocks ?? 0;
  return blocks > 0 ? ['--standby-delay-blocks', String(blocks)] : [];
}
