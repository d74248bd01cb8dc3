// The sending half of a shard, through one provider at a time: the pending-transaction rule, the price (raised to
// replace stuck transactions), what was served meanwhile dropped, the fulfilments simulated, each transaction planned,
// then sent in nonce order and each answer recorded. A transport failure keeps what was sent and leaves the rest for
// the next provider.
import { callView } from '../chain/calls.js';
import { rrpInterface } from '../chain/contracts.js';
import {
  fulfillData,
  ProviderCheckError,
  planApiCallTransaction,
  type StaticCheck,
  staticCheckOf,
  transactionCount,
} from '../chain/fulfillment.js';
import {
  amountToWei,
  bumpGasTarget,
  type GasTarget,
  gasTargetFromJson,
  getGasTarget,
  pricePerGas,
  REPLACEMENT_BUMP_PERCENT,
  requestedPriceReplacement,
} from '../chain/gas-price.js';
import { decidePending, type PendingDecision, processPendingSightings, sightingsKey } from '../chain/pending.js';
import { RpcClient } from '../chain/rpc.js';
import { type SendReport, sendInNonceOrder } from '../chain/sending.js';
import { simulateFromWallet } from '../chain/simulation.js';
import { planWithdrawal } from '../chain/withdrawals.js';
import { mapLimit } from '../common/concurrency.js';
import { errorMessage } from '../common/errors.js';
import { ApiRetries } from './api-retries.js';
import type { Logger } from './logger.js';
import { itemId, type Plan, type SendablePlan, type ShardAnswers, type ShardRun, type WorkItem } from './shard-run.js';
import { confirmLostSends, dropSettled, skipPending } from './shard-settle.js';
import type { ShardOutcome } from './shard-types.js';

/**
 * Without the run's retries: a transient failure fails at once as the reference does (a window of 0), except a call
 * this node's own rate budget kept back (never made: nothing to fail for).
 */
const NO_RETRIES = new ApiRetries(0);

/**
 * Settles `run.pending` through one provider: the phases below, in order. A transport failure keeps what was
 * sent and leaves the rest for the next provider.
 */
export async function submitThrough(
  run: ShardRun,
  providerName: string,
  options: { resumed: boolean; apis: ShardAnswers },
): Promise<void> {
  const makeClient = run.context.rpcClient ?? ((url: string) => new RpcClient(url));
  const client = makeClient(run.chain.providers[providerName]!.url);
  try {
    if (run.lost.size > 0) {
      await confirmLostSends(run, client, providerName);
      dropSettled(run);
      if (run.pending.length === 0) return;
    }
    const [latestCount, pendingCount] = await Promise.all([
      transactionCount(client, run.wallet.address, 'latest'),
      transactionCount(client, run.wallet.address, 'pending'),
    ]);
    // Transactions already in the pool, whoever sent them, are left alone unless this process has seen them stuck
    // (src/chain/pending.ts); stuck ones are replaced (same nonces), which needs a higher price.
    const sightings = run.context.pendingSightings ?? processPendingSightings();
    const walletKey = sightingsKey(run.shard.chainId, run.wallet.address);
    const seenPendingFor = sightings.observe(walletKey, { latestCount, pendingCount, block: run.shard.currentBlock });
    const decision = decidePending({
      latestCount,
      pendingCount,
      seenPendingFor,
      ...(run.shard.inFlightNonces ? { inFlightNonces: run.shard.inFlightNonces } : {}),
    });
    if (decision.action === 'wait') {
      run.logger.info({ provider: providerName, pending: decision.pending }, 'pending transactions left alone');
      skipPending(run, decision.reason);
      return;
    }
    const gasTarget = await priceTransactions(run, client, providerName, decision);
    // The previous provider may have delivered a transaction before failing: never serve twice.
    if (options.resumed) await dropServed(run, client);
    const plans = await planTransactions(run, client, gasTarget);
    const sendStart = performance.now();
    // Nonces below the pending count held stuck transactions: what is sent there replaces them.
    const replaces = (nonce: number) => decision.action === 'replace' && nonce < pendingCount;
    await sendPlanned(run, client, providerName, plans, {
      firstNonce: decision.firstNonce,
      pendingCount,
      gasTarget,
      replaces,
      sent: (nextNonce) => sightings.sent(walletKey, { latestCount, nextNonce, block: run.shard.currentBlock }),
    });
    run.timings.sendMs += performance.now() - sendStart;
    run.pending = [];
  } catch (error) {
    if (options.apis.failure) throw options.apis.failure.error;
    if (error instanceof ProviderCheckError) run.checkFailed = true;
    // A lost answer does not mean a dead provider: ask it first whether it took the transactions.
    if (run.lost.size > 0) await confirmLostSends(run, client, providerName);
    // Keep what was sent; the rest goes to the next provider.
    dropSettled(run);
    run.logger.warn({ provider: providerName, err: errorMessage(error) }, 'provider failed; trying the next one');
  } finally {
    run.rpcCalls += client.calls;
  }
}

