// `oracle-node request <requestId> -c config.json` end to end on anvil with the real AirnodeRrpV0: a request made,
// served by a real `oracle-node coordinator` cycle, then its timeline; requests that wait say why.
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { topics } from '../../../src/chain/contracts.js';
import { FileRequestLog } from '../../../src/node/request-log.js';
import { ORACLE_NODE_ARGS, repoRoot } from '../../support/binary.js';
import { startTestChain, waitForMined } from '../../support/chain.js';
import {
  type ApiServer,
  buildConfigJson,
  type ConfigOptions,
  createSponsor,
  requestEvents,
  requestPrice,
  startApiServer,
  writeNodeFiles,
} from '../../support/harness.js';
import { startRecordingProxy } from '../../support/rpc-proxy.js';

const run = promisify(execFile);

describe('oracle-node request (anvil, real AirnodeRrpV0, a real coordinator cycle)', () => {
  let chain: Awaited<ReturnType<typeof startTestChain>>;
  let api: ApiServer;
  let dir: string;
  let sponsorSeq = 0;

  /** Writes NAME-config.json and its secrets file; returns the -c/-s arguments. */
  function writeConfig(name: string, overrides: Partial<ConfigOptions> = {}): string[] {
    const built = buildConfigJson({
      providers: { anvil: chain.anvil.url },
      deployment: chain.deployment,
      apiUrl: api.url,
      ...overrides,
    });
    return writeNodeFiles(dir, built, `${name}-`).args;
  }

  const cli = (...args: string[]) => run(process.execPath, [...ORACLE_NODE_ARGS, ...args], { cwd: repoRoot });
  /** Exit code and output of a command that may exit non-zero. */
  async function cliResult(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const { stdout, stderr } = await cli(...args);
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failure = error as { code: number; stdout: string; stderr: string };
      return { code: failure.code, stdout: failure.stdout, stderr: failure.stderr };
    }
  }

  async function newRequest(): Promise<string> {
    const sponsor = await createSponsor(chain.deployment, `request-command-${sponsorSeq++}`);
    return requestPrice(chain.deployment, sponsor);
  }

  before(async () => {
    chain = await startTestChain();
    api = await startApiServer();
    dir = mkdtempSync(join(tmpdir(), 'request-command-'));
  });
  after(async () => {
    await api?.close();
    await chain?.anvil.stop();
  });

  it('prints the timeline of a request a cycle fulfilled: made, seen, API call, fulfil transaction, on-chain event', async () => {
    const config = writeConfig('open');
    const cache = ['--cache-dir', join(dir, 'cache-open')];
    const requestId = await newRequest();
    await cli('coordinator', ...config, ...cache);
    await waitForMined(chain.anvil.url);
    expect((await requestEvents(chain.deployment, requestId)).fulfilled).to.have.length(1);

    const { code, stdout } = await cliResult('request', requestId, ...config, ...cache);
    expect(code).to.equal(0);
    const lines = stdout.split('\n');
    expect(lines[0]).to.equal(`Request ${requestId} on chain ${chain.deployment.chainId}`);
    expect(stdout).to.match(/\n {2}Made +block \d+ \(transaction 0x[0-9a-f]{64}\), full request by 0x/);
    expect(stdout).to.match(/\n {2}Authorized +yes\n/);
    expect(stdout).to.match(/\n {2}Seen +by cycle at \S+, head block \d+ \(0 confirmations\)\n/);
    expect(stdout).to.match(/\n {2}API call +HTTP 2xx in \d+ ms\n/);
    expect(stdout).to.match(/\n {2}Submitted +fulfil transaction (0x[0-9a-f]{64}) \(nonce 0, provider anvil\)\n/);
    const submitted = /Submitted +fulfil transaction (0x[0-9a-f]{64})/.exec(stdout)![1];
    const fulfilled = /\n {2}Fulfilled +block (\d+), transaction (0x[0-9a-f]{64})\n/.exec(stdout);
    expect(fulfilled, stdout).to.not.equal(null);
    // The transaction the node recorded is the one whose event the chain holds.
    expect(fulfilled![2]).to.equal(submitted);
    expect(lines.at(-2)).to.equal(`Status: fulfilled: fulfilled in block ${fulfilled![1]}`);
    // Never the API's URL or answer.
    expect(stdout).to.not.include(api.url);
    expect(stdout).to.not.include('3000.25');
  });

  it('keeps the fulfil transaction of a request served by one cycle after a later cycle skipped it (no longer awaiting fulfilment)', async () => {
    const config = writeConfig('served');
    const cacheDir = join(dir, 'cache-served');
    const cache = ['--cache-dir', cacheDir];
    const requestId = await newRequest();
    await cli('coordinator', ...config, ...cache);
    await waitForMined(chain.anvil.url);
    expect((await requestEvents(chain.deployment, requestId)).fulfilled).to.have.length(1);
    const served = await new FileRequestLog(cacheDir).read();
    const transaction = served.find((r) => r.requestId === requestId)!.transaction!;
    expect(transaction.hash).to.match(/^0x[0-9a-f]{64}$/);

    // A later cycle through a provider whose logs lack the fulfilment (an index behind): it sees the request again,
    // and its shard skips it, the contract no longer awaiting it.
    const behind = await startRecordingProxy(chain.anvil.url);
    try {
      behind.setFault((call) =>
        call.method === 'eth_getLogs'
          ? {
              result: (logs) =>
                (logs as { topics: string[] }[]).filter((log) => log.topics[0] !== topics.FulfilledRequest),
            }
          : undefined,
      );
      await cli('coordinator', ...writeConfig('served-behind', { providers: { anvil: behind.url } }), ...cache);
    } finally {
      await behind.close();
    }
    const record = (await new FileRequestLog(cacheDir).read()).find((r) => r.requestId === requestId)!;
    expect(record).to.deep.include({ state: 'skipped', reason: 'no longer awaiting fulfilment', cycles: 2 });
    expect(record.transaction).to.deep.equal({ ...transaction, kind: 'fulfil' });

    const { code, stdout } = await cliResult('request', requestId, ...config, ...cache);
    expect(code).to.equal(0);
    expect(stdout).to.match(
      new RegExp(`\\n {2}Submitted +fulfil transaction ${transaction.hash} \\(nonce 0, provider anvil\\)\\n`),
    );
    expect(stdout).to.match(new RegExp(`\\n {2}Fulfilled +block \\d+, transaction ${transaction.hash}\\n`));
  });

  it('says a request waits for confirmations, with how many it has and how many the chain requires', async () => {
    const config = writeConfig('confirmations', { minConfirmations: 5 });
    const cache = ['--cache-dir', join(dir, 'cache-confirmations')];
    const requestId = await newRequest();
    await cli('coordinator', ...config, ...cache);
    const { code, stdout } = await cliResult('request', requestId, ...config, ...cache);
    expect(code).to.equal(0);
    expect(stdout).to.match(/\n {2}Seen +by cycle at \S+, head block \d+ \(0 confirmations\)\n/);
    expect(stdout).to.include(
      'Status: waiting: waiting for confirmations: 0 confirmations now, 5 required by the chain (or more by _minConfirmations)',
    );
  });

  it('says a request of a requester no authorizer allows is not authorized', async () => {
    const config = writeConfig('authorized', { authorizers: [chain.deployment.RequesterAuthorizerWithAirnode] });
    const cache = ['--cache-dir', join(dir, 'cache-authorized')];
    const requestId = await newRequest();
    await cli('coordinator', ...config, ...cache);
    const { code, stdout } = await cliResult('request', requestId, ...config, ...cache);
    expect(code).to.equal(0);
    expect(stdout).to.match(/\n {2}Authorized +NO: no authorizer of the chain allows it\n/);
    expect(stdout).to.include('Status: waiting: not authorized:');
  });

  it('says a request no cycle has seen yet is waiting for the next cycle, and an unknown id is not found (exit 1)', async () => {
    const config = writeConfig('unseen');
    const cache = ['--cache-dir', join(dir, 'cache-unseen')];
    const requestId = await newRequest();
    const waiting = await cliResult('request', requestId, ...config, ...cache);
    expect(waiting.code).to.equal(0);
    expect(waiting.stdout).to.match(/\n {2}Seen +not in the local request log .*requests\.json\n/);
    expect(waiting.stdout).to.include('Status: waiting: not seen by a cycle yet');

    const unknown = await cliResult('request', `0x${'ab'.repeat(32)}`, ...config, ...cache);
    expect(unknown.code).to.equal(1);
    expect(unknown.stdout).to.include('Status: not found: no request with this id for this node in blocks 0-');
  });

  it('refuses a malformed request id and a missing source with usage (exit 2)', async () => {
    const config = writeConfig('usage');
    expect((await cliResult('request', '0x1234', ...config)).code).to.equal(2);
    const neither = await cliResult('request', `0x${'ab'.repeat(32)}`);
    expect(neither.code).to.equal(2);
    expect(neither.stderr).to.include('Give either --node NAME or -c config.json');
  });
});
