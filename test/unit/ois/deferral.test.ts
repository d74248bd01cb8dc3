// What a failed API call means for its request (src/ois/deferral.ts): the class each message gets, and the words a
// request is failed on chain with once its retry window is over.
import { expect } from 'chai';
import { deferralMessage } from '../../../src/ois/api-client.js';
import { classifyFailure, failureMessageOnChain } from '../../../src/ois/deferral.js';

describe('ois/deferral: transient and permanent API failures', () => {
  const table: [string, ReturnType<typeof classifyFailure>][] = [
    ['API call failed with status code 429', { kind: 'transient', statusClass: '429', status: 429 }],
    ['API call failed with status code 408', { kind: 'transient', statusClass: '408', status: 408 }],
    ['API call failed with status code 500', { kind: 'transient', statusClass: '5xx', status: 500 }],
    ['API call failed with status code 503', { kind: 'transient', statusClass: '5xx', status: 503 }],
    ['API call failed with no response', { kind: 'transient', statusClass: 'no response' }],
    ['API call failed: the worker gave no result', { kind: 'transient', statusClass: 'no response' }],
    ['API call failed with status code 404', { kind: 'permanent' }],
    ['API call failed with status code 401', { kind: 'permanent' }],
    ['API call failed with status code 302', { kind: 'permanent' }],
    ['API call failed with a response that is not valid JSON', { kind: 'permanent' }],
    ['Unable to find response value from price', { kind: 'permanent' }],
    ['Post-processing failed: TypeError', { kind: 'permanent' }],
    // A status code inside a longer message is not the API's status.
    ['Processing said: API call failed with status code 503 yesterday', { kind: 'permanent' }],
  ];
  for (const [message, expected] of table)
    it(`"${message}" is ${expected.kind}`, () => expect(classifyFailure(message)).to.deep.equal(expected));

  it("keeps the wait the API named, and reads a pause's status and time left from its deferral", () => {
    expect(classifyFailure('API call failed with status code 503', 7_000)).to.deep.equal({
      kind: 'transient',
      statusClass: '5xx',
      status: 503,
      retryAfterMs: 7_000,
    });
    const paused = deferralMessage('Weird ; title answered 200 and is paused; retry after 9 s', {
      reason: 'paused',
      retryAfterMs: 4_200,
      status: 503,
    });
    expect(classifyFailure(paused)).to.deep.equal({
      kind: 'transient',
      statusClass: '5xx',
      status: 503,
      retryAfterMs: 5_000,
    });
    expect(classifyFailure(deferralMessage('A', { reason: 'paused', retryAfterMs: 1 }))).to.include({
      statusClass: '429',
      status: 429,
    });
  });

  it("a call over this node's own budget is its own class: it was never made", () => {
    expect(classifyFailure(deferralMessage('A', { reason: 'over budget', retryAfterMs: 2_500 }))).to.deep.equal({
      kind: 'over budget',
      retryAfterMs: 3_000,
    });
  });

  it("fails on chain with the API's own words, never this node's deferral", () => {
    const paused = deferralMessage('A', { reason: 'paused', retryAfterMs: 1_000, status: 503 });
    expect(failureMessageOnChain(paused, classifyFailure(paused))).to.equal('API call failed with status code 503');
    const status = 'API call failed with status code 500';
    expect(failureMessageOnChain(status, classifyFailure(status))).to.equal(status);
  });
});
