import { expect } from 'chai';
import { isSubset } from '../../../src/operator/diff.js';

describe('operator diff: quantities as the apiserver canonicalises them', () => {
  it('takes a quantity the apiserver wrote back in another form as unchanged', () => {
    expect(isSubset({ cpu: '1000m' }, { cpu: '1' })).to.equal(true);
    expect(isSubset({ memory: '512Mi' }, { memory: '536870912' })).to.equal(true);
    expect(isSubset({ cpu: '1e3' }, { cpu: '1k' })).to.equal(true);
    expect(isSubset({ cpu: 2 }, { cpu: '2' })).to.equal(true);
  });

  it('sees a changed quantity, and compares strings that are no quantity as strings', () => {
    expect(isSubset({ memory: '512Mi' }, { memory: '512M' })).to.equal(false);
    expect(isSubset({ cpu: '100m' }, { cpu: '1' })).to.equal(false);
    expect(isSubset({ memory: ' 512Mi' }, { memory: '512Mi' })).to.equal(false);
    expect(isSubset({ image: 'oracle-node:1' }, { image: 'oracle-node:2' })).to.equal(false);
  });
});
