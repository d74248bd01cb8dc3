// manifests/samples/ is what users apply first (the chart ships a copy): an OracleNode there must run the image the
// operator is configured with, never a short name that resolves to whatever docker.io/library or a node's local
// store holds under it.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { loadAll } from 'js-yaml';
import { repoRoot } from '../../support/binary.js';

const samplesDir = join(repoRoot, 'manifests/samples');

describe('manifests/samples', () => {
  it('pin no short local image name: an OracleNode names no image, or one with its registry host', () => {
    const files = readdirSync(samplesDir).filter((file) => file.endsWith('.yaml'));
    expect(files.length).to.be.greaterThan(0);
    const images: string[] = [];
    for (const file of files)
      for (const doc of loadAll(readFileSync(join(samplesDir, file), 'utf8')) as {
        kind?: string;
        spec?: { image?: string };
      }[])
        if (doc?.kind === 'OracleNode' && doc.spec?.image !== undefined) images.push(`${file}: ${doc.spec.image}`);
    const short = images.filter((entry) => {
      const image = entry.slice(entry.indexOf(': ') + 2);
      const first = image.split('/')[0]!;
      return !image.includes('/') || !(first.includes('.') || first.includes(':') || first === 'localhost');
    });
    expect(short).to.deep.equal([]);
  });
});
