// Gas price strategies (airnode-facts §9), tried in the configured order within 10 s; the constant
// strategy is the last resort. A strategy that fails is logged at WARN with its reason and reported to the
// caller (who counts it), never swallowed: a silent fall back to the constant price can cost many times the
// chain's own price. The timeout of each call follows the provider's measured latency (a provider that answers
// in 3 s is slow, not dead) within what is left of the 10 s. The arithmetic is pure and exported for unit tests.
import { parseUnits } from 'ethers';
import { errorMessage } from '../common/errors.js';
import type { Logger } from '../observability/index.js';
import { asQuantity, type RpcClient, type RpcOptions, toQuantity, withTimeout } from './rpc.js';
import type { Amount, GasPriceStrategy } from './types.js';

export type GasTarget =
  | { type: 0; gasPrice: bigint; gasLimit?: bigint }
  | { type: 2; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint; gasLimit?: bigint };

export type GasTargetJson =
  | { type: 0; gasPrice: string; gasLimit?: string }
  | { type: 2; maxFeePerGas: string; maxPriorityFeePerGas: string; gasLimit?: string };

/** Budget of the whole gas price oracle, all strategies and retries included. */
export const ORACLE_BUDGET_MS = 10_000;
/** The shortest timeout of a gas price call, whatever the provider's measured latency. */
export const MIN_GAS_CALL_TIMEOUT_MS = 2_000;
/** A gas price call gets this many times the provider's measured latency. */
export const LATENCY_FACTOR = 3;
/** The timeout of a gas price call to a provider whose latency is not measured yet (the RPC client's default). */
const UNMEASURED_TIMEOUT_MS = 5_000;

/**
 * Timeout of one gas price call: LATENCY_FACTOR x the provider's measured latency, at least
 * MIN_GAS_CALL_TIMEOUT_MS, and never past the oracle's budget left.
 */
export function gasCallTimeoutMs(measuredLatencyMs: number | undefined, budgetLeftMs: number): number {
  const paced =
    measuredLatencyMs === undefined
      ? UNMEASURED_TIMEOUT_MS
      : Math.max(MIN_GAS_CALL_TIMEOUT_MS, Math.ceil(LATENCY_FACTOR * measuredLatencyMs));
  return Math.max(1, Math.min(paced, Math.floor(budgetLeftMs)));
}

/** RPC options of the next gas price call, given the oracle's deadline (performance.now() based). */
function gasRpc(client: RpcClient, deadline: number): RpcOptions {
  return {
    timeoutMs: gasCallTimeoutMs(client.latencyMs, deadline - performance.now()),
    attempts: 2,
    backoffMs: { min: 200, max: 1_000 },
  };
}

/** A strategy that did not give a price, and why. */
export type StrategyFailure = { strategy: GasPriceStrategy['gasPriceStrategy']; reason: string };

export function amountToWei(amount: Amount): bigint {
  return parseUnits(String(amount.value), amount.unit);
}

/** `floor(n * p / 100)`-th smallest, as `ceil(n*p/100) - 1` in the reference. */
export function percentile(prices: bigint[], percent: number): bigint | undefined {
  if (prices.length === 0) return undefined;
  const sorted = [...prices].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const index = Math.max(0, Math.ceil((sorted.length * percent) / 100) - 1);
  return sorted[Math.min(index, sorted.length - 1)];
}

/** Accept the latest percentile L only when the reference R is within the deviation band. */
export function withinDeviation(latest: bigint, reference: bigint, maxDeviationMultiplier: number): boolean {
  const m = BigInt(Math.round(maxDeviationMultiplier * 100));
  if (m === 0n) return false;
  return (latest * 100n) / m < reference && reference < (latest * m) / 100n;
}

export function multiplyByPercentMultiplier(value: bigint, multiplier: number): bigint {
  return (value * BigInt(Math.round(multiplier * 100))) / 100n;
}

type Block = {
  baseFeePerGas?: string;
  transactions: { gasPrice?: string; maxPriorityFeePerGas?: string; type?: string }[];
};

async function getBlock(client: RpcClient, tag: string, withTransactions: boolean, deadline: number): Promise<Block> {
  const block = await client.request<Block | null>(
    'eth_getBlockByNumber',
    [tag, withTransactions],
    gasRpc(client, deadline),
  );
  if (!block || typeof block !== 'object' || !Array.isArray(block.transactions))
    throw new Error(`block ${tag} missing`);
  return block;
}

/**
 * A transaction's `gasPrice` first (nodes report the effective price of mined EIP-1559 transactions there,
 * which the fee cap may hold below baseFee + tip), else `baseFee + maxPriorityFeePerGas`.
 */
