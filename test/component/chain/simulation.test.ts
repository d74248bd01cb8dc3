// The fulfilment simulator on anvil: placed at an address by eth_call's state override, as the shard uses it.
import { expect } from 'chai';
import { RpcClient } from '../../../src/chain/rpc.js';
import { SIMULATOR_RUNTIME_CODE, simulateFromWallet, simulatorInterface } from '../../../src/chain/simulation.js';
import { rpc, startTestChain } from '../../support/chain.js';

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
