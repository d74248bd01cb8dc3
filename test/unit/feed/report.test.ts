// The feed report's pure parts: when the next write may go, the backoff after a failed one, and what an error may say.
import { expect } from 'chai';
import { REPORT_BACKOFF, reportableError, reportDelayMs, reportRetryDelayMs } from '../../../src/feed/report.js';
import { registerSecrets } from '../../../src/observability/index.js';

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
