// One shard = the work of one sponsor wallet on one chain in one cycle: call the APIs, sign, and submit
// the sponsor's transactions in nonce order through ONE provider (the first healthy one), moving to the
// next provider only when sending through the current one fails at transport level. Shards share no nonce
// sequence, so they run independently (in-process here, as Kubernetes Jobs in the operator).
// Input and output are plain JSON; secrets come from the worker's own config, never from the shard.

import { callView } from '../chain/calls.js';
import { rrpInterface } from '../chain/contracts.js';
import {
  type ApiResponse,
  type PlannedTransaction,
  planApiCallTransaction,
  signFulfillment,
  transactionCount,
} from '../chain/fulfillment.js';
import {
  amountToWei,
  bumpGasTarget,
  type GasTarget,
  type GasTargetJson,
  gasTargetFromJson,
  getGasTarget,
  type StrategyFailure,
} from '../chain/gas-price.js';
import { decidePending, needsCountBefore, STUCK_AFTER_BLOCKS } from '../chain/pending.js';
import type { DiscoveredApiCall } from '../chain/requests.js';
import { parseMinConfirmations } from '../chain/requests.js';
import { RpcClient } from '../chain/rpc.js';
import { isKnown, sendInNonceOrder } from '../chain/sending.js';
import type { SponsorWallets } from '../chain/sponsor-wallets.js';
import { DEFAULT_MIN_CONFIRMATIONS, dryRunAddressOf, rrpAddressOf, type WithdrawalRequest } from '../chain/types.js';
import { type PlannedWithdrawal, planWithdrawal } from '../chain/withdrawals.js';
import { errorMessage } from '../common/errors.js';
import type { Config } from '../config/index.js';
import type { ApiOutcome } from '../contract/request-log.js';
import { parseTraceparent, type SpanContext, Tracer } from '../observability/tracing.js';
import { getReservedParameterValue } from '../ois/reserved.js';
import type { Ois } from '../ois/types.js';
import type { ResponseCache } from './cache.js';
import type { Logger } from './logger.js';
import { type CallEndpointInput, type CallEndpointResult, callEndpoint as defaultCallEndpoint } from './ois-adapter.js';

export const SHARD_FORMAT = 'oracle-node/shard@1';

export type ShardInput = {
  format: typeof SHARD_FORMAT;
  chainId: string;
  sponsor: string;
  sponsorWallet: string;
  /** Provider names of the chain, most preferred first (healthy in discovery). */
  providers: string[];
  currentBlock: number;
  /** The chain's gas price in this cycle, read once by the coordinator for all shards; absent: the shard reads it. */
  gasTarget?: GasTargetJson;
  apiCalls: DiscoveredApiCall[];
  withdrawals: WithdrawalRequest[];
  /** W3C traceparent of each request's trace, by request id (only when the coordinator traces). */
  traceparents?: Record<string, string>;
};

export type ShardOutcome = {
  id: string;
  kind: 'api' | 'withdrawal';
  outcome: 'fulfilled' | 'failed' | 'withdrawn' | 'skipped' | 'error';
  txHash?: string;
  nonce?: number;
  provider?: string;
  reason?: string;
  /**
   * The transaction replaces a stuck one at the same nonce (src/chain/pending.ts), sent for the same request in an
   * earlier cycle: counted as `replaced`, not as a second fulfilment.
   */
  replacement?: true;
  /** The request's API call: its status class (never the answer) and how long it took. */
  api?: { outcome: ApiOutcome; durationMs: number };
};

export type ShardOutput = {
  chainId: string;
  sponsorWallet: string;
  outcomes: ShardOutcome[];
  apiCalls: number;
  cacheHits: number;
  rpcCalls: number;
  /** Milliseconds spent calling APIs, planning (static calls, estimates) and sending. */
  timings: { apiMs: number; planMs: number; sendMs: number };
  /** The gas price (legacy) or max fee per gas (EIP-1559) the transactions were priced at (wei, decimal). */
  gasPriceWei?: string;
  /** Gas price strategies that failed (each also logged at WARN), in the order they were tried. */
  gasPriceStrategyFailures?: StrategyFailure[];
};

export type ShardContext = {
  config: Config;
  wallets: SponsorWallets;
  logger: Logger;
  cache?: ResponseCache;
  callEndpoint?: (call: CallEndpointInput) => Promise<CallEndpointResult>;
  rpcClient?: (url: string) => RpcClient;
  /** Concurrent API calls inside one shard. */
  apiConcurrency?: number;
  /** Spans of the shard's requests, children of the traces named in the shard input. */
  tracer?: Tracer;
};

