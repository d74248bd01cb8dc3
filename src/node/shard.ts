// One shard = the work of one sponsor wallet on one chain in one cycle: call the APIs, sign, and submit
// the sponsor's transactions in nonce order through ONE provider (the first healthy one), moving to the
// next provider only when sending through the current one fails at transport level. Shards share no nonce
// sequence, so they run independently.
//
// A shard has two halves. The API half (src/node/api-call.ts) needs only the OIS and its API credentials; the
// chain half here needs the node key and the providers: it turns each API result into a signed answer (or takes
// one from the response cache), then per provider: confirms lost sends, decides about pending transactions,
// prices, drops what was served, plans, sends in nonce order; finally it settles what no provider took and
// reports. runShard runs both in one process, each request planned as soon as its answer is in; runChainHalf is
// the chain half alone, for answers that came from elsewhere.

import { callView } from '../chain/calls.js';
import { rrpInterface } from '../chain/contracts.js';
import {
  type ApiResponse,
  fulfillData,
  type PlannedTransaction,
  ProviderCheckError,
  planApiCallTransaction,
  type StaticCheck,
  signFulfillment,
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
  type StrategyFailure,
} from '../chain/gas-price.js';
import { decidePending, type PendingDecision, PendingSightings } from '../chain/pending.js';
import { RpcClient } from '../chain/rpc.js';
import { isKnown, type SendReport, sendInNonceOrder } from '../chain/sending.js';
import { simulateFromWallet } from '../chain/simulation.js';
import type { SponsorWallets } from '../chain/sponsor-wallets.js';
import { dryRunAddressOf, rrpAddressOf } from '../chain/types.js';
import { type PlannedWithdrawal, planWithdrawal } from '../chain/withdrawals.js';
import { mapLimit } from '../common/concurrency.js';
import { errorMessage } from '../common/errors.js';
import type { Config } from '../config/index.js';
import type { NodeRole } from '../contract/request-log.js';
import { parseTraceparent, type SpanContext, Tracer } from '../observability/tracing.js';
import { type ApiCallContext, type ApiCallOutcome, type ApiRecord, callApi, NOT_CALLED } from './api-call.js';
import type { ResponseCache } from './cache.js';
import type { WorkDeadline } from './deadline.js';
import { findEndpoint } from './endpoints.js';
import type { Logger } from './logger.js';
import { reservedParameterValue } from './ois-adapter.js';
import type { ShardApiCall, ShardInput, ShardOutcome, ShardOutput } from './shard-types.js';

/** What the chain half needs: the node key (signing), the providers (sending) and the response cache. */
export type ChainContext = {
  config: Config;
  wallets: SponsorWallets;
  logger: Logger;
  cache?: ResponseCache;
  rpcClient?: (url: string) => RpcClient;
  /** Spans of the shard's requests, children of the traces named in the shard input. */
  tracer?: Tracer;
  /** What this process has seen of the wallets' pending transactions (the process's own when not given). */
  pendingSightings?: PendingSightings;
  /**
   * Per chain id, the most per gas (wei: the gas price, or the max fee per gas) this node pays: a transaction priced
   * above it is not sent, and its request waits for the price to fall (`--max-gas-price`, spec.chainLimits).
   */
  gasPriceCeilings?: ReadonlyMap<string, bigint>;
  /** The run's hard end or SIGTERM: after it nothing is sent; the requests stay open (src/node/deadline.ts). */
  deadline?: WorkDeadline;
  /** The node's side of a redundant deployment, written into the response cache's entries (absent: primary). */
  role?: NodeRole;
};

/** The sightings of this process: every shard, cycle and window poll it runs adds to them. */
const PROCESS_SIGHTINGS = new PendingSightings();

/** The process's sightings (a standby's cycle reads them before its shards: src/node/cycle.ts). */
export const processPendingSightings = (): PendingSightings => PROCESS_SIGHTINGS;

/** The key of a wallet's sightings: the same for the shards and a standby's cycle. */
export const sightingsKey = (chainId: string, wallet: string): string => `${chainId}:${wallet.toLowerCase()}`;

/** Both halves in one process (InProcessExecutor): the chain half's context and the API calls'. */
export type ShardContext = ChainContext & {
  callEndpoint?: ApiCallContext['callEndpoint'];
  /** Concurrent API calls inside one shard. */
  apiConcurrency?: number;
};

const NO_TRACER = new Tracer();

type Chain = Config['chains'][number];

/** A transaction whose answer was lost, and the outcome it counts as once a provider knows its hash. */
type LostSend = { id: string; txHash: string; outcome: ShardOutcome };

