// The real @api3/signed-api 3.3.0 alone, on this machine: how many signed values a second it accepts, so the feed
// benchmark's "every update delivered" can be read against what the Signed API itself can take. No feed runs: the
// batches are signed up front (the node key, as `oracle-node feed` signs: src/feed/signing.ts), each template's
// timestamps rising from batch to batch so every value is new, then POSTed as fast as the Signed API answers, one
// POST at a time (as each of a feed's pushers does) and then two at a time.
//   node --import tsx bench/signed-api-capacity.bench.ts [--templates 1000] [--batches 12]
import { request } from 'node:http';
import { parseArgs } from 'node:util';
import { deriveOevTemplateId, feedSigner, type SignedTemplateData, signTemplateData } from '../src/feed/signing.js';
import { encodeParameters } from '../src/ois/abi.js';
import { deriveTemplateIdV1 } from '../src/protocol/ids.js';
import { TEST_MNEMONIC } from '../test/support/chain.js';
import { FEED_ENDPOINT_ID, startSignedApi } from '../test/support/feed.js';
import { loadAverage, machine, median, table, writeSection } from './report.js';

const { values: args } = parseArgs({
  options: {
    templates: { type: 'string', default: '1000' },
    batches: { type: 'string', default: '12' },
  },
});
const TEMPLATES = Number(args.templates);
const BATCHES = Number(args.batches);
const AUTH_TOKEN = 'bench-token-0123456789';
const signer = feedSigner(TEST_MNEMONIC);

type Run = { concurrency: number; values: number; accepted: number; seconds: number; postMs: number[] };

function post(url: string, body: string): Promise<{ count: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/${signer.address}`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${AUTH_TOKEN}` },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => {
          if (res.statusCode !== 201) return reject(new Error(`${res.statusCode}: ${text.slice(0, 300)}`));
          resolve({ count: (JSON.parse(text) as { count: number }).count, ms: performance.now() - started });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** BATCHES batches of TEMPLATES values, batch k at timestamp base + k (seconds, in the recent past). */
function signedBatches(): string[] {
  const templateIds = Array.from({ length: TEMPLATES }, (_, i) =>
    deriveTemplateIdV1(FEED_ENDPOINT_ID, encodeParameters([{ type: 'string32', name: 'asset', value: `A${i}` }])),
  );
  const base = Math.floor(Date.now() / 1000) - BATCHES - 60;
  return Array.from({ length: BATCHES }, (_, k) => {
    const timestamp = String(base + k);
    const encodedValue = `0x${(k + 1).toString(16).padStart(64, '0')}`;
    const signedData: SignedTemplateData[] = templateIds.map((id) =>
      signTemplateData(signer, id, deriveOevTemplateId(id), timestamp, encodedValue),
    );
    return JSON.stringify({ airnode: signer.address, signedData });
  });
}

async function run(concurrency: number): Promise<Run> {
  const batches = signedBatches();
  const signedApi = await startSignedApi(signer.address, AUTH_TOKEN);
  try {
    const postMs: number[] = [];
    let accepted = 0;
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < batches.length) {
          const body = batches[next++]!;
          const answer = await post(signedApi.url, body);
          // The Signed API files each value twice (its beacon and its OEV beacon) and counts both.
          accepted += answer.count / 2;
          postMs.push(answer.ms);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    return { concurrency, values: TEMPLATES * BATCHES, accepted, seconds, postMs };
  } finally {
    await signedApi.stop();
  }
}

const runs: Run[] = [];
for (const concurrency of [1, 2]) {
  const result = await run(concurrency);
  console.log(JSON.stringify({ ...result, postMs: undefined, medianPostMs: median(result.postMs) }));
  runs.push(result);
}
writeSection('Signed API capacity (the real @api3/signed-api alone)', [
  `Command: \`node --import tsx bench/signed-api-capacity.bench.ts --templates ${TEMPLATES} --batches ${BATCHES}\`. ` +
    `Machine: ${machine()}; load average at the end ${loadAverage()}; ${new Date().toISOString().slice(0, 10)}.`,
  '',
  `A fresh real @api3/signed-api 3.3.0 on loopback per row, and no feed: ${BATCHES} batches of ${TEMPLATES} values ` +
    '(one per template, each with its base and OEV signature by the node key), signed before the clock starts, every ' +
    'value newer than the last, POSTed as fast as the Signed API answers. What it accepts a second is the most any ' +
    'feed can deliver to it on this machine; the feed benchmark above needs 200 a second at 1,000 templates every 5 s.',
  '',
  ...table(
    ['POSTs at once', 'values', 'accepted', 'seconds', 'accepted / s', 'POST median ms'],
    [true, true, true, true, true, true],
    runs.map((r) => [
      String(r.concurrency),
      String(r.values),
      String(r.accepted),
      r.seconds.toFixed(1),
      (r.accepted / r.seconds).toFixed(0),
      median(r.postMs).toFixed(0),
    ]),
  ),
]);
