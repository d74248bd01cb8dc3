// A local chain for a node run on this machine: anvil on 127.0.0.1 with the real protocol contracts (AirnodeRrpV0
// at the address of the example configs) and a test requester, and a price API stand-in (GET /price?coin=ETH).
// Prints the addresses, writes them to .cache/local-chain.json for scripts/local-request.ts, and runs until
// interrupted.
//   make local-chain                                   (anvil on :8545, the API on :8580: examples/local/secrets.env)
//   node --import tsx scripts/test-chain.ts [--port 8545] [--api-port 8580] [--chain-file .cache/local-chain.json]
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname } from 'node:path';
import { EXAMPLE_AIRNODE_RRP, LOCAL_CHAIN_FILE, startTestChain } from '../test/support/chain.js';
import { startApiServer } from '../test/support/harness.js';

function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(name);
  if (index < 0) return fallback;
  const value = Number(process.argv[index + 1]);
  if (!Number.isInteger(value) || value < 1 || value > 65_535) throw new Error(`${name} takes a port number`);
  return value;
}

/** A fixed port that something else holds would have anvil's readiness check answered by that other process. */
async function ensureFree(port: number, what: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', () =>
      reject(new Error(`port ${port} (${what}) is taken: stop what holds it, or pass another`)),
    );
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve()));
  });
}

const chainFileIndex = process.argv.indexOf('--chain-file');
const chainFile = chainFileIndex >= 0 ? process.argv[chainFileIndex + 1]! : LOCAL_CHAIN_FILE;
const port = option('--port', 8545);
const apiPort = option('--api-port', 8580);
try {
  await ensureFree(port, '--port, the chain');
  await ensureFree(apiPort, '--api-port, the price API');
} catch (error) {
  process.stderr.write(`test-chain: ${(error as Error).message}\n`);
  process.exit(1);
}
const { anvil, deployment } = await startTestChain({ port });
const api = await startApiServer({ port: apiPort });
if (deployment.AirnodeRrpV0 !== EXAMPLE_AIRNODE_RRP)
  process.stderr.write(`warning: AirnodeRrpV0 is at ${deployment.AirnodeRrpV0}, not ${EXAMPLE_AIRNODE_RRP}\n`);
const described = { ...deployment, priceApi: api.url };
mkdirSync(dirname(chainFile), { recursive: true });
writeFileSync(chainFile, `${JSON.stringify(described, null, 2)}\n`);
process.stdout.write(`${JSON.stringify(described, null, 2)}\n`);
process.stderr.write(
  `chain ${deployment.chainId} on ${anvil.url}, price API on ${api.url} (GET /price?coin=ETH); Ctrl-C to stop\n`,
);

const shutdown = async () => {
  await api.close();
  await anvil.stop();
  process.exit(0);
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