type WorkItem =
  | { kind: 'api'; call: ShardApiCall; response: Promise<ApiResponse> }
  | { kind: 'withdrawal'; withdrawal: ShardInput['withdrawals'][number] };

type Plan = PlannedTransaction | PlannedWithdrawal;
type SendablePlan = Exclude<Plan, { kind: 'skip' }>;

/** The state of one shard's run, shared by its phases. */
type ShardRun = {
  shard: ShardInput;
  context: ChainContext;
  chain: Chain;
  logger: Logger;
  wallet: ReturnType<SponsorWallets['walletOf']>;
  rrpAddress: string;
  dryRunAddress: string | undefined;
  outcomes: ShardOutcome[];
  /** What is still to be settled, in the shard's order. */
  pending: WorkItem[];
  /** Transactions sent whose answer was lost (the provider may have taken them), by item id. */
  lost: Map<string, LostSend>;
  rpcCalls: number;
  timings: { planMs: number; sendMs: number };
  gasPriceWei: string | undefined;
  gasPriceStrategyFailures: StrategyFailure[];
  /** When the first provider was asked (the submission spans start there). */
  submissionStartMs: number;
  /** A provider could not answer a fulfilment check (never a revert): what no provider took stays open. */
  checkFailed: boolean;
};

/**
 * The API answers of a shard as the chain half awaits them: each request's answer is a promise of its own, so a
 * request is planned as soon as its answer is in.
 */
export type ShardAnswers = {
  /** Every API call's answer, signed, by request id. */
  responses: Map<string, Promise<ApiResponse>>;
  /** Settles when every answer is in. */
  answered: Promise<unknown>;
  /** The first API call that threw (not an API failure: those are answers), which fails the shard. */
  failure: { error: unknown } | undefined;
  cacheHits: number;
  records: Map<string, ApiRecord>;
  apiMs: number;
};

/** Both halves of a shard in one process: the API calls, and as their answers come in, the transactions. */
export async function runShard(shard: ShardInput, context: ShardContext): Promise<ShardOutput> {
  const run = startRun(shard, context);
  // API calls (cached responses reused), all answered before any transaction is sent, as the reference.
  return submitShard(run, callApisInProcess(shard, context));
}

/**
 * The chain half of a shard, run by the coordinator for one sponsor wallet: the transactions of its requests from
 * their API answers, through one provider at a time.
 */
export async function runChainHalf(
  shard: ShardInput,
  answers: ShardAnswers,
  context: ChainContext,
): Promise<ShardOutput> {
  return submitShard(startRun(shard, context), answers);
}

async function submitShard(run: ShardRun, apis: ShardAnswers): Promise<ShardOutput> {
  const { shard } = run;
  run.pending = [
    ...shard.apiCalls.map((call) => ({ kind: 'api' as const, call, response: responseOf(apis, call.id) })),
    ...shard.withdrawals.map((withdrawal) => ({ kind: 'withdrawal' as const, withdrawal })),
  ];
  run.submissionStartMs = Date.now();
  const providerNames = shard.providers.filter((name) => run.chain.providers[name]);
  for (let p = 0; p < providerNames.length && run.pending.length > 0; p++) {
    await submitThrough(run, providerNames[p]!, { resumed: p > 0, apis });
  }
  await apis.answered;
  if (apis.failure) throw apis.failure.error;
  settleUntaken(run);
  return shardOutput(run, apis);
}

/** A request's answer; one the answers lack is a failed API call, never a transaction of its own. */
function responseOf(apis: ShardAnswers, id: string): Promise<ApiResponse> {
  return apis.responses.get(id) ?? Promise.resolve({ success: false, errorMessage: 'API call failed' });
}

function startRun(shard: ShardInput, context: ChainContext): ShardRun {
  const chain = context.config.chains.find((c) => c.id === shard.chainId);
  if (!chain) throw new Error(`Chain ${shard.chainId} is not in the config`);
  const wallet = context.wallets.walletOf(shard.sponsor);
  if (wallet.address !== shard.sponsorWallet) throw new Error('Shard sponsor wallet does not match the node mnemonic');
  return {
    shard,
    context,
    chain,
    logger: context.logger.child({ chainId: shard.chainId, sponsorWallet: shard.sponsorWallet }),
    wallet,
    rrpAddress: rrpAddressOf(chain),
    dryRunAddress: dryRunAddressOf(chain),
    outcomes: [],
    pending: [],
    lost: new Map(),
    rpcCalls: 0,
    timings: { planMs: 0, sendMs: 0 },
    gasPriceWei: undefined,
    gasPriceStrategyFailures: [],
    submissionStartMs: Date.now(),
    checkFailed: false,
  };
}

