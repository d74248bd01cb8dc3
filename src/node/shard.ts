// One shard = the work of one sponsor wallet on one chain in one cycle: call the APIs, sign, and submit
// the sponsor's transactions in nonce order through ONE provider (the first healthy one), moving to the
// next provider only when sending through the current one fails at transport level. Shards share no nonce
// sequence, so they run independently.
//
// A shard has two halves. The API half (src/node/api-call.ts) needs only the OIS and its API credentials; the
// chain half needs the node key and the providers: it turns each API result into a signed answer (or takes one from
// the response cache: shard-answers.ts), then per provider: confirms lost sends, decides about pending transactions,
// prices, drops what was served, plans, sends in nonce order (shard-send.ts); finally it settles what no provider
// took and reports (shard-settle.ts). runShard runs both in one process, each request planned as soon as its answer
// is in; runChainHalf is the chain half alone, for answers that came from elsewhere.
import type { ApiResponse } from '../chain/fulfillment.js';
import { dryRunAddressOf, rrpAddressOf } from '../chain/types.js';
import { callApisInProcess } from './shard-answers.js';
import type { ChainContext, ShardAnswers, ShardContext, ShardRun } from './shard-run.js';
import { submitThrough } from './shard-send.js';
import { settleUntaken, shardOutput } from './shard-settle.js';
import type { ShardInput, ShardOutput } from './shard-types.js';

// A shard's parts live beside it: shard-run.ts (its state), shard-answers.ts (the API half), shard-send.ts (the
// sending half), shard-settle.ts (the settling).
export { type Answer, answerFromResult, answerWithoutCall } from './shard-answers.js';
export type { ChainContext, ShardAnswers, ShardContext } from './shard-run.js';

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
    deferrals: new Map(),
  };
}
