import { expect } from 'chai';
import type { RequestOnChain } from '../../../src/chain/request-lookup.js';
import { assembleTimeline, renderTimeline, type TimelineInput } from '../../../src/cli/request-timeline.js';
import type { RequestRecord } from '../../../src/contract/request-log.js';

const requestId = `0x${'11'.repeat(32)}`;
const address = (c: string) => `0x${c.repeat(40)}`;
const hash = (c: string) => `0x${c.repeat(64)}`;

function chain(overrides: Partial<RequestOnChain> = {}): RequestOnChain {
  return {
    chainId: '31337',
    currentBlock: 110,
    fromBlock: 0,
    awaiting: true,
    made: {
      type: 'full',
      id: requestId,
      blockNumber: 100,
      logIndex: 0,
      transactionHash: hash('a'),
      nodeAddress: address('1'),
      requesterRequestCount: '1',
      chainId: '31337',
      requester: address('2'),
      endpointId: hash('e'),
      templateId: null,
      sponsor: address('3'),
      sponsorWallet: address('4'),
      fulfillAddress: address('2'),
      fulfillFunctionId: '0x12345678',
      encodedParameters: '0x',
      parameters: {},
    },
    endpointId: hash('e'),
    authorized: true,
    sponsorWalletBalanceWei: '1500000000000000000',
    ...overrides,
  };
}

function record(overrides: Partial<RequestRecord> = {}): RequestRecord {
  return {
    chainId: '31337',
    requestId,
    state: 'fulfilled',
    firstSeen: { job: 'n-coordinator-1', time: '2026-11-25T10:00:00.000Z' },
    lastSeen: { job: 'n-coordinator-1', time: '2026-11-25T10:00:00.000Z' },
    cycles: 1,
    madeInBlock: 100,
    headBlock: 101,
    api: { outcome: '2xx', durationMs: 35 },
    transaction: { hash: hash('b'), nonce: 0, provider: 'main' },
    ...overrides,
  };
}

function input(overrides: Partial<TimelineInput> = {}): TimelineInput {
  return {
    requestId,
    chain: chain(),
    records: [record()],
    minConfirmations: 0,
    blockHistoryLimit: 300,
    recordSource: 'the request log of ConfigMap ns/n-cycle',
    ...overrides,
  };
}

