// Makes one on-chain request to the node of a config, on the chain `make local-chain` started, and waits until the
// node answers it: a sponsor (anvil's second default account) sponsors the test requester and funds its sponsor
// wallet, the requester calls makeFullRequest, and the script prints the FulfilledRequest's value (or the
// FailedRequest's message). The README's local walk-through ends here.
//   make local-request [COIN=BTC]
//   node --import tsx scripts/local-request.ts -c config.json -s secrets.env [--coin ETH] [--endpoint price]
//     [--timeout 120] [--chain-file .cache/local-chain.json]
import { existsSync, readFileSync } from 'node:fs';
import { AbiCoder, Contract, parseEther, Wallet } from 'ethers';
import { sponsorWallets } from '../src/chain/sponsor-wallets.js';
import { loadConfig } from '../src/node/config-loader.js';
import { deriveEndpointId } from '../src/protocol/ids.js';
import { type Deployment, LOCAL_CHAIN_FILE, minedReceipt, testProvider } from '../test/support/chain.js';
import { encodeCoin, makeFullRequest, requestEventsOf } from '../test/support/harness.js';

/** anvil's second default account (public, well-known test key): the sponsor. */
const SPONSOR_PRIVATE_KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';

function option(name: string, fallback?: string): string | undefined {
  const index = process.argv.indexOf(name);
  return index >= 0 ? process.argv[index + 1] : fallback;
}

function fail(message: string): never {
  process.stderr.write(`local-request: ${message}\n`);
  process.exit(1);
}

const configPath = option('-c') ?? fail('-c config.json is required');
const secretsPath = option('-s');
const coin = option('--coin', 'ETH')!;
const timeoutMs = Number(option('--timeout', '120')) * 1000;
const chainFile = option('--chain-file', LOCAL_CHAIN_FILE)!;
if (!existsSync(chainFile)) fail(`${chainFile} is missing: start the chain first (make local-chain)`);
const local = JSON.parse(readFileSync(chainFile, 'utf8')) as Deployment;

const config = await loadConfig(configPath, secretsPath).catch((error: Error) => fail(error.message));
const chain = config.chains[0] ?? fail('the config has no chain');
const endpointName = option('--endpoint');
const trigger =
  config.triggers.rrp.find((t) => endpointName === undefined || t.endpointName === endpointName) ??
  fail(`no rrp trigger${endpointName ? ` for endpoint ${endpointName}` : ''} in the config`);
const providerUrl = Object.values(chain.providers)[0]?.url ?? fail('the chain has no provider');
const rrp = chain.contracts.NodeRrp ?? fail('the chain has no AirnodeRrp address');
const mnemonic = config.nodeSettings.nodeWalletMnemonic ?? fail('the config has no node mnemonic');
if (trigger.endpointId !== deriveEndpointId(trigger.oisTitle, trigger.endpointName))
  process.stderr.write(`warning: the trigger's endpointId is not the one derived from its OIS title and endpoint\n`);

const deployment: Deployment = { ...local, url: providerUrl, chainId: Number(chain.id), AirnodeRrpV0: rrp };
const wallets = sponsorWallets(mnemonic);
const provider = testProvider(providerUrl, Number(chain.id));
const sponsor = new Wallet(SPONSOR_PRIVATE_KEY, provider);
const sponsorWallet = wallets.addressOf(sponsor.address);
const airnodeRrp = new Contract(rrp, ['function setSponsorshipStatus(address requester, bool status)'], sponsor);
// Explicit nonces: the provider's view of the account can lag one transaction behind on a busy machine.
const nonce = await sponsor.getNonce('pending');
await minedReceipt(await airnodeRrp.getFunction('setSponsorshipStatus')(local.Requester, true, { nonce }));
await minedReceipt(await sponsor.sendTransaction({ to: sponsorWallet, value: parseEther('1'), nonce: nonce + 1 }));
process.stdout.write(
  `node ${wallets.nodeAddress}, endpoint ${trigger.endpointName} (${trigger.endpointId})\n` +
    `sponsor ${sponsor.address} sponsors requester ${local.Requester}; sponsor wallet ${sponsorWallet} funded with 1 ETH\n`,
);
const requestId = await makeFullRequest(deployment, {
  endpointId: trigger.endpointId,
  sponsor: sponsor.address,
  sponsorWallet,
  parameters: encodeCoin(coin),
  node: wallets.nodeAddress,
});
process.stdout.write(`request ${requestId} made (coin=${coin}); waiting for the node's answer\n`);

const deadline = performance.now() + timeoutMs;
for (;;) {
  const events = await requestEventsOf(deployment, wallets.nodeAddress, requestId);
  const fulfilled = events.fulfilled[0];
  if (fulfilled) {
    const [value] = AbiCoder.defaultAbiCoder().decode(['int256'], fulfilled.data);
    process.stdout.write(`fulfilled in transaction ${fulfilled.transactionHash}: ${value} (int256)\n`);
    process.exit(0);
  }
  if (events.failed[0]) fail(`the node failed the request: ${events.failed[0].message}`);
  if (performance.now() > deadline)
    fail(`no answer within ${timeoutMs / 1000} s: is the node running (make local-node)? Its log says why it waits`);
  await new Promise((resolve) => setTimeout(resolve, 500));
}
