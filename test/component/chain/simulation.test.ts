// The fulfilment simulator on anvil: placed at an address by eth_call's state override, as the shard uses it.
import { createRequire } from 'node:module';
import { expect } from 'chai';
import { Contract, ContractFactory, id as keccakId } from 'ethers';
import { fulfillData, signFulfillment, staticCheckOf } from '../../../src/chain/fulfillment.js';
import { RpcClient } from '../../../src/chain/rpc.js';
import { SIMULATOR_RUNTIME_CODE, simulateFromWallet, simulatorInterface } from '../../../src/chain/simulation.js';
import { deployed, deployer, minedReceipt, rpc, startTestChain, testProvider } from '../../support/chain.js';
import {
  createSponsor,
  ENDPOINTS,
  encodeCoin,
  int256,
  makeFullRequest,
  NODE_ADDRESS,
  requestEvents,
  wallets,
} from '../../support/harness.js';

/** A requester whose callback needs a transaction origin, as callbacks that check tx.origin do; it records it. */
const ORIGIN_REQUESTER = `// SPDX-License-Identifier: MIT
pragma solidity 0.8.9;
interface IAirnodeRrp {
  function makeFullRequest(address, bytes32, address, address, address, bytes4, bytes calldata) external returns (bytes32);
}
contract OriginRequester {
  IAirnodeRrp public immutable rrp;
  mapping(bytes32 => address) public originOf;
  event RequestMade(bytes32 indexed requestId);
  constructor(address rrpAddress) { rrp = IAirnodeRrp(rrpAddress); }
  function makeFull(address airnode, bytes32 endpointId, address sponsor, address sponsorWallet, bytes calldata parameters)
    external returns (bytes32 requestId)
  {
    requestId = rrp.makeFullRequest(airnode, endpointId, sponsor, sponsorWallet, address(this), this.fulfill.selector, parameters);
    emit RequestMade(requestId);
  }
  function fulfill(bytes32 requestId, bytes calldata) external {
    require(msg.sender == address(rrp), "Caller not Airnode RRP");
    require(tx.origin != address(0), "No transaction origin");
    originOf[requestId] = tx.origin;
  }
}`;

function compileOriginRequester(): { abi: object[]; bytecode: string } {
  const solc = createRequire(import.meta.url)('solc') as { compile: (input: string) => string };
  const output = JSON.parse(
    solc.compile(
      JSON.stringify({
        language: 'Solidity',
        sources: { 'OriginRequester.sol': { content: ORIGIN_REQUESTER } },
        settings: { outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } } },
      }),
    ),
  ) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<string, Record<string, { abi: object[]; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join('\n'));
  const contract = output.contracts['OriginRequester.sol']!['OriginRequester']!;
  return { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` };
}

const WALLET = '0x00000000000000000000000000000000000a11ce';

describe('fulfilment simulator (anvil, real AirnodeRrpV0)', () => {
  let chain: Awaited<ReturnType<typeof startTestChain>>;

  before(async () => {
    chain = await startTestChain();
  });
  after(async () => {
    await chain?.anvil.stop();
  });

  it("answers each call's outcome in order, its revert data included", async () => {
    const results = await simulateFromWallet(
      new RpcClient(chain.anvil.url),
      { wallet: WALLET, rrpAddress: chain.deployment.AirnodeRrpV0, block: 'latest' },
      [
        // Not a request of this wallet: the contract's own revert.
        { data: '0x1decbf18', gasLimit: 500_000n },
        { data: '0x', gasLimit: 100_000n },
      ],
    );
    expect(results).to.have.length(2);
    expect(results!.every((r) => !r.returned)).to.equal(true);
  });

  it('runs the calls from the sponsor wallet: a callback that reads tx.origin sees the wallet, as on chain', async () => {
    const artifact = compileOriginRequester();
    const factory = new ContractFactory(artifact.abi, artifact.bytecode, deployer(chain.anvil.url));
    const requester = await (await deployed(await factory.deploy(chain.deployment.AirnodeRrpV0))).getAddress();
    const sponsor = await createSponsor(chain.deployment, 'simulation-origin', [requester]);
    const ids: string[] = [];
    for (const coin of ['ETH', 'BTC']) {
      ids.push(
        await makeFullRequest(chain.deployment, {
          requester,
          endpointId: ENDPOINTS.price,
          sponsor: sponsor.address,
          sponsorWallet: sponsor.sponsorWallet,
          parameters: encodeCoin(coin),
        }),
      );
    }
    const calls = ids.map((requestId) => {
      const encodedValue = int256(1n);
      const data = fulfillData(
        {
          id: requestId,
          nodeAddress: NODE_ADDRESS,
          sponsorWallet: sponsor.sponsorWallet,
          fulfillAddress: requester,
          fulfillFunctionId: keccakId('fulfill(bytes32,bytes)').slice(0, 10),
        },
        { encodedValue, signature: signFulfillment(wallets.node, requestId, encodedValue) },
      );
      return { data, gasLimit: 500_000n };
    });
    const simulated = await simulateFromWallet(
      new RpcClient(chain.anvil.url),
      { wallet: sponsor.sponsorWallet, rrpAddress: chain.deployment.AirnodeRrpV0, block: 'latest' },
      calls,
    );
    expect(simulated!.map(staticCheckOf)).to.deep.equal([{ ok: true }, { ok: true }]);
    // On chain, from the sponsor wallet: the same outcome, with the wallet as the origin.
    const signer = wallets.walletOf(sponsor.address).connect(testProvider(chain.anvil.url));
    for (const [nonce, call] of calls.entries()) {
      await minedReceipt(await signer.sendTransaction({ to: chain.deployment.AirnodeRrpV0, nonce, ...call }));
    }
    const origins = new Contract(requester, artifact.abi, testProvider(chain.anvil.url));
    for (const id of ids) {
      expect((await requestEvents(chain.deployment, id)).fulfilled).to.have.length(1);
      expect(await origins.getFunction('originOf')(id)).to.equal(sponsor.sponsorWallet);
    }
  });

  it('reverts instead of running a call with less gas than its transaction would have (a provider that caps eth_call gas)', async () => {
    const data = simulatorInterface.encodeFunctionData('simulate', [
      chain.deployment.AirnodeRrpV0,
      [1_000_000],
      ['0x'],
    ]);
    const call = rpc(chain.anvil.url, 'eth_call', [
      { to: WALLET, data, gas: '0x493e0' },
      'latest',
      { [WALLET]: { code: SIMULATOR_RUNTIME_CODE } },
    ]);
    await call.then(
      () => expect.fail('the simulation ran with too little gas'),
      (error: unknown) => expect(String(error)).to.match(/Simulation gas too low/),
    );
  });
});
