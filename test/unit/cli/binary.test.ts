// End to end through the real binary entry (src/cli/index.ts under tsx): registration and exit codes.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import yaml from 'js-yaml';
import { buildFeedConfig, feedSecrets } from '../../support/feed.js';
import { recordLoadedModules } from '../../support/loaded-packages.js';
import { fixturePath } from '../config/fixtures.js';

const ENTRY = fileURLToPath(new URL('../../../src/cli/index.ts', import.meta.url));

function oracleNode(args: string[], input?: string, env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, ['--import', 'tsx', ENTRY, ...args], {
    encoding: 'utf8',
    input,
    env: { ...process.env, NODE_WALLET_MNEMONIC: '', AIRNODE_WALLET_MNEMONIC: '', ...env },
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('oracle-node binary (validate, derive, schema)', function () {
  this.timeout(120_000);

  it('lists the subcommands', () => {
    const out = oracleNode(['--help']);
    expect(out.stdout).to.include('validate').and.include('derive').and.include('schema');
  });

  it('validate exits 0 / 1 / 2', () => {
    const config = fixturePath('node/config.example.json');
    expect(oracleNode(['validate', '-c', config, '-s', fixturePath('node/secrets.example.env')]).code).to.equal(0);
    const invalid = oracleNode(['validate', '-c', config, '--json']);
    expect(invalid.code).to.equal(1);
    expect(JSON.parse(invalid.stdout).ok).to.equal(false);
    expect(oracleNode(['validate']).code).to.equal(2);
  });

  it('validate loads only what it uses: no ethers, js-sha3, logger, metrics or Kubernetes client', () => {
    // Module loading was most of a large config's validation time (ethers alone a quarter): a hook records every
    // module the process loads and the test names the packages among them.
    const recorder = recordLoadedModules();
    try {
      const config = fixturePath('node/config.example.json');
      const result = spawnSync(
        process.execPath,
        [
          '--import',
          'tsx',
          ...recorder.nodeArgs,
          ENTRY,
          'validate',
          '-c',
          config,
          '-s',
          fixturePath('node/secrets.example.env'),
        ],
        { encoding: 'utf8', timeout: 60_000 },
      );
      expect(result.status, result.stderr).to.equal(0);
      const packages = recorder.packages();
      expect(packages.has('zod'), [...packages].join(', ')).to.equal(true);
      // js-sha3 answers only where WebAssembly is missing (node --jitless).
      for (const unused of ['ethers', 'js-sha3', 'pino', 'prom-client', '@kubernetes/client-node', 'express']) {
        expect(packages.has(unused), `${unused} loaded`).to.equal(false);
      }
      // Nor the tracer: validate makes no span.
      expect(recorder.urls().join('\n')).to.not.include('/src/observability/tracing.');
      // Of zod's 64 message locales, English alone (the one validate prints).
      const locales = recorder.urls().filter((url) => url.includes('/node_modules/zod/v4/locales/'));
      expect(locales.map((url) => url.slice(url.lastIndexOf('/') + 1))).to.deep.equal(['en.js']);
    } finally {
      recorder.remove();
    }
  });

  it("feed loads neither ethers nor undici's index (its start-up CPU was mostly module loading)", () => {
    // A config file that is not there ends the command after its modules (all imported statically) are loaded.
    const recorder = recordLoadedModules();
    try {
      const result = spawnSync(
        process.execPath,
        ['--import', 'tsx', ...recorder.nodeArgs, ENTRY, 'feed', '-c', '/nonexistent/airnode-feed.json'],
        { encoding: 'utf8', timeout: 60_000 },
      );
      expect(result.status, result.stderr).to.equal(2);
      const packages = recorder.packages();
      // (undici's Agent and prom-client's collectors come through require, which this hook does not see under tsx;
      // the key's libsecp256k1 loads with the signer, after the config.)
      for (const used of ['zod', 'pino']) {
        expect(packages.has(used), `${used} not loaded: ${[...packages].join(', ')}`).to.equal(true);
      }
      const required = recorder.requiredFiles().map((file) => file.slice(file.lastIndexOf('node_modules/') + 13));
      expect(required).to.include.members(['prom-client/lib/registry.js', 'undici/lib/dispatcher/agent.js']);
      // prom-client's index loads its Pushgateway (node:https, tls, zlib); an ES module import of node:http loads
      // Node's internal undici (its ESM facade reads the lazy WebSocket getter); neither is used by the feed.
      expect(required).to.not.include.members(['prom-client/index.js']);
      expect(required).to.not.include.members(['prom-client/lib/pushgateway.js']);
      expect(recorder.builtins()).to.include('http').and.not.include('internal/deps/undici/undici');
      expect(recorder.builtins()).to.not.include('https');
      // js-sha3 too: the signatures hash with keccak.ts's WebAssembly sponge, which answers at full speed at once.
      for (const unused of ['ethers', '@noble/curves', '@kubernetes/client-node', 'js-sha3']) {
        expect(packages.has(unused), `${unused} loaded`).to.equal(false);
      }
      expect(recorder.urls().some((url) => url.endsWith('/node_modules/undici/index.js'))).to.equal(false);
      // Of zod's 64 message locales, English alone (every subcommand's messages are English).
      const locales = recorder.urls().filter((url) => url.includes('/node_modules/zod/v4/locales/'));
      expect(locales.map((url) => url.slice(url.lastIndexOf('/') + 1))).to.deep.equal(['en.js']);
      // Nor the node's whole config model: the feed has its own schema and shares only OIS and apiCredentials.
      expect(recorder.urls().join('\n')).to.not.match(/\/src\/config\/(schema|json-schema)\.ts/);
    } finally {
      recorder.remove();
    }
  });

  it('a secret too short to redact leaves messages intact and is named (never its value) in a warning', () => {
    const dir = mkdtempSync(join(tmpdir(), 'oracle-node-short-secret-'));
    const secrets = join(dir, 'secrets.env');
    writeFileSync(
      secrets,
      readFileSync(fixturePath('node/secrets.example.env'), 'utf8').replace(
        /^SS_CURRENCY_CONVERTER_API_KEY=.*$/m,
        'SS_CURRENCY_CONVERTER_API_KEY=e',
      ),
    );
    const config = JSON.parse(readFileSync(fixturePath('node/config.example.json'), 'utf8'));
    delete config.nodeSettings.heartbeat;
    const invalid = join(dir, 'invalid.json');
    writeFileSync(invalid, JSON.stringify(config));
    const warning =
      'warning apiCredentials[0].securitySchemeValue: Secret "SS_CURRENCY_CONVERTER_API_KEY" is shorter than 4 characters';

    const text = oracleNode(['validate', '-c', invalid, '-s', secrets]);
    expect(text.code).to.equal(1);
    expect(text.stderr).to.include('error   nodeSettings.heartbeat: Required field is missing ("enabled" must be');
    expect(text.stderr).to.include(warning).and.not.include(`\${SS_CURRENCY_CONVERTER_API_KEY}`);
    const json = JSON.parse(oracleNode(['validate', '-c', invalid, '-s', secrets, '--json']).stdout);
    expect(json.errors[0].path).to.equal('nodeSettings.heartbeat');
    expect(JSON.stringify(json)).to.not.include(`\${SS_CURRENCY_CONVERTER_API_KEY}`);

    const manifest = oracleNode([
      'manifest',
      '-c',
      fixturePath('node/config.example.json'),
      '-s',
      secrets,
      '--name',
      'short',
      '--omit-secret',
    ]);
    expect(manifest.code, manifest.stderr).to.equal(0);
    expect(manifest.stderr).to.include(warning);
    expect(manifest.stdout).to.include('nodeSettings:').and.not.include('nod${');
  });

  it('validate and manifest refuse what can never work: a chain listed twice, a _type that never encodes', () => {
    const dir = mkdtempSync(join(tmpdir(), 'oracle-node-never-works-'));
    const config = JSON.parse(readFileSync(fixturePath('node/config.example.json'), 'utf8'));
    config.chains.push(structuredClone(config.chains[0]));
    config.ois[0].endpoints[0].reservedParameters[0].fixed = 'int257';
    const path = join(dir, 'config.json');
    writeFileSync(path, JSON.stringify(config));
    const secrets = fixturePath('node/secrets.example.env');
    const out = oracleNode(['validate', '-c', path, '-s', secrets, '--json']);
    expect(out.code).to.equal(1);
    expect(JSON.parse(out.stdout).errors.map((e: { path: string }) => e.path)).to.deep.equal([
      'chains[1].id',
      'ois[0].endpoints[0].reservedParameters[0].fixed',
    ]);
    const manifest = oracleNode(['manifest', '-c', path, '-s', secrets, '--name', 'never']);
    expect(manifest.code).to.equal(1);
    expect(manifest.stdout).to.equal('');
    expect(manifest.stderr).to.include('error   chains[1].id: Chain 31337 is already listed at chains[0]');
    expect(manifest.stderr).to.include('_type "int257" can never be encoded');
  });

  it('manifest --suspended prints a suspended coordinator and the one patch that resumes it; loopback URLs warned', () => {
    const config = fixturePath('node/config.example.json');
    const secrets = fixturePath('node/secrets.example.env');
    const out = oracleNode(['manifest', '-c', config, '-s', secrets, '--name', 'moved', '-n', 'team-a', '--suspended']);
    expect(out.code, out.stderr).to.equal(0);
    const node = (yaml.loadAll(out.stdout) as { kind: string; spec: { coordinator?: unknown } }[]).find(
      (doc) => doc.kind === 'OracleNode',
    );
    expect(node?.spec.coordinator).to.deep.equal({ suspend: true });
    expect(out.stderr).to.include(
      `The coordinator is suspended: once the old deployment is stopped, resume it with:\n  kubectl patch oraclenode moved --type merge -p '{"spec":{"coordinator":{"suspend":false}}}' -n team-a\n`,
    );
    // secrets.example.env's PROVIDER_URL is http://127.0.0.1:8545: named by its path, never printed.
    expect(out.stderr).to.include(
      'warning chains[0].providers.local.url: a loopback address (localhost, 127.x.x.x): in a pod it is the pod itself',
    );
    expect(out.stderr).to.include('warning ois[0].apiSpecifications.servers[0].url: a loopback address');
    expect(out.stderr).to.not.include('8545');
    const plain = oracleNode(['manifest', '-c', config, '-s', secrets, '--name', 'moved']);
    expect(plain.stdout).to.not.include('coordinator:');
    expect(plain.stderr).to.not.include('suspended');
    const feed = oracleNode(['manifest', '-c', config, '--name', 'moved', '--feed', '--suspended']);
    expect(feed.code).to.equal(2);
    expect(feed.stderr).to.include('--suspended applies to an OracleNode');
  });

  it('derive reads the mnemonic from stdin', () => {
    const out = oracleNode(
      ['derive', 'node-address'],
      'achieve climb couple wait accident symbol spy blouse reduce foil echo label\n',
    );
    expect(out.code).to.equal(0);
    expect(out.stdout.trim()).to.equal('0xA30CA71Ba54E83127214D3271aEA8F5D6bD4Dace');
  });

  it('ends quietly, exit code 0, when its reader closes the pipe early (`schema | head -c 10`)', () => {
    // The schema (about 70 KB) is more than a pipe holds: once head has its 10 bytes and exits, the next write fails
    // with EPIPE, every time.
    const command = `"${process.execPath}" --import tsx "${ENTRY}" schema | head -c 10; echo " exit=\${PIPESTATUS[0]}"`;
    for (let run = 0; run < 3; run++) {
      const result = spawnSync('bash', ['-c', command], { encoding: 'utf8', timeout: 60_000 });
      expect(result.stderr).to.equal('');
      expect(result.stdout).to.equal('{\n  "$sche exit=0\n');
    }
  });

  it('derive takes the mnemonic from a 0.15 secrets.env (-s) or AIRNODE_WALLET_MNEMONIC, and says why a --sponsor is refused', () => {
    const address = '0xA30CA71Ba54E83127214D3271aEA8F5D6bD4Dace';
    const secrets = fixturePath('node/secrets.example.env'); // AIRNODE_WALLET_MNEMONIC="achieve climb …"
    expect(oracleNode(['derive', 'node-address', '-s', secrets])).to.deep.include({ code: 0, stdout: `${address}\n` });
    const mnemonic = 'achieve climb couple wait accident symbol spy blouse reduce foil echo label';
    expect(oracleNode(['derive', 'node-address'], '', { AIRNODE_WALLET_MNEMONIC: mnemonic })).to.deep.include({
      code: 0,
      stdout: `${address}\n`,
    });
    const sponsor = '0x1FbDB2315678afecb367f032d93F642f64180aa4'; // a mixed-case checksum that does not match
    const refused = oracleNode(['derive', 'sponsor-wallet', '--sponsor', sponsor, '-s', secrets]);
    expect(refused.code).to.equal(2);
    expect(refused.stderr).to.include(`--sponsor ${sponsor}: its mixed-case EIP-55 checksum does not match`);
    const lower = oracleNode(['derive', 'sponsor-wallet', '--sponsor', sponsor.toLowerCase(), '-s', secrets]);
    expect(lower.code, lower.stderr).to.equal(0);
    expect(lower.stdout).to.match(/^0x[0-9a-fA-F]{40}\n$/);
    expect(oracleNode(['derive', 'sponsor-wallet', '--sponsor', '0x12']).stderr).to.include(
      '--sponsor must be an address: 0x followed by 40 hex digits',
    );
  });

  it("feed's and manifest --feed's errors read as validate's: one summary line, `error   path: message`, the node's words", () => {
    const dir = mkdtempSync(join(tmpdir(), 'oracle-node-feed-errors-'));
    const config = buildFeedConfig({
      apiUrl: 'http://prices.example',
      assets: ['BTC'],
      fetchInterval: 5,
      signedApis: [{ name: 'main', url: 'http://signed-api.example', authToken: null }],
    });
    (config['nodeSettings'] as Record<string, unknown>)['logLevel'] = 'info';
    const configPath = join(dir, 'airnode-feed.json');
    writeFileSync(configPath, JSON.stringify(config));
    const secrets = join(dir, 'secrets.env');
    writeFileSync(secrets, feedSecrets('test test test test test test test test test test test junk', 'api-key'));
    const expected = `${configPath} is not valid: 1 error(s)\n  error   nodeSettings.logLevel: Unknown key "logLevel" is not allowed here\n`;
    const feed = oracleNode(['feed', '-c', configPath, '-s', secrets]);
    expect(feed.code).to.equal(1);
    expect(feed.stderr).to.equal(expected);
    const manifest = oracleNode(['manifest', '--feed', '-c', configPath, '-s', secrets, '--name', 'prices']);
    expect(manifest.code).to.equal(1);
    expect(manifest.stderr).to.equal(expected);
    // A missing secret: the node's message, naming every path that uses it.
    writeFileSync(secrets, '');
    const missing = oracleNode(['feed', '-c', configPath, '-s', secrets]);
    expect(missing.stderr).to.match(
      /^ {2}error {3}nodeSettings\.airnodeWalletMnemonic: Secret "WALLET_MNEMONIC" is not defined in secrets\.env; it is used at: nodeSettings\.airnodeWalletMnemonic$/m,
    );
  });

  it('schema prints JSON', () => {
    const out = oracleNode(['schema']);
    expect(out.code).to.equal(0);
    expect(JSON.parse(out.stdout).type).to.equal('object');
  });
});
