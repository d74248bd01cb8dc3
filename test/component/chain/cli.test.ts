// A full request served end to end through the `oracle-node coordinator` command on anvil.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { startTestChain, waitForMined } from '../../support/chain.js';
import {
  type ApiServer,
  buildConfigJson,
  createSponsor,
  ENDPOINTS,
  encodeCoin,
  int256,
  makeFullRequest,
  requestEvents,
  startApiServer,
} from '../../support/harness.js';

const run = promisify(execFile);
const repoRoot = resolve(import.meta.dirname, '../../..');

describe('oracle-node coordinator (anvil, real AirnodeRrpV0)', () => {
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  let api: ApiServer;
  let dir: string;

  before(async () => {
    chain = await startTestChain();
    api = await startApiServer();
    dir = mkdtempSync(join(tmpdir(), 'coordinator-cli-'));
    const { config, secrets } = buildConfigJson({
      providers: { anvil: chain.anvil.url },
      deployment: chain.deployment,
      apiUrl: api.url,
    });
    writeFileSync(join(dir, 'config.json'), JSON.stringify(config, null, 2));
    writeFileSync(
      join(dir, 'secrets.env'),
      Object.entries(secrets)
        .map(([k, v]) => `${k}="${v}"`)
        .join('\n'),
    );
  });

  after(async () => {
    await api?.close();
    await chain?.anvil.stop();
  });

  it('fulfils a full request in one cycle and prints a JSON summary', async () => {
    const sponsor = await createSponsor(chain.deployment, 'cli');
    const requestId = await makeFullRequest(chain.deployment, {
      endpointId: ENDPOINTS.price,
      sponsor: sponsor.address,
      sponsorWallet: sponsor.sponsorWallet,
      parameters: encodeCoin('ETH'),
    });
    const { stdout } = await run(
      process.execPath,
      [
        '--import',
        'tsx',
        'src/cli/index.ts',
        'coordinator',
        '-c',
        join(dir, 'config.json'),
        '-s',
        join(dir, 'secrets.env'),
        '--cache-dir',
        join(dir, 'cache'),
      ],
      { cwd: repoRoot },
    );
    await waitForMined(chain.anvil.url);
    const summary = JSON.parse(stdout) as { transactions: { fulfilled: number }; requests: { discovered: number } };
    expect(summary.requests.discovered).to.equal(1);
    expect(summary.transactions.fulfilled).to.equal(1);
    const events = await requestEvents(chain.deployment, requestId);
    expect(events.failed).to.deep.equal([]);
    expect(events.fulfilled).to.have.length(1);
    expect(events.fulfilled[0]!.data).to.equal(int256(3000250000n));
  });
});
