import { expect } from 'chai';
import type { Child } from '../../../src/operator/builders/index.js';
import { isSubset, needsApply, withAppliedHash } from '../../../src/operator/diff.js';

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

describe('operator diff: a child cached as metadata only (a Secret)', () => {
  const desired = withAppliedHash({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'n-signing-key', namespace: 'ns', labels: { a: 'b' } },
    data: { KEY: 'dmFsdWU=' },
  } as Child);
  const cachedAs = (object: Child): Child =>
    ({ apiVersion: 'meta.k8s.io/v1', kind: 'PartialObjectMetadata', metadata: object.metadata }) as Child;

  it('is applied only when its applied hash (which covers the data) or its metadata differ', () => {
    expect(needsApply(desired, cachedAs(desired), { metadataOnly: true })).to.equal(false);
    const changed = withAppliedHash({ ...desired, data: { KEY: 'b3RoZXI=' } });
    expect(needsApply(changed, cachedAs(desired), { metadataOnly: true })).to.equal(true);
    expect(needsApply(desired, undefined, { metadataOnly: true })).to.equal(true);
    // Compared in full, the missing data would apply it on every pass.
    expect(needsApply(desired, cachedAs(desired))).to.equal(true);
  });
});