// ---- Phase 1: the API answers ------------------------------------------------------------------------------

/**
 * Promise.withResolvers, awaited where the value is needed; a rejection nobody reached (all providers down) is not
 * unhandled.
 */
function deferred<T>(): PromiseWithResolvers<T> {
  const resolvers = Promise.withResolvers<T>();
  resolvers.promise.catch(() => undefined);
  return resolvers;
}

/** Starts every API call of the shard at once (bounded), in this process; each answer is a promise of its own. */
function callApisInProcess(shard: ShardInput, context: ShardContext): ShardAnswers {
  const apiStart = performance.now();
  const responses = shard.apiCalls.map(() => deferred<ApiResponse>());
  const answers: ShardAnswers = {
    responses: new Map(shard.apiCalls.map((call, i) => [call.id, responses[i]!.promise])),
    answered: Promise.resolve(),
    failure: undefined,
    cacheHits: 0,
    records: new Map(),
    apiMs: 0,
  };
  answers.answered = mapLimit(shard.apiCalls, context.apiConcurrency ?? 16, async (call, i) => {
    try {
      const trace = parseTraceparent(shard.traceparents?.[call.id]);
      const answer =
        (await answerWithoutCall(context, call)) ??
        (await answerFromResult(
          context,
          shard.chainId,
          call,
          await callApi(context, shard.chainId, call, trace),
          trace,
        ));
      if (answer.cached) answers.cacheHits++;
      answers.records.set(call.id, answer.api);
      responses[i]!.resolve(answer.response);
    } catch (error) {
      answers.failure ??= { error };
      responses[i]!.reject(error);
    }
  }).finally(() => {
    answers.apiMs = performance.now() - apiStart;
  });
  return answers;
}

export type Answer = { response: ApiResponse; cached: boolean; api: ApiRecord };

function gasPriceOf(config: Config, call: ShardApiCall): { gasPrice?: string } {
  const { endpoint } = findEndpoint(config, call);
  const value = endpoint ? reservedParameterValue('_gasPrice', endpoint, call.parameters) : undefined;
  return value !== undefined && /^\d+$/.test(value) ? { gasPrice: value } : {};
}

/**
 * A request's answer that needs no API call: a request that cannot be served or whose endpoint the config lacks
 * (failed, not called), or a response cached by an earlier cycle. Undefined: the API must be called.
 */
export async function answerWithoutCall(context: ChainContext, call: ShardApiCall): Promise<Answer | undefined> {
  if (call.errorMessage)
    return { response: { success: false, errorMessage: call.errorMessage }, cached: false, api: NOT_CALLED };
  const { ois, endpoint } = findEndpoint(context.config, call);
  if (!ois || !endpoint) {
    return {
      response: { success: false, errorMessage: `No endpoint ${call.endpointName} in OIS ${call.oisTitle}` },
      cached: false,
      api: NOT_CALLED,
    };
  }
  if (!call.cacheResponses || !context.cache) return undefined;
  const hit = await context.cache.get(call.id);
  if (!hit) return undefined;
  return {
    response: { success: true, ...hit, ...gasPriceOf(context.config, call) },
    cached: true,
    api: { outcome: 'cached', durationMs: 0 },
  };
}

/** A request's answer from its API call's result: signed with the node key, and cached when its trigger asks. */
export async function answerFromResult(
  context: ChainContext,
  chainId: string,
  call: ShardApiCall,
  { result, api }: ApiCallOutcome,
  trace: SpanContext | undefined,
): Promise<Answer> {
  if (!result.success) return { response: { success: false, errorMessage: result.errorMessage }, cached: false, api };
  const tracer = context.tracer ?? NO_TRACER;
  const signing = tracer.startSpan('sign response', {
    parent: trace,
    attributes: { requestId: call.id, chainId, endpointId: call.endpointId },
  });
  const signature = signFulfillment(context.wallets.node, call.id, result.encodedValue);
  signing.end();
  if (call.cacheResponses && context.cache) {
    await context.cache.set(call.id, {
      encodedValue: result.encodedValue,
      signature,
      servedBy: context.role ?? 'primary',
    });
  }
  return {
    response: { success: true, encodedValue: result.encodedValue, signature, ...gasPriceOf(context.config, call) },
    cached: false,
    api,
  };
}

// ---- Phase 2: the transactions, through one provider ---------------------------------------------------------

