// `oracle-node usage` end to end on anvil with the real AirnodeRrpV0: a few hundred requests from several sponsors and
// two requesters, served (or failed, for a broken endpoint) by real `oracle-node coordinator` cycles; what usage
// reports is checked against the chain's own receipts, read here independently of the command.
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { ORACLE_NODE_ARGS, repoRoot } from '../../support/binary.js';
import { deployRequester, rpc, startTestChain } from '../../support/chain.js';
import {
  type ApiServer,
  buildConfigJson,
  createSponsor,
  ENDPOINTS,
  encodeCoin,
  makeFullRequest,
  NODE_ADDRESS,
  requestEventsOf,
  startApiServer,
  writeNodeFiles,
} from '../../support/harness.js';

const run = promisify(execFile);
const REQUESTS = 240;
const SPONSORS = 4;

type Counts = { requests: number; fulfilled: number; failed: number; gasPaidWei: string };
type Report = {
  chainId: string;
  fromBlock: number;
  toBlock: number;
  sponsors: ({ sponsor: string } & Counts)[];
  requesters: ({ requester: string } & Counts)[];
  endpoints: ({ endpointId: string } & Counts)[];
  totals: Counts;
};

describe('oracle-node usage (anvil, real AirnodeRrpV0, a few hundred requests, real coordinator cycles)', function () {
  this.timeout(600_000);
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  let api: ApiServer;
  let args: string[];
  let firstBlock: number;
  /** What the receipts say, per sponsor: requests, fulfilled, failed, wei paid. */
  const expected = new Map<string, { requests: number; fulfilled: number; failed: number; gasPaidWei: bigint }>();
  const cli = (...rest: string[]) => run(process.execPath, [...ORACLE_NODE_ARGS, ...rest], { cwd: repoRoot });

  before(async () => {
    chain = await startTestChain();
    api = await startApiServer();
    const dir = mkdtempSync(join(tmpdir(), 'usage-command-'));
    args = writeNodeFiles(
      dir,
      buildConfigJson({ providers: { anvil: chain.anvil.url }, deployment: chain.deployment, apiUrl: api.url }),
    ).args;
    const second = await deployRequester(chain.anvil.url, chain.deployment.AirnodeRrpV0);
    const sponsors = [];
    for (let i = 0; i < SPONSORS; i++)
      sponsors.push(await createSponsor(chain.deployment, `usage-${i}`, [chain.deployment.Requester, second]));
    firstBlock = Number(BigInt(await rpc<string>(chain.anvil.url, 'eth_blockNumber', []))) + 1;
    const ids: { id: string; sponsor: string }[] = [];
    for (let i = 0; i < REQUESTS; i++) {
      const sponsor = sponsors[i % SPONSORS]!;
      const id = await makeFullRequest(chain.deployment, {
        // Every tenth request asks the broken endpoint: the node fails it on chain (and its sponsor wallet pays).
        endpointId: i % 10 === 0 ? ENDPOINTS.broken : ENDPOINTS.price,
        sponsor: sponsor.address,
        sponsorWallet: sponsor.sponsorWallet,
        parameters: encodeCoin('ETH'),
        ...(i % 3 === 0 ? { requester: second } : {}),
      });
      ids.push({ id, sponsor: sponsor.address });
    }
    // Cycles until every request has its event (a cycle serves up to the chain's limits).
    for (let cycle = 0; cycle < 8; cycle++) {
      // The broken endpoint's 500 is failed at once, as the reference does (no retry window): every request ends.
      await cli('coordinator', ...args, '--cache-dir', join(dir, 'cache'), '--api-retry-window', '0');
      const open = await Promise.all(
        ids.map(async ({ id }) => {
          const events = await requestEventsOf(chain.deployment, NODE_ADDRESS, id);
          return events.fulfilled.length + events.failed.length === 0;
        }),
      );
      if (!open.includes(true)) break;
    }
    for (const { id, sponsor } of ids) {
      const row = expected.get(sponsor) ?? { requests: 0, fulfilled: 0, failed: 0, gasPaidWei: 0n };
      expected.set(sponsor, row);
      row.requests++;
      const events = await requestEventsOf(chain.deployment, NODE_ADDRESS, id);
      const finish = events.fulfilled[0] ?? events.failed[0];
      if (!finish) throw new Error(`request ${id} was never answered`);
      if (events.fulfilled[0]) row.fulfilled++;
      else row.failed++;
      const receipt = await rpc<{ gasUsed: string; effectiveGasPrice: string }>(
        chain.anvil.url,
        'eth_getTransactionReceipt',
        [finish.transactionHash],
      );
      row.gasPaidWei += BigInt(receipt.gasUsed) * BigInt(receipt.effectiveGasPrice);
    }
  });
  after(async () => {
    await api?.close();
    await chain?.anvil.stop();
  });

  it('-o json: per sponsor the requests, fulfilments, failures and wei paid that the receipts show', async () => {
    const { stdout } = await cli('usage', ...args, '--from-block', String(firstBlock), '-o', 'json');
    const { chains } = JSON.parse(stdout) as { chains: Report[] };
    expect(chains).to.have.length(1);
    const [report] = chains as [Report];
    expect(report.fromBlock).to.equal(firstBlock);
    const bySponsor = Object.fromEntries(report.sponsors.map(({ sponsor, ...counts }) => [sponsor, counts]));
    const wanted = Object.fromEntries(
      [...expected].map(([sponsor, row]) => [sponsor, { ...row, gasPaidWei: row.gasPaidWei.toString() }]),
    );
    expect(bySponsor).to.deep.equal(wanted);
    expect(report.totals.requests).to.equal(REQUESTS);
    expect(report.totals.failed).to.equal(REQUESTS / 10);
    expect(report.totals.fulfilled).to.equal(REQUESTS - REQUESTS / 10);
    // Two requesters, two endpoints; each table adds up to the same totals.
    expect(report.requesters).to.have.length(2);
    expect(report.endpoints.map((row) => row.endpointId).sort()).to.deep.equal(
      [ENDPOINTS.price, ENDPOINTS.broken].map((id) => id.toLowerCase()).sort(),
    );
    for (const table of [report.sponsors, report.requesters, report.endpoints]) {
      expect(table.reduce((sum, row) => sum + row.requests, 0)).to.equal(REQUESTS);
      expect(table.reduce((sum, row) => sum + BigInt(row.gasPaidWei), 0n).toString()).to.equal(
        report.totals.gasPaidWei,
      );
    }
  });

  it('-o csv carries the same rows; --since finds the range by block time; a range before the requests is empty', async () => {
    const csv = (await cli('usage', ...args, '--from-block', String(firstBlock), '-o', 'csv')).stdout
      .trim()
      .split('\n');
    expect(csv[0]).to.equal('chain,kind,id,requests,fulfilled,failed,gasPaidWei');
    const sponsorRows = csv.filter((line) => line.split(',')[1] === 'sponsor');
    expect(sponsorRows).to.have.length(SPONSORS);
    for (const line of sponsorRows) {
      const [, , sponsor, requests, fulfilled, failed, wei] = line.split(',');
      const row = expected.get(sponsor!)!;
      expect([Number(requests), Number(fulfilled), Number(failed), wei]).to.deep.equal([
        row.requests,
        row.fulfilled,
        row.failed,
        row.gasPaidWei.toString(),
      ]);
    }
    // Everything happened within the last hour of the chain's clock.
    const since = JSON.parse((await cli('usage', ...args, '--since', '1h', '-o', 'json')).stdout) as {
      chains: Report[];
    };
    expect(since.chains[0]!.totals.requests).to.be.at.least(REQUESTS);
    const before = JSON.parse(
      (await cli('usage', ...args, '--from-block', '0', '--to-block', String(firstBlock - 1), '-o', 'json')).stdout,
    ) as { chains: Report[] };
    expect(before.chains[0]!.totals).to.deep.equal({ requests: 0, fulfilled: 0, failed: 0, gasPaidWei: '0' });
  });

  it('refuses bad ranges and formats with exit 2', async () => {
    for (const bad of [
      ['--since', '30x'],
      ['--from-block', '5', '--to-block', '4'],
      ['--since', '1d', '--from-block', '1'],
      ['-o', 'xml'],
    ]) {
      const failure = await cli('usage', ...args, ...bad).then(
        () => undefined,
        (error: { code: number; stderr: string }) => error,
      );
      expect(failure?.code, bad.join(' ')).to.equal(2);
    }
  });
});
