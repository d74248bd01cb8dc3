import { expect } from 'chai';
import { runCli } from '../../src/cli/main.js';

describe('oracle-node CLI', () => {
  it('answers an unknown command with usage and exit code 2', async () => {
    expect(await runCli(['no-such-command'])).to.equal(2);
  });

  it('prints its version', async () => {
    expect(await runCli(['--version'])).to.equal(0);
  });
});
