// The reference's own config.example.json (test/fixtures/airnode/node/) run end to end on anvil through the real
// AirnodeRrpV0: its authorizer and ERC721 addresses have EIP-55 checksums that do not match, which its validator
// accepts. The node uses them by their 20 bytes and serves the request; an error of the node's own code is never
// counted as the provider's fault.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { ContractFactory } from 'ethers';
import { ProviderMemory } from '../../../src/chain/provider-health.js';
import type { Config } from '../../../src/config/index.js';
import { validateConfig } from '../../../src/config/index.js';
import { MemoryResponseCache } from '../../../src/node/cache.js';
import { runCycle } from '../../../src/node/cycle.js';
import { InProcessExecutor } from '../../../src/node/executor.js';
import { cycleMetrics } from '../../../src/node/metrics.js';
import { createLogger, createMetricsRegistry } from '../../../src/observability/index.js';
import { encodeParameters } from '../../../src/ois/abi.js';
import { ORACLE_NODE_ARGS, repoRoot } from '../../support/binary.js';
import {
  type Anvil,
  compileRequester,
  type Deployment,
  deployed,
  deployer,
  protocolArtifacts,
  rpc,
  startAnvil,
  TEST_MNEMONIC,
  waitForMined,
} from '../../support/chain.js';
import { createSponsor, int256, makeFullRequest, requestEvents, wallets } from '../../support/harness.js';

const run = promisify(execFile);
const EXAMPLE = new URL('../../fixtures/airnode/node/config.example.json', import.meta.url);
const ENDPOINT_ID = '0x13dea3311fe0d6b84f4daeab831befbc49e19e6494c41e9e065a09c3c68f43b6';
const API_KEY = 'reference-example-key';
/** Runtime code that answers every call with `true` (a 32-byte 1): an authorizer that authorizes everyone. */
const AUTHORIZE_ALL = '0x600160005260206000f3';