function itemId(item: WorkItem): string {
  return item.kind === 'api' ? item.call.id : item.withdrawal.id;
}

/** Drops from `run.pending` what already has an outcome. */
function dropSettled(run: ShardRun): void {
  const done = new Set(run.outcomes.map((o) => o.id));
  run.pending = run.pending.filter((item) => !done.has(itemId(item)));
}

function skipPending(run: ShardRun, reason: string): void {
  for (const item of run.pending) run.outcomes.push({ id: itemId(item), kind: item.kind, outcome: 'skipped', reason });
  run.pending = [];
}

/**
 * Settles `run.pending` through one provider: the phases below, in order. A transport failure keeps what was
 * sent and leaves the rest for the next provider.
 */
async function submitThrough(
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
    const sightings = run.context.pendingSightings ?? PROCESS_SIGHTINGS;
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

/** Lost sends that this provider knows by their hash count as sent; the others stay lost, never sent blindly. */
async function confirmLostSends(run: ShardRun, client: RpcClient, provider: string): Promise<void> {
  const sends = [...run.lost.values()];
  const known = await mapLimit(sends, 8, (send) => isKnown(client, send.txHash));
  sends.forEach((send, i) => {
    if (!known[i]) return;
    run.lost.delete(send.id);
    run.outcomes.push({ ...send.outcome, acceptedAtMs: Date.now() });
    run.logger.info(
      { requestId: send.id, nonce: send.outcome.nonce, txHash: send.txHash, provider },
      'a transaction whose answer was lost is known by its hash',
    );
  });
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
        await item.response,
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
  const skip = (item: WorkItem, reason: string) =>
    run.outcomes.push({ id: itemId(item), kind: item.kind, outcome: 'skipped', reason });
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

// ---- The end: what no provider took, and the output -----------------------------------------------------------

function settleUntaken(run: ShardRun): void {
  for (const item of run.pending) {
    run.outcomes.push({
      id: itemId(item),
      kind: item.kind,
      outcome: 'error',
      reason: run.lost.has(itemId(item))
        ? 'sent, but its answer was lost and no provider knows the transaction by its hash'
        : run.checkFailed
          ? 'no provider could answer the fulfilment check (a provider error, not a revert); the request stays open'
          : 'no provider could take the transaction',
    });
  }
  run.pending = [];
}

function shardOutput(run: ShardRun, apis: ShardAnswers): ShardOutput {
  const { shard, outcomes, timings } = run;
  for (const outcome of outcomes) {
    const api = outcome.kind === 'api' ? apis.records.get(outcome.id) : undefined;
    if (api) outcome.api = api;
  }
  traceSubmissions(run.context.tracer ?? NO_TRACER, shard, outcomes, run.submissionStartMs);
  return {
    chainId: shard.chainId,
    sponsorWallet: shard.sponsorWallet,
    outcomes,
    apiCalls: shard.apiCalls.length - apis.cacheHits,
    cacheHits: apis.cacheHits,
    rpcCalls: run.rpcCalls,
    timings: {
      apiMs: Math.round(apis.apiMs),
      planMs: Math.round(timings.planMs),
      sendMs: Math.round(timings.sendMs),
    },
    ...(run.gasPriceWei === undefined ? {} : { gasPriceWei: run.gasPriceWei }),
    ...(run.gasPriceStrategyFailures.length === 0 ? {} : { gasPriceStrategyFailures: run.gasPriceStrategyFailures }),
  };
}

/** One span per request from planning its transaction to the answer of the send, child of the request's trace. */
function traceSubmissions(tracer: Tracer, shard: ShardInput, outcomes: ShardOutcome[], startMs: number): void {
  if (!tracer.enabled) return;
  for (const outcome of outcomes) {
    if (outcome.kind !== 'api') continue;
    const span = tracer.startSpan('submission', {
      parent: parseTraceparent(shard.traceparents?.[outcome.id]),
      kind: 'client',
      startMs,
      attributes: {
        requestId: outcome.id,
        chainId: shard.chainId,
        endpointId: shard.apiCalls.find((call) => call.id === outcome.id)?.endpointId,
        'rpc.system': 'jsonrpc',
        'rpc.method': 'eth_sendRawTransaction',
        'oracle_node.outcome': outcome.outcome,
        'oracle_node.provider': outcome.provider,
        'oracle_node.transaction_hash': outcome.txHash,
        'oracle_node.nonce': outcome.nonce,
      },
    });
    if (outcome.outcome === 'error') span.fail(outcome.reason ?? 'transaction not accepted');
    span.end();
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
