// The README's local walk-through as a user runs it: `make local-chain` (scripts/test-chain.ts), the node of
// examples/local with its shipped config.json unchanged (`make local-node`), and `make local-request`
// (scripts/local-request.ts), which must end with the request fulfilled on chain. Only the ports differ: the
// secrets file is the shipped one with free ports in its URLs.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { repoRoot, spawnOracleNode } from '../../support/binary.js';
import { EXAMPLE_AIRNODE_RRP } from '../../support/chain.js';
import { freePort } from '../../support/net.js';
import { waitFor } from '../../support/wait.js';

const run = promisify(execFile);

describe('the README local walk-through (make local-chain, local-node, local-request)', function () {
  this.timeout(240_000);
  const dir = mkdtempSync(join(tmpdir(), 'local-walk-'));
  const chainFile = join(dir, 'local-chain.json');
  const processes: ChildProcess[] = [];
  let secretsFile: string;

  before(async () => {
    const chainPort = await freePort();
    const apiPort = await freePort();
    const chain = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'scripts/test-chain.ts',
        '--port',
        String(chainPort),
        '--api-port',
        String(apiPort),
        '--chain-file',
        chainFile,
      ],
      { cwd: repoRoot, stdio: 'ignore' },
    );
    processes.push(chain);
    await waitFor(() => existsSync(chainFile), 120_000, { description: 'the local chain to write its addresses' });
    secretsFile = join(dir, 'secrets.env');
    writeFileSync(
      secretsFile,
      readFileSync(join(repoRoot, 'examples/local/secrets.env'), 'utf8')
        .replace('127.0.0.1:8545', `127.0.0.1:${chainPort}`)
        .replace('127.0.0.1:8580', `127.0.0.1:${apiPort}`),
    );
  });

  after(() => {
    for (const child of processes) child.kill('SIGTERM');
  });

  it('deploys AirnodeRrpV0 at the address of the example configs and samples', () => {
    const deployment = JSON.parse(readFileSync(chainFile, 'utf8')) as { AirnodeRrpV0: string };
    expect(deployment.AirnodeRrpV0).to.equal(EXAMPLE_AIRNODE_RRP);
    const config = readFileSync(join(repoRoot, 'examples/local/config.json'), 'utf8');
    expect(config).to.contain(EXAMPLE_AIRNODE_RRP);
    expect(readFileSync(join(repoRoot, 'manifests/samples/minimal.yaml'), 'utf8')).to.contain(EXAMPLE_AIRNODE_RRP);
  });

  it('the shipped config validates, the node serves, and local-request ends with the request fulfilled', async () => {
    const validate = await run(
      process.execPath,
      ['--import', 'tsx', 'src/cli/index.ts', 'validate', '-c', 'examples/local/config.json', '-s', secretsFile],
      { cwd: repoRoot },
    );
    expect(validate.stdout).to.contain('is valid');
    const node = spawnOracleNode(
      ['start', '-c', 'examples/local/config.json', '-s', secretsFile, '--poll-interval', '1', '--port', '0'],
      { stdio: 'ignore' },
    );
    processes.push(node);
    const { stdout } = await run(
      process.execPath,
      [
        '--import',
        'tsx',
        'scripts/local-request.ts',
        '-c',
        'examples/local/config.json',
        '-s',
        secretsFile,
        '--chain-file',
        chainFile,
        '--coin',
        'BTC',
      ],
      { cwd: repoRoot },
    );
    // The price API answers 65000.5 for BTC; the endpoint multiplies by 10^6.
    expect(stdout).to.match(/fulfilled in transaction 0x[0-9a-f]{64}: 65000500000 \(int256\)/);
  });
});
