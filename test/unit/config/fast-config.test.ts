// fastConfig (configSchema with parsers that zod's compiler generated for its sections) must give exactly
// configSchema's answer: the same output for a valid config, the same issues in the same order for an invalid one.
import { expect } from 'chai';
import fc from 'fast-check';
import { configSchema, fastConfig, interpolateSecrets, parseSecretsEnv } from '../../../src/config/index.js';
import { BASE_SECRETS, baseConfig, fixturePairs, readFixture } from './fixtures.js';
import { applyMutations, mutationArb } from './mutations.js';

function expectSameAnswer(config: unknown): void {
  const fast = fastConfig().safeParse(config);
  const reference = configSchema.safeParse(config);
  expect(fast.success).to.equal(reference.success);
  if (reference.success) expect(fast.data).to.deep.equal(reference.data);
  else expect(fast.error?.issues).to.deep.equal(reference.error.issues);
}

describe('fastConfig', () => {
  it('is not configSchema itself: its sections run generated parsers', () => {
    expect(fastConfig()).to.not.equal(configSchema);
  });

  it('gives configSchema’s output on every fixture', () => {
    for (const pair of fixturePairs()) {
      const { secrets } = parseSecretsEnv(readFixture(pair.secrets));
      expectSameAnswer(interpolateSecrets(JSON.parse(readFixture(pair.config)), secrets).value);
    }
  });

  it('gives configSchema’s output or issues on mutated configs', () => {
    const { secrets } = parseSecretsEnv(BASE_SECRETS);
    const base = interpolateSecrets(baseConfig(), secrets).value;
    fc.assert(
      fc.property(fc.array(mutationArb, { minLength: 1, maxLength: 3 }), (mutations) => {
        expectSameAnswer(applyMutations(structuredClone(base), mutations));
      }),
      { numRuns: 1000 },
    );
  });
});
