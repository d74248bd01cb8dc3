import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { expect } from 'chai';
import { executionGas, SIMULATOR_RUNTIME_CODE } from '../../../src/chain/simulation.js';
import { repoRoot } from '../../support/binary.js';

const require = createRequire(import.meta.url);

describe('batched simulation of fulfilments', () => {
  it('embeds the runtime code solc 0.8.9 compiles from FulfillmentSimulator.sol', function () {
    this.timeout(60_000);
    const solc = require('solc') as { compile: (input: string) => string; version: () => string };
    expect(solc.version()).to.match(/^0\.8\.9\+/);
    const source = readFileSync(join(repoRoot, 'src/chain/FulfillmentSimulator.sol'), 'utf8');
    const output = JSON.parse(
      solc.compile(
        JSON.stringify({
          language: 'Solidity',
          sources: { 'S.sol': { content: source } },
          settings: {
            optimizer: { enabled: true, runs: 1000 },
            outputSelection: { '*': { '*': ['evm.deployedBytecode.object'] } },
          },
        }),
      ),
    ) as { contracts: Record<string, Record<string, { evm: { deployedBytecode: { object: string } } }>> };
    const compiled = output.contracts['S.sol']?.['FulfillmentSimulator']?.evm.deployedBytecode.object;
    expect(`0x${compiled}`).to.equal(SIMULATOR_RUNTIME_CODE);
  });

  it('gives each call the gas its transaction has for execution: the limit less 21,000 and the calldata gas', () => {
    // 2 zero bytes (4 each) and 2 non-zero bytes (16 each).
    expect(executionGas(500_000n, '0x0000ff01')).to.equal(500_000n - 21_000n - 8n - 32n);
    expect(executionGas(21_000n, '0xff')).to.equal(0n);
  });
});