/** The cycle's gas price (the coordinator's, else read here), raised when stuck transactions are replaced. */
async function priceTransactions(
  run: ShardRun,
  client: RpcClient,
  providerName: string,
  decision: Exclude<PendingDecision, { action: 'wait' }>,
): Promise<GasTarget> {
  const { chain, logger } = run;
  let gasTarget: GasTarget =
    gasTargetFromJson(run.shard.gasTarget) ??
    (await getGasTarget(client, chain.options.gasPriceOracle, chain.options.fulfillmentGasLimit, {
      logger: logger.child({ provider: providerName }),
      onFailure: (failure) => run.gasPriceStrategyFailures.push(failure),
    }));
  if (decision.action === 'replace') {
    logger.info({ provider: providerName, pending: decision.pending }, 'replacing stuck pending transactions');
    gasTarget = bumpGasTarget(gasTarget, REPLACEMENT_BUMP_PERCENT);
  }
  run.gasPriceWei = String(pricePerGas(gasTarget));
  return gasTarget;
}

async function stillAwaiting(client: RpcClient, rrpAddress: string, requestId: string): Promise<boolean> {
  const [awaiting] = await callView<[boolean]>(
    client,
    { address: rrpAddress, iface: rrpInterface },
    'requestIsAwaitingFulfillment',
    [requestId],
  );
  return awaiting;
}

/** Skips the requests that are no longer awaiting fulfilment on chain. */
async function dropServed(run: ShardRun, client: RpcClient): Promise<void> {
  const checked = await mapLimit(run.pending, 8, async (item) =>
    item.kind === 'api' ? stillAwaiting(client, run.rrpAddress, item.call.id) : true,
  );
  run.pending = run.pending.filter((item, i) => {
    if (checked[i]) return true;
    run.outcomes.push({
      id: itemId(item),
      kind: item.kind,
      outcome: 'skipped',
      reason: 'no longer awaiting fulfilment',
    });
    return false;
  });
}

/**
 * With a fixed fulfilment gas limit, the static calls of the wallet's fulfilments are made as one simulation, in
 * the order they will be sent, once every API answer is in (src/chain/simulation.ts): one eth_call instead of one
 * per request. Undefined for fewer than two fulfilments, or when the provider refuses the simulation: each request
 * then makes its own static call, as before.
 */
async function simulateFulfilments(
  run: ShardRun,
  client: RpcClient,
): Promise<Map<string, { data: string; check: StaticCheck }> | undefined> {
  const gasLimit = run.chain.options.fulfillmentGasLimit;
  if (gasLimit === undefined) return undefined;
  const fulfils: { id: string; data: string }[] = [];
  for (const item of run.pending) {
    if (item.kind !== 'api') continue;
    const response = await item.response.catch(() => undefined);
    if (response?.success) fulfils.push({ id: item.call.id, data: fulfillData(item.call, response) });
  }
  if (fulfils.length < 2) return undefined;
  const results = await simulateFromWallet(
    client,
    { wallet: run.wallet.address, rrpAddress: run.rrpAddress, block: run.shard.currentBlock },
    fulfils.map((f) => ({ data: f.data, gasLimit: BigInt(gasLimit) })),
  );
  if (!results) {
    run.logger.debug({ fulfilments: fulfils.length }, 'provider refused the batched simulation; one static call each');
    return undefined;
  }
  return new Map(fulfils.map((f, i) => [f.id, { data: f.data, check: staticCheckOf(results[i]!) }]));
}

