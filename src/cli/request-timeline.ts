// The timeline `oracle-node request <requestId>` prints, assembled from what the chain says (src/chain/request-lookup.ts)
// and what the node recorded (its request log, the status's recent failed requests). Pure: no I/O, no clock.
import type { RequestOnChain } from '../chain/request-lookup.js';
import type { RequestRecord } from '../contract/request-log.js';

export type TimelineStep = { step: string; detail: string };
export type Timeline = {
  requestId: string;
  chainId?: string;
  steps: TimelineStep[];
  /** One of fulfilled, failed, waiting, not found, unknown; `why` says more. */
  state: 'fulfilled' | 'failed' | 'waiting' | 'not found' | 'unknown';
  why: string;
};

export type TimelineInput = {
  requestId: string;
  /** The chain's answer, or why there is none (no provider reachable, the Secret not readable, ...). */
  chain: RequestOnChain | { unavailable: string };
  /** The node's records of this request (any chain). */
  records: readonly RequestRecord[];
  /** status.recentFailedRequests entries of this request (a cluster node only). */
  failed?: readonly { chainId: string; reason: string; job?: string }[];
  /** The chain's settings: minConfirmations and blockHistoryLimit of the config. */
  minConfirmations: number;
  blockHistoryLimit: number;
  /** Where the records come from, for the "not recorded" line. */
  recordSource: string;
};