const NO_TRACER = new Tracer();

export async function mapLimit<T, R>(
  items: T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return results;
}

/**
 * Promise.withResolvers, awaited where the value is needed; a rejection nobody reached (all providers down) is not
 * unhandled.
 */
function deferred<T>(): PromiseWithResolvers<T> {
  const resolvers = Promise.withResolvers<T>();
  resolvers.promise.catch(() => undefined);
  return resolvers;
}

function findEndpoint(config: Config, call: DiscoveredApiCall) {
  const ois = config.ois.find((o) => o.title === call.oisTitle) as Ois | undefined;
  const endpoint = ois?.endpoints.find((e) => e.name === call.endpointName);
  return { ois, endpoint };
}

/** The reserved `_minConfirmations` of a request, honoured only when the endpoint lists it. */
export function requestedMinConfirmations(config: Config, call: DiscoveredApiCall): string | undefined {
  const { endpoint } = findEndpoint(config, call);
  return endpoint ? getReservedParameterValue('_minConfirmations', endpoint, call.parameters) : undefined;
}

/** The class of an API call's outcome from the engine's error message, which names the status code. */
export function apiOutcomeOf(result: CallEndpointResult): ApiOutcome {
  if (result.success) return '2xx';
  const status = /^API call failed with status code ([1-5])\d\d$/.exec(result.errorMessage);
  if (status) return `${status[1]}xx` as ApiOutcome;
  return result.errorMessage === 'API call failed with no response' ? 'no response' : 'failed';
}

type Answer = { response: ApiResponse; cached: boolean; api: { outcome: ApiOutcome; durationMs: number } };
const notCalled = { outcome: 'not called', durationMs: 0 } as const;

async function respond(
  context: ShardContext,
  chainId: string,
  call: DiscoveredApiCall,
  trace: SpanContext | undefined,
): Promise<Answer> {
  if (call.errorMessage)
    return { response: { success: false, errorMessage: call.errorMessage }, cached: false, api: notCalled };
  const { ois, endpoint } = findEndpoint(context.config, call);
  if (!ois || !endpoint) {
    return {
      response: { success: false, errorMessage: `No endpoint ${call.endpointName} in OIS ${call.oisTitle}` },
      cached: false,
      api: notCalled,
    };
  }
  const gasPriceValue = getReservedParameterValue('_gasPrice', endpoint, call.parameters);
  const gasPrice = gasPriceValue !== undefined && /^\d+$/.test(gasPriceValue) ? { gasPrice: gasPriceValue } : {};
  if (call.cacheResponses && context.cache) {
    const hit = await context.cache.get(call.id);
    if (hit)
      return {
        response: { success: true, ...hit, ...gasPrice },
        cached: true,
        api: { outcome: 'cached', durationMs: 0 },
      };
  }
  const tracer = context.tracer ?? NO_TRACER;
  const requestAttributes = { requestId: call.id, chainId, endpointId: call.endpointId };
  // The OIS engine's whole call: the HTTP request, pre/post-processing and encoding. No URL, parameter or answer.
  const span = tracer.startSpan('api call', {
    parent: trace,
    kind: 'client',
    attributes: {
      ...requestAttributes,
      'http.request.method': (endpoint as { operation?: { method?: string } }).operation?.method?.toUpperCase(),
    },
  });
  const started = performance.now();
  const result = await (context.callEndpoint ?? defaultCallEndpoint)({
    ois,
    endpointName: call.endpointName,
    parameters: call.parameters,
    apiCredentials: context.config.apiCredentials,
    metadata: {
      chainId,
      chainType: 'evm',
      requesterAddress: call.requester,
      sponsorAddress: call.sponsor,
      sponsorWalletAddress: call.sponsorWallet,
      requestId: call.id,
    },
  });
  const api = { outcome: apiOutcomeOf(result), durationMs: Math.round(performance.now() - started) };
  const status = result.success ? undefined : /status code (\d{3})$/.exec(result.errorMessage)?.[1];
  span.setAttributes({ 'oracle_node.api.outcome': api.outcome, 'http.response.status_code': status && Number(status) });
  if (!result.success) span.fail(api.outcome === 'failed' ? 'processing or encoding failed' : `API ${api.outcome}`);
  span.end();
  if (!result.success) return { response: { success: false, errorMessage: result.errorMessage }, cached: false, api };
  const signing = tracer.startSpan('sign response', { parent: trace, attributes: requestAttributes });
  const signature = signFulfillment(context.wallets.node, call.id, result.encodedValue);
  signing.end();
  if (call.cacheResponses && context.cache) {
    await context.cache.set(call.id, { encodedValue: result.encodedValue, signature });
  }
  return {
    response: { success: true, encodedValue: result.encodedValue, signature, ...gasPrice },
    cached: false,
    api,
  };
}