/** Each pending item's transaction (fulfil, fail, withdraw) or the reason to skip it; API answers awaited here. */
async function planTransactions(run: ShardRun, client: RpcClient, gasTarget: GasTarget): Promise<Plan[]> {
  const { chain } = run;
  const remainder = chain.options.withdrawalRemainder ? amountToWei(chain.options.withdrawalRemainder) : 0n;
  const planStart = performance.now();
  const simulated = await simulateFulfilments(run, client);
  const plans = await mapLimit(run.pending, 8, async (item): Promise<Plan> => {
    if (item.kind === 'api') {
      let response = await item.response;
      if (response.success) run.context.apiRetries?.settled(run.shard.chainId, item.call.id);
      else {
        // A transient failure leaves the request open for a later poll until its retry window is over; a call the
        // budget did not let out was never made and is never failed (src/node/api-retries.ts).
        const retries = run.context.apiRetries ?? NO_RETRIES;
        const decision = await retries.decide(run.shard.chainId, item.call, response, client);
        if (decision.kind === 'defer') {
          run.deferrals.set(item.call.id, decision.deferral);
          return { kind: 'skip', requestId: item.call.id, reason: decision.reason };
        }
        response = { success: false, errorMessage: decision.message };
      }
      return planApiCallTransaction(
        {
          client,
          rrpAddress: run.rrpAddress,
          ...(run.dryRunAddress ? { dryRunAddress: run.dryRunAddress } : {}),
          ...(chain.options.fulfillmentGasLimit !== undefined
            ? { fulfillmentGasLimit: chain.options.fulfillmentGasLimit }
            : {}),
          gasTarget,
          stateBlock: run.shard.currentBlock,
          ...(simulated ? { simulated } : {}),
        },
        item.call,
        response,
      );
    }
    return planWithdrawal(client, {
      id: item.withdrawal.id,
      nodeAddress: item.withdrawal.nodeAddress,
      sponsor: item.withdrawal.sponsor,
      sponsorWallet: item.withdrawal.sponsorWallet,
      rrpAddress: run.rrpAddress,
      gasTarget,
      remainder,
    });
  });
  run.timings.planMs += performance.now() - planStart;
  return plans;
}

/** The outcome of a transaction the provider took (or that a provider knows by its hash). */
function sentOutcome(
  item: WorkItem,
  plan: SendablePlan,
  sent: { nonce: number; txHash: string; provider: string; replaces: boolean },
): ShardOutcome {
  return {
    id: itemId(item),
    kind: item.kind,
    outcome: plan.kind === 'fulfill' ? 'fulfilled' : plan.kind === 'fail' ? 'failed' : 'withdrawn',
    txHash: sent.txHash,
    nonce: sent.nonce,
    provider: sent.provider,
    ...(plan.kind === 'fail' && plan.errorMessage ? { reason: plan.errorMessage } : {}),
    ...(sent.replaces ? { replacement: true as const } : {}),
  };
}

/**
 * Sends in nonce order, in batches (src/chain/sending.ts), and records each answer; a transport failure (thrown)
 * hands what was not answered to the next provider, a rejection stops this sponsor for the cycle once its nonce
 * is filled.
 */
async function sendPlanned(
  run: ShardRun,
  client: RpcClient,
  providerName: string,
  plans: Plan[],
  nonces: {
    firstNonce: number;
    pendingCount: number;
    gasTarget: GasTarget;
    replaces: (nonce: number) => boolean;
    /** Called with the nonce after the highest one that may have reached the pool. */
    sent: (nextNonce: number) => void;
  },
): Promise<void> {
  const stopped = run.context.deadline?.reason;
  if (stopped) return skipPending(run, `not sent: ${stopped}; left open for the next window`);
  const ceiling = run.context.gasPriceCeilings?.get(run.shard.chainId);
  const skip = (item: WorkItem, reason: string) => {
    const deferral = run.deferrals.get(itemId(item));
    run.outcomes.push({
      id: itemId(item),
      kind: item.kind,
      outcome: deferral ? 'deferred' : 'skipped',
      reason,
      ...(deferral ? { deferral } : {}),
    });
  };
  const sendable: { item: WorkItem; plan: SendablePlan }[] = [];
  run.pending.forEach((item, index) => {
    const plan = plans[index]!;
    if (plan.kind === 'skip') skip(item, plan.reason);
    else if (ceiling !== undefined && planPrice(plan) > ceiling) skip(item, overCeiling(planPrice(plan), ceiling));
    else sendable.push({ item, plan });
  });
  // A fulfilment at its request's `_gasPrice` that takes a stuck transaction's nonce is raised as a replacement too:
  // at its own price it would be the stuck transaction again (or one refused as underpriced), every cycle.
  let priced = sendable.map(({ plan }, index) =>
    plan.kind === 'fulfill' && plan.requestedGasPrice !== undefined && nonces.replaces(nonces.firstNonce + index)
      ? { ...plan, gasTarget: requestedPriceReplacement(plan.requestedGasPrice, nonces.gasTarget) }
      : plan,
  );
  // Raised past the ceiling, a replacement is not sent, nor anything after it: nonces must stay without gaps.
  const raisedPastCeiling = ceiling === undefined ? -1 : priced.findIndex((plan) => planPrice(plan) > ceiling);
  if (raisedPastCeiling >= 0) {
    const reason = overCeiling(planPrice(priced[raisedPastCeiling]!), ceiling!);
    for (const { item } of sendable.splice(raisedPastCeiling)) skip(item, reason);
    priced = priced.slice(0, raisedPastCeiling);
  }
  const report = await sendInNonceOrder(priced, {
    client,
    wallet: run.wallet,
    chainId: run.shard.chainId,
    firstNonce: nonces.firstNonce,
    pendingNonce: nonces.pendingCount,
    gasTarget: nonces.gasTarget,
    // Asked again before every batch, transaction and filler: a stop (a lost Lease) mid-way sends nothing more.
    stopReason: () => run.context.deadline?.reason,
  });
  const reached = [
    ...report.sent.flatMap((sent) => (sent && 'txHash' in sent ? [sent.nonce] : [])),
    ...report.fillers.flatMap((filler) => (filler.txHash ? [filler.nonce] : [])),
    ...(report.unanswered ?? []).map((lost) => lost.nonce),
  ];
  if (reached.length > 0) nonces.sent(Math.max(...reached) + 1);
  recordSends(run, providerName, sendable, report, nonces.replaces);
  logFillers(run.logger, report);
  for (const { index, nonce, txHash } of report.unanswered ?? []) {
    const { item, plan } = sendable[index]!;
    const outcome = sentOutcome(item, plan, {
      nonce,
      txHash,
      provider: providerName,
      replaces: nonces.replaces(nonce),
    });
    run.lost.set(itemId(item), { id: itemId(item), txHash, outcome });
  }
  if (report.transportError) throw report.transportError;
}