const WEI_PER_ETHER = 10n ** 18n;
function ether(wei: string): string {
  const value = BigInt(wei);
  const fraction = (value % WEI_PER_ETHER).toString().padStart(18, '0').replace(/0+$/, '').slice(0, 6);
  return `${value / WEI_PER_ETHER}${fraction ? `.${fraction}` : ''}`;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

function cycleName(cycle: RequestRecord['lastSeen']): string {
  return cycle.job ? `cycle ${cycle.job} at ${cycle.time}` : `cycle at ${cycle.time}`;
}

const API_DETAIL: Record<string, string> = {
  cached: 'answered from the response cache (no API call)',
  'not called': 'not called (the request is answered with a fail transaction)',
  'no response': 'no response from the API',
  failed: 'the API answered, but processing or encoding its answer failed',
};

function recordSteps(record: RequestRecord): TimelineStep[] {
  const steps: TimelineStep[] = [];
  const confirmations =
    record.headBlock !== undefined && record.madeInBlock !== undefined
      ? `, head block ${record.headBlock} (${plural(record.headBlock - record.madeInBlock, 'confirmation')})`
      : record.headBlock !== undefined
        ? `, head block ${record.headBlock}`
        : '';
  steps.push({
    step: 'Seen',
    detail:
      record.cycles > 1
        ? `first by ${cycleName(record.firstSeen)}; last by ${cycleName(record.lastSeen)}${confirmations}; in ${plural(record.cycles, 'cycle')}`
        : `by ${cycleName(record.lastSeen)}${confirmations}`,
  });
  if (record.api) {
    const detail = API_DETAIL[record.api.outcome] ?? `HTTP ${record.api.outcome}`;
    steps.push({
      step: 'API call',
      detail: record.api.durationMs > 0 ? `${detail} in ${record.api.durationMs} ms` : detail,
    });
  }
  if (record.transaction) {
    const kind = record.transaction.kind ?? (record.state === 'failed' ? 'fail' : 'fulfil');
    const extras = [
      record.transaction.nonce === undefined ? undefined : `nonce ${record.transaction.nonce}`,
      record.transaction.provider ? `provider ${record.transaction.provider}` : undefined,
      // Only a redundant deployment's standby says so: the primary left the request open past the standby delay.
      record.servedBy === 'standby' ? 'by the standby' : undefined,
    ].filter(Boolean);
    steps.push({
      step: 'Submitted',
      detail: `${kind} transaction ${record.transaction.hash}${extras.length ? ` (${extras.join(', ')})` : ''}${
        record.state === 'failed' && record.reason ? `: ${record.reason}` : ''
      }`,
    });
  }
  return steps;
}

/** Why a request that is made and still awaited has no answer yet, from the node's last word and the chain. */
function whyWaiting(input: TimelineInput, chain: RequestOnChain, record: RequestRecord | undefined): string {
  const made = chain.made!;
  const confirmations = chain.currentBlock - made.blockNumber;
  const broke = chain.sponsorWalletBalanceWei === '0' ? '; the sponsor wallet has no funds to pay for gas' : '';
  if (chain.authorized === false)
    return 'not authorized: no authorizer of the chain lets this node serve the requester (the node never answers it)';
  if (record) {
    switch (record.state) {
      case 'dropped':
        return `not served: ${record.reason ?? 'dropped in discovery'}`;
      case 'waitingForConfirmations':
        // A standby's own word: confirmed, left to the primary for the standby delay.
        if (record.reason?.startsWith('standby:')) return `waiting for the primary (${record.reason})`;
        return `waiting for confirmations: ${plural(confirmations, 'confirmation')} now, ${input.minConfirmations} required by the chain (or more by _minConfirmations)`;
      case 'overChainLimit':
        return `over the chain limit: more requests than chains[].maxConcurrency in the cycle that saw it last; a later cycle takes it${broke}`;
      case 'error':
        return `the last transaction was not accepted: ${record.reason ?? 'no reason given'}${broke}; the next cycle retries`;
      case 'shardFailed':
        return `the worker of its sponsor wallet failed: ${record.reason ?? 'no reason given'}; the next cycle retries${broke}`;
      case 'skipped':
        return `skipped in the last cycle: ${record.reason ?? 'no reason given'}${broke}`;
      case 'deferred':
        // "deferred: 429, retry at ...": the API's own failure, for now; the node calls it again then.
        return `${record.reason ?? 'deferred: the API failed for now'}${broke}`;
      case 'fulfilled':
      case 'failed':
        return `a ${record.state === 'failed' ? 'fail' : 'fulfil'} transaction was sent (${record.transaction?.hash ?? 'hash unknown'}) but is not mined yet${broke}`;
    }
  }
  if (confirmations > input.blockHistoryLimit)
    return `made ${plural(confirmations, 'block')} ago, beyond blockHistoryLimit (${input.blockHistoryLimit}): the node no longer looks that far back`;
  if (confirmations < input.minConfirmations)
    return `waiting for confirmations: ${plural(confirmations, 'confirmation')} now, ${input.minConfirmations} required by the chain`;
  return `not seen by a cycle yet (not in ${input.recordSource}); the next cycle should take it${broke}`;
}

export function assembleTimeline(input: TimelineInput): Timeline {
  const requestId = input.requestId.toLowerCase();
  const steps: TimelineStep[] = [];
  const failed = input.failed ?? [];
  if ('unavailable' in input.chain) {
    const record = input.records[0];
    if (record) steps.push(...recordSteps(record));
    for (const f of failed) steps.push({ step: 'Failed', detail: `${f.reason}${f.job ? ` (cycle ${f.job})` : ''}` });
    return {
      requestId,
      ...(record ? { chainId: record.chainId } : {}),
      steps,
      state: 'unknown',
      why: `the chain could not be read (${input.chain.unavailable}); the node's records say: ${
        record ? `${record.state}${record.reason ? ` (${record.reason})` : ''}` : 'nothing'
      }`,
    };
  }
  const chain = input.chain;
  const record = input.records.find((r) => r.chainId === chain.chainId);
  const { made, finished } = chain;
  if (made) {
    steps.push({
      step: 'Made',
      detail: `block ${made.blockNumber} (transaction ${made.transactionHash}), ${made.type} request by ${made.requester}`,
    });
    steps.push({
      step: 'Sponsor',
      detail: `${made.sponsor}, sponsor wallet ${made.sponsorWallet}${
        chain.sponsorWalletBalanceWei === undefined ? '' : ` (balance ${ether(chain.sponsorWalletBalanceWei)})`
      }`,
    });
    if (chain.endpointId)
      steps.push({
        step: 'Endpoint',
        detail: `${chain.endpointId}${made.templateId ? ` (template ${made.templateId})` : ''}`,
      });
    if (chain.authorized !== undefined)
      steps.push({ step: 'Authorized', detail: chain.authorized ? 'yes' : 'NO: no authorizer of the chain allows it' });
  } else {
    steps.push({
      step: 'Made',
      detail: `no request event for this node in blocks ${chain.fromBlock}-${chain.currentBlock}`,
    });
  }
  if (record) steps.push(...recordSteps(record));
  else if (made) steps.push({ step: 'Seen', detail: `not in ${input.recordSource}` });
  for (const f of failed.filter((f) => f.chainId === chain.chainId))
    steps.push({ step: 'Reported', detail: `failed: ${f.reason}${f.job ? ` (cycle ${f.job})` : ''}` });
  if (finished) {
    steps.push({
      step: finished.kind === 'fulfilled' ? 'Fulfilled' : 'Failed',
      detail: `block ${finished.blockNumber}, transaction ${finished.transactionHash}${
        finished.errorMessage ? `: ${finished.errorMessage}` : ''
      }`,
    });
    return {
      requestId,
      chainId: chain.chainId,
      steps,
      state: finished.kind,
      why:
        finished.kind === 'fulfilled'
          ? `fulfilled in block ${finished.blockNumber}`
          : `answered with a fail transaction in block ${finished.blockNumber}: ${finished.errorMessage ?? 'no message'}`,
    };
  }
  if (!made) {
    return {
      requestId,
      chainId: chain.chainId,
      steps,
      state: chain.awaiting ? 'unknown' : 'not found',
      why: chain.awaiting
        ? `the contract awaits it, but it was made before block ${chain.fromBlock}: older than the node looks back`
        : `no request with this id for this node in blocks ${chain.fromBlock}-${chain.currentBlock} of chain ${chain.chainId}`,
    };
  }
  if (!chain.awaiting) {
    return {
      requestId,
      chainId: chain.chainId,
      steps,
      state: 'unknown',
      why: 'the contract no longer awaits it, but no FulfilledRequest or FailedRequest event was found in the range searched',
    };
  }
  return { requestId, chainId: chain.chainId, steps, state: 'waiting', why: whyWaiting(input, chain, record) };
}

export function renderTimeline(timeline: Timeline): string {
  const width = Math.max(0, ...timeline.steps.map((s) => s.step.length));
  const lines = [
    `Request ${timeline.requestId}${timeline.chainId ? ` on chain ${timeline.chainId}` : ''}`,
    ...timeline.steps.map((s) => `  ${s.step.padEnd(width)}  ${s.detail}`),
    `Status: ${timeline.state}: ${timeline.why}`,
  ];
  return `${lines.join('\n')}\n`;
}
