// A coordinator process killed in the middle of a cycle, then run again: every request ends fulfilled
// or failed exactly once on chain, and no sponsor wallet spends a transaction on an already-served request.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { zeroPadValue } from 'ethers';
import { spawnOracleNode } from '../../support/binary.js';
import { rpc, startTestChain, waitForMined } from '../../support/chain.js';
import {
  type ApiServer,
  buildConfigJson,
  createSponsor,
  NODE_ADDRESS,
  type NodeFiles,
  requestEvents,
  requestPrice,
  startApiServer,
  writeNodeFiles,
} from '../../support/harness.js';

const SPONSORS = 5;
const REQUESTS_PER_SPONSOR = 6;

function coordinator(files: NodeFiles, cacheDir: string): ChildProcess {
  return spawnOracleNode(['coordinator', ...files.args, '--cache-dir', cacheDir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

async function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

describe('coordinator killed mid-cycle, then restarted (anvil)', () => {
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  let api: ApiServer;
  let dir: string;
  let files: NodeFiles;
  let releaseHeld = () => {};
  const firstKilled = new Promise<void>((resolve) => {
    releaseHeld = resolve;
  });

  before(async () => {
    chain = await startTestChain();
    // Sponsors' API answers arrive at different times, so some shards send while others still wait; the last
    // sponsor's answers are held until the first coordinator is dead, so it is killed before finishing whatever
    // the machine's speed.
    api = await startApiServer({
      delayMs: (coin) => (coin.startsWith('S') ? Number(coin.slice(1)) * 400 : 0),
      hold: (coin) => (coin === `S${SPONSORS - 1}` ? firstKilled : undefined),
    });
    dir = mkdtempSync(join(tmpdir(), 'restart-'));
    const { config, secrets } = buildConfigJson({
      providers: { anvil: chain.anvil.url },
      deployment: chain.deployment,
      apiUrl: api.url,
    });
    files = writeNodeFiles(dir, { config, secrets });
  });
  after(async () => {
    await api?.close();
    await chain?.anvil.stop();
  });

  it('ends with every request answered exactly once', async () => {
    const sponsors = [];
    for (let i = 0; i < SPONSORS; i++) sponsors.push(await createSponsor(chain.deployment, `restart-${i}`));
    const requests: string[] = [];
    for (let r = 0; r < REQUESTS_PER_SPONSOR; r++) {
      for (const [i, sponsor] of sponsors.entries()) {
        requests.push(await requestPrice(chain.deployment, sponsor, `S${i}`));
      }
    }

    // Kill the first coordinator as soon as the first answer lands on chain.
    const first = coordinator(files, join(dir, 'cache'));
    const topics = [null, zeroPadValue(NODE_ADDRESS, 32)];
    let answered = 0;
    for (;;) {
      const logs = await rpc<unknown[]>(chain.anvil.url, 'eth_getLogs', [
        { address: chain.deployment.AirnodeRrpV0, fromBlock: '0x0', toBlock: 'latest', topics },
      ]);
      // Made*Request logs are there from the start; anything beyond them is an answer.
      answered = logs.length - requests.length;
      if (answered > 0 || first.exitCode !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    first.kill('SIGKILL');
    await exited(first);
    releaseHeld();
    await waitForMined(chain.anvil.url);
    let answeredBeforeRestart = 0;
    for (const id of requests) {
      const events = await requestEvents(chain.deployment, id);
      answeredBeforeRestart += events.fulfilled.length + events.failed.length;
    }
    expect(answeredBeforeRestart, 'killed after the first answer').to.be.greaterThan(0);
    expect(answeredBeforeRestart, 'killed before finishing').to.be.lessThan(requests.length);

    const second = coordinator(files, join(dir, 'cache'));
    expect(await exited(second)).to.equal(0);
    await waitForMined(chain.anvil.url);

    for (const id of requests) {
      const events = await requestEvents(chain.deployment, id);
      expect(events.fulfilled.length + events.failed.length, id).to.equal(1);
      expect(events.failed).to.deep.equal([]);
    }
    for (const sponsor of sponsors) {
      const nonce = await rpc<string>(chain.anvil.url, 'eth_getTransactionCount', [sponsor.sponsorWallet, 'latest']);
      expect(Number(nonce)).to.equal(REQUESTS_PER_SPONSOR);
    }
  });
});