/**
 * Where the coordinator learns what each send became: a provider took it (hash, nonce), or refused it. It runs in the
 * coordinator's process right after the provider's answer, so the submission's time is this process's clock.
 */
function recordSends(
  run: ShardRun,
  providerName: string,
  sendable: { item: WorkItem; plan: SendablePlan }[],
  report: SendReport,
  replaces: (nonce: number) => boolean,
): void {
  let stopped: string | undefined;
  sendable.forEach(({ item, plan }, index) => {
    const sent = report.sent[index];
    if (sent && 'txHash' in sent) {
      run.outcomes.push({
        ...sentOutcome(item, plan, { ...sent, provider: providerName, replaces: replaces(sent.nonce) }),
        acceptedAtMs: Date.now(),
      });
    } else if (sent) {
      run.outcomes.push({
        id: itemId(item),
        kind: item.kind,
        outcome: 'error',
        reason: sent.rejected,
        nonce: sent.nonce,
        provider: providerName,
      });
      run.logger.warn(
        { requestId: itemId(item), nonce: sent.nonce, reason: sent.rejected },
        'transaction rejected; nothing more is sent for this wallet in this cycle',
      );
      stopped = 'skipped because one of the previous requests failed';
    } else if (stopped) {
      run.outcomes.push({ id: itemId(item), kind: item.kind, outcome: 'skipped', reason: stopped });
    } else if (report.stopped !== undefined) {
      const reason = `not sent: ${report.stopped}; left open for the next window`;
      run.outcomes.push({ id: itemId(item), kind: item.kind, outcome: 'skipped', reason });
    }
    // Neither: not answered before a transport failure; the next provider settles it.
  });
}

function logFillers(logger: Logger, report: SendReport): void {
  for (const filler of report.fillers) {
    if (filler.txHash)
      logger.info({ nonce: filler.nonce, txHash: filler.txHash }, 'filled the nonce of a rejected transaction');
    else if (filler.occupied)
      logger.info({ nonce: filler.nonce, reason: filler.rejected }, 'the nonce of a rejected transaction is taken');
    else
      logger.error(
        { nonce: filler.nonce, reason: filler.rejected },
        'could not fill the nonce of a rejected transaction; later transactions wait behind it',
      );
  }
}

/** What a planned transaction pays per gas (a request's own `_gasPrice` is its gas target). */
const planPrice = (plan: SendablePlan): bigint => pricePerGas(plan.gasTarget);

const GWEI = 1_000_000_000n;
const gwei = (wei: bigint) => (Number(wei) / Number(GWEI)).toLocaleString('en-US', { maximumFractionDigits: 3 });

/** The reason a request waits, as `oracle-node request` shows it. */
function overCeiling(price: bigint, ceiling: bigint): string {
  return `gas price ${gwei(price)} gwei is above this node's ceiling of ${gwei(ceiling)} gwei: waits for a lower price`;
}
