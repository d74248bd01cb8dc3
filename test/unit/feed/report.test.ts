// The feed report: when the next write may go, the backoff after a failed one, what an error may say (pure), and the
// reporter over a writer that refuses (a fake: the real ConfigMap writer is test/integration/operator/feed.test.ts's).
import { expect } from 'chai';
import {
  type FeedPushReport,
  FeedReporter,
  REPORT_BACKOFF,
  reportableError,
  reportDelayMs,
  reportRetryDelayMs,
} from '../../../src/feed/report.js';
import { createLogger, registerSecrets } from '../../../src/observability/index.js';
import { waitFor } from '../../support/wait.js';

const base = {
  nowMs: 100_000,
  changed: true,
  outcomeFlipped: false,
  lastWriteMs: 95_000,
  retryAtMs: undefined,
  intervalMs: 15_000,
};

describe('feed report throttle', () => {
  it('writes nothing when nothing changed', () => {
    expect(reportDelayMs({ ...base, changed: false })).to.equal(undefined);
    expect(reportDelayMs({ ...base, changed: false, outcomeFlipped: true })).to.equal(undefined);
  });

  it('writes the first report at once, then at most once per interval', () => {
    expect(reportDelayMs({ ...base, lastWriteMs: undefined })).to.equal(0);
    expect(reportDelayMs(base)).to.equal(10_000);
    expect(reportDelayMs({ ...base, lastWriteMs: 80_000 })).to.equal(0);
  });

  it('writes at once when a Signed API flips between ok and failed', () => {
    expect(reportDelayMs({ ...base, outcomeFlipped: true, lastWriteMs: 99_999 })).to.equal(0);
  });

  it('waits for the backoff after a failed write, a flip included', () => {
    expect(reportDelayMs({ ...base, outcomeFlipped: true, retryAtMs: 104_000 })).to.equal(4_000);
    expect(reportDelayMs({ ...base, retryAtMs: 90_000 })).to.equal(0);
  });

  it('backs off doubling, capped', () => {
    expect([1, 2, 3].map((failures) => reportRetryDelayMs(failures))).to.deep.equal([1_000, 2_000, 4_000]);
    expect(reportRetryDelayMs(30)).to.equal(REPORT_BACKOFF.maxMs);
  });
});

describe('reportableError', () => {
  it('removes URL credentials and registered secrets, and is short', () => {
    registerSecrets(['report-test-token-123']);
    const message = reportableError(
      'POST https://user:pa55@signed.example/ failed: Bearer report-test-token-123 refused '.padEnd(400, 'x'),
    );
    expect(message).not.to.include('pa55');
    expect(message).not.to.include('user:');
    expect(message).not.to.include('report-test-token-123');
    expect(message).to.include('https://signed.example/');
    expect(message.length).to.be.at.most(300);
  });
});

describe('FeedReporter', () => {
  it('records without waiting for a failing writer, retries with backoff, and warns once per failing spell', async () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'INFO', destination: { write: (line: string) => void lines.push(line) } });
    const written: FeedPushReport[] = [];
    let refuse = 3;
    let calls = 0;
    const reporter = new FeedReporter({
      signedApis: ['main', 'down'],
      logger,
      // A long interval: only the first report, flips and retries are written in this test.
      intervalMs: 3_600_000,
      backoff: { baseMs: 5, maxMs: 20 },
      write: async (report) => {
        calls++;
        if (refuse-- > 0) throw new Error('apiserver said no');
        written.push(report);
      },
    });
    reporter.record({ signedApi: 'main', ok: true, atMs: Date.parse('2026-01-01T00:00:00Z'), accepted: 4 });
    reporter.record({ signedApi: 'down', ok: false, atMs: Date.parse('2026-01-01T00:00:01Z'), error: 'refused' });
    reporter.record({ signedApi: 'unknown', ok: true, atMs: 0 });
    await waitFor(() => written.length === 1, 5_000, 'the report written after three refusals');
    expect(calls).to.equal(4);
    expect(written[0]!.signedApis).to.deep.equal([
      {
        name: 'main',
        lastPushTime: '2026-01-01T00:00:00.000Z',
        lastPushOutcome: 'ok',
        lastSuccessTime: '2026-01-01T00:00:00.000Z',
        pushesOk: 1,
        pushesFailed: 0,
        valuesAccepted: 4,
      },
      {
        name: 'down',
        lastPushTime: '2026-01-01T00:00:01.000Z',
        lastPushOutcome: 'failed',
        lastError: 'refused',
        pushesOk: 0,
        pushesFailed: 1,
        valuesAccepted: 0,
      },
    ]);
    expect(lines.filter((line) => line.includes('cannot write the feed report'))).to.have.length(1);
    expect(lines.filter((line) => line.includes('feed report written again'))).to.have.length(1);

    // Another push of the same outcome waits for the interval; a flip is written at once.
    reporter.record({ signedApi: 'main', ok: true, atMs: Date.parse('2026-01-01T00:00:02Z'), accepted: 1 });
    reporter.record({ signedApi: 'down', ok: true, atMs: Date.parse('2026-01-01T00:00:03Z'), accepted: 2 });
    await waitFor(() => written.length === 2, 5_000, 'the flip written');
    expect(written[1]!.signedApis.map((entry) => [entry.name, entry.lastPushOutcome])).to.deep.equal([
      ['main', 'ok'],
      ['down', 'ok'],
    ]);
    await reporter.stop();
    expect(written).to.have.length(2);
  });
});