export function blockTransactionPrices(block: Block): bigint[] {
  const baseFee = block.baseFeePerGas ? asQuantity(block.baseFeePerGas, 'baseFeePerGas') : undefined;
  const prices: bigint[] = [];
  for (const tx of block.transactions) {
    if (typeof tx !== 'object') continue;
    if (tx.gasPrice) prices.push(asQuantity(tx.gasPrice, 'gasPrice'));
    else if (baseFee !== undefined && tx.maxPriorityFeePerGas)
      prices.push(baseFee + asQuantity(tx.maxPriorityFeePerGas, 'maxPriorityFeePerGas'));
  }
  return prices;
}

async function latestBaseFee(client: RpcClient, deadline: number): Promise<bigint> {
  const block = await getBlock(client, 'latest', false, deadline);
  if (!block.baseFeePerGas) throw new Error('latest block has no baseFeePerGas');
  return asQuantity(block.baseFeePerGas, 'baseFeePerGas');
}

async function providerGasPrice(client: RpcClient, deadline: number): Promise<bigint> {
  return asQuantity(await client.request('eth_gasPrice', [], gasRpc(client, deadline)), 'eth_gasPrice');
}

export async function runStrategy(
  client: RpcClient,
  strategy: GasPriceStrategy,
  deadline = performance.now() + ORACLE_BUDGET_MS,
): Promise<GasTarget> {
  switch (strategy.gasPriceStrategy) {
    case 'latestBlockPercentileGasPrice': {
      const latest = await getBlock(client, 'latest', true, deadline);
      const latestNumber = asQuantity((latest as unknown as { number: string }).number, 'block.number');
      const referenceNumber = latestNumber - BigInt(strategy.pastToCompareInBlocks);
      if (referenceNumber < 0n) throw new Error('not enough blocks to compare');
      const reference = await getBlock(client, toQuantity(referenceNumber), true, deadline);
      const latestPrices = blockTransactionPrices(latest);
      const referencePrices = blockTransactionPrices(reference);
      if (latestPrices.length < strategy.minTransactionCount || referencePrices.length < strategy.minTransactionCount) {
        throw new Error('not enough transactions in the compared blocks');
      }
      const l = percentile(latestPrices, strategy.percentile)!;
      const r = percentile(referencePrices, strategy.percentile)!;
      if (!withinDeviation(l, r, strategy.maxDeviationMultiplier)) throw new Error('gas price deviates too much');
      return { type: 0, gasPrice: l };
    }
    case 'providerRecommendedGasPrice':
      return {
        type: 0,
        gasPrice: multiplyByPercentMultiplier(
          await providerGasPrice(client, deadline),
          strategy.recommendedGasPriceMultiplier,
        ),
      };
    case 'sanitizedProviderRecommendedGasPrice': {
      if (!Number.isInteger(strategy.baseFeeMultiplierThreshold) || !Number.isInteger(strategy.baseFeeMultiplier)) {
        throw new Error('non-integer base fee multipliers are not supported'); // as the reference (BigNumber.mul)
      }
      const baseFee = await latestBaseFee(client, deadline);
      const price = multiplyByPercentMultiplier(
        await providerGasPrice(client, deadline),
        strategy.recommendedGasPriceMultiplier,
      );
      const sanitized =
        price > baseFee * BigInt(strategy.baseFeeMultiplierThreshold)
          ? baseFee * BigInt(strategy.baseFeeMultiplier) + amountToWei(strategy.priorityFee)
          : price;
      return { type: 0, gasPrice: sanitized };
    }
    case 'providerRecommendedEip1559GasPrice': {
      const baseFee = await latestBaseFee(client, deadline);
      const priorityFee = amountToWei(strategy.priorityFee);
      return {
        type: 2,
        maxPriorityFeePerGas: priorityFee,
        maxFeePerGas: baseFee * BigInt(strategy.baseFeeMultiplier) + priorityFee,
      };
    }
    case 'constantGasPrice':
      return { type: 0, gasPrice: amountToWei(strategy.gasPrice) };
  }
}

export type GasOracleReport = {
  /** Where a failed strategy is logged (WARN, with the strategy and the reason). */
  logger?: Logger;
  /** Called for each strategy that failed, e.g. to count it in a metric. */
  onFailure?: (failure: StrategyFailure) => void;
};

/**
 * Tries non-constant strategies in order (10 s in total); falls back to the (last) constant one. Every strategy
 * that fails (or is not reached in time) is logged and reported.
 */