describe("the reference's config.example.json end to end (anvil, real AirnodeRrpV0)", function () {
  this.timeout(180_000);
  let anvil: Anvil;
  let deployment: Deployment;
  let api: Server;
  let apiUrl: string;
  const apiCalls: URLSearchParams[] = [];
  let example: { chains: { contracts: { AirnodeRrp: string }; authorizers: Record<string, unknown> }[] } & Record<
    string,
    unknown
  >;
  let dir: string;

  before(async () => {
    example = JSON.parse(readFileSync(EXAMPLE, 'utf8'));
    anvil = await startAnvil();
    // AirnodeRrpV0 first from the deployer account: at the address the example names (its nonce 0).
    const signer = deployer(anvil.url);
    const deploy = async (artifact: ReturnType<typeof compileRequester>, ...args: unknown[]) => {
      const contract = await deployed(
        await new ContractFactory(artifact.abi, artifact.bytecode, signer).deploy(...args),
      );
      return contract.getAddress();
    };
    const rrp = await deploy(protocolArtifacts.AirnodeRrpV0());
    expect(rrp.toLowerCase()).to.equal(example.chains[0]!.contracts.AirnodeRrp.toLowerCase());
    const requester = await deploy(compileRequester(), rrp);
    deployment = {
      chainId: 31337,
      url: anvil.url,
      AccessControlRegistry: '',
      RequesterAuthorizerWithAirnode: '',
      AirnodeRrpV0: rrp,
      AirnodeRrpV0DryRun: '',
      Requester: requester,
    };
    // The example's requesterEndpointAuthorizers[0] (its checksum does not match) authorizes every request.
    const authorizer = (example.chains[0]!.authorizers['requesterEndpointAuthorizers'] as string[])[0]!;
    await rpc(anvil.url, 'anvil_setCode', [authorizer.toLowerCase(), AUTHORIZE_ALL]);

    // The reference's mock API answers GET /convert?from&to&amount with {result}.
    api = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      apiCalls.push(url.searchParams);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(url.pathname === '/convert' ? { success: true, result: 0.91 } : {}));
    });
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
    apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
    dir = mkdtempSync(join(tmpdir(), 'reference-example-'));
  });

  after(async () => {
    api?.closeAllConnections();
    await new Promise((resolve) => api?.close(resolve));
    await anvil?.stop();
  });

  /** The example as shipped, but for its API server (the reference's mock API on localhost:5000). */
  function exampleText(): string {
    return readFileSync(EXAMPLE, 'utf8').replace('http://localhost:5000', apiUrl);
  }
  const secrets = () => ({
    AIRNODE_WALLET_MNEMONIC: TEST_MNEMONIC,
    PROVIDER_URL: anvil.url,
    SS_CURRENCY_CONVERTER_API_KEY: API_KEY,
  });

  async function request(seed: string): Promise<string> {
    const sponsor = await createSponsor(deployment, seed);
    return makeFullRequest(deployment, {
      endpointId: ENDPOINT_ID,
      sponsor: sponsor.address,
      sponsorWallet: sponsor.sponsorWallet,
      parameters: encodeParameters([{ type: 'string', name: 'from', value: 'ETH' }]),
    });
  }

  it('validates with a warning per mismatched checksum, and one coordinator cycle serves a request', async () => {
    const configPath = join(dir, 'config.json');
    const secretsPath = join(dir, 'secrets.env');
    writeFileSync(configPath, exampleText());
    writeFileSync(
      secretsPath,
      Object.entries(secrets())
        .map(([name, value]) => `${name}="${value}"\n`)
        .join(''),
    );
    const validate = await run(
      process.execPath,
      [...ORACLE_NODE_ARGS, 'validate', '-c', configPath, '-s', secretsPath],
      {
        cwd: repoRoot,
      },
    );
    expect(validate.stdout).to.include('is valid (4 warning(s))');
    expect(validate.stdout).to.include(
      'warning chains[0].authorizers.requesterEndpointAuthorizers[0]: Address checksum (EIP-55) does not match',
    );

    const requestId = await request('reference-example');
    const { stdout } = await run(
      process.execPath,
      [...ORACLE_NODE_ARGS, 'coordinator', '-c', configPath, '-s', secretsPath, '--cache-dir', join(dir, 'cache')],
      { cwd: repoRoot },
    );
    await waitForMined(anvil.url);
    const summary = JSON.parse(stdout) as {
      providers: { provider: string; ok: boolean; fault?: string }[];
      transactions: { fulfilled: number };
    };
    expect(summary.providers).to.deep.include({ ...summary.providers[0], provider: 'local', ok: true });
    expect(summary.providers[0]!.fault).to.equal(undefined);
    expect(summary.transactions.fulfilled).to.equal(1);
    const events = await requestEvents(deployment, requestId);
    expect(events.failed).to.deep.equal([]);
    expect(events.fulfilled).to.have.length(1);
    expect(events.fulfilled[0]!.data).to.equal(int256(910000n));
    const call = apiCalls.at(-1)!;
    expect([call.get('from'), call.get('to'), call.get('amount'), call.get('access_key')]).to.deep.equal([
      'ETH',
      'USD',
      '1',
      API_KEY,
    ]);
  });

  it("an error of the node's own code leaves the provider up and without a fault", async () => {
    const result = validateConfig(exampleText(), secrets());
    expect(result.ok, JSON.stringify(result.errors)).to.equal(true);
    const config = result.config as Config;
    // An address ethers refuses (a wrong mixed-case checksum), past validation: the node's encoder throws.
    const erc721 = config.chains[0]!.authorizers.requesterAuthorizersWithErc721![0]!;
    erc721.erc721s = ['0x00bDB2315678afecb367f032d93F642f64180a00'];
    config.chains[0]!.authorizers.requesterEndpointAuthorizers = [];
    await request('reference-example-node-error');
    let text = '';
    const logger = createLogger({
      level: 'INFO',
      destination: {
        write(line: string) {
          text += line;
        },
      },
    });
    const summary = await runCycle(config, {
      executor: new InProcessExecutor({ config, wallets, logger, cache: new MemoryResponseCache() }),
      logger,
      wallets,
      discoveryTimeoutMs: 30_000,
      providerMemory: new ProviderMemory(),
    });
    const provider = summary.providers.find((p) => p.provider === 'local')!;
    expect(provider.ok).to.equal(true);
    expect(provider.fault).to.equal(undefined);
    expect(provider.error).to.match(/^node error: .*bad address checksum/);
    const lines = text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { level: string | number; msg: string; fault?: string });
    expect(lines.some((l) => l.msg === 'provider unavailable this cycle')).to.equal(false);
    expect(lines.some((l) => l.msg.startsWith('node error on this chain'))).to.equal(true);
    const registry = createMetricsRegistry();
    cycleMetrics(registry).observe(summary, 1);
    const up = (await registry.getSingleMetric('node_provider_up')?.get())?.values ?? [];
    expect(up.find((v) => v.labels['provider'] === 'local')?.value).to.equal(1);
  });
});
