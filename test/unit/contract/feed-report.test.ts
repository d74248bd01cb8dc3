// The feed report as the operator reads it: written by the feed pod's identity, so hostile until checked.
import { expect } from 'chai';
import {
  FEED_REPORT_KEY,
  MAX_FEED_REPORT_BYTES,
  MAX_FEED_REPORT_SIGNED_APIS,
  parseFeedReport,
} from '../../../src/contract/feed-report.js';

const TIME = '2026-11-28T08:00:00.000Z';
const data = (value: unknown) => ({ [FEED_REPORT_KEY]: typeof value === 'string' ? value : JSON.stringify(value) });

describe('parseFeedReport', () => {
  it('keeps a well-formed report as written', () => {
    const entry = {
      name: 'main',
      lastPushTime: TIME,
      lastPushOutcome: 'failed',
      lastSuccessTime: '2026-11-28T07:59:00Z',
      lastError: 'connect ECONNREFUSED 127.0.0.1:9',
      pushesOk: 4,
      pushesFailed: 1,
      valuesAccepted: 8,
    };
    expect(parseFeedReport(data({ time: TIME, signedApis: [entry] }))).to.deep.equal({
      time: TIME,
      signedApis: [entry],
    });
  });

  it('is undefined when missing, not JSON, not an object, without a valid time, or too large', () => {
    expect(parseFeedReport(undefined)).to.equal(undefined);
    expect(parseFeedReport({})).to.equal(undefined);
    expect(parseFeedReport(data('{not json'))).to.equal(undefined);
    expect(parseFeedReport(data([]))).to.equal(undefined);
    expect(parseFeedReport(data({ time: 'yesterday', signedApis: [] }))).to.equal(undefined);
    const huge = { time: TIME, signedApis: [{ name: 'main', padding: 'x'.repeat(MAX_FEED_REPORT_BYTES) }] };
    expect(parseFeedReport(data(huge))).to.equal(undefined);
  });

  it('drops each malformed field on its own, entries without a valid name, and repeated names', () => {
    const report = parseFeedReport(
      data({
        time: TIME,
        signedApis: [
          {
            name: 'main',
            lastPushTime: 'soon',
            lastPushOutcome: 'great',
            lastSuccessTime: TIME,
            lastError: 'e'.repeat(301),
            pushesOk: -1,
            pushesFailed: 1.5,
            valuesAccepted: '7',
            extra: { nested: true },
          },
          { name: '', lastPushOutcome: 'ok' },
          { lastPushOutcome: 'ok' },
          'main',
          null,
          { name: 'main', lastPushOutcome: 'ok' },
          { name: 'backup', lastPushOutcome: 'ok', __proto__: { polluted: true } },
        ],
      }),
    );
    expect(report).to.deep.equal({
      time: TIME,
      signedApis: [
        { name: 'main', lastSuccessTime: TIME },
        { name: 'backup', lastPushOutcome: 'ok' },
      ],
    });
  });

  it('reads at most MAX_FEED_REPORT_SIGNED_APIS entries, and a signedApis that is no list as none', () => {
    const many = Array.from({ length: MAX_FEED_REPORT_SIGNED_APIS + 10 }, (_, i) => ({ name: `api-${i}` }));
    expect(parseFeedReport(data({ time: TIME, signedApis: many }))!.signedApis).to.have.length(
      MAX_FEED_REPORT_SIGNED_APIS,
    );
    expect(parseFeedReport(data({ time: TIME, signedApis: { name: 'main' } }))).to.deep.equal({
      time: TIME,
      signedApis: [],
    });
  });
});