export async function getGasTarget(
  client: RpcClient,
  strategies: GasPriceStrategy[],
  fulfillmentGasLimit?: number,
  report: GasOracleReport = {},
): Promise<GasTarget> {
  const constant = [...strategies].reverse().find((s) => s.gasPriceStrategy === 'constantGasPrice');
  const deadline = performance.now() + ORACLE_BUDGET_MS;
  const failed = (strategy: GasPriceStrategy, reason: string) => {
    const failure: StrategyFailure = { strategy: strategy.gasPriceStrategy, reason };
    report.logger?.warn(failure, 'gas price strategy failed; trying the next one');
    report.onFailure?.(failure);
  };
  let target: GasTarget | undefined;
  for (const strategy of strategies) {
    if (strategy.gasPriceStrategy === 'constantGasPrice') continue;
    if (target) break;
    const left = deadline - performance.now();
    if (left <= 0) {
      failed(strategy, `not tried: the gas price oracle's ${ORACLE_BUDGET_MS} ms were used up`);
      continue;
    }
    try {
      target = await withTimeout(runStrategy(client, strategy, deadline), left, strategy.gasPriceStrategy);
    } catch (error) {
      failed(strategy, errorMessage(error));
    }
  }
  if (!target) {
    if (!constant) throw new Error('gasPriceOracle has no constantGasPrice strategy');
    target = await runStrategy(client, constant);
  }
  if (fulfillmentGasLimit !== undefined) target.gasLimit = BigInt(fulfillmentGasLimit);
  return target;
}

export function gasTargetToJson(target: GasTarget): GasTargetJson {
  const gasLimit = target.gasLimit === undefined ? {} : { gasLimit: target.gasLimit.toString() };
  return target.type === 0
    ? { type: 0, gasPrice: target.gasPrice.toString(), ...gasLimit }
    : {
        type: 2,
        maxFeePerGas: target.maxFeePerGas.toString(),
        maxPriorityFeePerGas: target.maxPriorityFeePerGas.toString(),
        ...gasLimit,
      };
}

const DECIMAL = /^[0-9]{1,78}$/;

/** A target from its JSON form (a shard input crosses a process boundary), or undefined when malformed. */
export function gasTargetFromJson(json: GasTargetJson | undefined): GasTarget | undefined {
  if (!json || typeof json !== 'object') return undefined;
  const wei = (value: unknown) => (typeof value === 'string' && DECIMAL.test(value) ? BigInt(value) : undefined);
  const gasLimit = json.gasLimit === undefined ? undefined : wei(json.gasLimit);
  if (json.gasLimit !== undefined && gasLimit === undefined) return undefined;
  const limit = gasLimit === undefined ? {} : { gasLimit };
  if (json.type === 0) {
    const gasPrice = wei(json.gasPrice);
    return gasPrice === undefined ? undefined : { type: 0, gasPrice, ...limit };
  }
  if (json.type === 2) {
    const maxFeePerGas = wei(json.maxFeePerGas);
    const maxPriorityFeePerGas = wei(json.maxPriorityFeePerGas);
    if (maxFeePerGas === undefined || maxPriorityFeePerGas === undefined) return undefined;
    return { type: 2, maxFeePerGas, maxPriorityFeePerGas, ...limit };
  }
  return undefined;
}

/** Cost ceiling per gas unit of a target (for withdrawals). */
export function pricePerGas(target: GasTarget): bigint {
  return target.type === 0 ? target.gasPrice : target.maxFeePerGas;
}

/** Raises a target by `percent` (replacing a stuck transaction needs a higher price). */
export function bumpGasTarget(target: GasTarget, percent: number): GasTarget {
  const bump = (v: bigint) => (v * BigInt(100 + percent)) / 100n;
  return target.type === 0
    ? { ...target, gasPrice: bump(target.gasPrice) }
    : { ...target, maxFeePerGas: bump(target.maxFeePerGas), maxPriorityFeePerGas: bump(target.maxPriorityFeePerGas) };
}

/** How much a replacement raises the price of the stuck transaction it replaces (nodes ask for at least 10 %). */
export const REPLACEMENT_BUMP_PERCENT = 20;

/**
 * The price of a fulfilment priced by its request's `_gasPrice` when it replaces a stuck transaction: the request's
 * price raised as any replacement, and never below the cycle's replacement price (`replacement`, already raised).
 * Whatever held the nonce (this request's own transaction at its price, or one at the cycle's) is then outbid, so a
 * `_gasPrice` too low for the chain does not hold its sponsor wallet's later requests behind it for good. It keeps
 * the cycle's transaction type: a type 2 replacement of a legacy transaction needs both fees above its price.
 */
export function requestedPriceReplacement(requestedGasPrice: bigint, replacement: GasTarget): GasTarget {
  const raised = (requestedGasPrice * BigInt(100 + REPLACEMENT_BUMP_PERCENT)) / 100n;
  const atLeastRaised = (v: bigint) => (v > raised ? v : raised);
  return replacement.type === 0
    ? { type: 0, gasPrice: atLeastRaised(replacement.gasPrice) }
    : {
        type: 2,
        maxFeePerGas: atLeastRaised(replacement.maxFeePerGas),
        maxPriorityFeePerGas: atLeastRaised(replacement.maxPriorityFeePerGas),
      };
}
