// Starts anvil on 127.0.0.1, deploys the real protocol contracts and a test requester, prints the
// addresses as JSON and keeps running until interrupted.
//   node --import tsx scripts/test-chain.ts [--port 8545]
import { startTestChain } from '../test/support/chain.js';

const portIndex = process.argv.indexOf('--port');
const port = portIndex >= 0 ? Number(process.argv[portIndex + 1]) : undefined;

const { anvil, deployment } = await startTestChain(port ? { port } : {});
process.stdout.write(`${JSON.stringify(deployment, null, 2)}\n`);
process.stderr.write(`anvil listening on ${anvil.url}; Ctrl-C to stop\n`);

const shutdown = async () => {
  await anvil.stop();
  process.exit(0);
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
