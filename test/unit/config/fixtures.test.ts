import { expect } from 'chai';
import { validateConfig } from '../../../src/config/index.js';
import { fixturePairs, readFixture } from './fixtures.js';

describe('reference fixtures', () => {
  for (const pair of fixturePairs()) {
    it(`${pair.config} with ${pair.secrets}`, () => {
      const result = validateConfig(readFixture(pair.config), readFixture(pair.secrets));
      if (!pair.expectedErrors) {
        expect(result.errors, JSON.stringify(result.errors)).to.deep.equal([]);
        expect(result.ok).to.equal(true);
        expect(result.config).to.be.an('object');
        return;
      }
      expect(result.ok).to.equal(false);
      expect(result.errors).to.have.length(pair.expectedErrors.length);
      pair.expectedErrors.forEach((expected, index) => {
        expect(result.errors[index]!.path).to.equal(expected.path);
        expect(result.errors[index]!.message).to.match(expected.message);
      });
      // With the supported nodeVersion they validate.
      const patched = JSON.parse(readFixture(pair.config));
      patched.nodeSettings.nodeVersion = '0.15.0';
      const fixedResult = validateConfig(patched, readFixture(pair.secrets));
      expect(fixedResult.errors, JSON.stringify(fixedResult.errors)).to.deep.equal([]);
    });
  }

  it('validates the reference OIS fixture on its own', async () => {
    const { validateOis } = await import('../../../src/config/index.js');
    const result = validateOis(readFixture('ois/ois-2.3.2.fixture.json'), {});
    expect(result.errors, JSON.stringify(result.errors)).to.deep.equal([]);
  });
});