/** The outcome of a transaction the provider took (or that a provider knows by its hash). */
function sentOutcome(
  item: WorkItem,
  plan: Exclude<PlannedTransaction | PlannedWithdrawal, { kind: 'skip' }>,
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

/** A transaction whose answer was lost, and the outcome it counts as once a provider knows its hash. */
type LostSend = { id: string; txHash: string; outcome: ShardOutcome };

type WorkItem =
  | { kind: 'api'; call: DiscoveredApiCall; response: Promise<ApiResponse> }
  | { kind: 'withdrawal'; withdrawal: WithdrawalRequest };

function itemId(item: WorkItem): string {
  return item.kind === 'api' ? item.call.id : item.withdrawal.id;
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

export async function runShard(shard: ShardInput, context: ShardContext): Promise<ShardOutput> {
  if (shard.format !== SHARD_FORMAT) throw new Error(`Unknown shard format ${String(shard.format)}`);
  const chain = context.config.chains.find((c) => c.id === shard.chainId);
  if (!chain) throw new Error(`Chain ${shard.chainId} is not in the config`);
  const logger = context.logger.child({ chainId: shard.chainId, sponsorWallet: shard.sponsorWallet });
  const wallet = context.wallets.walletOf(shard.sponsor);
  if (wallet.address !== shard.sponsorWallet) throw new Error('Shard sponsor wallet does not match the node mnemonic');
  const rrpAddress = rrpAddressOf(chain);
  const dryRunAddress = dryRunAddressOf(chain);
  const makeClient = context.rpcClient ?? ((url: string) => new RpcClient(url));
  const outcomes: ShardOutcome[] = [];
  let rpcCalls = 0;
  let gasPriceWei: string | undefined;
  const gasPriceStrategyFailures: StrategyFailure[] = [];

  // 1. API calls (cached responses reused), all answered before any transaction is sent, as the reference.
  // They start at once and each request is planned as soon as its answer is in, while the others still run.
  let cacheHits = 0;
  const timings = { apiMs: 0, planMs: 0, sendMs: 0 };
  const apiStart = performance.now();
  let apiFailure: { error: unknown } | undefined;
  const responses = shard.apiCalls.map(() => deferred<ApiResponse>());
  const apiOutcomes = new Map<string, Answer['api']>();
  const answered = mapLimit(shard.apiCalls, context.apiConcurrency ?? 16, async (call, i) => {
    try {
      const trace = parseTraceparent(shard.traceparents?.[call.id]);
      const { response, cached, api } = await respond(context, shard.chainId, call, trace);
      if (cached) cacheHits++;
      apiOutcomes.set(call.id, api);
      responses[i]!.resolve(response);
    } catch (error) {
      apiFailure ??= { error };
      responses[i]!.reject(error);
    }
  }).finally(() => {
    timings.apiMs = performance.now() - apiStart;
  });
  let pending: WorkItem[] = [
    ...shard.apiCalls.map((call, i) => ({ kind: 'api' as const, call, response: responses[i]!.promise })),
    ...shard.withdrawals.map((withdrawal) => ({ kind: 'withdrawal' as const, withdrawal })),
  ];

  // 2. Transactions through one provider at a time.
  const submissionStartMs = Date.now();
  const chainGasTarget = gasTargetFromJson(shard.gasTarget);
  const providerNames = shard.providers.filter((name) => chain.providers[name]);
  // Transactions sent whose answer was lost (the provider may have taken them): counted only once a provider
  // knows them by their hash, never sent again blindly.
  const lost = new Map<string, LostSend>();
  const confirmLost = async (client: RpcClient, provider: string) => {
    const known = await mapLimit([...lost.values()], 8, (send) => isKnown(client, send.txHash));
    [...lost.values()].forEach((send, i) => {
      if (!known[i]) return;
      lost.delete(send.id);
      outcomes.push(send.outcome);
      logger.info(
        { requestId: send.id, nonce: send.outcome.nonce, txHash: send.txHash, provider },
        'a transaction whose answer was lost is known by its hash',
      );
    });
  };
  for (let p = 0; p < providerNames.length && pending.length > 0; p++) {
    const providerName = providerNames[p]!;
    const client = makeClient(chain.providers[providerName]!.url);
    const resumed = p > 0;
    try {
      if (lost.size > 0) {
        await confirmLost(client, providerName);
        const done = new Set(outcomes.map((o) => o.id));
        pending = pending.filter((item) => !done.has(itemId(item)));
        if (pending.length === 0) break;
      }
      const [latestCount, pendingCount] = await Promise.all([
        transactionCount(client, wallet.address, 'latest'),
        transactionCount(client, wallet.address, 'pending'),
      ]);
      // Transactions already in the pool, whoever sent them, are left alone unless they are stuck
      // (src/chain/pending.ts); stuck ones are replaced (same nonces), which needs a higher price.
      const decision = await pendingDecision(client, {
        address: wallet.address,
        latestCount,
        pendingCount,
        currentBlock: shard.currentBlock,
        oldestServableBlock: oldestServableBlock(context.config, chain, pending),
      });
      if (decision.action === 'wait') {
        logger.info({ provider: providerName, pending: decision.pending }, 'pending transactions left alone');
        for (const item of pending) {
          outcomes.push({ id: itemId(item), kind: item.kind, outcome: 'skipped', reason: decision.reason });
        }
        pending = [];
        break;
      }
      let gasTarget: GasTarget =
        chainGasTarget ??
        (await getGasTarget(client, chain.options.gasPriceOracle, chain.options.fulfillmentGasLimit, {
          logger: logger.child({ provider: providerName }),
          onFailure: (failure) => gasPriceStrategyFailures.push(failure),
        }));
      if (decision.action === 'replace') {
        logger.info({ provider: providerName, pending: decision.pending }, 'replacing stuck pending transactions');
        gasTarget = bumpGasTarget(gasTarget, 20);
      }
      gasPriceWei = String(gasTarget.type === 0 ? gasTarget.gasPrice : gasTarget.maxFeePerGas);

      if (resumed) {
        // The previous provider may have delivered a transaction before failing: never serve twice.
        const checked = await mapLimit(pending, 8, async (item) =>
          item.kind === 'api' ? stillAwaiting(client, rrpAddress, item.call.id) : true,
        );
        pending = pending.filter((item, i) => {
          if (checked[i]) return true;
          outcomes.push({
            id: itemId(item),
            kind: item.kind,
            outcome: 'skipped',
            reason: 'no longer awaiting fulfilment',
          });
          return false;
        });
      }

      const remainder = chain.options.withdrawalRemainder ? amountToWei(chain.options.withdrawalRemainder) : 0n;
      const planStart = performance.now();
      const plans = await mapLimit(pending, 8, async (item): Promise<PlannedTransaction | PlannedWithdrawal> => {
        if (item.kind === 'api') {
          return planApiCallTransaction(
            {
              client,
              rrpAddress,
              ...(dryRunAddress ? { dryRunAddress } : {}),
              ...(chain.options.fulfillmentGasLimit !== undefined
                ? { fulfillmentGasLimit: chain.options.fulfillmentGasLimit }
                : {}),
              gasTarget,
              stateBlock: shard.currentBlock,
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
          rrpAddress,
          gasTarget,
          remainder,
        });
      });
      timings.planMs += performance.now() - planStart;

      // Send in nonce order, in batches (src/chain/sending.ts); a transport failure hands what was not
      // answered to the next provider, a rejection stops this sponsor for the cycle once its nonce is filled.
      const sendStart = performance.now();
      const sendable: { item: WorkItem; plan: Exclude<PlannedTransaction | PlannedWithdrawal, { kind: 'skip' }> }[] =
        [];
      pending.forEach((item, index) => {
        const plan = plans[index]!;
        if (plan.kind === 'skip') {
          outcomes.push({ id: itemId(item), kind: item.kind, outcome: 'skipped', reason: plan.reason });
        } else sendable.push({ item, plan });
      });
      const report = await sendInNonceOrder(
        sendable.map((s) => s.plan),
        { client, wallet, chainId: shard.chainId, firstNonce: latestCount, pendingNonce: pendingCount, gasTarget },
      );
      // Nonces below the pending count held stuck transactions: what is sent there replaces them.
      const replaces = (nonce: number) => decision.action === 'replace' && nonce < pendingCount;
      let stopped: string | undefined;
      sendable.forEach(({ item, plan }, index) => {
        const sent = report.sent[index];
        if (sent && 'txHash' in sent) {
          outcomes.push(sentOutcome(item, plan, { ...sent, provider: providerName, replaces: replaces(sent.nonce) }));
        } else if (sent) {
          outcomes.push({
            id: itemId(item),
            kind: item.kind,
            outcome: 'error',
            reason: sent.rejected,
            nonce: sent.nonce,
            provider: providerName,
          });
          logger.warn(
            { requestId: itemId(item), nonce: sent.nonce, reason: sent.rejected },
            'transaction rejected; nothing more is sent for this wallet in this cycle',
          );
          stopped = 'skipped because one of the previous requests failed';
        } else if (stopped) {
          outcomes.push({ id: itemId(item), kind: item.kind, outcome: 'skipped', reason: stopped });
        }
        // Neither: not answered before a transport failure; the next provider settles it.
      });
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
      for (const { index, nonce, txHash } of report.unanswered ?? []) {
        const { item, plan } = sendable[index]!;
        const outcome = sentOutcome(item, plan, { nonce, txHash, provider: providerName, replaces: replaces(nonce) });
        lost.set(itemId(item), { id: itemId(item), txHash, outcome });
      }
      if (report.transportError) throw report.transportError;
      timings.sendMs += performance.now() - sendStart;
      pending = [];
    } catch (error) {
      if (apiFailure) throw apiFailure.error;
      // A lost answer does not mean a dead provider: ask it first whether it took the transactions.
      if (lost.size > 0) await confirmLost(client, providerName);
      // Keep what was sent; the rest goes to the next provider.
      const done = new Set(outcomes.map((o) => o.id));
      pending = pending.filter((item) => !done.has(itemId(item)));
      logger.warn({ provider: providerName, err: errorMessage(error) }, 'provider failed; trying the next one');
    } finally {
      rpcCalls += client.calls;
    }
  }
  await answered;
  if (apiFailure) throw apiFailure.error;
  for (const item of pending) {
    outcomes.push({
      id: itemId(item),
      kind: item.kind,
      outcome: 'error',
      reason: lost.has(itemId(item))
        ? 'sent, but its answer was lost and no provider knows the transaction by its hash'
        : 'no provider could take the transaction',
    });
  }
  for (const outcome of outcomes) {
    const api = outcome.kind === 'api' ? apiOutcomes.get(outcome.id) : undefined;
    if (api) outcome.api = api;
  }
  traceSubmissions(context.tracer ?? NO_TRACER, shard, outcomes, submissionStartMs);
  return {
    chainId: shard.chainId,
    sponsorWallet: shard.sponsorWallet,
    outcomes,
    apiCalls: shard.apiCalls.length - cacheHits,
    cacheHits,
    rpcCalls,
    timings: {
      apiMs: Math.round(timings.apiMs),
      planMs: Math.round(timings.planMs),
      sendMs: Math.round(timings.sendMs),
    },
    ...(gasPriceWei === undefined ? {} : { gasPriceWei }),
    ...(gasPriceStrategyFailures.length === 0 ? {} : { gasPriceStrategyFailures }),
  };
}

/** The block from which a transaction for the oldest of `items` may have been sent (its block + confirmations). */
function oldestServableBlock(config: Config, chain: Config['chains'][number], items: WorkItem[]): number {
  const calls = items.flatMap((item) => (item.kind === 'api' ? [item.call] : []));
  // As the confirmation filter: the largest valid `_minConfirmations` of the sponsor's requests, else the chain's.
  const requested = calls
    .map((call) => parseMinConfirmations(requestedMinConfirmations(config, call)))
    .filter((n): n is number => n !== undefined);
  const confirmations =
    requested.length > 0 ? Math.max(...requested) : (chain.minConfirmations ?? DEFAULT_MIN_CONFIRMATIONS);
  return Math.min(
    ...items.map((item) => (item.kind === 'api' ? item.call.blockNumber + confirmations : item.withdrawal.blockNumber)),
  );
}

/** The pending-transaction rule with its inputs read from the provider (one more read only when it matters). */
async function pendingDecision(
  client: RpcClient,
  input: {
    address: string;
    latestCount: number;
    pendingCount: number;
    currentBlock: number;
    oldestServableBlock: number;
  },
) {
  const { address, ...state } = input;
  if (!needsCountBefore(state)) return decidePending(state);
  const before = state.currentBlock - STUCK_AFTER_BLOCKS;
  // A provider without that block's state cannot tell: the requests' age decides alone.
  const latestCountBefore = await transactionCount(client, address, before).catch(() => undefined);
  return decidePending(latestCountBefore === undefined ? state : { ...state, latestCountBefore });
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