describe('request timeline', () => {
  it('tells a fulfilled request from its event, with the cycle, the API call and the transaction the node recorded', () => {
    const timeline = assembleTimeline(
      input({
        chain: chain({
          awaiting: false,
          finished: { kind: 'fulfilled', transactionHash: hash('b'), blockNumber: 102 },
        }),
      }),
    );
    expect(timeline.state).to.equal('fulfilled');
    expect(renderTimeline(timeline)).to.equal(
      [
        `Request ${requestId} on chain 31337`,
        `  Made        block 100 (transaction ${hash('a')}), full request by ${address('2')}`,
        `  Sponsor     ${address('3')}, sponsor wallet ${address('4')} (balance 1.5)`,
        `  Endpoint    ${hash('e')}`,
        '  Authorized  yes',
        '  Seen        by cycle n-coordinator-1 at 2026-11-25T10:00:00.000Z, head block 101 (1 confirmation)',
        '  API call    HTTP 2xx in 35 ms',
        `  Submitted   fulfil transaction ${hash('b')} (nonce 0, provider main)`,
        `  Fulfilled   block 102, transaction ${hash('b')}`,
        'Status: fulfilled: fulfilled in block 102',
        '',
      ].join('\n'),
    );
  });

  it("says a request was served by the standby when the standby's record says so; the primary's says nothing more", () => {
    const served = (servedBy?: 'primary' | 'standby') =>
      renderTimeline(
        assembleTimeline(
          input({
            chain: chain({
              awaiting: false,
              finished: { kind: 'fulfilled', transactionHash: hash('b'), blockNumber: 102 },
            }),
            records: [record(servedBy ? { servedBy } : {})],
          }),
        ),
      );
    expect(served('standby')).to.include(
      `Submitted   fulfil transaction ${hash('b')} (nonce 0, provider main, by the standby)`,
    );
    expect(served('primary')).to.include(`Submitted   fulfil transaction ${hash('b')} (nonce 0, provider main)\n`);
  });

  it("tells a failed request with the FailedRequest's message and the fail transaction", () => {
    const timeline = assembleTimeline(
      input({
        records: [record({ state: 'failed', reason: 'API call failed', api: { outcome: '5xx', durationMs: 80 } })],
        chain: chain({
          awaiting: false,
          finished: { kind: 'failed', transactionHash: hash('b'), blockNumber: 102, errorMessage: 'API call failed' },
        }),
      }),
    );
    expect(timeline.state).to.equal('failed');
    expect(timeline.why).to.equal('answered with a fail transaction in block 102: API call failed');
    const text = renderTimeline(timeline);
    expect(text).to.include('API call    HTTP 5xx in 80 ms');
    expect(text).to.include(`Submitted   fail transaction ${hash('b')} (nonce 0, provider main): API call failed`);
  });

  const waiting = (overrides: Partial<TimelineInput>) => assembleTimeline(input(overrides));

  it('says why a request still waits: confirmations, chain limit, a rejected transaction with an empty wallet, authorization', () => {
    const confirmations = waiting({
      minConfirmations: 20,
      records: [record({ state: 'waitingForConfirmations', transaction: undefined, api: undefined })],
    });
    expect(confirmations.state).to.equal('waiting');
    expect(confirmations.why).to.equal(
      'waiting for confirmations: 10 confirmations now, 20 required by the chain (or more by _minConfirmations)',
    );
    expect(waiting({ records: [record({ state: 'overChainLimit', transaction: undefined })] }).why).to.match(
      /^over the chain limit/,
    );
    const broke = waiting({
      chain: chain({ sponsorWalletBalanceWei: '0' }),
      records: [
        record({ state: 'error', reason: 'insufficient funds for gas * price + value', transaction: undefined }),
      ],
    });
    expect(broke.why).to.equal(
      'the last transaction was not accepted: insufficient funds for gas * price + value; the sponsor wallet has no funds to pay for gas; the next cycle retries',
    );
    const reason =
      'deferred: 503, retry at 2026-11-29T07:40:05Z (failed on chain after 2026-11-29T07:44:00Z if the API still fails)';
    const deferred = waiting({
      records: [record({ state: 'deferred', reason, transaction: undefined, api: { outcome: '5xx', durationMs: 12 } })],
    });
    expect(deferred.state).to.equal('waiting');
    expect(deferred.why).to.equal(reason);
    expect(waiting({ chain: chain({ authorized: false }), records: [] }).why).to.match(/^not authorized:/);
    expect(
      waiting({
        records: [record({ state: 'dropped', reason: 'no rrp trigger for endpointId 0xee', transaction: undefined })],
      }).why,
    ).to.equal('not served: no rrp trigger for endpointId 0xee');
    const leftToPrimary = waiting({
      records: [
        record({
          state: 'waitingForConfirmations',
          reason: 'standby: left to the primary for 6 block(s)',
          transaction: undefined,
          api: undefined,
        }),
      ],
    });
    expect(leftToPrimary.why).to.equal('waiting for the primary (standby: left to the primary for 6 block(s))');
    const sent = waiting({});
    expect(sent.why).to.equal(`a fulfil transaction was sent (${hash('b')}) but is not mined yet`);
  });

  it('without a record, tells a request beyond blockHistoryLimit, one too young, and one the next cycle will take', () => {
    expect(waiting({ records: [], chain: chain({ currentBlock: 500 }) }).why).to.equal(
      'made 400 blocks ago, beyond blockHistoryLimit (300): the node no longer looks that far back',
    );
    expect(waiting({ records: [], minConfirmations: 30 }).why).to.equal(
      'waiting for confirmations: 10 confirmations now, 30 required by the chain',
    );
    const unseen = waiting({ records: [] });
    expect(unseen.why).to.equal(
      'not seen by a cycle yet (not in the request log of ConfigMap ns/n-cycle); the next cycle should take it',
    );
    expect(renderTimeline(unseen)).to.include('  Seen        not in the request log of ConfigMap ns/n-cycle\n');
  });

  it('says not found for an id without events that the contract does not await, and unknown when the chain cannot be read', () => {
    const { made: _made, ...withoutMade } = chain({ awaiting: false });
    const notFound = assembleTimeline(input({ chain: withoutMade, records: [] }));
    expect(notFound.state).to.equal('not found');
    expect(notFound.why).to.equal('no request with this id for this node in blocks 0-110 of chain 31337');

    const offline = assembleTimeline(
      input({
        chain: { unavailable: 'cannot read Secret ns/node-secrets: forbidden' },
        failed: [{ chainId: '31337', reason: 'API call failed', job: 'n-coordinator-1' }],
      }),
    );
    expect(offline.state).to.equal('unknown');
    expect(offline.why).to.equal(
      "the chain could not be read (cannot read Secret ns/node-secrets: forbidden); the node's records say: fulfilled",
    );
    expect(renderTimeline(offline)).to.include('  Failed     API call failed (cycle n-coordinator-1)');
  });
});
